#include "serve/runtime/step_log.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace tessera {

LlmStepLog::LlmStepLog(const std::string& path, LlmObserver& next) : out_(path), next_(next) {
  if (!out_) throw std::runtime_error("--llm-step-log: cannot write " + path);
  out_ << "step,prefill_tokens,decode_tokens,kv_used_blocks,model_ms,live_ms\n" << std::flush;
}

void LlmStepLog::on_llm_step(WorkerId instance, const LlmStepStats& stats, Time measured_s) {
  out_ << fmt::format("{},{},{},{},{:.4f},{:.4f}\n", steps_++, stats.prefill_tokens,
                      stats.decode_tokens, stats.kv_used_blocks, stats.duration * 1e3,
                      measured_s * 1e3)
       << std::flush;
  next_.on_llm_step(instance, stats, measured_s);
}

}  // namespace tessera
