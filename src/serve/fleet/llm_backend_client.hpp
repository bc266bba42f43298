#pragma once

// LlmBackendClient: the gateway's client of one remote OpenAI-compatible engine (a backend
// of the run spec's `llm.backends`, docs/llm-gateway.md): a POST of /v1/completions or
// /v1/chat/completions, streamed (server-sent events handed over one whole event at a time,
// as they arrive: nothing is buffered beyond the event being read) or whole, and the health
// check (GET the gateway's health_path) and the load scrape (GET metrics_path, read as
// EngineLoad).
//
// Each call has its own connection (cpp-httplib) while it runs. A POST that ends completely
// (a whole answer, or a stream to data: [DONE]) gives its connection back to a pool of idle
// keep-alive connections (`gateway.keep_alive`, at most kMaxIdle) that the next POST takes
// first; any other ending closes it: a caller that stops a stream (its client went away)
// closes the connection, which is how an engine learns to cancel the request. A pooled
// connection the backend closed meanwhile fails before the request reaches it: that POST is
// sent again on a new connection, once. stop_all() closes every call's connection and the
// pool (shutdown). Health checks and scrapes use a connection of their own.
//
// Threads: post(), ready() and load() from any number of threads at once, each blocking its
// caller; stop_all() from any thread.

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "serve/fleet/engine_load.hpp"
#include "serve/fleet/sse_events.hpp"
#include "spec/llm_backend_spec.hpp"

namespace httplib {
class Client;
}

namespace tessera {

struct LlmUpstreamResult {
  enum class Kind {
    kOk,           // whole answer (2xx JSON), or a stream that ended with data: [DONE]
    kUnavailable,  // no answer: connect failed, reset, timeout, 5xx or 429 before any event
    kRefused,      // 4xx (not 429): the request's fault; `status` and `body` are the backend's
    kBroken,       // a stream or body that broke the protocol, an error event, a disconnect
                   // or a timeout after the answer began
    kStopped,      // the caller stopped it (on_event returned false) or stop_all()
  };
  Kind kind = Kind::kOk;
  int status = 0;            // the backend's HTTP status (0: none)
  std::string content_type;  // the backend's Content-Type
  std::string body;          // a whole answer's body (kOk not streamed, kRefused)
  std::string detail;        // why, for anything but kOk
  std::string usage;         // the last "usage" object seen (JSON text), or ""
};

class LlmBackendClient {
 public:
  static constexpr std::size_t kMaxIdle = 64;  // pooled idle connections per backend
  // `api_key`: sent as `Authorization: Bearer KEY` ("": none).
  LlmBackendClient(const LlmBackendSpec& backend, const LlmGatewaySpec& gateway,
                   std::string api_key = "");
  ~LlmBackendClient();
  LlmBackendClient(const LlmBackendClient&) = delete;
  LlmBackendClient& operator=(const LlmBackendClient&) = delete;

  // POSTs `body` to the backend's prefix + `path`. With `stream`, each whole event of a 2xx
  // text/event-stream answer goes to `on_event` as it arrives (return false to stop);
  // without, a 2xx answer's body is returned. Never throws.
  LlmUpstreamResult post(const std::string& path, const std::string& body, bool stream,
                         const std::function<bool(SseEvent&&)>& on_event);
  // GET health_path: true on a 2xx within the health timeout; else `why` says what failed.
  bool ready(std::string& why);
  // GET metrics_path within the health timeout (at most 4 MiB of it) and read the engine's
  // load from vLLM's metric names; nullopt with `why` when it cannot.
  std::optional<EngineLoad> load(std::string& why);
  // Closes every call's connection; later calls end at once as kStopped.
  void stop_all();

  const std::string& url() const { return backend_.url; }

 private:
  bool track(httplib::Client* client);
  void untrack(httplib::Client* client);
  // One POST on `client` (tracked by the caller); `unsent`: it failed before any answer
  // with a connection error, so a reused connection may be retried on a new one.
  LlmUpstreamResult post_on(httplib::Client& client, const std::string& path,
                            const std::string& body, bool stream,
                            const std::function<bool(SseEvent&&)>& on_event, bool& unsent);
  // A connection for a POST: an idle pooled one (`reused` true) or a new one.
  std::unique_ptr<httplib::Client> take_connection(bool& reused);
  void give_back(std::unique_ptr<httplib::Client> client);

  LlmBackendSpec backend_;
  LlmGatewaySpec gateway_;
  std::string api_key_;
  std::mutex mutex_;
  std::set<httplib::Client*> active_;
  std::vector<std::unique_ptr<httplib::Client>> idle_;  // open keep-alive connections
  bool stopped_ = false;
};

}  // namespace tessera
