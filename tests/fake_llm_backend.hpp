#pragma once

// A scripted OpenAI-compatible backend for the gateway's tests (test-only): a cpp-httplib
// server on a free loopback port that answers /v1/completions and /v1/chat/completions the
// way its script says — a good stream (role event, tokens, usage, [DONE]), a 500, garbage
// SSE, a disconnect after the first token, a stall before or after the first token, or a
// long slow stream (to see a client's disconnect reach it) — GET /health as `healthy`
// says, and GET /metrics with the text set_metrics() gave. It counts what it saw (requests, and the
// connections they came on). Threads: the server's own; the counters are atomic.

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace tessera::testing {

class FakeLlmBackend {
 public:
  enum class Script {
    kGood,                  // a whole answer, or a stream: role, 3 tokens, finish, usage, [DONE]
    kStatus500,             // 500 before anything
    kGarbage,               // 200 text/event-stream, then "data: not json"
    kDisconnectAfterFirst,  // one token event, then the connection closes
    kStallBeforeFirst,      // 200 header, then nothing until released
    kStallAfterFirst,       // one token event, then nothing until released
    kLongStream,            // up to 2000 token events, one per ms (until the client is gone)
    kGoodAfterGate,         // the first token event, then waits for open_gate(), then kGood's rest
    kGoodBeforeGate,        // nothing until open_gate() (200 header sent), then kGood's stream
  };

  explicit FakeLlmBackend(Script script) : script_(script) {
    const auto generate = [this](const httplib::Request& req, httplib::Response& res) {
      ++requests;
      {
        std::lock_guard lock(mutex_);
        client_ports_.insert(req.remote_port);
      }
      last_body = req.body;
      answer(req, res);
    };
    server_.Post("/v1/completions", generate);
    server_.Post("/v1/chat/completions", generate);
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard lock(mutex_);
      if (metrics_.empty()) {
        res.status = 404;
      } else {
        res.set_content(metrics_, "text/plain; version=0.0.4");
      }
    });
    server_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      ++health_checks;
      res.status = healthy.load() ? 200 : 503;
    });
    port = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeLlmBackend() {
    release();
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
  // Ends the stalls (and opens the gate).
  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    cv_.notify_all();
  }
  void open_gate() { release(); }
  // The connections the generation requests came on (their distinct client ports).
  std::size_t connections() {
    std::lock_guard lock(mutex_);
    return client_ports_.size();
  }
  // What GET /metrics answers (404 while empty): e.g. vLLM's scheduler gauges.
  void set_metrics(std::string text) {
    std::lock_guard lock(mutex_);
    metrics_ = std::move(text);
  }

  // The events of kGood's stream, as sent (the gateway must relay exactly these).
  static std::string good_stream() {
    return std::string("data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n") +
           "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"text\":\"b\"}]}\n\n" +
           "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"text\":\"c\",\"finish_reason\":"
           "\"length\"}]}\n\n" +
           "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,"
           "\"completion_tokens\":3,\"total_tokens\":8}}\n\n" +
           "data: [DONE]\n\n";
  }
  static std::string first_event() {
    return "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n";
  }

  std::atomic<int> requests{0};
  std::atomic<int> health_checks{0};
  std::atomic<bool> healthy{true};
  std::atomic<bool> saw_client_gone{false};  // a write to the gateway failed (it hung up)
  std::atomic<bool> gate_timed_out{false};   // a gated script waited 10 s for open_gate()
  std::string last_body;
  int port = 0;

 private:
  bool wait_released(std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, limit, [&] { return released_; });
  }

  void answer(const httplib::Request& req, httplib::Response& res) {
    const bool stream = req.body.find("\"stream\":true") != std::string::npos;
    if (req.body.find("refuse_me") != std::string::npos) {
      res.status = 400;
      res.set_content("{\"error\":{\"message\":\"refused by the fake\"}}", "application/json");
      return;
    }
    if (script_ == Script::kStatus500) {
      res.status = 500;
      res.set_content("{\"error\":\"boom\"}", "application/json");
      return;
    }
    if (!stream) {
      res.set_content(
          "{\"id\":\"c1\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":"
          "\"abc\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":5,"
          "\"completion_tokens\":3,\"total_tokens\":8}}",
          "application/json");
      return;
    }
    res.set_chunked_content_provider(
        "text/event-stream", [this](std::size_t, httplib::DataSink& sink) {
          const auto put = [&](const std::string& s) {
            if (!sink.write(s.data(), s.size())) {
              saw_client_gone = true;
              return false;
            }
            return true;
          };
          switch (script_) {
            case Script::kGood:
              put(good_stream());
              sink.done();
              return true;
            case Script::kGarbage:
              put("data: not json\n\n");
              sink.done();
              return true;
            case Script::kDisconnectAfterFirst:
              put(first_event());
              return false;  // closes the connection with no last chunk
            case Script::kStallBeforeFirst:
              wait_released(std::chrono::seconds(10));
              return false;
            case Script::kStallAfterFirst:
              put(first_event());
              wait_released(std::chrono::seconds(10));
              return false;
            case Script::kLongStream:
              for (int i = 0; i < 2000; ++i) {
                if (!put(first_event())) return false;
                std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a slow engine
              }
              put("data: [DONE]\n\n");
              sink.done();
              return true;
            case Script::kGoodAfterGate: {
              const std::string all = good_stream();
              const std::string first = first_event();
              if (!put(first)) return false;
              if (!wait_released(std::chrono::seconds(10))) gate_timed_out = true;
              put(all.substr(first.size()));
              sink.done();
              return true;
            }
            case Script::kGoodBeforeGate:
              if (!wait_released(std::chrono::seconds(10))) gate_timed_out = true;
              put(good_stream());
              sink.done();
              return true;
            case Script::kStatus500:
              break;
          }
          return false;
        });
  }

  Script script_;
  httplib::Server server_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool released_ = false;
  std::string metrics_;
  std::set<int> client_ports_;
};

}  // namespace tessera::testing
