#pragma once

// The closed-loop client the serving benchmarks share (serve_bench over HTTP, grpc_bench
// over gRPC): N client threads, each on its own connection, send one request after
// another for a fixed time; the result is the throughput and latency percentiles over all
// of them, plus the requests that failed, and the CPU time a request cost: the client
// threads' own, and the rest of the process's (the server under test: the other servers
// of the process are idle meanwhile). CPU time per request does not depend on what other
// tenants of a shared machine do, unlike requests per second. Likewise the heap
// allocations (operator new calls, bench/alloc_count.hpp) per request, the client's and
// the rest of the process's. The client threads are named `bench-client` (perf, top).
// Bench-only, header-only.
//
// Thread safety: run_closed_loop owns its threads and joins them before it returns;
// `connect` is called once on each client thread and the sender it returns is used only
// there.

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "alloc_count.hpp"

namespace tessera::bench {

struct LoadResult {
  double rps = 0.0;
  double p50_us = 0.0;
  double p99_us = 0.0;
  uint64_t errors = 0;
  double client_cpu_us = 0.0;  // CPU time per request of the client threads
  double server_cpu_us = 0.0;  // CPU time per request of the rest of the process
  double client_allocs = 0.0;  // operator new calls per request by the client threads
  double server_allocs = 0.0;  // operator new calls per request by the rest of the process
};

// CPU seconds used so far by the calling thread, or by the whole process.
inline double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}
inline double process_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// `connect()` runs on each client thread before the clock starts (open the connection,
// make a first call) and returns a sender: a callable `bool()` that sends one request and
// says whether it was answered as expected.
template <class Connect>
LoadResult run_closed_loop(int connections, double seconds, const Connect& connect) {
  using Clock = std::chrono::steady_clock;
  std::atomic<bool> go{false};
  std::atomic<bool> stop{false};
  std::vector<std::vector<double>> lat(static_cast<std::size_t>(connections));
  std::vector<uint64_t> errors(static_cast<std::size_t>(connections), 0);
  std::vector<double> client_cpu(static_cast<std::size_t>(connections), 0.0);
  std::vector<uint64_t> client_allocs(static_cast<std::size_t>(connections), 0);
  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back([&, c] {
      pthread_setname_np(pthread_self(), "bench-client");
      auto send = connect();
      while (!go.load()) std::this_thread::yield();
      auto& mine = lat[static_cast<std::size_t>(c)];
      const double cpu0 = thread_cpu_s();
      const uint64_t allocs0 = allocations_this_thread();
      while (!stop.load()) {
        const auto t0 = Clock::now();
        const bool ok = send();
        const auto t1 = Clock::now();
        if (!ok) {
          ++errors[static_cast<std::size_t>(c)];
          continue;
        }
        mine.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      }
      client_cpu[static_cast<std::size_t>(c)] = thread_cpu_s() - cpu0;
      client_allocs[static_cast<std::size_t>(c)] = allocations_this_thread() - allocs0;
    });
  }
  const auto start = Clock::now();
  const double process0 = process_cpu_s();
  const uint64_t allocs0 = allocations_total();
  go = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  const double process = process_cpu_s() - process0;
  const uint64_t allocs = allocations_total() - allocs0;
  std::vector<double> all;
  LoadResult r;
  for (std::size_t c = 0; c < lat.size(); ++c) {
    all.insert(all.end(), lat[c].begin(), lat[c].end());
    r.errors += errors[c];
  }
  std::sort(all.begin(), all.end());
  r.rps = static_cast<double>(all.size()) / wall;
  double client = 0.0;
  for (double x : client_cpu) client += x;
  uint64_t client_n = 0;
  for (uint64_t x : client_allocs) client_n += x;
  if (!all.empty()) {
    const auto n = static_cast<double>(all.size());
    r.client_cpu_us = client * 1e6 / n;
    r.server_cpu_us = std::max(0.0, process - client) * 1e6 / n;
    r.client_allocs = static_cast<double>(client_n) / n;
    r.server_allocs = static_cast<double>(allocs - std::min(allocs, client_n)) / n;
  }
  if (!all.empty()) {
    r.p50_us = all[all.size() / 2];
    r.p99_us = all[std::min(all.size() - 1, all.size() * 99 / 100)];
  }
  return r;
}

// The benchmarks' two flags: --seconds S and --connections a,b,...
struct LoadArgs {
  double seconds = 5.0;
  std::vector<int> connections{1, 8, 32};
};

inline LoadArgs parse_load_args(int argc, char** argv) {
  LoadArgs args;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seconds") == 0) args.seconds = std::stod(argv[i + 1]);
    if (std::strcmp(argv[i], "--connections") == 0) {
      args.connections.clear();
      const std::string list = argv[i + 1];
      for (std::size_t p = 0; p < list.size();) {
        const std::size_t q = list.find(',', p);
        args.connections.push_back(std::stoi(list.substr(p, q - p)));
        p = q == std::string::npos ? list.size() : q + 1;
      }
    }
  }
  return args;
}

}  // namespace tessera::bench
