#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/app.hpp"
#include "metrics/metrics.hpp"

namespace tessera {

// The parts of a summary that its producer did not measure, each with the reason (empty:
// measured). summarize() writes such a field as null, with the reason under
// "not_measured" (keyed by the field's path), and format_summary() leaves its row out:
// a number never stands for something nobody measured. A load generator is a client and
// sees only what the server's answers carry. summarize() itself adds what no producer
// measures in LLM runs (docs/simulate.md#summaryjson): accuracy, sub-requests, the
// share of step time wasted on late requests, and items per step.
struct Unmeasured {
  std::string gpu;          // gpu_seconds, each task's batches and gpu_seconds, and (unless
                            // given below) waste and batch_items
  std::string waste;        // wasted_gpu_seconds, invalid_rate
  std::string batch_items;  // each task's items and mean_batch_size
  std::string accuracy;     // mean_accuracy
  std::string subrequests;  // subrequests (JigsawServe's per-sub-request violations)
  std::string llm_engine;   // llm: steps, prefill/decode tokens, preemptions, KV cache
};

// summary.json's content (docs/simulate.md lists every field).
nlohmann::json summarize(const MetricsCollector& metrics, const App& app,
                         const Unmeasured& unmeasured = {});

// A readable table of the summary for the terminal: rows of measured fields only.
std::string format_summary(const nlohmann::json& summary);

// The latency distribution as CSV: `lower_ms,upper_ms,count`, one row per non-empty
// bucket of the log histogram (at most ~1,600 rows however many requests ran).
std::string latency_histogram_csv(const LogHistogram& latency);

// Writes DIR/summary.json, DIR/timeseries.csv, DIR/timeseries.svg and
// DIR/latency_histogram.csv. Queue columns and the queue panel are left out when the
// collector did not sample queues (a load generator's) or could not see them (an LLM
// run's waiting lines are inside its instances' schedulers), and the gpu_busy column when
// the summary says GPU time was not measured.
void write_report(const std::filesystem::path& dir, const nlohmann::json& summary,
                  const MetricsCollector& metrics, const App& app);

}  // namespace tessera
