#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/outcome.hpp"
#include "core/time.hpp"
#include "engine/app.hpp"
#include "serve/metrics/prometheus.hpp"

namespace tessera {

// How the server answered a request (the `outcome` label of tessera_requests_total).
enum class AnswerKind : uint8_t {
  kOk,        // 200, within the SLO
  kLate,      // 200, after the deadline
  kDropped,   // 503: a policy dropped it at a stage
  kFailed,    // 503: no live worker at a stage
  kRejected,  // 429: too many requests in flight
  kShutdown,  // 503: the server is shutting down
  kInvalid,   // 4xx: malformed request
  kError,     // 500: a model failed
  kCount,
};
std::string_view answer_kind_name(AnswerKind kind);

// The metrics of one endpoint (an application or a single model). Its engine's thread
// and the HTTP threads update it; /metrics renders it. All members are guarded by the
// owning ServerMetrics' mutex.
struct EndpointMetrics {
  EndpointMetrics(std::string name, const App& app);
  std::string name;
  std::vector<std::string> tasks;
  std::vector<std::vector<std::string>> variants;  // [task][variant]
  // Rows (items) by how each was answered, and requests (one per inference request, however
  // many rows it holds) by how the request was answered: a request's outcome is its first
  // row that was not ok or late, else late if any row was, else ok.
  std::array<uint64_t, static_cast<std::size_t>(AnswerKind::kCount)> answers{};
  std::array<uint64_t, static_cast<std::size_t>(AnswerKind::kCount)> requests{};
  PromHistogram latency;
  std::vector<PromHistogram> batch_size;               // per task
  std::vector<double> batch_seconds;                   // per task, total
  std::vector<std::vector<uint64_t>> variant_batches;  // [task][variant]
  // [task][reason]
  std::vector<std::array<uint64_t, static_cast<std::size_t>(DropReason::kCount)>> drops;
  std::vector<uint64_t> queue_length;  // per task, sampled at scrape time
};

// Prometheus text metrics for the whole server (docs/serve.md#metrics).
class ServerMetrics {
 public:
  EndpointMetrics& add_endpoint(const std::string& name, const App& app);

  // One row answered (tessera_rows_total, and the latency histogram when ok or late).
  void answered(EndpointMetrics& e, AnswerKind kind, Time latency);
  // One inference request answered (tessera_requests_total).
  void request_answered(EndpointMetrics& e, AnswerKind kind);
  void dropped(EndpointMetrics& e, TaskId task, DropReason reason);
  void batch_started(EndpointMetrics& e, TaskId task, int variant, std::size_t size);
  void batch_finished(EndpointMetrics& e, TaskId task, Time seconds);
  void set_queue_lengths(EndpointMetrics& e, const std::vector<std::size_t>& lengths);
  void http_error(int status);  // requests refused before reaching an endpoint
  void set_in_flight(int64_t n);
  // The loaded models: variant -> executor kind ("zoo:resnet18", "profile-timed", ...).
  // A profile-timed one is an emulation and is labelled emulated="true".
  void set_models(std::vector<std::pair<std::string, std::string>> variant_kinds);

  std::string render() const;
  // Batches run by the endpoint's workers so far (the statistics extension's
  // execution_count).
  uint64_t executions(const EndpointMetrics& e) const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<EndpointMetrics>> endpoints_;
  std::vector<std::pair<int, uint64_t>> http_errors_;
  int64_t in_flight_ = 0;
  std::vector<std::pair<std::string, std::string>> models_;  // variant, executor kind
};

}  // namespace tessera
