// The HTTP transport of a remote model: cpp-httplib clients (one keep-alive connection
// each), pooled per backend; a batch is one POST /v2/models/NAME/infer.

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <mutex>

#include "serve/fleet/remote_transport.hpp"

namespace tessera {
namespace {

using Clock = std::chrono::steady_clock;

std::string ms_string(double ms) { return fmt::format("{:g}", ms); }

// Timeouts, and TCP_NODELAY: a request is written in more than one send, which Nagle's
// algorithm would hold back for the peer's delayed ACK (tens of ms per call).
void set_timeouts(httplib::Client& c, double ms) {
  c.set_tcp_nodelay(true);
  const auto us = std::chrono::microseconds(static_cast<int64_t>(ms * 1000.0));
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(us);
  const auto rest = us - s;
  c.set_connection_timeout(s.count(), rest.count());
  c.set_read_timeout(s.count(), rest.count());
  c.set_write_timeout(s.count(), rest.count());
}

class HttpTransport final : public RemoteTransport {
 public:
  HttpTransport(const std::string& endpoint, const RemoteSpec& spec, const std::string& key)
      : endpoint_(endpoint),
        address_(parse_remote_address(endpoint, RemoteSpec::Protocol::kHttp)),
        spec_(spec),
        path_("/v2/models/" + spec.model + "/infer") {
    if (!key.empty()) headers_.emplace("Authorization", "Bearer " + key);
  }

  RemoteCall infer(std::span<const FloatTensor* const> inputs, const std::string& id,
                   const RemoteExpect& expect) override {
    RemoteCall call;
    RemoteRequestBody body =
        encode_remote_request(inputs, id, spec_.output_name, spec_.binary, spec_.input_name);
    httplib::Request req;
    req.method = "POST";
    req.path = path_;
    req.body = std::move(body.body);
    req.headers = headers_;
    if (body.header_length) {
      req.set_header("Content-Type", "application/octet-stream");
      req.set_header("Inference-Header-Content-Length", std::to_string(*body.header_length));
    } else {
      req.set_header("Content-Type", "application/json");
    }
    std::string reply;
    bool too_big = false;
    bool too_late = false;
    const auto deadline =
        Clock::now() + std::chrono::microseconds(static_cast<int64_t>(spec_.timeout_ms * 1000.0));
    const auto cap = static_cast<std::size_t>(spec_.max_reply_bytes);
    req.content_receiver = [&](const char* data, std::size_t n, uint64_t, uint64_t) {
      if (reply.size() + n > cap) {
        too_big = true;
        return false;
      }
      if (Clock::now() > deadline) {
        too_late = true;
        return false;
      }
      reply.append(data, n);
      return true;
    };
    std::unique_ptr<httplib::Client> client = take();
    httplib::Result res = client->send(req);
    if (!res) {
      // A connect or read that waited out the timeout: a slow backend, not a gone one.
      if (!too_big &&
          (res.error() == httplib::Error::Read || res.error() == httplib::Error::Connection) &&
          Clock::now() >= deadline) {
        too_late = true;
      }
      call.kind = too_big ? RemoteCall::Kind::kBadReply : RemoteCall::Kind::kUnavailable;
      call.detail = too_big ? "bad reply: the body is larger than max_reply_bytes (" +
                                  std::to_string(cap) + ")"
                    : too_late ? "timed out after " + ms_string(spec_.timeout_ms) + " ms"
                               : "HTTP transport error: " + httplib::to_string(res.error());
      if (res.error() == httplib::Error::Read && !too_big && !too_late) {
        call.detail += " (connection reset or timed out after " +
                       std::to_string(static_cast<int64_t>(spec_.timeout_ms)) + " ms)";
      }
      return call;  // the client is dropped: its connection may be broken
    }
    if (res->status >= 500 || res->status == 429) {
      call.kind = RemoteCall::Kind::kUnavailable;
      call.detail = "HTTP " + std::to_string(res->status) + ": " + reply.substr(0, 200);
      return call;
    }
    if (res->status != 200) {
      call.kind = RemoteCall::Kind::kRefused;
      call.detail = "HTTP " + std::to_string(res->status) + ": " + reply.substr(0, 200);
      put(std::move(client));
      return call;
    }
    std::optional<std::size_t> header_length;
    if (res->has_header("Inference-Header-Content-Length")) {
      const std::string h = res->get_header_value("Inference-Header-Content-Length");
      std::size_t n = 0;
      bool ok = !h.empty() && h.size() < 19;
      for (char c : h) {
        if (c < '0' || c > '9')
          ok = false;
        else
          n = n * 10 + static_cast<std::size_t>(c - '0');
      }
      if (!ok) {
        call.kind = RemoteCall::Kind::kBadReply;
        call.detail = "bad reply: Inference-Header-Content-Length '" + h.substr(0, 40) +
                      "' is not an integer";
        return call;
      }
      header_length = n;
    }
    try {
      call.outputs = decode_remote_reply(reply, header_length, expect);
      put(std::move(client));
    } catch (const RemoteReplyError& e) {
      call.kind = RemoteCall::Kind::kBadReply;
      call.detail = e.what();
    }
    return call;
  }

