#include "serve/server/llm_server.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "llm_torch/decoder.hpp"
#include "llm_torch/host_memory.hpp"
#include "serve/http/front_end.hpp"
#include "serve/metrics/llm_metrics.hpp"
#include "serve/runtime/event_loop.hpp"
#include "serve/runtime/step_log.hpp"
#include "serve/server/llm_routes.hpp"
#include "spec/run_spec.hpp"
#include "tokenizer/chat_template.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera {
namespace {

// The endpoint's steps and ends, into the server's metrics.
class MetricsObserver final : public LlmObserver {
 public:
  explicit MetricsObserver(LlmServeMetrics& metrics) : metrics_(metrics) {}
  void on_llm_step(WorkerId, const LlmStepStats& stats, Time measured_s) override {
    metrics_.step(stats, measured_s);
  }
  void on_llm_end(const LlmRequestEnd& end) override {
    metrics_.request_ended(end.record, end.prompt_tokens, end.output_tokens);
  }

 private:
  LlmServeMetrics& metrics_;
};

// The checkpoint's config.json `eos_token_id` (an id, or a list whose first is used); -1
// when it has none. An id outside [0, vocab) is a SpecError naming the file and field.
int64_t eos_token_of(const std::filesystem::path& config, int64_t vocab) {
  std::ifstream in(config);
  if (!in) return -1;
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return -1;  // Decoder::load judged the file
  auto it = doc.find("eos_token_id");
  if (it == doc.end() || it->is_null()) return -1;
  const nlohmann::json& id = it->is_array() && !it->empty() ? (*it)[0] : *it;
  if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= vocab) {
    throw SpecError(
        config.string(), "eos_token_id",
        "must be a token id in [0, " + std::to_string(vocab) + "), not " + id.dump().substr(0, 40));
  }
  return id.get<int64_t>();
}

}  // namespace

// The server's parts; only this file sees them.
struct LlmServer::Impl {
  std::shared_ptr<const Decoder> decoder;  // the first instance's: the model's shape
  std::shared_ptr<const Tokenizer> tokenizer;
  std::string model;
  std::string policy;  // the instances' scheduling policy
  LlmServeOptions options;
  uint32_t max_prompt_tokens = 0;
  uint32_t max_positions = 0;
  LlmServeMetrics metrics;
  MetricsObserver observer{metrics};
  std::unique_ptr<LlmStepLog> step_log;  // before the endpoint: it outlives its threads
  SteadyClock clock;
  EventLoop loop{clock};
  // Before the endpoint: a request's admission ticket may be released as it goes (the
  // routes are stopped by shutdown() first).
  std::unique_ptr<FrontEnd> front;
  std::unique_ptr<LlmEndpoint> endpoint;
  bool started = false;
  bool stopped = false;
  int64_t started_at = 0;  // Unix seconds of start(): /v1/models' "created"

  Impl(std::shared_ptr<const Decoder> d, std::shared_ptr<const Tokenizer> t, std::string name,
       LlmServeOptions o)
      : decoder(std::move(d)),
        tokenizer(std::move(t)),
        model(std::move(name)),
        options(std::move(o)),
        metrics(model) {}
};

