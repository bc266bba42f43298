#include "serve/server/llm_gateway.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "core/error.hpp"
#include "engine/outcome_rule.hpp"
#include "policy/llm_routing.hpp"
#include "serve/fleet/llm_backend_client.hpp"
#include "serve/http/front_end.hpp"
#include "serve/openai/llm_protocol.hpp"
#include "serve/server/llm_route_request.hpp"
#include "serve/server/request_threads.hpp"
#include "spec/run_spec.hpp"

namespace tessera {
namespace {

using GatewayClock = std::chrono::steady_clock;
using nlohmann::json;

double seconds_since(GatewayClock::time_point t0) {
  return std::chrono::duration<double>(GatewayClock::now() - t0).count();
}

HttpResponse error_response(int status, const std::string& message, const std::string& type,
                            const std::string& param = "") {
  return HttpResponse{status, openai_error(message, type, param)};
}

// The completion tokens a stream's `usage` reports, or -1.
int64_t completion_tokens(const std::string& usage) {
  if (usage.empty()) return -1;
  const json u = json::parse(usage, nullptr, false);
  if (!u.is_object()) return -1;
  auto it = u.find("completion_tokens");
  return it != u.end() && it->is_number_integer() ? it->get<int64_t>() : -1;
}

}  // namespace

struct LlmGateway::Impl {
  struct Backend {
    LlmBackendSpec spec;
    std::unique_ptr<LlmBackendClient> client;
    LlmGatewayBackendStats stats;
    // Of its outstanding requests, those without their first token yet, and their prompts'
    // estimated tokens (slo_aware's queue).
    int awaiting_first = 0;
    uint64_t awaiting_tokens = 0;
  };

  App app;
  std::string model;  // the served model's name
  LlmGatewaySpec spec;
  LlmGatewayOptions options;
  std::unique_ptr<FrontEnd> front;
  std::vector<Backend> backends;
  mutable std::mutex mutex;  // backends' stats, the ledger, the router, threads
  std::condition_variable changed;
  const LlmRoutingRow* routing_row = nullptr;  // the spec's routing row
  LlmRequestDefaults request_defaults;         // the run spec's priority, SLOs, blocks
  std::unique_ptr<LlmRouter> router;           // under `mutex`
  const GatewayClock::time_point epoch = GatewayClock::now();  // the router's clock's zero
  LlmGatewayLedger ledger;
  int threads = 0;  // requests running on request_threads
  RequestThreads request_threads;
  bool started = false, stopped = false;
  std::atomic<bool> stopping{false};  // set under `mutex` (the health thread waits on it)
  std::thread health;
  std::condition_variable health_cv;

  // The routing policy's view of the backends (their state under `mutex`).
  std::vector<LlmRouteBackend> route_view() const {
    std::vector<LlmRouteBackend> view(backends.size());
    for (std::size_t i = 0; i < backends.size(); ++i) {
      const LlmGatewayBackendStats& s = backends[i].stats;
      LlmRouteBackend& v = view[i];
      v.up = s.up;
      v.outstanding = s.outstanding;
      v.awaiting_first = backends[i].awaiting_first;
      v.awaiting_prompt_tokens = backends[i].awaiting_tokens;
      v.load_known = s.load_known;
      v.running = s.load.running;
      v.waiting = s.load.waiting;
      v.kv_usage = s.load.kv_usage;
    }
    return view;
  }

  // The routing policy's decision for `request` over the backends in service not in
  // `tried`; a routed request is counted as outstanding on its backend.
  LlmRouteDecision pick(const LlmRouteRequest& request, const std::vector<int>& tried) {
    std::lock_guard lock(mutex);
    const std::vector<LlmRouteBackend> view = route_view();
    LlmRouteDecision d = router->pick(request, view, tried, seconds_since(epoch));
    if (d.kind == LlmRouteDecision::Kind::kRoute) {
      Backend& b = backends[static_cast<std::size_t>(d.backend)];
      ++b.stats.outstanding;
      ++b.stats.requests;
      ++b.awaiting_first;
      b.awaiting_tokens += request.prompt_tokens;
    }
    return d;
  }