  bool ready(std::string& why) override {
    httplib::Client c(address_.host, address_.port);
    set_timeouts(c, spec_.health_timeout_ms);
    auto res = c.Get("/v2/health/ready", headers_);
    if (!res) {
      why = "GET /v2/health/ready: " + httplib::to_string(res.error());
      return false;
    }
    if (res->status != 200) {
      why = "GET /v2/health/ready: HTTP " + std::to_string(res->status);
      return false;
    }
    return true;
  }

  std::vector<int64_t> output_shape(const std::string& output_name) override {
    httplib::Client c(address_.host, address_.port);
    set_timeouts(c, spec_.timeout_ms);
    const std::string path = "/v2/models/" + spec_.model;
    auto res = c.Get(path, headers_);
    if (!res) {
      throw std::runtime_error("backend " + endpoint_ + ": GET " + path + ": " +
                               httplib::to_string(res.error()));
    }
    if (res->status != 200) {
      throw std::runtime_error("backend " + endpoint_ + ": GET " + path + ": HTTP " +
                               std::to_string(res->status) + " " + res->body.substr(0, 200));
    }
    if (res->body.size() > static_cast<std::size_t>(spec_.max_reply_bytes)) {
      throw std::runtime_error("backend " + endpoint_ + ": model metadata is too large");
    }
    return output_shape_from_metadata(res->body, endpoint_, output_name);
  }

 private:
  std::unique_ptr<httplib::Client> take() {
    {
      std::lock_guard lock(mutex_);
      if (!idle_.empty()) {
        auto c = std::move(idle_.back());
        idle_.pop_back();
        return c;
      }
    }
    auto c = std::make_unique<httplib::Client>(address_.host, address_.port);
    c->set_keep_alive(true);
    set_timeouts(*c, spec_.timeout_ms);
    return c;
  }
  void put(std::unique_ptr<httplib::Client> c) {
    std::lock_guard lock(mutex_);
    if (idle_.size() < static_cast<std::size_t>(spec_.pool)) idle_.push_back(std::move(c));
  }

  std::string endpoint_;
  RemoteAddress address_;
  RemoteSpec spec_;
  std::string path_;
  httplib::Headers headers_;  // the key, if any
  std::mutex mutex_;
  std::vector<std::unique_ptr<httplib::Client>> idle_;
};

}  // namespace

std::unique_ptr<RemoteTransport> make_http_transport(const std::string& endpoint,
                                                     const RemoteSpec& spec,
                                                     const std::string& key) {
  return std::make_unique<HttpTransport>(endpoint, spec, key);
}

}  // namespace tessera
