// LLM serving on the engine: the instance scheduler's policies on hand-computed cases,
// KV-cache admission, preemption and accounting invariants, tessera's SLO-aware admission,
// the analytic cost model and the run spec's llm: section.

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "llm/llm_cost_model.hpp"
#include "llm/llm_parallel.hpp"
#include "llm_harness.hpp"
#include "metrics/report.hpp"
#include "sim/simulator.hpp"
#include "spec/run_spec.hpp"
#include "spec_error.hpp"

namespace tessera {
namespace {

using testing::llm_arrival;
using testing::LlmHarness;
using testing::SimpleLlmCost;

constexpr double kEps = 1e-9;

// Steps take 10 ms plus 1 ms per prompt token prefilled.
std::shared_ptr<const CostModel> simple_cost() {
  return std::make_shared<SimpleLlmCost>(0.010, 0.001);
}

LlmSchedulerConfig config(LlmPolicy policy, uint32_t blocks = 1000, uint32_t budget = 2048) {
  LlmSchedulerConfig c;
  c.policy = policy;
  c.kv_blocks = blocks;
  c.block_tokens = 16;
  c.token_budget = budget;
  return c;
}

// Every submitted request ends exactly once; KV blocks all come back.
void expect_accounted(LlmHarness& h, std::size_t submitted) {
  ASSERT_EQ(h.records.size(), submitted);
  std::set<uint64_t> ids;
  for (const auto& r : h.records) EXPECT_TRUE(ids.insert(r.id).second) << "twice: " << r.id;
  EXPECT_EQ(h.engine().requests_in_flight(), 0u);
  for (const auto& s : h.steps) EXPECT_LE(s.kv_used_blocks, s.kv_total_blocks);
}

// A (prompt 100, 3 tokens) at 0, B (prompt 50, 2 tokens) at 50 ms.
std::vector<Arrival> two_requests() {
  return {llm_arrival(0.0, 100, 3), llm_arrival(0.050, 50, 2)};
}

TEST(LlmScheduler, FcfsServesOneAtATime) {
  LlmHarness h(config(LlmPolicy::kFcfs), simple_cost());
  h.run(two_requests());
  expect_accounted(h, 2);
  // A: prefill 110 ms (first token), decodes end at 120 and 130 ms.
  EXPECT_NEAR(h.record(0)->ttft, 0.110, kEps);
  EXPECT_NEAR(h.record(0)->tpot, 0.010, kEps);
  EXPECT_NEAR(h.record(0)->finish, 0.130, kEps);
  EXPECT_EQ(h.record(0)->output_tokens, 3u);
  // B waits for A: prefill 130..190 ms, decode to 200 ms.
  EXPECT_NEAR(h.record(1)->ttft, 0.190 - 0.050, kEps);
  EXPECT_NEAR(h.record(1)->tpot, 0.010, kEps);
  EXPECT_NEAR(h.record(1)->finish, 0.200, kEps);
  EXPECT_EQ(h.steps.size(), 5u);  // 2 prefills, 3 decodes
}

TEST(LlmScheduler, ContinuousPrefillsFirstThenDecodesTogether) {
  LlmHarness h(config(LlmPolicy::kContinuous), simple_cost());
  h.run(two_requests());
  expect_accounted(h, 2);
  // A prefills 0..110; B's prefill runs next (110..170) while A waits; then both decode
  // (170..180: A's 2nd, B's 2nd and last); A's last at 190.
  EXPECT_NEAR(h.record(0)->ttft, 0.110, kEps);
  EXPECT_NEAR(h.record(0)->tpot, (0.190 - 0.110) / 2, kEps);
  EXPECT_NEAR(h.record(1)->ttft, 0.170 - 0.050, kEps);
  EXPECT_NEAR(h.record(1)->tpot, 0.010, kEps);
  EXPECT_NEAR(h.record(1)->finish, 0.180, kEps);
  EXPECT_NEAR(h.record(0)->finish, 0.190, kEps);
  ASSERT_EQ(h.steps.size(), 4u);
  EXPECT_EQ(h.steps[2].decode_tokens, 2u);  // one iteration decodes both
}

TEST(LlmScheduler, ChunkedMixesPrefillChunksWithDecode) {
  LlmHarness h(config(LlmPolicy::kChunked, 1000, 64), simple_cost());
  h.run(two_requests());
  expect_accounted(h, 2);
  // 0..74: A's first 64 tokens. 74..148: A's last 36 + B's first 28. 148..180: A decodes,
  // B's last 22. 180..190: both decode.
  EXPECT_NEAR(h.record(0)->ttft, 0.148, kEps);
  EXPECT_NEAR(h.record(0)->tpot, (0.190 - 0.148) / 2, kEps);
  EXPECT_NEAR(h.record(1)->ttft, 0.180 - 0.050, kEps);
  EXPECT_NEAR(h.record(1)->tpot, 0.010, kEps);
  ASSERT_EQ(h.steps.size(), 4u);
  EXPECT_EQ(h.steps[1].prefill_tokens, 64u);
  EXPECT_EQ(h.steps[2].prefill_tokens, 22u);
  EXPECT_EQ(h.steps[2].decode_tokens, 1u);
  for (const auto& s : h.steps) EXPECT_LE(s.prefill_tokens + s.decode_tokens, 64u);
}

TEST(LlmScheduler, StaticBatchAdmitsNothingUntilItEnds) {
  LlmHarness h(config(LlmPolicy::kStatic), simple_cost());
  // X (prompt 10, 1 token) runs alone 0..20 ms while A and B queue; C comes at 30 ms.
  h.run({llm_arrival(0.0, 10, 1), llm_arrival(0.001, 100, 3), llm_arrival(0.002, 50, 2),
         llm_arrival(0.030, 10, 1)});
  expect_accounted(h, 4);
  EXPECT_NEAR(h.record(0)->finish, 0.020, kEps);
  // A and B: one batch, prefill of 150 tokens 20..180; decodes 180..190 (B ends), 190..200
  // (A ends; B is padding).
  EXPECT_NEAR(h.record(1)->ttft, 0.180 - 0.001, kEps);
  EXPECT_NEAR(h.record(1)->finish, 0.200, kEps);
  EXPECT_NEAR(h.record(2)->finish, 0.190, kEps);
  // C is admitted only when the batch has ended: 200..220.
  EXPECT_NEAR(h.record(3)->ttft, 0.220 - 0.030, kEps);
  EXPECT_NEAR(h.record(3)->tpot, 0.0, kEps);
  ASSERT_EQ(h.steps.size(), 5u);
  EXPECT_EQ(h.steps[1].prefill_tokens, 150u);
  EXPECT_EQ(h.steps[3].decode_tokens, 1u);  // A alone decodes, B pads
}

TEST(LlmKvCache, RequestLargerThanTheCacheIsDroppedAtOnce) {
  LlmHarness h(config(LlmPolicy::kContinuous, 10), simple_cost());  // 160 tokens
  h.run({llm_arrival(0.0, 150, 20), llm_arrival(0.0, 100, 10)});
  expect_accounted(h, 2);
  EXPECT_EQ(h.record(0)->outcome, Outcome::kDropped);
  EXPECT_EQ(h.record(0)->reason, DropReason::kKvCapacity);
  EXPECT_EQ(h.record(1)->outcome, Outcome::kOk);
}

TEST(LlmKvCache, AdmissionWaitsForFreeBlocks) {
  // 10 blocks: A holds 7 (prompt 100 + growth), B's prompt of 60 needs 4 more.
  LlmHarness h(config(LlmPolicy::kContinuous, 10), simple_cost());
  h.run({llm_arrival(0.0, 100, 40), llm_arrival(0.001, 60, 2)});
  expect_accounted(h, 2);
  for (const auto& s : h.steps) EXPECT_LE(s.kv_used_blocks, 10u);
  // B cannot start before A has released blocks or been preempted.
  EXPECT_GT(h.record(1)->ttft, 0.110);
}

TEST(LlmKvCache, PreemptionRecomputesAndAccountsOnce) {
  // 10 blocks (160 tokens): A and B (64 + 50 tokens each) fit at admission but not both
  // at full length; the newest (B) is preempted and recomputed later.
  LlmHarness h(config(LlmPolicy::kContinuous, 10), simple_cost());
  h.run({llm_arrival(0.0, 64, 50), llm_arrival(0.001, 64, 50)});
  expect_accounted(h, 2);
  EXPECT_GE(h.scheduler().preemptions(), 1u);
  EXPECT_EQ(h.record(0)->preemptions, 0u);
  EXPECT_GE(h.record(1)->preemptions, 1u);
  for (const auto& r : h.records) {
    EXPECT_EQ(r.outcome, Outcome::kOk);
    EXPECT_EQ(r.output_tokens, 50u);
  }
  EXPECT_EQ(h.scheduler().kv().used(), 0u);
  // B produced its first tokens before it was preempted, so its TTFT stays that of its
  // first admission and its TPOT carries the stall.
  EXPECT_LT(h.record(1)->ttft, 0.2);
  EXPECT_GT(h.record(1)->tpot, h.record(0)->tpot);
}

// Many requests on a small cache, every policy: each request ends once, blocks return.
TEST(LlmKvCache, AccountingInvariantUnderPressure) {
  for (LlmPolicy policy :
       {LlmPolicy::kFcfs, LlmPolicy::kStatic, LlmPolicy::kContinuous, LlmPolicy::kChunked}) {
    LlmSchedulerConfig c = config(policy, 40, 128);
    c.max_seqs = 8;
    LlmHarness h(c, simple_cost(), 2);
    std::mt19937_64 rng(7);
    std::vector<Arrival> arrivals;
    Time t = 0;
    for (int i = 0; i < 300; ++i) {
      t += std::exponential_distribution<double>(40.0)(rng);
      arrivals.push_back(llm_arrival(t, 1 + static_cast<uint32_t>(rng() % 400),
                                     1 + static_cast<uint32_t>(rng() % 300)));
    }
    h.run(arrivals);
    SCOPED_TRACE(std::string(llm_policy_name(policy)));
    expect_accounted(h, arrivals.size());
    for (std::size_t i = 0; i < 2; ++i) EXPECT_EQ(h.scheduler(i).kv().used(), 0u);
    for (const auto& r : h.records) {
      if (r.outcome == Outcome::kDropped) {
        EXPECT_EQ(r.reason, DropReason::kKvCapacity);  // 400 + 300 tokens > 640
        continue;
      }
      EXPECT_EQ(r.output_tokens, arrivals[r.id].output_tokens);
      EXPECT_GE(r.ttft, 0.0);
    }
    if (policy == LlmPolicy::kContinuous || policy == LlmPolicy::kChunked) {
      uint64_t preempted = 0;
      for (const auto& s : h.steps) preempted += s.preemptions;
      EXPECT_GT(preempted, 0u);  // the small cache forces preemption
    }
  }
}

// An instance taken out of service hands its waiting and admitted requests back; they are
// served by the other instance, and every request still ends once.
TEST(LlmKvCache, InstanceLossHandsRequestsBack) {
  for (LlmPolicy policy : {LlmPolicy::kStatic, LlmPolicy::kContinuous, LlmPolicy::kChunked}) {
    LlmHarness h(config(policy, 200, 256), simple_cost(), 2);
    std::vector<Arrival> arrivals;
    for (int i = 0; i < 60; ++i) arrivals.push_back(llm_arrival(0.01 * i, 100, 30));
    h.at(0.25, [&h] { h.engine().kill_worker(0); });
    h.run(arrivals);
    SCOPED_TRACE(std::string(llm_policy_name(policy)));
    expect_accounted(h, arrivals.size());
    for (const auto& r : h.records) {
      EXPECT_EQ(r.outcome, Outcome::kOk);
      EXPECT_EQ(r.output_tokens, 30u);
    }
    EXPECT_EQ(h.scheduler(0).admitted(), 0u);
    EXPECT_EQ(h.scheduler(1).kv().used(), 0u);
  }
}

// Least-loaded dispatch sees the requests an LLM instance holds (Worker::held).
TEST(LlmScheduler, LeastLoadedCountsHeldRequests) {
  LlmHarness h(config(LlmPolicy::kContinuous), simple_cost(), 2);
  std::vector<Arrival> arrivals;
  for (int i = 0; i < 8; ++i) arrivals.push_back(llm_arrival(0.001 * i, 200, 50));
  h.at(0.0075, [&h] {
    const auto& w = h.engine().workers();
    EXPECT_EQ(w[0]->held + w[1]->held, 8u);
    EXPECT_EQ(w[0]->held, 4u);  // alternately, not all on one instance
  });
  h.run(arrivals);
  expect_accounted(h, 8);
}

TEST(LlmSloAdmission, DropsWhatCannotMakeItsTtft) {
  // 20 prompts of 1000 tokens at once: each prefill takes 1.01 s; TTFT SLO 3.5 s.
  std::vector<Arrival> burst;
  for (int i = 0; i < 20; ++i) burst.push_back(llm_arrival(0.0, 1000, 5));
  LlmSchedulerConfig plain = config(LlmPolicy::kContinuous, 100000, 1000);
  LlmHarness without(plain, simple_cost(), 1, 3.5, 0.0);
  without.run(burst);
  LlmSchedulerConfig aware = plain;
  aware.slo_admission = true;
  LlmHarness with(aware, simple_cost(), 1, 3.5, 0.0);
  with.run(burst);
  expect_accounted(without, 20);
  expect_accounted(with, 20);
  int ok_without = 0, ok_with = 0, dropped = 0;
  for (const auto& r : without.records) ok_without += r.outcome == Outcome::kOk;
  for (const auto& r : with.records) {
    ok_with += r.outcome == Outcome::kOk;
    if (r.outcome == Outcome::kDropped) {
      ++dropped;
      EXPECT_EQ(r.reason, DropReason::kTtftSlo);
    } else {
      EXPECT_LE(r.ttft, 3.5 + kEps);  // what it kept meets the SLO
    }
  }
  EXPECT_EQ(ok_without, 3);  // first tokens at 1.01, 2.02, 3.03 s
  EXPECT_EQ(ok_with, 3);
  EXPECT_EQ(dropped, 17);
  // Dropped on arrival: no GPU time spent on them.
  EXPECT_LT(with.steps.size(), without.steps.size());
}

TEST(LlmSloAdmission, HoldsBackAdmissionsThatWouldBreakTpot) {
  // Decode steps cost 10 ms + 1 ms per 100 context tokens: a TPOT SLO of 25 ms allows
  // about 1,500 context tokens in the running batch.
  class ContextCost final : public CostModel {
   public:
    Time step_time(const Worker&, const StepContents& s) const override {
      return 0.010 + 0.0001 * static_cast<double>(s.tokens_in) +
             0.00001 * static_cast<double>(s.context_tokens);
    }
  };
  LlmSchedulerConfig c = config(LlmPolicy::kContinuous, 100000, 4096);
  c.slo_admission = true;
  LlmHarness h(c, std::make_shared<ContextCost>(), 1, 100.0, 0.025);
  std::vector<Arrival> a;
  for (int i = 0; i < 6; ++i) a.push_back(llm_arrival(0.001 * i, 500, 30));
  h.run(a);
  expect_accounted(h, 6);
  for (const auto& r : h.records) {
    EXPECT_EQ(r.outcome, Outcome::kOk);
    EXPECT_LE(r.tpot, 0.025 + kEps);
  }
}

TEST(LlmSloAdmission, MeanOutputPredictorLearnsFromFinishedRequests) {
  LlmSchedulerConfig c = config(LlmPolicy::kContinuous);
  c.output_known = false;
  c.default_output_tokens = 64;
  LlmHarness h(c, simple_cost());
  Item probe;
  probe.tokens_out = 7;
  EXPECT_EQ(h.scheduler().predicted_output(probe), 64u);
  h.run({llm_arrival(0.0, 10, 10), llm_arrival(1.0, 10, 20)});
  EXPECT_EQ(h.scheduler().predicted_output(probe), 15u);
}

TEST(LlmCostModel, AnalyticStepFromModelAndGpu) {
  LlmModel m;  // Llama-2-7B, fp16
  LlmGpu g;
  g.memory_bytes = 40e9;
  g.bandwidth = 1555e9;
  g.flops = 312e12;
  g.mfu = 0.5;
  g.mbu = 0.8;
  g.step_overhead = 0.002;
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token(), 2.0 * 32 * 32 * 128 * 2);  // 0.5 MiB
  // (36 GB - 13.48 GB of weights) / (0.5 MiB x 16)
  EXPECT_EQ(kv_blocks_for(m, g, 16), 2684u);
  LlmModel int8 = m;
  int8.kv_bytes = 1.0;
  EXPECT_EQ(kv_blocks_for(int8, g, 16), 5369u);
  const LlmAnalyticCostModel cost(m, g);
  Worker w;
  StepContents prefill;
  prefill.tokens_in = 1000;
  prefill.context_tokens = 1000;
  const double bw = 1555e9 * 0.8;
  EXPECT_NEAR(cost.step_time(w, prefill),
              0.002 + 2 * 6.74e9 * 1000 / 156e12 + 13.48e9 / bw + 524288.0 * 1000 / bw, 1e-12);
  StepContents decode;
  decode.batch = 8;
  decode.tokens_out = 8;
  decode.context_tokens = 8 * 2000;
  const Time t = cost.step_time(w, decode);
  EXPECT_NEAR(t, 0.002 + 13.48e9 / bw + 524288.0 * 16000 / bw, 1e-12);
  decode.context_tokens *= 2;  // decode time grows with the KV read
  EXPECT_GT(cost.step_time(w, decode), t);
}

std::string llm_run(const std::string& llm_extra, const std::string& app_extra = "") {
  const std::string dir = std::string(TESSERA_SOURCE_DIR) + "/examples/llm/";
  return "app:\n  name: a\n  slo_ms: 60000\n" + app_extra +
         "  tasks: [{name: llm, variants: [{name: llama-2-7b}]}]\n"
         "deployment: " +
         dir +
         "deployment.yaml\n"
         "profiles: [{file: " +
         dir +
         "profiles.yaml}]\n"
         "workload: {source: {kind: deterministic, rate_rps: 2, limit: 20, input_tokens: 500, "
         "output_tokens: 20}}\n"
         "llm:\n  model: {layers: 32, kv_heads: 32, head_dim: 128, params_b: 6.74}\n"
         "  gpu: {memory_gb: 40, bandwidth_gbs: 1555, tflops: 312}\n" +
         llm_extra;
}

RunSpec run_from(const std::string& yaml) {
  return parse_run_spec(SpecNode::load_string(yaml, "run.yaml"));
}

TEST(LlmSpec, ExampleLoadsAndSimulates) {
  RunSpec run = load_run_spec(std::string(TESSERA_SOURCE_DIR) + "/examples/llm/run.yaml");
  ASSERT_TRUE(run.llm.has_value());
  EXPECT_EQ(run.llm->scheduler.kv_blocks, 2684u);
  EXPECT_NEAR(run.app.ttft_slo, 1.5, kEps);
  EXPECT_NEAR(run.app.tpot_slo, 0.1, kEps);
  RunSpec small = run_from(llm_run("  scheduler: {policy: chunked, token_budget: 512}\n",
                                   "  ttft_slo_ms: 1000\n  tpot_slo_ms: 50\n"));
  Simulator sim(small.app, small.deployment, small.profiles, PolicySet(small.policies), small.sim);
  auto arrivals = make_run_arrivals(small);
  sim.run(*arrivals);
  const auto summary = summarize(sim.metrics(), small.app);
  ASSERT_TRUE(summary.contains("llm"));
  EXPECT_EQ(summary["ok"].get<int>(), 20);
  EXPECT_EQ(summary["llm"]["requests"].get<int>(), 20);
  EXPECT_EQ(summary["llm"]["output_tokens"].get<int>(), 400);
  EXPECT_GT(summary["llm"]["kv_utilization"].get<double>(), 0.0);
  // The deployment's two instances both serve (least-loaded dispatch), as they do live.
  const auto& workers = sim.engine().workers();
  ASSERT_EQ(workers.size(), 2u);
  EXPECT_GT(workers[0]->items_done, 0u);
  EXPECT_GT(workers[1]->items_done, 0u);
  EXPECT_EQ(workers[0]->items_done + workers[1]->items_done, 20u);
}

TEST(LlmSpec, Errors) {
  using testing::spec_error;
  auto e =
      spec_error([] { run_from(llm_run("  scheduler: {policy: fcfs, slo_admission: true}\n")); });
  EXPECT_EQ(e.field(), "llm.scheduler.slo_admission");
  EXPECT_NE(e.problem().find("continuous or chunked"), std::string::npos);
  e = spec_error([] {
    run_from(
        std::string(llm_run("")).replace(llm_run("").find("params_b: 6.74"), 14, "params_b: 70"));
  });
  EXPECT_EQ(e.field(), "llm.gpu");
  EXPECT_NE(e.problem().find("leave no room"), std::string::npos);
  e = spec_error([] { run_from(llm_run("  kv_cache: {dtype: fp4}\n")); });
  EXPECT_EQ(e.field(), "llm.kv_cache.dtype");
  e = spec_error([] {
    std::string yaml = llm_run("");
    yaml = yaml.substr(0, yaml.find("llm:\n")) + "simulation: {cost_model: {kind: llm_analytic}}\n";
    run_from(yaml);
  });
  EXPECT_EQ(e.field(), "simulation.cost_model.kind");
  EXPECT_NE(e.problem().find("llm: section"), std::string::npos);
}

// token_linear with LLM steps: prompt tokens prefilled and tokens decoded per step.
TEST(LlmCostModel, TokenLinearSeesPrefillAndDecodeTokens) {
  RunSpec run = run_from(
      llm_run("  scheduler: {policy: fcfs}\nsimulation:\n  cost_model: {kind: token_linear, "
              "per_input_token_ms: 1, per_output_token_ms: 5}\n"));
  run.profiles = ProfileTable{};
  run.profiles.add("llama-2-7b", "a100-40gb", 1, 10.0);
  Simulator sim(run.app, run.deployment, run.profiles, PolicySet(run.policies), run.sim);
  auto arrivals = make_run_arrivals(run);  // 20 requests 0.5 s apart, 500 in, 20 out
  sim.run(*arrivals);
  // Prefill: 10 + 500 ms; 19 decodes of 10 + 5 ms; one request at a time per instance.
  EXPECT_NEAR(sim.metrics().llm().ttft.mean(), 0.510, 1e-9);
  EXPECT_NEAR(sim.metrics().llm().tpot.mean(), 0.015, 1e-9);
  EXPECT_EQ(sim.metrics().llm().decode_tokens, 20u * 19u);
}

// The model's context: a request whose 500 prompt + 20 output tokens exceed it is refused on
// arrival (failed, reason context_length), as the live server answers it 400; one that
// fits exactly is served.
TEST(LlmSpec, RequestsLongerThanTheContextFail) {
  auto run_with = [](int positions) {
    const std::string model = "  model: {layers: 32, kv_heads: 32, head_dim: 128, params_b: 6.74}";
    std::string yaml = llm_run("");
    yaml.replace(yaml.find(model), model.size(),
                 "  model: {layers: 32, kv_heads: 32, head_dim: 128, params_b: 6.74, "
                 "max_positions: " +
                     std::to_string(positions) + "}");
    RunSpec run = run_from(yaml);
    EXPECT_EQ(run.sim.max_positions, static_cast<uint32_t>(positions));
    Simulator sim(run.app, run.deployment, run.profiles, PolicySet(run.policies), run.sim);
    auto arrivals = make_run_arrivals(run);
    sim.run(*arrivals);  // throws unless every request ended exactly once
    return summarize(sim.metrics(), run.app);
  };
  const auto refused = run_with(519);
  EXPECT_EQ(refused["submitted"].get<int>(), 20);
  EXPECT_EQ(refused["failed"].get<int>(), 20);
  EXPECT_EQ(refused["failed_by_reason"]["context_length"].get<int>(), 20);
  EXPECT_EQ(refused["tasks"]["llm"]["failed"].get<int>(), 20);
  EXPECT_EQ(refused["tasks"]["llm"]["batches"].get<int>(), 0);  // no instance saw them
  const auto served = run_with(520);
  EXPECT_EQ(served["ok"].get<int>(), 20);
  EXPECT_FALSE(served.contains("failed_by_reason"));
  const auto e = testing::spec_error([] {
    run_from(
        std::string(llm_run(""))
            .replace(llm_run("").find("params_b: 6.74"), 14, "params_b: 6.74, max_positions: 1"));
  });
  EXPECT_EQ(e.field(), "llm.model.max_positions");
}

TEST(LlmSpec, SummaryOfNonLlmRunsHasNoLlmSection) {
  MetricsCollector m(App{}, 1.0);
  EXPECT_FALSE(summarize(m, App{}).contains("llm"));
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// The `parallel:` section: a TP 2 × PP 2 instance's KV blocks come from four GPUs, its cost
// model is the parallel one; links are required and errors name the field.
TEST(LlmSpec, ParallelSection) {
  const RunSpec run = run_from(
      llm_run("  parallel: {tp: 2, pp: 2, hidden: 4096, tp_link: {latency_us: 10, bus_gbs: 100},\n"
              "             pp_link: {bus_gbs: 25}}\n"));
  ASSERT_TRUE(run.llm.has_value());
  EXPECT_EQ(run.llm->parallel.gpus(), 4u);
  EXPECT_EQ(run.llm->scheduler.kv_blocks,
            kv_blocks_for(run.llm->model, run.llm->gpu, run.llm->parallel, 16));
  EXPECT_GT(run.llm->scheduler.kv_blocks, 4u * 2684u);
  ASSERT_NE(dynamic_cast<const LlmParallelCostModel*>(run.sim.cost_model.get()), nullptr);
  auto e = testing::spec_error([] { run_from(llm_run("  parallel: {tp: 2}\n")); });
  EXPECT_EQ(e.field(), "llm.parallel.tp");
  EXPECT_NE(e.problem().find("tp_link"), std::string::npos);
  e = testing::spec_error([] { run_from(llm_run("  parallel: {pp: 0}\n")); });
  EXPECT_EQ(e.field(), "llm.parallel.pp");
  e = testing::spec_error([] { run_from(llm_run("  parallel: {dp: 2}\n")); });
  EXPECT_EQ(e.field(), "llm.parallel.dp");
}

}  // namespace
}  // namespace tessera