  // The request on backend `i` got its first token (or ended without): it no longer waits.
  void first_token(int i, uint32_t prompt_tokens) {
    std::lock_guard lock(mutex);
    Backend& b = backends[static_cast<std::size_t>(i)];
    --b.awaiting_first;
    b.awaiting_tokens -= std::min<uint64_t>(b.awaiting_tokens, prompt_tokens);
  }

  void observe(const LlmRouteObservation& o) {
    std::lock_guard lock(mutex);
    router->observe(o);
  }

  // The call on backend `i` ended; `failed`: take it out of service until a check passes.
  void done(int i, bool failed, const std::string& why) {
    std::lock_guard lock(mutex);
    auto& s = backends[static_cast<std::size_t>(i)].stats;
    --s.outstanding;
    if (failed) {
      ++s.failures;
      s.last_error = why;
      if (s.up) spdlog::warn("gateway: backend {} out of service: {}", s.url, why);
      s.up = false;
    }
  }

  // "URL: why; ..." of the backends out of service.
  std::string out_of_service() const {
    std::lock_guard lock(mutex);
    std::string why;
    for (const Backend& b : backends) {
      if (b.stats.up) continue;
      if (!why.empty()) why += "; ";
      why += b.stats.url + ": " + (b.stats.last_error.empty() ? "down" : b.stats.last_error);
    }
    return why.substr(0, 2000);
  }

  void end(uint64_t LlmGatewayLedger::*outcome) {
    std::lock_guard lock(mutex);
    ++(ledger.*outcome);
  }

  void check_now() {
    std::vector<std::thread> checks;
    for (std::size_t i = 0; i < backends.size(); ++i) {
      checks.emplace_back([this, i] {
        std::string why, load_why;
        const bool up = backends[i].client->ready(why);
        std::optional<EngineLoad> load;
        if (up && routing_row->reads_engine_load) load = backends[i].client->load(load_why);
        std::lock_guard lock(mutex);
        auto& s = backends[i].stats;
        if (up && !s.up) spdlog::info("gateway: backend {} back in service", s.url);
        s.up = up;
        if (!up) s.last_error = why;
        if (up && routing_row->reads_engine_load) {
          if (!load && s.load_known) spdlog::warn("gateway: backend {}: {}", s.url, load_why);
          s.load_known = load.has_value();
          if (load) s.load = *load;
        }
      });
    }
    for (auto& t : checks) t.join();
  }

  void health_loop() {
    const auto every =
        std::chrono::microseconds(static_cast<int64_t>(spec.health_interval_ms * 1e3));
    std::unique_lock lock(mutex);
    while (!stopping) {
      health_cv.wait_for(lock, every, [&] { return stopping.load(); });
      if (stopping) break;
      lock.unlock();
      check_now();
      lock.lock();
    }
  }

