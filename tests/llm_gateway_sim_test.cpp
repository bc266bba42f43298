// The simulator and the live gateway route alike (docs/llm-gateway.md#simulation): the same
// gateway run spec, the same sequence of requests; the live gateway (scripted backends,
// tests/fake_llm_backend.hpp) and `tessera simulate`'s fleet must send each request to the
// same backend (or shed it), under every routing policy. The inputs are made identical on
// both sides rather than the assertion weakened:
//  - round_robin, least_outstanding, kv_load, prefix_affinity: one backend that answers at
//    once and two that hold every request they get (in the simulator: steps of hours);
//    kv_load's gauges are read once, before the first request, and are all zero on both
//    sides (the fakes export vLLM's gauges as zero; the simulator's first scrape finds its
//    instances empty);
//  - prefix_affinity: each live prompt is the text whose hash the simulator gives its
//    request (a prompt shorter than one block is hashed whole; the simulator's n-th
//    request without a shared prefix hashes as "r<n>/<bytes>/0"), so both hash the same
//    keys onto the same ring;
//  - slo_aware: three backends that hold every request before its first token, with step
//    costs 1 : 2 : 4 and a TTFT SLO of 4.5 of the cheapest's prefills: nothing finishes during the
//    sequence, so neither side calibrates, and both predict from the same queues (the
//    requests awaiting their first token), spread by cost and the last one shed.

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fake_llm_backend.hpp"
#include "policy/llm_routing.hpp"
#include "serve/server/llm_gateway.hpp"
#include "sim/simulator.hpp"
#include "spec/run_spec.hpp"
#include "tiny_llm_run.hpp"

