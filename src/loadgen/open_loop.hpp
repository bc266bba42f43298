#pragma once

// The open-loop sender both load generators use (run_loadgen for KServe v2 pipelines,
// run_llm_loadgen for streaming LLM completions): request i goes out `offsets[i]` seconds
// after a common start (500 ms from the call, so connections are set up first), on one of
// `connections` keep-alive clients, whatever the answers to earlier requests are doing.
// A request that could not leave within 1 ms of its time counts as sent late, by cause,
// and the largest lag is kept, so a summary can say when the client, not the server, was
// the bottleneck, and why: every connection was still busy with an earlier request at the
// request's time (too few connections for the load), or a connection was free but its
// thread sent late (the load generator's own machine was short of CPU, or connecting took
// longer than the 500 ms lead).
//
// Ownership and threads: run_open_loop owns its client threads and joins them before it
// returns. `send(i, client, since_start)` runs on a client thread at request i's time,
// once for each i, on a different thread from other requests'; it may write only request
// i's own slot of the caller's outcome array. `since_start()` reads the seconds since the
// common start (for timestamps the send records).

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loadgen/http_loadgen.hpp"

namespace tessera {

struct OpenLoopClient {
  std::string host;
  int port = 0;
  int connections = 1;
  double timeout_s = 30.0;  // read and write timeout of each request
  std::string warmup_path;  // a GET each client sends before the schedule starts
  bool progress = false;    // log "n/N answered" every 2 s
};

struct OpenLoopStats {
  double wall_s = 0.0;
  LateSends late_no_free_connection;  // every connection busy at the request's time
  LateSends late_client_slow;         // a connection was free; its thread sent late
  double max_send_lag_s = 0.0;        // over every send, late or not
};

// The send statistics a load generator reports (LoadgenStats, http_loadgen.hpp).
inline void record_sends(const OpenLoopStats& sent, LoadgenStats& stats) {
  stats.wall_s = sent.wall_s;
  stats.late_no_free_connection = sent.late_no_free_connection;
  stats.late_client_slow = sent.late_client_slow;
  stats.max_send_lag_s = sent.max_send_lag_s;
}

using SinceStart = std::function<double()>;

template <class Send>
OpenLoopStats run_open_loop(const std::vector<double>& offsets, const OpenLoopClient& client,
                            const Send& send) {
  using Steady = std::chrono::steady_clock;
  const Steady::time_point start = Steady::now() + std::chrono::milliseconds(500);
  const auto at = [&](double t) {
    return start + std::chrono::duration_cast<Steady::duration>(std::chrono::duration<double>(t));
  };
  const SinceStart since_start = [start] {
    return std::chrono::duration<double>(Steady::now() - start).count();
  };
  std::atomic<std::size_t> next{0};
  std::atomic<uint64_t> done_count{0};
  std::mutex lag_mutex;  // guards the three below
  double max_lag = 0.0;
  LateSends late_no_free_connection, late_client_slow;

  auto client_thread = [&] {
    httplib::Client cli(client.host, client.port);
    cli.set_tcp_nodelay(true);
    cli.set_keep_alive(true);
    cli.set_connection_timeout(5);
    cli.set_read_timeout(static_cast<time_t>(std::max(1.0, client.timeout_s)));
    cli.set_write_timeout(static_cast<time_t>(std::max(1.0, client.timeout_s)));
    // Connect before the schedule starts, so that connection setup is not latency.
    if (!client.warmup_path.empty()) cli.Get(client.warmup_path);
    bool sent_before = false;  // this connection has answered a request of the schedule
    while (true) {
      const std::size_t i = next.fetch_add(1);
      if (i >= offsets.size()) return;
      // Requests are taken in schedule order, so a connection that takes request i after
      // its time was the first to come free: all of them were busy until then.
      const bool no_free_connection = sent_before && Steady::now() > at(offsets[i]);
      std::this_thread::sleep_until(at(offsets[i]));
      const double lag = std::chrono::duration<double>(Steady::now() - at(offsets[i])).count();
      sent_before = true;
      {
        std::lock_guard lock(lag_mutex);
        max_lag = std::max(max_lag, lag);
        if (lag > 1e-3) {
          LateSends& late = no_free_connection ? late_no_free_connection : late_client_slow;
          ++late.count;
          late.worst_s = std::max(late.worst_s, lag);
        }
      }
      send(i, cli, since_start);
      done_count.fetch_add(1);
    }
  };
  const auto wall0 = Steady::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < std::max(1, client.connections); ++i) threads.emplace_back(client_thread);
  if (client.progress) {
    while (done_count.load() < offsets.size()) {
      std::this_thread::sleep_for(std::chrono::seconds(2));
      spdlog::info("loadgen: {}/{} answered", done_count.load(), offsets.size());
    }
  }
  for (auto& t : threads) t.join();
  OpenLoopStats stats;
  stats.wall_s = std::chrono::duration<double>(Steady::now() - wall0).count();
  stats.late_no_free_connection = late_no_free_connection;
  stats.late_client_slow = late_client_slow;
  stats.max_send_lag_s = max_lag;
  return stats;
}

// Each arrival's send time in seconds from the first arrival.
template <class ArrivalList>
std::vector<double> offsets_from_first(const ArrivalList& arrivals) {
  std::vector<double> offsets;
  offsets.reserve(arrivals.size());
  const double first = arrivals.empty() ? 0.0 : arrivals.front().time;
  for (const auto& a : arrivals) offsets.push_back(a.time - first);
  return offsets;
}

}  // namespace tessera
