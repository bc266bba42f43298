#include "serve/fleet/llm_backend_client.hpp"

#include <httplib.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>

namespace tessera {
namespace {

constexpr std::size_t kMaxWholeAnswerBytes = 64u << 20;

void set_timeout(httplib::Client& c, double connect_ms, double read_ms) {
  const auto split = [](double ms) {
    const auto us = std::chrono::microseconds(static_cast<int64_t>(ms * 1000.0));
    const auto s = std::chrono::duration_cast<std::chrono::seconds>(us);
    return std::pair<time_t, time_t>(static_cast<time_t>(s.count()),
                                     static_cast<time_t>((us - s).count()));
  };
  c.set_tcp_nodelay(true);
  const auto [cs, cus] = split(connect_ms);
  const auto [rs, rus] = split(read_ms);
  c.set_connection_timeout(cs, cus);
  c.set_read_timeout(rs, rus);
  c.set_write_timeout(rs, rus);
}

std::string clip(const std::string& s) { return s.size() > 200 ? s.substr(0, 200) + "..." : s; }

}  // namespace

LlmBackendClient::LlmBackendClient(const LlmBackendSpec& backend, const LlmGatewaySpec& gateway,
                                   std::string api_key)
    : backend_(backend), gateway_(gateway), api_key_(std::move(api_key)) {
  gateway_.backends.clear();  // this client needs the timeouts, not the fleet
}

LlmBackendClient::~LlmBackendClient() { stop_all(); }

bool LlmBackendClient::track(httplib::Client* client) {
  std::lock_guard lock(mutex_);
  if (stopped_) return false;
  active_.insert(client);
  return true;
}

void LlmBackendClient::untrack(httplib::Client* client) {
  std::lock_guard lock(mutex_);
  active_.erase(client);
}

void LlmBackendClient::stop_all() {
  std::vector<std::unique_ptr<httplib::Client>> idle;
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    for (httplib::Client* c : active_) c->stop();
    idle.swap(idle_);
  }
  idle.clear();  // closes them, outside the lock
}

std::unique_ptr<httplib::Client> LlmBackendClient::take_connection(bool& reused) {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<httplib::Client> c = std::move(idle_.back());
      idle_.pop_back();
      reused = true;
      return c;
    }
  }
  reused = false;
  auto c = std::make_unique<httplib::Client>(backend_.host, backend_.port);
  set_timeout(*c, gateway_.connect_timeout_ms, gateway_.timeout_ms);
  c->set_keep_alive(gateway_.keep_alive);
  return c;
}

void LlmBackendClient::give_back(std::unique_ptr<httplib::Client> client) {
  if (!gateway_.keep_alive) return;
  std::lock_guard lock(mutex_);
  if (!stopped_ && idle_.size() < kMaxIdle) idle_.push_back(std::move(client));
}  // else closed here

LlmUpstreamResult LlmBackendClient::post(const std::string& path, const std::string& body,
                                         bool stream,
                                         const std::function<bool(SseEvent&&)>& on_event) {
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    std::unique_ptr<httplib::Client> client = take_connection(reused);
    if (!track(client.get())) {
      LlmUpstreamResult out;
      out.kind = LlmUpstreamResult::Kind::kStopped;
      out.detail = "the gateway is stopping";
      return out;
    }
    bool unsent = false;
    LlmUpstreamResult out = post_on(*client, path, body, stream, on_event, unsent);
    untrack(client.get());
    // A pooled connection the backend had closed: the request never reached it.
    if (reused && unsent && attempt == 0) continue;
    if (out.kind == LlmUpstreamResult::Kind::kOk) give_back(std::move(client));
    return out;
  }
}

