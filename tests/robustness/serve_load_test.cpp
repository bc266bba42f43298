// The load half of the robustness campaign (docs/reliability.md): slow clients, connection
// floods and 10x overload against an in-process `tessera serve` on loopback. Every loop
// is bounded by a deadline and stops by itself.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "loadgen/http_loadgen.hpp"
#include "models/model_spec.hpp"
#include "raw_http.hpp"
#include "serve_fixture.hpp"
#include "spec/run_spec.hpp"

namespace tessera::robustness {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A probe on a fresh connection: its status and how long the answer took.
std::pair<int, double> probe(int port) {
  const auto t0 = Clock::now();
  RawConn c(port, 5.0);
  c.send(request("POST", "/v2/models/app/infer", infer_body()));
  const Reply r = c.read();
  return {r.status, since(t0)};
}

std::string metrics_of(int port) {
  RawConn c(port, 5.0);
  c.send(request("GET", "/metrics"));
  return c.read().body;
}

// Polls `pred` until it holds or `seconds` pass.
template <class Pred>
bool eventually(double seconds, Pred pred) {
  const auto t0 = Clock::now();
  while (!pred()) {
    if (since(t0) > seconds) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

TEST(ServeLoad, SlowClientsCannotLockOthersOut) {
  // 150 connections trickle a header byte every 200 ms (the attack, faster), on
  // two I/O threads. Probes are answered meanwhile, and the read deadline closes the
  // slow connections.
  OneTask f;
  f.options.http_threads = 2;
  f.options.read_timeout_s = 1.0;
  f.options.keep_alive_timeout_s = 1.0;
  int port = 0;
  auto server = f.start(port);
  const int slow = scaled(150);
  std::vector<std::unique_ptr<RawConn>> conns;
  for (int i = 0; i < slow; ++i) {
    conns.push_back(std::make_unique<RawConn>(port, 0.5));
    conns.back()->send("P");
  }
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    const std::string header = "OST /v2/models/app/infer HTTP/1.1\r\nHost: x\r\n";
    const auto t0 = Clock::now();
    for (std::size_t k = 0; !stop.load() && k < header.size() && since(t0) < 3.0; ++k) {
      for (auto& c : conns) c->send(std::string_view(header).substr(k, 1));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  double worst = 0;
  for (int i = 0; i < 10; ++i) {
    const auto [status, seconds] = probe(port);
    EXPECT_EQ(status, 200);
    worst = std::max(worst, seconds);
  }
  EXPECT_LT(worst, 0.5) << "a probe waited behind the slow clients";
  // Every slow connection is closed by its read deadline (1 s).
  EXPECT_TRUE(eventually(10.0, [&] {
    return metric(metrics_of(port), "tessera_http_timeouts_total") >= slow;
  })) << metrics_of(port);
  stop = true;
  trickle.join();
  std::printf("%d slow connections on 2 I/O threads: 10 probes answered, the slowest in %.1f ms\n",
              slow, worst * 1e3);
  server->shutdown();
}

TEST(ServeLoad, AConnectionFloodShedsIdleConnectionsFirst) {
  OneTask f;
  f.options.max_connections = 64;
  f.options.keep_alive_timeout_s = 30.0;  // idle ones would stay: only shedding frees them
  // Long enough that the 64 half-sent requests below still hold their slots when the probe
  // arrives on a loaded machine (with 1 s, a slow start let the deadline free them first).
  f.options.read_timeout_s = 4.0;
  int port = 0;
  auto server = f.start(port);
  // 200 idle connections: the oldest are closed to make room for newer ones.
  std::vector<std::unique_ptr<RawConn>> idle;
  for (int i = 0; i < 200; ++i) idle.push_back(std::make_unique<RawConn>(port, 0.5));
  for (int i = 0; i < 10; ++i) {
    const auto [status, seconds] = probe(port);
    EXPECT_EQ(status, 200);
    EXPECT_LT(seconds, 1.0);
  }
  const std::string m = metrics_of(port);
  EXPECT_GE(metric(m, "tessera_http_connections_shed_total"), 136) << m;
  EXPECT_LE(metric(m, "tessera_http_connections"), 64) << m;
  idle.clear();

  // 64 connections in the middle of a request hold every slot: a new one gets 503 at
  // once, and a slot frees when the read deadline closes them. A connection whose first
  // bytes the server has not read yet still counts as idle and may be shed for the probe;
  // then the attempt starts over with a fresh set (at most 5 attempts).
  std::vector<std::unique_ptr<RawConn>> busy;
  bool refused = false;
  for (int attempt = 0; attempt < 5 && !refused; ++attempt) {
    busy.clear();
    ASSERT_TRUE(
        eventually(5.0, [&] { return metric(metrics_of(port), "tessera_http_connections") <= 1; }));
    for (int i = 0; i < 64; ++i) {
      busy.push_back(std::make_unique<RawConn>(port, 0.5));
      busy.back()->send("POST /v2/models/app/infer HTTP/1.1\r\n");
    }
    RawConn c(port, 2.0);
    c.send(request("GET", "/v2/health/live"));
    refused = c.read().status == 503;
  }
  EXPECT_TRUE(refused) << "a 65th connection was never refused while 64 held a request";
  EXPECT_TRUE(eventually(20.0, [&] { return probe(port).first == 200; }));
  server->shutdown();
}

// Loads a shipped serve example and drives it at `rate` requests/s for `seconds`;
// returns the requests answered ok per second, counted by the server.
struct Goodput {
  double offered = 0;
  double ok_per_s = 0;
  uint64_t answered = 0;
  uint64_t sent = 0;
};

Goodput drive(Server& server, int port, const App& app, double rate, double seconds) {
  std::vector<Arrival> arrivals;
  const int n = static_cast<int>(rate * seconds);
  for (int i = 0; i < n; ++i) arrivals.push_back(Arrival{i / rate, 0, 0, 0.0});
  const double ok_before =
      metric(metrics_of(port), "tessera_requests_total{app=\"" + app.name + "\",outcome=\"ok\"}");
  LoadgenOptions o;
  o.port = port;
  o.connections = 128;
  o.timeout_s = 10.0;
  const LoadgenResult r = run_loadgen(app, arrivals, o);
  const double ok_after =
      metric(metrics_of(port), "tessera_requests_total{app=\"" + app.name + "\",outcome=\"ok\"}");
  Goodput g;
  g.offered = rate;
  g.ok_per_s = (ok_after - ok_before) / seconds;
  g.sent = static_cast<uint64_t>(n);
  for (const auto& [status, count] : r.stats.status_counts) {
    if (status != 0) g.answered += count;
  }
  EXPECT_EQ(server.in_flight(), 0);
  return g;
}

TEST(ServeLoad, TenTimesCapacityDoesNotCollapseTheGoodput) {
  // The shipped example's pipeline and policies on sleep models (no CPU contention):
  // ~136 requests/s at its bottleneck (resnet34, 14 + 5.5 ms x 8 per batch of 8).
  const std::string dir = std::string(TESSERA_SOURCE_DIR) + "/examples/serve/";
  // TESSERA_OVERLOAD_RUN: another run spec to try (docs/reliability.md compares policies).
  const char* other = std::getenv("TESSERA_OVERLOAD_RUN");
  const RunSpec run = load_run_spec(other != nullptr ? other : dir + "run-sleep.yaml");
  const RunSpec real = load_run_spec(dir + "run.yaml");
  if (other == nullptr) {
    ASSERT_EQ(run.policies.describe(), real.policies.describe())
        << "the test covers run.yaml through run-sleep.yaml: their policies must match";
  }
  const ModelsConfig models = load_models_config(dir + "models-sleep.yaml");
  ServeOptions options;
  options.port = 0;
  options.warmup = false;
  options.model_endpoints = false;
  Server server(run, models, options);
  const int port = server.start();
  const double seconds = std::max(1.0, 3.0 * scale());
  const Goodput at_capacity = drive(server, port, run.app, 130.0, seconds);
  const Goodput overload = drive(server, port, run.app, 1300.0, seconds);
  std::printf(
      "%s\ngoodput at capacity (%.0f req/s offered): %.1f ok/s; at 10x (%.0f req/s): %.1f ok/s "
      "(%.0f%%); answered %llu of %llu and %llu of %llu\n",
      run.policies.describe().c_str(), at_capacity.offered, at_capacity.ok_per_s, overload.offered,
      overload.ok_per_s, 100.0 * overload.ok_per_s / at_capacity.ok_per_s,
      static_cast<unsigned long long>(at_capacity.answered),
      static_cast<unsigned long long>(at_capacity.sent),
      static_cast<unsigned long long>(overload.answered),
      static_cast<unsigned long long>(overload.sent));
  EXPECT_EQ(at_capacity.answered, at_capacity.sent);
  EXPECT_EQ(overload.answered, overload.sent);
  EXPECT_GT(at_capacity.ok_per_s, 80.0);
  // The collapse this guards against kept 0.2 % of the goodput (`dropping: expired`; `nexus-e2e`
  // keeps 7 %). The target itself, >= 90 % over 60 s, is measured on an idle machine
  // (docs/reliability.md); on a shared CI machine a 3 s window has been seen at 84 %, and
  // under ASan on one core beside another job at 58 %. 30 % still fails either collapse by
  // a wide margin without failing on a slow machine.
  EXPECT_GE(overload.ok_per_s, 0.3 * at_capacity.ok_per_s);
  server.shutdown();
}

}  // namespace
}  // namespace tessera::robustness