namespace tessera {
namespace {

using testing::FakeLlmBackend;
using Script = FakeLlmBackend::Script;

constexpr int kRequests = 8;

// How each side's fleet looks for one policy's check.
struct Case {
  std::string routing;
  // Per backend: its step time in ms (its own measured cost model), or 0 for the run's
  // default (the tiny model: fast).
  std::vector<double> step_ms;
  double ttft_slo_ms = 0;       // the run's TTFT SLO; 0: none
  std::vector<Script> scripts;  // the live fakes' scripts
  // The live prompt of request r (16 bytes: the simulator's 4 tokens of 4 bytes).
  std::function<std::string(int)> prompt = [](int) { return std::string("abcdefghijklmnop"); };
  bool export_gauges = false;  // the fakes answer /metrics with vLLM's gauges, all zero
};

std::filesystem::path temp_dir(const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tessera_gateway_sim_test_" + std::to_string(::getpid()) + "_" + tag);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The run spec: the backends at `urls` with the case's step costs, requests one second
// apart, 4 prompt tokens and 3 output tokens each.
std::filesystem::path write_spec(const std::string& tag, const std::vector<std::string>& urls,
                                 const Case& c) {
  std::string llm = "  backends:\n";
  for (std::size_t i = 0; i < urls.size(); ++i) {
    llm += "    - url: \"" + urls[i] + "\"\n";
    if (c.step_ms[i] > 0) {
      const std::string ms = std::to_string(c.step_ms[i]);
      llm += "      cost_model: {kind: llm_measured, prefill: {tokens: [1, 4096], ms: [" + ms +
             ", " + ms + "]}, decode: {batch: [1, 16], context: [1, 4096], ms: [[" + ms + ", " +
             ms + "], [" + ms + ", " + ms + "]]}}\n";
    }
  }
  llm += "  gateway: {routing: " + c.routing + ", health_interval_ms: 0, timeout_ms: 20000}\n";
  const auto file = testing::write_tiny_llm_run(temp_dir(tag), 1, c.ttft_slo_ms, llm);
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string from = "  source: {kind: poisson, rate_rps: 1, duration_s: 1}\n";
  text.replace(text.find(from), from.size(),
               "  source: {kind: deterministic, rate_rps: 1, limit: " + std::to_string(kRequests) +
                   ", input_tokens: 4, output_tokens: 3}\n");
  std::ofstream(file) << text;
  return file;
}

// The backend the simulator sends each request to, in arrival order (-1: shed).
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

// The backend the live gateway sends each request to, one request at a time (-1: answered
// 429, shed): a request to a backend that answers at once ends before the next is sent;
// the others stay open until the end.
std::vector<int> live_picks(const Case& c) {
  std::vector<std::unique_ptr<FakeLlmBackend>> fakes;
  std::vector<std::string> urls;
  for (const Script s : c.scripts) {
    fakes.push_back(std::make_unique<FakeLlmBackend>(s));
    if (c.export_gauges)
      fakes.back()->set_metrics(
          "vllm:num_requests_running{model_name=\"tiny\"} 0\n"
          "vllm:num_requests_waiting{model_name=\"tiny\"} 0\n"
          "vllm:kv_cache_usage_perc{model_name=\"tiny\"} 0\n");
    urls.push_back(fakes.back()->url());
  }
  const RunSpec run = load_run_spec(write_spec("live", urls, c));
  LlmGatewayOptions o;
  o.port = 0;
  o.max_inflight = 32;
  o.drain_timeout_s = 5.0;
  LlmGateway gateway(run, o);
  const int port = gateway.start();
  for (const LlmGatewayBackendStats& b : gateway.backends()) {
    EXPECT_EQ(b.load_known, c.export_gauges && find_llm_routing(c.routing)->reads_engine_load);
  }
  std::vector<std::thread> clients;
  std::vector<std::atomic<int>> status(kRequests);
  std::vector<int> picks;
  const auto total = [&] {
    int n = 0;
    for (const auto& f : fakes) n += f->requests.load();
    return n;
  };
  int shed = 0;
  for (int r = 0; r < kRequests; ++r) {
    std::vector<int> before;
    for (const auto& f : fakes) before.push_back(f->requests.load());
    const int before_total = total();
    status[r] = 0;
    const std::string body =
        nlohmann::json{{"prompt", c.prompt(r)}, {"max_tokens", 3}, {"stream", true}}.dump();
    clients.emplace_back([port, body, &s = status[r]] {
      httplib::Client cli("127.0.0.1", port);
      cli.set_read_timeout(30, 0);
      const auto res = cli.Post("/v1/completions", body, "application/json");
      s = res ? res->status : -1;
    });
    EXPECT_TRUE(wait_for([&] { return total() > before_total || status[r].load() == 429; }));
    int pick = -1;
    for (std::size_t i = 0; i < fakes.size(); ++i) {
      if (fakes[i]->requests.load() > before[i]) pick = static_cast<int>(i);
    }
    if (pick < 0) ++shed;
    picks.push_back(pick);
    if (pick >= 0 && c.scripts[static_cast<std::size_t>(pick)] == Script::kGood) {
      // That answer is over before the next request.
      EXPECT_TRUE(wait_for([&] { return gateway.backends()[pick].outstanding == 0; }));
    }
  }
  for (auto& f : fakes) f->open_gate();
  for (auto& t : clients) t.join();
  gateway.shutdown();
  const LlmGatewayLedger l = gateway.ledger();
  EXPECT_EQ(l.ok + l.late, static_cast<uint64_t>(kRequests - shed));
  EXPECT_EQ(l.shed, static_cast<uint64_t>(shed));
  for (const auto& f : fakes) EXPECT_FALSE(f->gate_timed_out);
  return picks;
}

// One fast backend, two that hold each request (after its first token: it stays
// outstanding, decoding).
Case fast_and_held(const std::string& routing) {
  Case c;
  c.routing = routing;
  c.step_ms = {0, 1e7, 1e7};
  c.scripts = {Script::kGood, Script::kGoodAfterGate, Script::kGoodAfterGate};
  return c;
}

void expect_same_picks(const Case& c, const std::vector<int>& expected) {
  SCOPED_TRACE(c.routing);
  const std::vector<int> live = live_picks(c);
  const std::vector<int> sim = simulated_picks(
      write_spec("sim", {"http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"}, c));
  EXPECT_EQ(sim, live);
  EXPECT_EQ(live, expected);  // not a trivial sequence
}

TEST(LlmGatewaySim, TheSimulatorPicksTheBackendsTheLiveGatewayPicks) {
  expect_same_picks(fast_and_held("round_robin"), {0, 1, 2, 0, 1, 2, 0, 1});
  // Keeps coming back to the fast backend.
  expect_same_picks(fast_and_held("least_outstanding"), {0, 1, 2, 0, 0, 0, 0, 0});
}

TEST(LlmGatewaySim, KvLoadPicksAlikeOnTheSameGauges) {
  Case c = fast_and_held("kv_load");
  c.export_gauges = true;
  // The gauges (all zero, read once) tie; the requests in flight decide.
  expect_same_picks(c, {0, 1, 2, 0, 0, 0, 0, 0});
}

TEST(LlmGatewaySim, PrefixAffinityHashesTheSameKeysOntoTheSameRing) {
  Case c = fast_and_held("prefix_affinity");
  // The simulator's request n (from 1) of 4 tokens of 4 bytes, no shared prefix.
  c.prompt = [](int r) { return "r" + std::to_string(r + 1) + "/16/0"; };
  const std::vector<int> live = live_picks(c);
  const std::vector<int> sim = simulated_picks(
      write_spec("sim", {"http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"}, c));
  EXPECT_EQ(sim, live);
  // Not a trivial sequence: distinct keys reach more than one backend.
  EXPECT_GT(std::set<int>(live.begin(), live.end()).size(), 1u);
}

TEST(LlmGatewaySim, SloAwarePredictsAndShedsAlike) {
  Case c;
  c.routing = "slo_aware";
  c.step_ms = {1e6, 2e6, 4e6};
  // The router samples the measured model's prefill curve, here flat: a request of 4
  // tokens costs one step of its backend, so the SLO is 4.5 such prefills on the cheapest.
  c.ttft_slo_ms = 4.5 * 1e6;
  c.scripts = {Script::kGoodBeforeGate, Script::kGoodBeforeGate, Script::kGoodBeforeGate};
  // Predicted TTFT (waiting + 1) x cost: 1,2,4 -> 0; 2,2,4 -> 1 (in turn); 2,4,4 -> 0;
  // 3,4,4 -> 0; 4,4,4 -> 1; 4,6,4 -> 2; 4,6,8 -> 0; 5,6,8: none within 4.5, shed.
  expect_same_picks(c, {0, 1, 0, 0, 1, 2, 0, -1});
}

}  // namespace
}  // namespace tessera
