// The simulator and the live gateway route alike (docs/llm-gateway.md#simulation): the same
// gateway run spec, the same sequence of requests, one backend that answers at once and two
// that hold every request they get; the live gateway (scripted backends,
// tests/fake_llm_backend.hpp) and `tessera simulate`'s fleet (one instance fast, two that
// take hours per step) must send each request to the same backend.

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fake_llm_backend.hpp"
#include "serve/server/llm_gateway.hpp"
#include "sim/simulator.hpp"
#include "spec/run_spec.hpp"
#include "tiny_llm_run.hpp"

namespace tessera {
namespace {

using testing::FakeLlmBackend;
using Script = FakeLlmBackend::Script;

constexpr int kRequests = 8;

std::filesystem::path temp_dir(const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tessera_gateway_sim_test_" + std::to_string(::getpid()) + "_" + tag);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The run spec: backend 0 fast, backends 1 and 2 taking about 3 hours per step (their own
// measured cost models), requests one second apart.
std::filesystem::path write_spec(const std::string& tag, const std::vector<std::string>& urls,
                                 const std::string& routing) {
  const std::string slow =
      "      cost_model: {kind: llm_measured, prefill: {tokens: [1, 4096], ms: [1e7, 1e7]}, "
      "decode: {batch: [1, 16], context: [1, 4096], ms: [[1e7, 1e7], [1e7, 1e7]]}}\n";
  std::string llm = "  backends:\n";
  for (std::size_t i = 0; i < urls.size(); ++i) {
    llm += "    - url: \"" + urls[i] + "\"\n" + (i == 0 ? "" : slow);
  }
  llm += "  gateway: {routing: " + routing + ", health_interval_ms: 0, timeout_ms: 20000}\n";
  const auto file = testing::write_tiny_llm_run(temp_dir(tag), 1, 0.0, llm);
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string from = "  source: {kind: poisson, rate_rps: 1, duration_s: 1}\n";
  text.replace(text.find(from), from.size(),
               "  source: {kind: deterministic, rate_rps: 1, limit: " + std::to_string(kRequests) +
                   ", input_tokens: 4, output_tokens: 3}\n");
  std::ofstream(file) << text;
  return file;
}

// The backend the simulator sends each request to, in arrival order.
std::vector<int> simulated_picks(const std::filesystem::path& spec) {
  RunSpec run = load_run_spec(spec);
  Simulator sim(run.app, run.deployment, run.profiles, PolicySet(run.policies), run.sim);
  auto arrivals = make_run_arrivals(run);
  const auto& workers = sim.engine().workers();
  const auto seen = [&] {  // requests each instance has taken so far
    std::vector<std::size_t> n;
    for (const auto& w : workers) n.push_back(w->items_done + w->load());
    return n;
  };
  std::vector<int> picks;
  sim.begin(*arrivals);
  std::vector<std::size_t> before = seen();
  // Every arrival (one a second) is routed after the hop, well before the next one.
  for (int r = 0; r < kRequests; ++r) {
    const Time until = r + 0.5;
    while (sim.next_time() <= until) sim.step();
    const std::vector<std::size_t> after = seen();
    int pick = -1;
    for (std::size_t i = 0; i < after.size(); ++i) {
      if (after[i] > before[i]) pick = static_cast<int>(i);
    }
    picks.push_back(pick);
    before = after;
  }
  return picks;
}

bool wait_for(const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// The backend the live gateway sends each request to, one request at a time: a request to
// the fast backend ends before the next is sent; the others stay open until the end.
std::vector<int> live_picks(const std::string& routing) {
  FakeLlmBackend fast(Script::kGood);
  FakeLlmBackend held1(Script::kGoodAfterGate);
  FakeLlmBackend held2(Script::kGoodAfterGate);
  std::vector<FakeLlmBackend*> fakes{&fast, &held1, &held2};
  const RunSpec run =
      load_run_spec(write_spec("live", {fast.url(), held1.url(), held2.url()}, routing));
  LlmGatewayOptions o;
  o.port = 0;
  o.max_inflight = 32;
  o.drain_timeout_s = 5.0;
  LlmGateway gateway(run, o);
  const int port = gateway.start();
  std::vector<std::thread> clients;
  std::vector<int> picks;
  const auto total = [&] {
    int n = 0;
    for (const auto* f : fakes) n += f->requests.load();
    return n;
  };
  for (int r = 0; r < kRequests; ++r) {
    std::vector<int> before;
    for (const auto* f : fakes) before.push_back(f->requests.load());
    clients.emplace_back([port] {
      httplib::Client cli("127.0.0.1", port);
      cli.set_read_timeout(30, 0);
      cli.Post("/v1/completions", R"({"prompt":"abcd","max_tokens":3,"stream":true})",
               "application/json");
    });
    EXPECT_TRUE(wait_for([&] { return total() == r + 1; }));
    int pick = -1;
    for (std::size_t i = 0; i < fakes.size(); ++i) {
      if (fakes[i]->requests.load() > before[i]) pick = static_cast<int>(i);
    }
    picks.push_back(pick);
    if (pick == 0) {  // the fast backend's answer is over before the next request
      EXPECT_TRUE(wait_for([&] { return gateway.backends()[0].outstanding == 0; }));
    }
  }
  held1.open_gate();
  held2.open_gate();
  for (auto& c : clients) c.join();
  gateway.shutdown();
  const LlmGatewayLedger l = gateway.ledger();
  EXPECT_EQ(l.ok + l.late, static_cast<uint64_t>(kRequests));
  return picks;
}

TEST(LlmGatewaySim, TheSimulatorPicksTheBackendsTheLiveGatewayPicks) {
  for (const std::string routing : {"round_robin", "least_outstanding"}) {
    SCOPED_TRACE(routing);
    const std::vector<int> live = live_picks(routing);
    const std::vector<int> sim = simulated_picks(write_spec(
        "sim", {"http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"}, routing));
    EXPECT_EQ(sim, live);
    // Not a trivial sequence: least_outstanding keeps coming back to the fast backend.
    if (routing == "least_outstanding") {
      EXPECT_EQ(live, (std::vector<int>{0, 1, 2, 0, 0, 0, 0, 0}));
    } else {
      EXPECT_EQ(live, (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 1}));
    }
  }
}

}  // namespace
}  // namespace tessera