LlmUpstreamResult LlmBackendClient::post_on(httplib::Client& client, const std::string& path,
                                            const std::string& body, bool stream,
                                            const std::function<bool(SseEvent&&)>& on_event,
                                            bool& unsent) {
  using Kind = LlmUpstreamResult::Kind;
  LlmUpstreamResult out;
  httplib::Request req;
  req.method = "POST";
  req.path = backend_.prefix + path;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  if (stream) req.set_header("Accept", "text/event-stream");
  if (!api_key_.empty()) req.set_header("Authorization", "Bearer " + api_key_);
  SseEvents events(static_cast<std::size_t>(gateway_.max_event_bytes));
  bool began = false;        // a 2xx answer's head arrived
  bool any_event = false;    // an event was handed over
  bool caller_stop = false;  // on_event said stop
  bool event_error = false;  // the backend sent an error event
  bool too_big = false;
  req.response_handler = [&](const httplib::Response& res) {
    out.status = res.status;
    out.content_type = res.get_header_value("Content-Type");
    began = res.status >= 200 && res.status < 300;
    return true;
  };
  req.content_receiver = [&](const char* data, std::size_t n, uint64_t, uint64_t) {
    if (!began || !stream) {
      if (out.body.size() + n > kMaxWholeAnswerBytes) {
        too_big = true;
        return false;
      }
      out.body.append(data, n);
      return true;
    }
    for (SseEvent& e : events.feed(std::string_view(data, n))) {
      if (!e.usage.empty()) out.usage = e.usage;
      if (e.error) {
        event_error = true;
        out.detail = "the backend sent an error event: " + clip(e.raw);
        return false;
      }
      any_event = true;
      if (!on_event(std::move(e))) {
        caller_stop = true;
        return false;
      }
    }
    return !events.broken();
  };
  httplib::Result res = client.send(req);
  const std::string where = backend_.url;
  if (caller_stop) {
    out.kind = Kind::kStopped;
    out.detail = "stopped by the gateway";
    return out;
  }
  if (!res && !began && out.status == 0) {
    bool stopping = false;
    {
      std::lock_guard lock(mutex_);
      stopping = stopped_;
    }
    out.kind = stopping ? Kind::kStopped : Kind::kUnavailable;
    out.detail = where + ": " + httplib::to_string(res.error());
    const httplib::Error e = res.error();
    unsent = !stopping && out.body.empty() &&
             (e == httplib::Error::Write || e == httplib::Error::Read ||
              e == httplib::Error::Connection);
    return out;
  }
  if (!began) {  // a status that is not 2xx
    if (out.status == 429 || out.status >= 500 || out.status < 200 || !res) {
      out.kind = Kind::kUnavailable;
      out.detail = where + " answered " + std::to_string(out.status) + ": " + clip(out.body);
    } else {
      out.kind = Kind::kRefused;
    }
    return out;
  }
  if (event_error || events.broken() || too_big) {
    out.kind = Kind::kBroken;
    if (events.broken()) out.detail = where + " broke its event stream: " + events.error();
    if (too_big) out.detail = where + ": an answer over 64 MiB";
    return out;
  }
  if (!res) {
    bool stopping = false;
    {
      std::lock_guard lock(mutex_);
      stopping = stopped_;
    }
    out.kind = stopping ? Kind::kStopped : Kind::kBroken;
    out.detail = where + ": " + httplib::to_string(res.error()) + " after the answer began";
    return out;
  }
  if (stream) {
    if (!events.done()) {
      out.kind = Kind::kBroken;
      out.detail = where + " ended its event stream without data: [DONE]" +
                   (any_event ? "" : " (no event at all)");
    }
    return out;
  }
  nlohmann::json doc = nlohmann::json::parse(out.body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    out.kind = Kind::kBroken;
    out.detail = where + " answered 2xx with a body that is not a JSON object: " + clip(out.body);
    return out;
  }
  if (auto u = doc.find("usage"); u != doc.end() && u->is_object()) out.usage = u->dump();
  return out;
}

bool LlmBackendClient::ready(std::string& why) {
  httplib::Client client(backend_.host, backend_.port);
  set_timeout(client, gateway_.health_timeout_ms, gateway_.health_timeout_ms);
  if (!track(&client)) {
    why = "the gateway is stopping";
    return false;
  }
  httplib::Headers headers;
  if (!api_key_.empty()) headers.emplace("Authorization", "Bearer " + api_key_);
  httplib::Result res = client.Get(backend_.prefix + gateway_.health_path, headers);
  untrack(&client);
  if (!res) {
    why = backend_.url + gateway_.health_path + ": " + httplib::to_string(res.error());
    return false;
  }
  if (res->status < 200 || res->status >= 300) {
    why = backend_.url + gateway_.health_path + " answered " + std::to_string(res->status);
    return false;
  }
  return true;
}

std::optional<EngineLoad> LlmBackendClient::load(std::string& why) {
  constexpr std::size_t kMaxMetricsBytes = 4 << 20;
  httplib::Client client(backend_.host, backend_.port);
  set_timeout(client, gateway_.health_timeout_ms, gateway_.health_timeout_ms);
  if (!track(&client)) {
    why = "the gateway is stopping";
    return std::nullopt;
  }
  httplib::Headers headers;
  if (!api_key_.empty()) headers.emplace("Authorization", "Bearer " + api_key_);
  std::string text;
  bool too_long = false;
  httplib::Result res = client.Get(backend_.prefix + gateway_.metrics_path, headers,
                                   [&](const char* data, std::size_t n) {
                                     if (text.size() + n > kMaxMetricsBytes) {
                                       too_long = true;
                                       return false;
                                     }
                                     text.append(data, n);
                                     return true;
                                   });
  untrack(&client);
  const std::string where = backend_.url + gateway_.metrics_path;
  if (too_long) {
    why = where + ": longer than 4 MiB";
    return std::nullopt;
  }
  if (!res) {
    why = where + ": " + httplib::to_string(res.error());
    return std::nullopt;
  }
  if (res->status < 200 || res->status >= 300) {
    why = where + " answered " + std::to_string(res->status);
    return std::nullopt;
  }
  std::optional<EngineLoad> load = parse_engine_load(text, why);
  if (!load) why = where + ": " + why;
  return load;
}

}  // namespace tessera
