#pragma once

// LlmServer: `tessera serve` for a run spec with an `llm:` section (docs/llm-serve.md). One
// LlmRuntime (the LlmInstanceScheduler driving the libtorch Decoder in real time) behind
// the HTTP front end of src/server, with:
//   POST /v1/completions, /v1/chat/completions   OpenAI-compatible; "stream": true answers
//                                                with server-sent events and data: [DONE]
//   GET  /v1/models
//   POST /v2/models/{m}/generate, generate_stream KServe v2 / Triton generate extension
//   GET  /v2/models/{m}, /v2/health/live, /v2/health/ready, /metrics
// Bounded input: body size, prompt bytes and tokens, max_tokens, prompt + max_tokens
// within the model's positions, requests in flight (429). Every request is answered
// exactly once; a streamed answer opens with its first token, so a request dropped before
// it gets a plain 503.
//
// Threads: start() and shutdown() from the owner; handlers on the HTTP threads; the
// runtime's callbacks on its thread. shutdown() is idempotent and bounded by
// drain_timeout_s plus the HTTP grace.

#include <filesystem>
#include <memory>
#include <string>

#include "core/device.hpp"
#include "engine/cost_model.hpp"
#include "llm/llm_scheduler_config.hpp"
#include "serve/openai/llm_protocol.hpp"
#include "serve/runtime/llm_runtime.hpp"

namespace tessera {

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
  double read_timeout_s = 10.0;
  double write_timeout_s = 30.0;  // a client must take each streamed chunk within this
  double drain_timeout_s = 10.0;
  DeviceSpec device{};  // where from_run's decoder runs (`tessera serve --device`)
  // The end-of-sequence id a request with `ignore_eos: false` stops at; -1: none (from_run
  // reads the checkpoint's config.json `eos_token_id`).
  int64_t eos_token = -1;
  std::string step_log;  // a CSV line per step here (LlmStepLog); "" for none
};

class LlmServer {
 public:
  LlmServer(std::shared_ptr<const Decoder> decoder, std::shared_ptr<const Tokenizer> tokenizer,
            std::string model_name, const LlmSchedulerConfig& config,
            std::shared_ptr<const CostModel> cost, LlmServeSlos slos, LlmServeOptions options);
  // The run spec's `llm:` section, app SLOs and cost model, the checkpoint in `checkpoint`
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
  LlmRuntimeStats stats() const;
  std::size_t in_flight() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
