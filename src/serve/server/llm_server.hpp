#pragma once

// LlmServer: `tessera serve` for a run spec with an `llm:` section (docs/llm-serve.md). The
// run's deployment of the LLM task served live by an LlmEndpoint (the engine, an
// LlmInstanceScheduler per instance, the libtorch Decoder on each instance's thread) behind
// the HTTP front end of src/serve/http, with:
//   POST /v1/completions, /v1/chat/completions   OpenAI-compatible (sampling, stop, n,
//                                                logprobs, ...); "stream": true answers
//                                                with server-sent events and data: [DONE]
//   GET  /v1/models; POST /tokenize, /detokenize (vLLM's)
//   POST /v2/models/{m}[/versions/1]/generate, generate_stream  KServe v2 generate extension
//   GET  /v2, /v2/models, /v2/models/{m}[/versions/1][/ready], /v2/health/live,
//        /v2/health/ready, /metrics
// Bounded input: body size, prompt bytes and tokens, max_tokens, prompt + max_tokens
// within the model's positions, requests in flight (429). Every request is answered
// exactly once, as the engine's ledger ends it; a streamed answer opens with its first
// token, so a request dropped before it gets a plain 503.
//
// Threads: start() and shutdown() from the owner; handlers on the HTTP threads; the
// endpoint's callbacks on its loop and instance threads. shutdown() is idempotent and
// bounded by drain_timeout_s plus the HTTP grace.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "serve/http/access.hpp"
#include "serve/http/tls_files.hpp"
#include "serve/openai/llm_protocol.hpp"
#include "serve/runtime/llm_endpoint.hpp"

namespace tessera {

class ChatTemplate;
class Decoder;
class Tokenizer;
struct RunSpec;

struct LlmServeOptions {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: any free port
  int http_threads = 2;
  int max_inflight = 256;          // requests generating or waiting at once; more get 429
  uint32_t max_prompt_tokens = 0;  // 0: the model's positions less one
  LlmRequestLimits limits;         // prompt bytes, max_tokens bounds
  std::size_t max_body_bytes = 4u << 20;
  std::size_t max_connections = 512;
  std::size_t max_client_connections = 256;  // per remote address (HttpLimits)
  double header_timeout_s = 5.0;             // a request's header must arrive within this
  double read_timeout_s = 10.0;
  double write_timeout_s = 30.0;  // a client must take each streamed chunk within this
  double drain_timeout_s = 10.0;
  DeviceSpec device{};  // where from_run's decoder runs (`tessera serve --device`)
  // The end-of-sequence id a request with `ignore_eos: false` stops at; -1: none (from_run
  // reads the checkpoint's config.json `eos_token_id`).
  int64_t eos_token = -1;
  std::string step_log;  // a CSV line per step here (LlmStepLog); "" for none
  AccessConfig access;   // API keys (docs/security.md); an LLM server has no control routes
  TlsFiles http_tls;     // TLS on the HTTP port (PEM files; none: plain HTTP)
  // The chat template of /v1/chat/completions (from_run: the checkpoint's
  // tokenizer_config.json, when it has one); null: "role: content" lines.
  std::shared_ptr<const ChatTemplate> chat_template;
};

class LlmServer {
 public:
  // The run spec's app (its SLO, TTFT and TPOT SLOs judge each request), deployment (its
  // instances of the LLM task), profiles, policies (dispatch among the instances), `llm:`
  // section (the model's name, the scheduler) and cost model (predicts steps for the
  // SLO-aware admission). `decoders`: one per instance, or one shared by all.
  LlmServer(const RunSpec& run, std::vector<std::shared_ptr<const Decoder>> decoders,
            std::shared_ptr<const Tokenizer> tokenizer, LlmServeOptions options);
  // The same, each instance with its own decoder of the checkpoint in `checkpoint`
  // (config.json, safetensors, optional tokenizer.json).
  static std::unique_ptr<LlmServer> from_run(const RunSpec& run,
                                             const std::filesystem::path& checkpoint,
                                             LlmServeOptions options);
  ~LlmServer();
  LlmServer(const LlmServer&) = delete;
  LlmServer& operator=(const LlmServer&) = delete;

  int start();
  void shutdown();

  const std::string& model_name() const;
  std::string tokenizer_name() const;
  LlmEndpointStats stats() const;
  // Requests admitted and not yet answered.
  std::size_t in_flight() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
