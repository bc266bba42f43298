// The simulator's model of the LLM gateway (src/spec/llm_fleet_sim.*,
// docs/llm-gateway.md#simulation): a gateway run spec simulates one LLM instance per
// backend, each with its own step costs and KV blocks, routed by the gateway's policy, with
// the gateway's hop in TTFT.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "metrics/report.hpp"
#include "sim/simulator.hpp"
#include "spec/run_spec.hpp"
#include "spec_error.hpp"
#include "tiny_llm_run.hpp"

namespace tessera {
namespace {

// A fresh directory for one test's spec files, removed at the end.
struct TempDir {
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir = std::filesystem::temp_directory_path() /
          ("tessera-fleet-" + std::string(info->name()) + "-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
  }
  ~TempDir() { std::filesystem::remove_all(dir); }
  const std::filesystem::path& path() const { return dir; }
  std::filesystem::path dir;
};

// Two fast backends and one about ten times slower (its own "GPU": a tenth of the bandwidth
// and compute, and ten times the fixed cost of a step), behind a gateway routing with
// `routing`.
std::string fleet(const std::string& routing, const std::string& extra = "") {
  return "  kv_cache: {block_tokens: 16}\n"
         "  scheduler: {policy: continuous, max_seqs: 16}\n"
         "  backends:\n"
         "    - url: \"http://127.0.0.1:19301\"\n"
         "      gpu: {name: fast, memory_gb: 1, bandwidth_gbs: 10, tflops: 0.1, step_overhead_ms: "
         "2}\n"
         "    - url: \"http://127.0.0.1:19302\"\n"
         "      gpu: {name: slow, memory_gb: 1, bandwidth_gbs: 1, tflops: 0.01, "
         "step_overhead_ms: 20}\n"
         "    - url: \"http://127.0.0.1:19303\"\n"
         "      gpu: {name: fast, memory_gb: 1, bandwidth_gbs: 10, tflops: 0.1, step_overhead_ms: "
         "2}\n"
         "  gateway: {routing: " +
         routing + "}\n" + extra;
}

struct FleetRun {
  RunSpec run;
  std::unique_ptr<Simulator> sim;
  nlohmann::json summary;
};

FleetRun simulate(const std::filesystem::path& dir, const std::string& routing,
                  const std::string& workload, const std::string& extra = "",
                  double ttft_slo_ms = 0.0) {
  const auto file = testing::write_tiny_llm_run(dir, 1, ttft_slo_ms, fleet(routing, extra));
  {  // the workload under test
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string from = "  source: {kind: poisson, rate_rps: 1, duration_s: 1}\n";
    text.replace(text.find(from), from.size(), workload);
    std::ofstream(file) << text;
  }
  FleetRun r{load_run_spec(file), nullptr, {}};
  r.sim = std::make_unique<Simulator>(r.run.app, r.run.deployment, r.run.profiles,
                                      PolicySet(r.run.policies), r.run.sim);
  auto arrivals = make_run_arrivals(r.run);
  r.sim->run(*arrivals);
  r.summary = summarize(r.sim->metrics(), r.run.app);
  return r;
}

const std::string kBusy =
    "  source: {kind: poisson, rate_rps: 40, limit: 300, input_tokens: 512, output_tokens: 64}\n";

TEST(LlmFleetSim, OneInstancePerBackendWithItsOwnKvBlocksAndCosts) {
  TempDir dir;
  FleetRun r = simulate(dir.path(), "least_outstanding", kBusy);
  ASSERT_EQ(r.run.deployment.total_workers(), 3);  // the deployment's one worker is replaced
  const auto& workers = r.sim->engine().workers();
  ASSERT_EQ(workers.size(), 3u);
  // The slow backend's step is ten times the fast ones' (its own analytic model).
  StepContents decode;
  decode.batch = 4;
  decode.tokens_out = 4;
  decode.context_tokens = 4 * 600;
  const CostModel& cost = r.sim->engine().cost_model();
  EXPECT_GT(cost.step_time(*workers[1], decode), 5 * cost.step_time(*workers[0], decode));
  EXPECT_DOUBLE_EQ(cost.step_time(*workers[0], decode), cost.step_time(*workers[2], decode));
  // Every request ended exactly once.
  EXPECT_EQ(r.summary["submitted"].get<uint64_t>(), 300u);
  EXPECT_EQ(r.summary["ok"].get<uint64_t>() + r.summary["late"].get<uint64_t>(), 300u);
}

TEST(LlmFleetSim, LeastOutstandingSendsTheSlowerBackendFewerRequests) {
  TempDir dir;
  FleetRun lo = simulate(dir.path(), "least_outstanding", kBusy);
  const auto& w = lo.sim->engine().workers();
  EXPECT_EQ(w[0]->items_done + w[1]->items_done + w[2]->items_done, 300u);
  EXPECT_LT(w[1]->items_done, w[0]->items_done / 2);
  EXPECT_LT(w[1]->items_done, w[2]->items_done / 2);
  // Round robin gives each a third, whatever its speed, and waits longer for first tokens.
  FleetRun rr = simulate(dir.path(), "round_robin", kBusy);
  const auto& v = rr.sim->engine().workers();
  EXPECT_EQ(v[0]->items_done, 100u);
  EXPECT_EQ(v[1]->items_done, 100u);
  EXPECT_GT(rr.summary["llm"]["ttft_ms"]["p99"].get<double>(),
            lo.summary["llm"]["ttft_ms"]["p99"].get<double>());
}

TEST(LlmFleetSim, SloAwareShedsWhatNoBackendCanServeInTimeAsDroppedWithItsReason) {
  TempDir dir;
  // More than the fleet can serve (a prefill step takes 2 ms and more on a fast backend, 20
  // on the slow one) within a 10 ms TTFT SLO.
  const std::string burst =
      "  source: {kind: poisson, rate_rps: 1000, limit: 300, input_tokens: 512, "
      "output_tokens: 64}\n";
  FleetRun r = simulate(dir.path(), "slo_aware", burst, "", 10.0);
  const uint64_t dropped = r.summary["dropped"].get<uint64_t>();
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(r.summary["dropped_by_reason"]["gateway_shed"].get<uint64_t>(), dropped);
  EXPECT_EQ(r.summary["ok"].get<uint64_t>() + r.summary["late"].get<uint64_t>() + dropped, 300u);
  // Shedding keeps the served requests' first tokens near the SLO, where least_outstanding,
  // which serves everything, queues them.
  FleetRun lo = simulate(dir.path(), "least_outstanding", burst, "", 10.0);
  EXPECT_EQ(lo.summary["dropped"].get<uint64_t>(), 0u);
  EXPECT_LT(r.summary["llm"]["ttft_ms"]["p50"].get<double>(),
            lo.summary["llm"]["ttft_ms"]["p50"].get<double>());
}

TEST(LlmFleetSim, TheGatewayHopAddsToTtftNotTpot) {
  TempDir dir;
  const std::string one =
      "  source: {kind: poisson, rate_rps: 1, limit: 1, input_tokens: 64, output_tokens: 8}\n";
  FleetRun a = simulate(dir.path(), "round_robin", one, "simulation: {gateway_hop_ms: 0}\n");
  FleetRun b = simulate(dir.path(), "round_robin", one, "simulation: {gateway_hop_ms: 25}\n");
  EXPECT_NEAR(b.summary["llm"]["ttft_ms"]["p50"].get<double>() -
                  a.summary["llm"]["ttft_ms"]["p50"].get<double>(),
              25.0, 0.5);  // (the summary's quantiles are a histogram's)
  EXPECT_NEAR(b.summary["llm"]["tpot_ms"]["p50"].get<double>(),
              a.summary["llm"]["tpot_ms"]["p50"].get<double>(), 1e-9);
}

TEST(LlmFleetSim, HopWithoutAGatewayIsAnErrorNamingTheField) {
  TempDir dir;
  const auto file =
      testing::write_tiny_llm_run(dir.path(), 1, 0.0, "simulation: {gateway_hop_ms: 1}\n");
  const SpecError e = testing::spec_error([&] { load_run_spec(file); });
  EXPECT_EQ(e.field(), "simulation.gateway_hop_ms");
  EXPECT_NE(e.problem().find("llm.backends"), std::string::npos);
}

TEST(LlmFleetSim, ABackendsCostModelIsMeasuredTablesOrAnErrorNamingTheField) {
  TempDir dir;
  std::string extra = fleet("round_robin");
  extra.insert(extra.find("  gateway:"),
               "    - url: \"http://127.0.0.1:19304\"\n"
               "      cost_model: {kind: token_linear}\n");
  const auto file = testing::write_tiny_llm_run(dir.path(), 1, 0.0, extra);
  const SpecError e = testing::spec_error([&] { load_run_spec(file); });
  EXPECT_EQ(e.field(), "llm.backends[3].cost_model.kind");
}

TEST(LlmFleetSim, ABackendsOwnMeasuredCostModelIsItsStepCost) {
  TempDir dir;
  const std::string own =
      "    - url: \"http://127.0.0.1:19304\"\n"
      "      cost_model: {kind: llm_measured, prefill: {tokens: [16, 4096], ms: [1, 256]}, "
      "decode: {batch: [1, 16], context: [16, 4096], ms: [[7, 7], [7, 7]]}}\n";
  std::string extra = fleet("round_robin");
  extra.insert(extra.find("  gateway:"), own);
  const auto file = testing::write_tiny_llm_run(dir.path(), 1, 0.0, extra);
  RunSpec run = load_run_spec(file);
  ASSERT_EQ(run.deployment.total_workers(), 4);
  Simulator sim(run.app, run.deployment, run.profiles, PolicySet(run.policies), run.sim);
  StepContents decode;
  decode.batch = 1;
  decode.tokens_out = 1;
  decode.context_tokens = 100;
  EXPECT_NEAR(sim.engine().cost_model().step_time(*sim.engine().workers()[3], decode), 0.007, 1e-9);
}

}  // namespace
}  // namespace tessera