  void proxy(const std::string& path, json body, bool stream, const LlmRequestRouting& routing,
             const Responder& respond, Admission::Ticket ticket);
};

void LlmGateway::Impl::proxy(const std::string& path, json body, bool stream,
                             const LlmRequestRouting& routing, const Responder& respond,
                             Admission::Ticket ticket) {
  // The ticket is held until the request has ended (its answer given).
  const Admission::Ticket held_ticket = std::move(ticket);
  const LlmApi api = path == "/v1/chat/completions" ? LlmApi::kChat : LlmApi::kCompletion;
  const GatewayClock::time_point t0 = GatewayClock::now();
  std::vector<int> tried;
  const LlmRouteRequest route_request = routing.route();
  int current = -1;             // the backend of this attempt
  bool awaiting_first = false;  // counted as waiting for its first token there
  std::unique_ptr<ResponseStream> out;
  std::vector<std::string> held;  // events before the first token (a chat's role event)
  double first_at = -1.0, last_at = -1.0;
  int64_t token_events = 0;
  bool client_gone = false;
  std::string last_error;
  const auto on_event = [&](SseEvent&& e) {
    if (out == nullptr) {
      held.push_back(std::move(e.raw));
      if (!e.token && !e.done) return true;
      HttpResponse head(200, "", "text/event-stream");
      head.headers.emplace_back("Cache-Control", "no-cache");
      out = respond.stream(std::move(head));
      first_at = seconds_since(t0);
      if (awaiting_first) {
        awaiting_first = false;
        first_token(current, route_request.prompt_tokens);
      }
      for (std::string& h : held) {
        if (out == nullptr || !out->write(std::move(h))) {
          client_gone = true;
          return false;
        }
      }
      held.clear();
    } else if (!out->write(std::move(e.raw))) {
      client_gone = true;
      return false;
    }
    if (e.token) {
      ++token_events;
      last_at = seconds_since(t0);
    }
    return true;
  };
  // The ledger ends the request before its answer goes out: a client that has its answer
  // finds it counted.
  const auto fail = [&](int status, const std::string& message) {
    end(&LlmGatewayLedger::failed);
    if (out != nullptr) {
      out->write(sse_error_event(api, message));
      out->write(kSseDone);
      out->close();
    } else {
      respond(error_response(status, message, "upstream_error"));
    }
  };
  for (int attempt = 0;; ++attempt) {
    const LlmRouteDecision decision = pick(route_request, tried);
    const int b = decision.backend;
    if (decision.kind == LlmRouteDecision::Kind::kShed) {
      // Proactive shedding: no backend can serve it within its TTFT SLO; answered at once.
      {
        std::lock_guard lock(mutex);
        ++ledger.shed;
        ++ledger.shed_ttft_slo;
      }
      HttpResponse r = error_response(429, decision.reason, "rate_limit_error");
      r.headers.emplace_back(
          "Retry-After",
          std::to_string(static_cast<int>(std::ceil(std::max(1.0, decision.retry_after)))));
      return respond(std::move(r));
    }
    if (b < 0) {
      if (!tried.empty()) return fail(502, "the backend failed: " + last_error);
      return fail(503, "no backend is in service (" + out_of_service() + ")");
    }
    tried.push_back(b);
    current = b;
    awaiting_first = true;
    const Backend& backend = backends[static_cast<std::size_t>(b)];
    body["model"] = backend.spec.model;
    LlmUpstreamResult r = backend.client->post(path, body.dump(), stream, on_event);
    using Kind = LlmUpstreamResult::Kind;
    const bool broken = r.kind == Kind::kUnavailable || r.kind == Kind::kBroken;
    if (awaiting_first) {
      awaiting_first = false;
      first_token(b, route_request.prompt_tokens);
    }
    done(b, broken, r.detail);
    if (r.kind == Kind::kOk) {
      const double finish = seconds_since(t0);
      double ttft = -1.0, tpot = -1.0;
      if (stream) {
        ttft = out != nullptr ? first_at : finish;
        const int64_t reported = completion_tokens(r.usage);
        const int64_t tokens = reported > 0 ? reported : token_events;
        if (tokens > 1 && last_at > first_at) tpot = (last_at - first_at) / double(tokens - 1);
      }
      const Time deadline = app.slo > 0 ? app.slo : std::numeric_limits<double>::infinity();
      // Judged against the request's own SLOs (the run spec's unless it gave its own).
      const Outcome o = completion_outcome(finish, deadline, ttft, tpot, route_request.ttft_slo,
                                           route_request.tpot_slo);
      // The router learns from every answer: a stream's TTFT and TPOT, a whole answer's
      // total time and its `usage` tokens.
      const int64_t reported = completion_tokens(r.usage);
      if (stream && out != nullptr) {
        observe({b, decision.prediction, ttft, tpot, route_request.prompt_tokens,
                 static_cast<uint32_t>(
                     std::clamp<int64_t>(reported > 0 ? reported : token_events, 0, UINT32_MAX))});
      } else if (!stream) {
        observe({b, decision.prediction, -1.0, -1.0, route_request.prompt_tokens,
                 static_cast<uint32_t>(std::clamp<int64_t>(reported, 0, UINT32_MAX)), finish});
      }
      end(o == Outcome::kOk ? &LlmGatewayLedger::ok : &LlmGatewayLedger::late);
      if (!stream) return respond(HttpResponse{r.status, std::move(r.body), "application/json"});
      if (out == nullptr) {  // [DONE] with no token at all: relay what came
        out = respond.stream(HttpResponse(200, "", "text/event-stream"));
        for (std::string& h : held) {
          if (out != nullptr) out->write(std::move(h));
        }
      }
      if (out != nullptr) out->close();
      return;
    }
    if (r.kind == Kind::kRefused) {
      end(&LlmGatewayLedger::failed);
      return respond(HttpResponse(r.status, std::move(r.body),
                                  r.content_type.empty() ? "application/json" : r.content_type));
    }
    if (r.kind == Kind::kStopped) {
      if (client_gone) {
        end(&LlmGatewayLedger::cancelled);
        if (out != nullptr) out->close();
        return;
      }
      return fail(503, "the gateway is shutting down");
    }
    last_error = r.detail;
    if (out != nullptr || attempt >= spec.retries || stopping) {
      return fail(502, "the backend failed: " + r.detail);
    }
    held.clear();
    std::lock_guard lock(mutex);
    ++ledger.retried;
  }
}

LlmGateway::LlmGateway(const RunSpec& run, LlmGatewayOptions options)
    : impl_(std::make_shared<Impl>()) {
  std::optional<LlmGatewaySpec> spec = load_llm_gateway(run);
  if (!spec) {
    throw SpecError(run.file.string(), "llm.backends",
                    "a gateway needs the llm: section's backends");
  }
  Impl& g = *impl_;
  g.app = run.app;
  g.model = run.llm->model.name;
  g.spec = std::move(*spec);
  g.options = std::move(options);
  g.routing_row = find_llm_routing(g.spec.routing);
  if (g.routing_row == nullptr) {  // the spec's parser takes only the rows' names
    throw SpecError(run.file.string(), "llm.gateway.routing", "unknown routing policy");
  }
  g.request_defaults.priority = g.spec.default_priority;
  g.request_defaults.ttft_slo = run.app.ttft_slo;
  g.request_defaults.tpot_slo = run.app.tpot_slo;
  g.request_defaults.block_bytes = std::size_t{g.spec.block_tokens} * kLlmBytesPerToken;
  g.request_defaults.max_blocks = static_cast<std::size_t>(g.spec.routing_config.affinity_blocks);
  g.router = g.routing_row->make(llm_router_setup(g.spec));
  for (const LlmBackendSpec& b : g.spec.backends) {
    std::string key;
    if (!b.api_key_env.empty()) {
      const char* v = std::getenv(b.api_key_env.c_str());
      if (v == nullptr || *v == '\0') {
        throw SpecError(run.file.string(), "llm.backends.api_key_env",
                        "the environment variable " + b.api_key_env + " is not set");
      }
      key = v;
    }
    Impl::Backend backend{b, std::make_unique<LlmBackendClient>(b, g.spec, key), {}};
    backend.stats.url = b.url;
    backend.stats.up = false;
    g.backends.push_back(std::move(backend));
  }
  HttpLimits limits;
  limits.max_connections = g.options.max_connections;
  limits.body_limit = g.options.max_body_bytes;
  limits.read_timeout_s = g.options.read_timeout_s;
  limits.write_timeout_s = g.options.write_timeout_s;
  limits.threads = std::max(1, g.options.http_threads);
  g.front = std::make_unique<FrontEnd>(
      limits, g.options.max_inflight, [](int) {},
      [](const std::string& message) {
        return openai_error(message, "invalid_request_error", "");
      });
  g.front->set_access(AccessControl(g.options.access));
  Impl* self = &g;
  const auto generate = [self](const std::string& path) {
    return [self, path](HttpRequest&& req, const Responder& respond, const RouteParams&) {
      json body = json::parse(req.body, nullptr, false);
      if (body.is_discarded() || !body.is_object()) {
        return respond(
            error_response(400, "the body must be a JSON object", "invalid_request_error"));
      }
      if (auto m = body.find("model"); m != body.end() && *m != self->model) {
        return respond(error_response(404, "the model '" + m->dump() + "' is not served here",
                                      "invalid_request_error", "model"));
      }
      bool stream = false;
      if (auto s = body.find("stream"); s != body.end() && !s->is_null()) {
        if (!s->is_boolean()) {
          return respond(
              error_response(400, "stream must be a boolean", "invalid_request_error", "stream"));
        }
        stream = s->get<bool>();
      }
      LlmRequestRouting routing;
      if (auto e = read_llm_routing(body, req.tessera_headers, path == "/v1/chat/completions",
                                    self->request_defaults, routing)) {
        return respond(error_response(400, e->message, "invalid_request_error", e->field));
      }
      {
        std::lock_guard lock(self->mutex);
        ++self->ledger.admitted;
      }
      Admission& admission = self->front->admission();
      if (admission.draining() || self->stopping) {
        HttpResponse r = error_response(503, "the gateway is shutting down", "server_error");
        r.headers.emplace_back("Retry-After", "1");
        self->end(&LlmGatewayLedger::shed);
        self->end(&LlmGatewayLedger::shed_draining);
        return respond(std::move(r));
      }
      Admission::Ticket ticket = admission.enter(1);
      if (ticket.over_limit()) {
        HttpResponse r = error_response(
            429,
            fmt::format("too many requests in flight ({}); retry later", admission.max_in_flight()),
            "rate_limit_error");
        r.headers.emplace_back("Retry-After", "1");
        self->end(&LlmGatewayLedger::shed);
        self->end(&LlmGatewayLedger::shed_max_inflight);
        return respond(std::move(r));
      }
      {
        std::lock_guard lock(self->mutex);
        ++self->threads;
      }
      // std::function needs a copyable callable: the move-only ticket travels in a
      // shared_ptr.
      auto held = std::make_shared<Admission::Ticket>(std::move(ticket));
      self->request_threads.run([self, path, body = std::move(body), stream,
                                 routing = std::move(routing), respond = Responder(respond),
                                 held]() mutable {
        {
          // The Responder holds the client's connection: it must go before the count
          // drops, or shutdown() could stop the front end (and free its I/O context)
          // while this thread still releases the connection. (An init-capture: a plain
          // copy of the const reference would be const, and std::move would copy it,
          // leaving the capture alive until the thread's callable is destroyed.)
          const Responder answer = std::move(respond);
          self->proxy(path, std::move(body), stream, routing, answer, std::move(*held));
        }
        std::lock_guard lock(self->mutex);
        --self->threads;
        self->changed.notify_all();
      });
    };
  };
  HttpRouter& routes = g.front->routes();
  routes.set_fallback([](HttpRequest&& req, const Responder& respond) {
    respond(error_response(404, "no route " + req.path.substr(0, 200), "invalid_request_error"));
  });
  routes.set_wrong_method(
      [](HttpRequest&& req, const Responder& respond, const std::string& allowed) {
        HttpResponse r = error_response(405, req.method.substr(0, 16) + " is not allowed here",
                                        "invalid_request_error");
        r.headers.emplace_back("Allow", allowed);
        respond(std::move(r));
      });
  routes.add("POST", "/v1/completions", generate("/v1/completions"));
  routes.add("POST", "/v1/chat/completions", generate("/v1/chat/completions"));
  routes.add("GET", "/v1/models", [self](HttpRequest&&, const Responder& respond, auto&) {
    json doc = {{"object", "list"},
                {"data", json::array({{{"id", self->model},
                                       {"object", "model"},
                                       {"created", 0},
                                       {"owned_by", "tessera"}}})}};
    respond(HttpResponse{200, doc.dump()});
  });
  routes.add("GET", "/health", RouteAccess::kOpen,
             [self](HttpRequest&&, const Responder& respond, auto&) {
               bool any = false;
               {
                 std::lock_guard lock(self->mutex);
                 for (const auto& b : self->backends) any = any || b.stats.up;
               }
               const bool ok = any && !self->front->admission().draining();
               respond(HttpResponse{ok ? 200 : 503, ""});
             });
  routes.add("GET", "/metrics", [self](HttpRequest&&, const Responder& respond, auto&) {
    std::string text;
    std::lock_guard lock(self->mutex);
    const LlmGatewayLedger& l = self->ledger;
    text += "# TYPE tessera_gateway_requests_total counter\n";
    for (const auto& [name, v] : {std::pair{"ok", l.ok},
                                  {"late", l.late},
                                  {"shed", l.shed},
                                  {"failed", l.failed},
                                  {"cancelled", l.cancelled}}) {
      text += fmt::format("tessera_gateway_requests_total{{outcome=\"{}\"}} {}\n", name, v);
    }
    text += "# TYPE tessera_gateway_shed_total counter\n";
    for (const auto& [reason, v] : {std::pair{"ttft_slo", l.shed_ttft_slo},
                                    {"max_inflight", l.shed_max_inflight},
                                    {"draining", l.shed_draining}}) {
      text += fmt::format("tessera_gateway_shed_total{{reason=\"{}\"}} {}\n", reason, v);
    }
    text += "# TYPE tessera_gateway_retries_total counter\n";
    text += fmt::format("tessera_gateway_retries_total {}\n", l.retried);
    text += "# TYPE tessera_gateway_backend_up gauge\n";
    for (const auto& b : self->backends) {
      text += fmt::format("tessera_gateway_backend_up{{backend=\"{}\"}} {}\n", b.stats.url,
                          b.stats.up ? 1 : 0);
    }
    text += "# TYPE tessera_gateway_backend_outstanding gauge\n";
    for (const auto& b : self->backends) {
      text += fmt::format("tessera_gateway_backend_outstanding{{backend=\"{}\"}} {}\n", b.stats.url,
                          b.stats.outstanding);
    }
    if (self->routing_row->reads_engine_load) {
      text += "# TYPE tessera_gateway_backend_waiting gauge\n";
      for (const auto& b : self->backends) {
        if (!b.stats.load_known) continue;
        text += fmt::format("tessera_gateway_backend_waiting{{backend=\"{}\"}} {}\n", b.stats.url,
                            b.stats.load.waiting);
      }
      text += "# TYPE tessera_gateway_backend_kv_usage gauge\n";
      for (const auto& b : self->backends) {
        if (!b.stats.load_known) continue;
        text += fmt::format("tessera_gateway_backend_kv_usage{{backend=\"{}\"}} {}\n", b.stats.url,
                            b.stats.load.kv_usage);
      }
    }
    text += "# TYPE tessera_gateway_backend_failures_total counter\n";
    for (const auto& b : self->backends) {
      text += fmt::format("tessera_gateway_backend_failures_total{{backend=\"{}\"}} {}\n",
                          b.stats.url, b.stats.failures);
    }
    respond(HttpResponse{200, std::move(text), "text/plain; version=0.0.4; charset=utf-8"});
  });
}

LlmGateway::~LlmGateway() { shutdown(); }

int LlmGateway::start() {
  Impl& g = *impl_;
  if (g.started) return g.options.port;
  g.check_now();
  if (g.spec.health_interval_ms > 0) g.health = std::thread([&g] { g.health_loop(); });
  g.options.port = g.front->start(g.options.host, g.options.port);
  g.started = true;
  spdlog::info("LLM gateway for '{}' ({} backend(s), {} routing) on {}:{}", g.model,
               g.backends.size(), g.spec.routing, g.options.host, g.options.port);
  return g.options.port;
}

void LlmGateway::shutdown() {
  Impl& g = *impl_;
  if (g.stopped) return;
  g.stopped = true;
  g.front->drain(g.started ? g.options.drain_timeout_s : 0.0);
  {
    std::lock_guard lock(g.mutex);
    g.stopping = true;
    g.health_cv.notify_all();
  }
  for (auto& b : g.backends) b.client->stop_all();
  {
    std::unique_lock lock(g.mutex);
    g.changed.wait(lock, [&] { return g.threads == 0; });
  }
  g.request_threads.stop();
  if (g.health.joinable()) g.health.join();
  g.front->stop(1.0);
}

void LlmGateway::check_now() { impl_->check_now(); }

LlmGatewayLedger LlmGateway::ledger() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->ledger;
}

std::vector<LlmGatewayBackendStats> LlmGateway::backends() const {
  std::lock_guard lock(impl_->mutex);
  std::vector<LlmGatewayBackendStats> out;
  for (const auto& b : impl_->backends) out.push_back(b.stats);
  return out;
}

std::size_t LlmGateway::in_flight() const {
  return static_cast<std::size_t>(impl_->front->admission().in_flight());
}

}  // namespace tessera
