#pragma once

// LlmGateway: `tessera serve` of an `llm:` run spec whose instances are remote
// OpenAI-compatible engines (`llm.backends`: vLLM, SGLang, TGI, or `tessera serve` of an llm:
// run; docs/llm-gateway.md). It serves
//   POST /v1/completions, /v1/chat/completions   proxied to one backend, whole or streamed
//   GET  /v1/models, /health, /metrics
// and for each request picks a backend in service (the gateway's routing policy), rewrites
// the body's "model" to the backend's, and relays the answer:
//  - streamed: each server-sent event is written to the client as soon as the backend's
//    whole event has arrived (no buffering beyond it), `usage` included as sent. The answer
//    opens with the first event that carries a token; a backend that fails before it
//    (connect refused, 5xx/429, timeout, garbage, a disconnect) is taken out of service and
//    the request re-sent once (`gateway.retries`) to another backend; after it, the stream
//    ends with an error event and data: [DONE]. A client that goes away closes the
//    backend's connection (the engine cancels the request) at the next event.
//  - whole: the backend's body and status; a 4xx (the request's fault) is relayed as is.
// A backend out of service stays out until its health check (GET `gateway.health_path`)
// passes; checks run every `gateway.health_interval_ms` and at start().
//
// Ledger: every admitted request ends exactly once as ok / late (judged by the engine's
// outcome rule on the TTFT and TPOT the gateway saw, against the app's SLOs), shed (429 over
// --max-inflight, 503 while draining), failed (no backend, a backend's 4xx, a broken answer),
// or cancelled (the client went away). Bodies that are not JSON objects, and an unknown
// "model", are refused (400/404) before admission and not counted.
//
// Threads: start(), shutdown() and check_now() from the owner; each proxied request runs
// on its own thread (at most --max-inflight), joined by shutdown(); stats from any thread.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "serve/fleet/engine_load.hpp"
#include "serve/http/access.hpp"

namespace tessera {

struct RunSpec;

struct LlmGatewayOptions {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: any free port
  int http_threads = 2;
  int max_inflight = 256;
  std::size_t max_body_bytes = 4u << 20;
  std::size_t max_connections = 512;
  double read_timeout_s = 10.0;
  double write_timeout_s = 30.0;
  double drain_timeout_s = 10.0;
  AccessConfig access;  // API keys of the gateway's own clients (docs/security.md)
};

struct LlmGatewayLedger {
  uint64_t admitted = 0;  // requests that entered the ledger
  uint64_t ok = 0, late = 0, shed = 0, failed = 0, cancelled = 0;
  // Of shed: proactively (slo_aware: no backend could meet its TTFT SLO), over
  // --max-inflight, while draining.
  uint64_t shed_ttft_slo = 0, shed_max_inflight = 0, shed_draining = 0;
  uint64_t retried = 0;  // re-sent to another backend before their first token
  uint64_t ended() const { return ok + late + shed + failed + cancelled; }
};

struct LlmGatewayBackendStats {
  std::string url;
  bool up = false;
  int outstanding = 0;    // requests being proxied to it now
  uint64_t requests = 0;  // sent to it
  uint64_t failures = 0;  // of those, unavailable or broken
  std::string last_error;
  // `kv_load` routing: the engine's load at the last health check (vLLM's metric names);
  // load_known is false until one was read, and after a read that failed.
  bool load_known = false;
  EngineLoad load;
};

class LlmGateway {
 public:
  // Throws SpecError when the run spec has no `llm.backends`.
  LlmGateway(const RunSpec& run, LlmGatewayOptions options);
  ~LlmGateway();
  LlmGateway(const LlmGateway&) = delete;
  LlmGateway& operator=(const LlmGateway&) = delete;

  // Checks every backend, starts the health thread and the HTTP front end; returns the port.
  int start();
  // Drains (drain_timeout_s), then closes every backend connection and ends the rest as
  // failed, joins the request threads and the health thread. Idempotent.
  void shutdown();
  // Checks every backend now (in parallel): one that passes is back in service.
  void check_now();

  LlmGatewayLedger ledger() const;
  std::vector<LlmGatewayBackendStats> backends() const;
  // Requests admitted and not yet ended.
  std::size_t in_flight() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace tessera
