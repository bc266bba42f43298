// The measured LLM step-cost model (src/llm/llm_measured_cost.hpp): interpolation exact on
// the grid and monotone between, the quadratic fit, extrapolation, hostile tables refused
// naming the field (also through the run spec), and a simulated run whose step times
// follow the tables by hand.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "llm/llm_measured_cost.hpp"
#include "llm_harness.hpp"
#include "spec/run_spec.hpp"
#include "spec_error.hpp"

namespace tessera {
namespace {

using testing::llm_arrival;
using testing::LlmHarness;

constexpr double kEps = 1e-9;

MeasuredStepCosts tiny_costs() {
  MeasuredStepCosts c;
  c.prefill_tokens = {10, 20, 40};
  c.prefill_ms = {1, 3, 10};
  c.decode_batch = {1, 2};
  c.decode_context = {0, 100};
  c.decode_ms = {{1, 2}, {2, 4}};
  return c;
}

TEST(LlmMeasuredCost, TableIsExactOnTheGridAndLinearBetween) {
  const LlmMeasuredCostModel m(tiny_costs());
  EXPECT_NEAR(m.prefill_ms(10), 1.0, kEps);
  EXPECT_NEAR(m.prefill_ms(20), 3.0, kEps);
  EXPECT_NEAR(m.prefill_ms(40), 10.0, kEps);
  EXPECT_NEAR(m.prefill_ms(30), 6.5, kEps);
  EXPECT_NEAR(m.prefill_ms(5), 0.5, kEps);    // from (0, 0)
  EXPECT_NEAR(m.prefill_ms(60), 17.0, kEps);  // the last segment's slope, 0.35 ms/token
  EXPECT_NEAR(m.decode(1, 0), 0.001, kEps);
  EXPECT_NEAR(m.decode(2, 100), 0.004, kEps);
  EXPECT_NEAR(m.decode(2, 50), 0.003, kEps);
  EXPECT_NEAR(m.decode(1, 200), 0.003, kEps);  // beyond the context grid
  EXPECT_NEAR(m.decode(4, 100), 0.008, kEps);  // beyond the batch grid: in proportion
  // A chunk after 10 cached tokens: the marginal cost of the longer prompt.
  EXPECT_NEAR(m.prefill(10, 10), 0.002, kEps);
  EXPECT_NEAR(m.prefill(0, 20), 0.003, kEps);
}

TEST(LlmMeasuredCost, MonotoneOnNonDecreasingTables) {
  for (PrefillFit fit : {PrefillFit::kTable, PrefillFit::kQuadratic}) {
    MeasuredStepCosts c = tiny_costs();
    c.fit = fit;
    const LlmMeasuredCostModel m(c);
    double last = 0.0;
    for (int n = 0; n <= 200; ++n) {
      const double t = m.prefill_ms(n);
      EXPECT_GE(t, last - 1e-12) << "tokens " << n;
      last = t;
    }
    for (uint64_t b = 1; b <= 8; ++b) {
      for (double ctx = 0; ctx <= 300; ctx += 7) {
        EXPECT_LE(m.decode(b, ctx), m.decode(b + 1, ctx) + 1e-15);
        EXPECT_LE(m.decode(b, ctx), m.decode(b, ctx + 7) + 1e-15);
      }
    }
  }
}

TEST(LlmMeasuredCost, QuadraticFitRecoversAQuadratic) {
  // 0.5 + 0.01 n + 0.0002 n^2 sampled exactly.
  std::vector<double> n{16, 64, 256, 1024, 4096};
  std::vector<double> ms;
  for (double x : n) ms.push_back(0.5 + 0.01 * x + 0.0002 * x * x);
  const auto q = fit_quadratic(n, ms);
  ASSERT_EQ(q.size(), 3u);
  EXPECT_NEAR(q[0], 0.5, 1e-6);
  EXPECT_NEAR(q[1], 0.01, 1e-9);
  EXPECT_NEAR(q[2], 0.0002, 1e-12);
  MeasuredStepCosts c = tiny_costs();
  c.fit = PrefillFit::kQuadratic;
  c.prefill_tokens = n;
  c.prefill_ms = ms;
  const LlmMeasuredCostModel m(c);
  EXPECT_NEAR(m.prefill_ms(2000), 0.5 + 20 + 800, 1e-6);
  EXPECT_NEAR(m.prefill_ms(8000), 0.5 + 80 + 12800, 1e-5);  // beyond the table
}

TEST(LlmMeasuredCost, HostileTablesNameTheField) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto problem = [](auto edit) {
    MeasuredStepCosts c = tiny_costs();
    edit(c);
    return c.problem();
  };
  EXPECT_EQ(problem([](MeasuredStepCosts&) {}), "");
  EXPECT_EQ(problem([](MeasuredStepCosts& c) {
              c.prefill_tokens = {10, 40, 20};
            }).rfind("prefill.tokens[2]: the grid must be increasing", 0),
            0u);
  EXPECT_EQ(problem([&](MeasuredStepCosts& c) { c.prefill_ms[1] = nan; }),
            "prefill.ms[1]: not a finite number");
  EXPECT_EQ(problem([](MeasuredStepCosts& c) { c.prefill_ms[0] = -1; }).rfind("prefill.ms[0]", 0),
            0u);
  EXPECT_EQ(problem([](MeasuredStepCosts& c) { c.prefill_ms.pop_back(); }).rfind("prefill.ms:", 0),
            0u);
  EXPECT_EQ(
      problem([](MeasuredStepCosts& c) { c.prefill_tokens.clear(); }).rfind("prefill.tokens:", 0),
      0u);
  EXPECT_EQ(problem([](MeasuredStepCosts& c) {
              c.decode_batch = {0, 1};
            }).rfind("decode.batch[0]", 0),
            0u);
  EXPECT_EQ(problem([](MeasuredStepCosts& c) { c.decode_ms[1] = {2}; }).rfind("decode.ms[1]:", 0),
            0u);
  EXPECT_EQ(problem([](MeasuredStepCosts& c) { c.decode_ms.pop_back(); }).rfind("decode.ms:", 0),
            0u);
  EXPECT_EQ(
      problem([](MeasuredStepCosts& c) { c.step_overhead_ms = -1; }).rfind("step_overhead_ms", 0),
      0u);
  EXPECT_EQ(problem([](MeasuredStepCosts& c) {
              c.fit = PrefillFit::kQuadratic;
              c.prefill_tokens = {10, 20};
              c.prefill_ms = {1, 2};
            }).rfind("prefill.tokens:", 0),
            0u);
  MeasuredStepCosts bad = tiny_costs();
  bad.decode_context = {100, 0};
  EXPECT_THROW(LlmMeasuredCostModel{bad}, std::invalid_argument);
}

// A tiny continuous-batching run whose every step time is computed by hand from the table.
TEST(LlmMeasuredCost, SimulatedStepsFollowTheTables) {
  LlmSchedulerConfig config;
  config.policy = LlmPolicy::kContinuous;
  config.kv_blocks = 100;
  config.block_tokens = 16;
  LlmHarness h(config, std::make_shared<LlmMeasuredCostModel>(tiny_costs()));
  // A (10 prompt tokens, 2 out) at 0; B (20, 2) at 0.5 ms.
  h.run({llm_arrival(0.0, 10, 2), llm_arrival(0.0005, 20, 2)});
  // 0..1 ms: A's prefill, P(10) = 1 ms. 1..4 ms: B's, P(20) = 3 ms. 4..6.32 ms: both
  // decode at contexts 11 and 21 (mean 16): D(2, 16) = 2 + 2 x 16 / 100 = 2.32 ms.
  ASSERT_EQ(h.steps.size(), 3u);
  EXPECT_NEAR(h.steps[0].duration, 0.001, kEps);
  EXPECT_NEAR(h.steps[1].duration, 0.003, kEps);
  EXPECT_NEAR(h.steps[2].duration, 0.00232, kEps);
  EXPECT_NEAR(h.record(0)->ttft, 0.001, kEps);
  EXPECT_NEAR(h.record(0)->finish, 0.00632, kEps);
  EXPECT_NEAR(h.record(1)->ttft, 0.004 - 0.0005, kEps);
  EXPECT_NEAR(h.record(1)->tpot, 0.00232, kEps);
}

// A chunked run: the second chunk of a prompt costs P(from + n) - P(from).
TEST(LlmMeasuredCost, ChunksCostTheMarginalPrefill) {
  LlmSchedulerConfig config;
  config.policy = LlmPolicy::kChunked;
  config.kv_blocks = 100;
  config.block_tokens = 16;
  config.token_budget = 20;
  LlmHarness h(config, std::make_shared<LlmMeasuredCostModel>(tiny_costs()));
  h.run({llm_arrival(0.0, 40, 1)});
  // 0..3 ms: tokens 0..20, P(20) = 3 ms; 3..10 ms: tokens 20..40, P(40) - P(20) = 7 ms.
  ASSERT_EQ(h.steps.size(), 2u);
  EXPECT_NEAR(h.steps[0].duration, 0.003, kEps);
  EXPECT_NEAR(h.steps[1].duration, 0.007, kEps);
  EXPECT_NEAR(h.record(0)->finish, 0.010, kEps);
}

std::string run_with(const std::string& cost_model) {
  const std::string dir = std::string(TESSERA_SOURCE_DIR) + "/examples/llm/";
  return "app:\n  name: a\n  slo_ms: 60000\n"
         "  tasks: [{name: llm, variants: [{name: llama-2-7b}]}]\n"
         "deployment: " +
         dir + "deployment.yaml\nprofiles: [{file: " + dir +
         "profiles.yaml}]\n"
         "workload: {source: {kind: deterministic, rate_rps: 2, limit: 4, input_tokens: 50, "
         "output_tokens: 4}}\n"
         "llm:\n  model: {layers: 32, kv_heads: 32, head_dim: 128, params_b: 6.74}\n"
         "  gpu: {memory_gb: 40, bandwidth_gbs: 1555, tflops: 312}\n"
         "simulation:\n  cost_model: " +
         cost_model + "\n";
}

RunSpec run_from(const std::string& yaml) {
  return parse_run_spec(SpecNode::load_string(yaml, "run.yaml"));
}

TEST(LlmMeasuredCost, RunSpecReadsTheModelAndRefusesHostileValues) {
  const std::string good =
      "{kind: llm_measured, prefill_fit: quadratic, step_overhead_ms: 0.5, prefill: {tokens: [10, "
      "20, 40], ms: [1, 3, 10]}, decode: {batch: [1, 2], context: [0, 100], ms: [[1, 2], [2, "
      "4]]}}";
  RunSpec run = run_from(run_with(good));
  const auto* m = dynamic_cast<const LlmMeasuredCostModel*>(run.sim.cost_model.get());
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->costs().fit, PrefillFit::kQuadratic);
  EXPECT_NEAR(m->costs().step_overhead_ms, 0.5, kEps);
  using testing::spec_error;
  auto field = [&](const std::string& from, const std::string& to) {
    std::string yaml = good;
    yaml.replace(yaml.find(from), from.size(), to);
    return spec_error([&] { run_from(run_with(yaml)); }).field();
  };
  EXPECT_EQ(field("ms: [1, 3, 10]", "ms: [1, -3, 10]"), "simulation.cost_model.prefill.ms[1]");
  EXPECT_EQ(field("ms: [1, 3, 10]", "ms: [1, .nan, 10]"), "simulation.cost_model.prefill.ms[1]");
  EXPECT_EQ(field("tokens: [10, 20, 40]", "tokens: [10, 40, 20]"),
            "simulation.cost_model.prefill.tokens[2]");
  EXPECT_EQ(field("[[1, 2], [2, 4]]", "[[1, 2], [2]]"), "simulation.cost_model.decode.ms[1]");
  EXPECT_EQ(field("context: [0, 100]", "context: [0]"), "simulation.cost_model.decode.ms[0]");
  EXPECT_EQ(field("prefill_fit: quadratic", "prefill_fit: cubic"),
            "simulation.cost_model.prefill_fit");
  EXPECT_EQ(field("step_overhead_ms: 0.5", "step_overhead_ms: -1"),
            "simulation.cost_model.step_overhead_ms");
  EXPECT_EQ(field(", decode: {batch: [1, 2], context: [0, 100], ms: [[1, 2], [2, 4]]}", ""),
            "simulation.cost_model.decode");
  EXPECT_EQ(field("kind: llm_measured", "kind: llm_measured, per_input_token_ms: 1"),
            "simulation.cost_model.per_input_token_ms");
}

}  // namespace
}  // namespace tessera