LlmServer::LlmServer(const RunSpec& run, std::vector<std::shared_ptr<const Decoder>> decoders,
                     std::shared_ptr<const Tokenizer> tokenizer, LlmServeOptions options) {
  if (!run.llm) {
    throw SpecError(run.file.string(), "llm", "an LLM server needs the run spec's llm: section");
  }
  if (decoders.empty() || decoders.front() == nullptr) {
    throw std::invalid_argument("an LLM server needs a decoder");
  }
  impl_ = std::make_unique<Impl>(decoders.front(), std::move(tokenizer), run.llm->model.name,
                                 std::move(options));
  Impl& s = *impl_;
  s.policy = llm_policy_name(run.llm->scheduler.policy);
  HttpLimits limits;
  limits.max_connections = s.options.max_connections;
  limits.body_limit = s.options.max_body_bytes;
  limits.max_client_connections = std::max<std::size_t>(1, s.options.max_client_connections);
  limits.header_timeout_s = s.options.header_timeout_s;
  limits.read_timeout_s = s.options.read_timeout_s;
  limits.write_timeout_s = s.options.write_timeout_s;
  limits.threads = std::max(1, s.options.http_threads);
  s.front = std::make_unique<FrontEnd>(
      limits, s.options.max_inflight, [&s](int status) { s.metrics.http_error(status); },
      [](const std::string& message) { return kserve_error(message); });
  s.front->set_access(AccessControl(s.options.access));
  s.front->set_tls(s.options.http_tls);
  const auto positions = s.decoder->architecture().max_positions;
  s.max_positions =
      positions > 0 ? static_cast<uint32_t>(std::min<int64_t>(positions, 1 << 24)) : (1u << 16);
  s.max_prompt_tokens = s.options.max_prompt_tokens > 0
                            ? std::min(s.options.max_prompt_tokens, s.max_positions - 1)
                            : s.max_positions - 1;
  LlmObserver* observer = &s.observer;
  if (!s.options.step_log.empty()) {
    s.step_log = std::make_unique<LlmStepLog>(s.options.step_log, s.observer);
    observer = s.step_log.get();
  }
  s.endpoint = std::make_unique<LlmEndpoint>(run, std::move(decoders), s.clock, s.loop, observer);
  add_llm_routes(s.front->routes(),
                 LlmRoutes{s.model, s.tokenizer, s.options.chat_template, s.options.limits,
                           s.max_prompt_tokens, s.max_positions, s.options.eos_token, s.started_at,
                           *s.endpoint, s.metrics, s.front->admission()});
}

std::unique_ptr<LlmServer> LlmServer::from_run(const RunSpec& run,
                                               const std::filesystem::path& checkpoint,
                                               LlmServeOptions options) {
  if (!run.llm) {
    throw SpecError(run.file.string(), "llm", "an LLM server needs the run spec's llm: section");
  }
  host_memory::hold_freed_host_memory();  // as a GPU's caching allocator: steady requests
  DecoderOptions decoder_options;
  decoder_options.device = options.device;
  // Each instance holds its own weights, as the replicas of a deployment do, so that the
  // instances' steps run at once.
  std::vector<std::shared_ptr<const Decoder>> decoders;
  const int instances = std::max(1, run.deployment.total_workers());
  for (int i = 0; i < instances; ++i) {
    decoders.push_back(Decoder::load(checkpoint, decoder_options));
  }
  const int64_t vocab = decoders.front()->architecture().vocab;
  std::shared_ptr<const Tokenizer> tokenizer = load_tokenizer(checkpoint, vocab);
  if (options.eos_token < 0) options.eos_token = eos_token_of(checkpoint / "config.json", vocab);
  if (!options.chat_template) {
    if (auto t = ChatTemplate::load(checkpoint / "tokenizer_config.json")) {
      options.chat_template = std::make_shared<const ChatTemplate>(std::move(*t));
    }
  }
  return std::make_unique<LlmServer>(run, std::move(decoders), std::move(tokenizer),
                                     std::move(options));
}

LlmServer::~LlmServer() { shutdown(); }

int LlmServer::start() {
  Impl& s = *impl_;
  if (s.started) return s.options.port;
  s.started_at = std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
  s.loop.start();
  s.options.port = s.front->start(s.options.host, s.options.port);
  s.started = true;
  spdlog::info("LLM '{}' ({} tokenizer, {} policy, {} instance(s)) on {}:{}", s.model,
               s.tokenizer->name(), s.policy, s.endpoint->instances(), s.options.host,
               s.options.port);
  spdlog::info("  POST /v1/completions, /v1/chat/completions; GET /v1/models");
  spdlog::info("  POST /v2/models/{}/generate, /v2/models/{}/generate_stream; GET /metrics",
               s.model, s.model);
  return s.options.port;
}

void LlmServer::shutdown() {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  s.front->drain(s.started ? s.options.drain_timeout_s : 0.0);
  s.endpoint->shutdown();  // ends the rest as failed (503)
  s.loop.stop();
  s.front->stop(1.0);
}

const std::string& LlmServer::model_name() const { return impl_->model; }
std::string LlmServer::tokenizer_name() const { return impl_->tokenizer->name(); }
LlmEndpointStats LlmServer::stats() const { return impl_->endpoint->stats(); }
std::size_t LlmServer::in_flight() const {
  return static_cast<std::size_t>(impl_->front->admission().in_flight());
}

}  // namespace tessera
