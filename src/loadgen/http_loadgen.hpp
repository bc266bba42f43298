#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/app.hpp"
#include "metrics/metrics.hpp"
#include "metrics/report.hpp"
#include "workload/arrival.hpp"

namespace tessera {

struct LoadgenOptions {
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string model;        // the endpoint to drive; empty: the app's name
  int connections = 64;     // client threads, each with one keep-alive connection
  int distinct_inputs = 8;  // random request bodies, used in turn
  uint64_t seed = 1;        // for the random inputs
  double timeout_s = 60.0;  // per request
  double window_s = 1.0;    // time-series window of the report
  bool progress = false;
};

// Requests sent more than 1 ms behind their schedule for one cause, and the worst delay.
struct LateSends {
  uint64_t count = 0;
  double worst_s = 0.0;
};

// Client-side facts that summary.json has no field for.
struct LoadgenStats {
  std::vector<std::pair<int, uint64_t>> status_counts;  // HTTP status -> responses (0: no response)
  // Requests sent more than 1 ms after their scheduled time, by cause (open_loop.hpp):
  // every connection was busy with an earlier request, or one was free and its thread
  // sent late (the client's machine short of CPU).
  LateSends late_no_free_connection;
  LateSends late_client_slow;
  double max_send_lag_s = 0.0;  // the worst delay of a send behind its schedule
  uint64_t sent_late() const { return late_no_free_connection.count + late_client_slow.count; }
  double wall_s = 0.0;
  // Variants the server ran as profile-timed emulations (its metadata's
  // parameters.emulated): the run measured serving, not those models.
  std::vector<std::string> emulated;
};

// What a client cannot see, for summarize(): the server's batches and GPU time, and the
// sub-requests inside it.
Unmeasured client_unmeasured();

struct LoadgenResult {
  LoadgenResult(const App& app, double window) : metrics(app, window) {}
  MetricsCollector metrics;  // filled as the simulator fills it (summarize() works on it)
  Unmeasured unmeasured = client_unmeasured();  // pass to summarize()
  LoadgenStats stats;
};

// Replays `arrivals` open-loop against a tessera server: request i is sent at its
// arrival time (relative to the first) whatever happened to earlier ones, on the first
// free connection; its latency counts from the scheduled time, so waiting for a free
// connection counts as latency. Each answer becomes a RequestRecord (docs/serve.md#loadgen):
// 200 -> ok or late against the request's SLO, 503 dropped -> dropped at the named stage
// for the named reason, 429 -> dropped (overload) at the first root, anything else or no
// answer -> failed at the first root. The mean accuracy is the servers' (each answer's
// parameters.accuracy), not measured when an answer lacks it. Throws std::runtime_error,
// saying why, if the server does not answer the model's metadata request.
LoadgenResult run_loadgen(const App& app, const std::vector<Arrival>& arrivals,
                          const LoadgenOptions& options);

}  // namespace tessera
