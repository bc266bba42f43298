#include "serve/metrics/llm_metrics.hpp"

#include <fmt/format.h>

namespace tessera {
namespace {

const std::vector<double> kTtftBounds{0.005, 0.01, 0.025, 0.05, 0.1,  0.25, 0.5,
                                      1.0,   2.5,  5.0,   10.0, 30.0, 60.0};
const std::vector<double> kTpotBounds{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                      0.1,   0.25,   0.5,   1.0,  2.5};
constexpr std::array<const char*, 5> kEndNames{"ok", "late", "dropped", "failed", "cancelled"};

void histogram(std::string& out, const std::string& name, const std::string& help,
               const std::string& label, const PromHistogram& h) {
  prom_header(out, name, "histogram", help);
  render_prom_histogram(out, name, label, h);
}

}  // namespace

LlmServeMetrics::LlmServeMetrics(std::string model)
    : model_(std::move(model)), ttft_(kTtftBounds), tpot_(kTpotBounds) {}

void LlmServeMetrics::step(const LlmStepStats& stats, Time measured_s) {
  std::lock_guard lock(mutex_);
  ++steps_;
  step_seconds_ += measured_s;
  step_predicted_seconds_ += stats.duration;
  prefill_tokens_ += stats.prefill_tokens;
  decode_tokens_ += stats.decode_tokens;
  if (stats.prefill_tokens == 0) {
    ++decode_steps_;
    decode_step_seconds_ += measured_s;
    decode_step_predicted_seconds_ += stats.duration;
    decode_step_tokens_ += stats.decode_tokens;
  }
}

void LlmServeMetrics::request_ended(const RequestRecord& r, uint32_t prompt_tokens,
                                    uint32_t output_tokens) {
  std::lock_guard lock(mutex_);
  switch (r.outcome) {
    case Outcome::kOk:
      ends_[kOk]++;
      break;
    case Outcome::kLate:
      ends_[kLate]++;
      break;
    case Outcome::kDropped:
      if (r.reason == DropReason::kCancelled) {
        ends_[kCancelled]++;
      } else {
        ends_[kDropped]++;
        drops_[static_cast<std::size_t>(r.reason)]++;
      }
      break;
    case Outcome::kFailed:
      ends_[kFailed]++;
      break;
  }
  generated_ += output_tokens;
  prompt_ += prompt_tokens;
  if (r.ttft >= 0) ttft_.add(r.ttft);
  if (r.tpot >= 0 && output_tokens > 1) tpot_.add(r.tpot);
}

void LlmServeMetrics::http_error(int status) {
  std::lock_guard lock(mutex_);
  http_errors_[status]++;
}

void LlmServeMetrics::rejected() {
  std::lock_guard lock(mutex_);
  ++rejected_;
}

std::string LlmServeMetrics::render(const Gauges& g) const {
  std::lock_guard lock(mutex_);
  const std::string label = fmt::format("model=\"{}\"", model_);
  std::string out;
  histogram(out, "tessera_llm_ttft_seconds", "Time to first token of finished requests.", label,
            ttft_);
  histogram(out, "tessera_llm_tpot_seconds",
            "Mean time per output token after the first, per finished request.", label, tpot_);
  auto counter = [&](const char* name, const char* help, auto value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} counter\n{}{{{}}} {}\n", name, help, name, name,
                       label, value);
  };
  auto gauge = [&](const char* name, const char* help, auto value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{}{{{}}} {}\n", name, help, name, name,
                       label, value);
  };
  counter("tessera_llm_generated_tokens_total",
          "Output tokens generated (tokens/s: its rate), counted when a request ends.", generated_);
  counter("tessera_llm_prompt_tokens_total", "Prompt tokens of ended requests.", prompt_);
  counter("tessera_llm_steps_total", "Steps (prefill and/or decode iterations) run.", steps_);
  counter("tessera_llm_step_seconds_total", "Measured seconds of the steps run.", step_seconds_);
  counter("tessera_llm_step_predicted_seconds_total",
          "The cost model's seconds for the same steps (the run's simulation.cost_model).",
          step_predicted_seconds_);
  counter("tessera_llm_prefill_tokens_total", "Prompt tokens prefilled by steps (recompute too).",
          prefill_tokens_);
  counter("tessera_llm_decode_tokens_total", "Tokens decoded by steps.", decode_tokens_);
  counter("tessera_llm_decode_only_steps_total", "Steps that prefill nothing.", decode_steps_);
  counter("tessera_llm_decode_only_step_seconds_total", "Measured seconds of those steps.",
          decode_step_seconds_);
  counter("tessera_llm_decode_only_step_predicted_seconds_total",
          "The cost model's seconds for those steps.", decode_step_predicted_seconds_);
  counter("tessera_llm_decode_only_step_tokens_total", "Tokens those steps decoded.",
          decode_step_tokens_);
  counter("tessera_llm_preemptions_total", "Requests preempted (their KV freed, to recompute).",
          g.preemptions);
  counter("tessera_llm_prefix_cache_queries_total",
          "Prompt tokens of admitted requests looked up in the prefix cache (as "
          "vllm:prefix_cache_queries).",
          g.prefix_cache_queries);
  counter("tessera_llm_prefix_cache_hits_total",
          "Of those, tokens found cached: their prefill was skipped (as vllm:prefix_cache_hits).",
          g.prefix_cache_hits);
  counter("tessera_llm_rejected_total", "Requests refused with 429 (too many in flight).",
          rejected_);
  out +=
      "# HELP tessera_llm_requests_total Requests ended, by outcome.\n"
      "# TYPE tessera_llm_requests_total counter\n";
  for (std::size_t i = 0; i < ends_.size(); ++i) {
    out += fmt::format("tessera_llm_requests_total{{{},outcome=\"{}\"}} {}\n", label, kEndNames[i],
                       ends_[i]);
  }
  out +=
      "# HELP tessera_llm_dropped_total Requests dropped, by reason.\n"
      "# TYPE tessera_llm_dropped_total counter\n";
  for (std::size_t i = 1; i < drops_.size(); ++i) {
    if (static_cast<DropReason>(i) == DropReason::kCancelled) continue;  // an outcome of its own
    out += fmt::format("tessera_llm_dropped_total{{{},reason=\"{}\"}} {}\n", label,
                       drop_reason_name(static_cast<DropReason>(i)), drops_[i]);
  }
  out +=
      "# HELP tessera_llm_http_errors_total Requests answered 4xx/5xx before generation.\n"
      "# TYPE tessera_llm_http_errors_total counter\n";
  for (const auto& [status, n] : http_errors_) {
    out += fmt::format("tessera_llm_http_errors_total{{{},status=\"{}\"}} {}\n", label, status, n);
  }
  out +=
      "# HELP tessera_llm_instance_steps_total Steps run, by instance of the deployment.\n"
      "# TYPE tessera_llm_instance_steps_total counter\n";
  for (std::size_t i = 0; i < g.instance_steps.size(); ++i) {
    out += fmt::format("tessera_llm_instance_steps_total{{{},instance=\"{}\"}} {}\n", label, i,
                       g.instance_steps[i]);
  }
  gauge("tessera_llm_kv_blocks_used", "KV-cache blocks held now, over the instances.", g.kv_used);
  gauge("tessera_llm_kv_blocks_total", "KV-cache blocks of the instances.", g.kv_total);
  gauge("tessera_llm_queue_waiting", "Requests waiting to be admitted (queued or preempted).",
        g.waiting);
  gauge("tessera_llm_running", "Requests admitted (holding KV blocks).", g.running);
  // The same state under vLLM's names and label (docs.vllm.ai, "Production Metrics"), so a
  // router that reads a vLLM engine's /metrics (an endpoint picker, tessera's LLM gateway)
  // reads this server the same way. kv_cache_usage_perc is V1's name, gpu_cache_usage_perc
  // the older engine's; both are a fraction (1 = every block held).
  const std::string vllm_label = fmt::format("model_name=\"{}\"", model_);
  auto vllm_gauge = [&](const char* name, const char* help, auto value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{}{{{}}} {}\n", name, help, name, name,
                       vllm_label, value);
  };
  vllm_gauge("vllm:num_requests_running", "Requests in the running batch (tessera_llm_running).",
             g.running);
  vllm_gauge("vllm:num_requests_waiting", "Requests waiting (tessera_llm_queue_waiting).",
             g.waiting);
  const double kv_usage = g.kv_total > 0 ? static_cast<double>(g.kv_used) / g.kv_total : 0.0;
  vllm_gauge("vllm:kv_cache_usage_perc", "KV-cache usage, 1 = every block held.", kv_usage);
  vllm_gauge("vllm:gpu_cache_usage_perc", "As vllm:kv_cache_usage_perc (the pre-V1 name).",
             kv_usage);
  return out;
}

}  // namespace tessera
