#include <gtest/gtest.h>

#include "core/spec_node.hpp"
#include "policy/budget_queue.hpp"
#include "policy/dropping.hpp"
#include "policy/presets.hpp"
#include "policy/slack_policies.hpp"
#include "sim/simulator.hpp"
#include "spec_error.hpp"
#include "test_support.hpp"
#include "workload/renewal_sources.hpp"
#include "workload/transforms.hpp"

namespace tessera {
namespace {

// One task hosting three variants: accuracy 0.70 / 0.80 / 0.90, latency
// base + per_item × b with base 2 / 4 / 8 ms and per_item 0.5 / 1 / 2 ms (P1, P2 and P3:
// the least accurate variant at batch 16 costs 10 ms, the most accurate at batch 1 10 ms).
App supernet_app() {
  App app;
  app.name = "supernet";
  app.slo = 0.036;
  Task t;
  t.name = "classify";
  t.variants = {{"small", 0.70, 1.0}, {"medium", 0.80, 1.0}, {"large", 0.90, 1.0}};
  app.tasks.push_back(t);
  app.finalize();
  return app;
}

ProfileTable supernet_profiles() {
  ProfileTable p;
  testing::add_affine(p, "small", 2.0, 0.5, 16);
  testing::add_affine(p, "medium", 4.0, 1.0, 16);
  testing::add_affine(p, "large", 8.0, 2.0, 16);
  return p;
}

// A worker hosting the three variants, its queue holding one request due at `deadline`.
struct OneWorker {
  App app = supernet_app();
  Worker worker;
  PriorityMode mode = PriorityMode::kLowBudgetFirst;

  explicit OneWorker(Time deadline) {
    worker.max_batch = 16;
    worker.variants = {0, 1, 2};
    const ProfileTable p = supernet_profiles();
    for (const char* v : {"small", "medium", "large"}) {
      std::vector<Time> row(17, 0.0);
      for (int b = 1; b <= 16; ++b) row[static_cast<std::size_t>(b)] = p.latency(v, "gpu", b);
      worker.latency.push_back(row);
    }
    worker.queue = std::make_shared<BudgetQueue>(&mode);
    worker.queue->push(Item{0, 0, 1.0, 0.0, deadline, 0.0});
  }
  std::string name(const BatchChoice& c) const {
    return app.tasks[0]
        .variants[static_cast<std::size_t>(
            worker.variants[static_cast<std::size_t>(c.variant_slot)])]
        .name;
  }
};

TEST(SlackFit, HighSlackPicksAccuracyLowSlackPicksLargeFastBatches) {
  OneWorker w(0.0);
  SlackFit policy(w.app, 10);
  // Buckets span [small@1 = 2.5 ms, large@16 = 40 ms].
  const BatchChoice wide = policy.choose(w.worker, -0.041);  // slack 41 ms: the top bucket
  EXPECT_EQ(w.name(wide), "large");
  EXPECT_EQ(wide.max_size, 16);
  const BatchChoice tight = policy.choose(w.worker, -0.0065);  // slack 6.5 ms
  EXPECT_EQ(w.name(tight), "small");
  EXPECT_EQ(tight.max_size, 8);  // small@8 = 6 ms is the largest batch below 6.5 ms
  // A bucket in the middle: slack 20 ms; every choice below it fits.
  const BatchChoice mid = policy.choose(w.worker, -0.020);
  EXPECT_LT(w.worker.profiled_latency(mid.variant_slot, mid.max_size), 0.020);
}

TEST(SlackPolicies, NothingFitsDrainsWithTheFastestVariantAtMaxBatch) {
  OneWorker w(0.0);
  SlackFit slackfit(w.app, 10);
  MaxBatch maxbatch(w.app);
  MaxAcc maxacc(w.app);
  for (VariantPolicy* p : std::vector<VariantPolicy*>{&slackfit, &maxbatch, &maxacc}) {
    const BatchChoice c = p->choose(w.worker, 0.001);  // already 1 ms past the deadline
    EXPECT_EQ(w.name(c), "small");
    EXPECT_EQ(c.max_size, 16);
  }
}

TEST(SlackPolicies, FitFallbackRunsTheLargestBatchThatStillFits) {
  OneWorker w(0.0);
  // Slack 5 ms: below SlackFit's lowest bucket (small@8 = 6 ms), above small@1 = 2.5 ms.
  SlackFit drain(w.app, 10);
  const BatchChoice d = drain.choose(w.worker, -0.005);
  EXPECT_EQ(w.name(d), "small");
  EXPECT_EQ(d.max_size, 16);  // small@16 = 10 ms: the head finishes 5 ms late
  SlackFit fit(w.app, 10, SlackFallback::kFit);
  const BatchChoice f = fit.choose(w.worker, -0.005);
  EXPECT_EQ(w.name(f), "small");
  EXPECT_EQ(f.max_size, 5);  // small@5 = 4.5 ms < 5 ms, small@6 = 5 ms is not below
  // Nothing fits even at batch 1: the fallback drains.
  const BatchChoice none = fit.choose(w.worker, -0.002);
  EXPECT_EQ(none.max_size, 16);
}

TEST(SlackPolicies, RateFallbackFitsOnlyWhenThatServesOnTimeAsFastAsDraining) {
  // A fixed cost per batch (small: 2 + 0.5 b ms): at a slack of 5 ms the fit batch (5 in
  // 4.5 ms, 1.1 requests/ms) is slower than draining even after losing the head (15 in
  // 10 ms): the rate fallback drains, where `fit` would cut the throughput.
  OneWorker w(0.0);
  SlackFit rate(w.app, 10, SlackFallback::kRate);
  const BatchChoice d = rate.choose(w.worker, -0.005);
  EXPECT_EQ(w.name(d), "small");
  EXPECT_EQ(d.max_size, 16);
  // Latency in proportion to the batch (small: 0.6 b ms): at a slack of 2.9 ms the fit batch
  // (4 in 2.4 ms, 1.67 requests/ms) beats draining (15 in 9.6 ms, 1.56): it fits.
  OneWorker p(0.0);
  for (int b = 1; b <= 16; ++b) p.worker.latency[0][static_cast<std::size_t>(b)] = 0.0006 * b;
  SlackFit proportional(p.app, 10, SlackFallback::kRate);
  const BatchChoice f = proportional.choose(p.worker, -0.0029);
  EXPECT_EQ(p.name(f), "small");
  EXPECT_EQ(f.max_size, 4);
}

TEST(DropInfeasible, PurgesWhatNoChoiceCanServeInTimeAndWhatABatchWouldFinishLate) {
  OneWorker w(0.0);
  DropInfeasible drop;
  EXPECT_TRUE(drop.purges_stale());
  EXPECT_EQ(drop.stale_reason(), DropReason::kPredictedLate);
  Item item{0, 0, 1.0, 0.0, 0.010, 0.0};  // due at 10 ms
  // The fastest choice is small@1 = 2.5 ms: from 7.5 ms on the item cannot make it.
  EXPECT_NEAR(drop.stale_at(item, w.worker), 0.0075, 1e-12);
  DropContext ctx;
  ctx.batch_start = 0.002;
  ctx.exec_time = 0.008;  // ends at the deadline: kept
  EXPECT_EQ(drop.on_batch(item, ctx), DropReason::kNone);
  ctx.exec_time = 0.0081;  // would end late
  EXPECT_EQ(drop.on_batch(item, ctx), DropReason::kPredictedLate);
  ctx.batch_start = 0.010;
  EXPECT_EQ(drop.on_batch(item, ctx), DropReason::kExpired);
}

TEST(SlackPolicies, EarlyPresetsAndTheFallbackField) {
  const PolicyConfig c = preset_config("slackfit-early:8");
  EXPECT_EQ(c.variant, VariantKind::kSlackFit);
  EXPECT_EQ(c.slack.buckets, 8);
  EXPECT_EQ(c.dropping, DroppingKind::kInfeasible);
  EXPECT_EQ(c.slack.fallback, SlackFallback::kFit);
  EXPECT_EQ(preset_config("slackfit").slack.fallback, SlackFallback::kRate);
  EXPECT_EQ(preset_config("slackfit").dropping, DroppingKind::kInfeasible);
  EXPECT_EQ(preset_config("slackfit-drain").slack.fallback, SlackFallback::kDrain);
  EXPECT_EQ(preset_config("slackfit-drain").dropping, DroppingKind::kExpired);
  EXPECT_EQ(preset_config("infaas-early").dropping, DroppingKind::kInfeasible);
  EXPECT_EQ(preset_config("slackfit-drop").dropping, DroppingKind::kInfeasible);
  EXPECT_EQ(preset_config("slackfit-drop").slack.fallback, SlackFallback::kDrain);
  auto parse = [](const std::string& yaml) {
    return parse_policy_config(SpecNode::load_string(yaml, "run.yaml").at("policies"));
  };
  EXPECT_EQ(parse("policies: {variant: {kind: maxbatch, fallback: fit}}\n").slack.fallback,
            SlackFallback::kFit);
  const SpecError e =
      testing::spec_error([&] { parse("policies: {variant: {kind: infaas, fallback: fit}}\n"); });
  EXPECT_NE(std::string(e.what()).find("policies.variant.fallback"), std::string::npos) << e.what();
  const SpecError bad = testing::spec_error(
      [&] { parse("policies: {variant: {kind: slackfit, fallback: late}}\n"); });
  EXPECT_NE(std::string(bad.what()).find("fallback"), std::string::npos) << bad.what();
}

TEST(SlackPolicies, MaxBatchMaxAccInfaasClipperPlus) {
  OneWorker w(0.0);
  const Time now = -0.015;  // slack 15 ms
  MaxBatch maxbatch(w.app);
  const BatchChoice mb = maxbatch.choose(w.worker, now);
  EXPECT_EQ(mb.max_size, 16);      // small@16 = 10 ms < 15 ms
  EXPECT_EQ(w.name(mb), "small");  // medium@16 = 20 ms and large@16 = 40 ms do not fit

  MaxAcc maxacc(w.app);
  const BatchChoice ma = maxacc.choose(w.worker, now);
  EXPECT_EQ(w.name(ma), "large");  // large@1 = 10 ms
  EXPECT_EQ(ma.max_size, 3);       // large@3 = 14 ms, large@4 = 16 ms

  Infaas infaas(w.app, 0.0);
  const BatchChoice inf = infaas.choose(w.worker, now);
  EXPECT_EQ(w.name(inf), "small");
  EXPECT_EQ(inf.max_size, 16);
  Infaas floored(w.app, 0.75);
  EXPECT_EQ(w.name(floored.choose(w.worker, now)), "medium");

  ClipperPlus clipper(w.app, "large");
  const BatchChoice cp = clipper.choose(w.worker, now);
  EXPECT_EQ(w.name(cp), "large");
  EXPECT_EQ(cp.max_size, 3);
}

// ---- the router: one EDF queue per task, served by idle workers ------------------------

struct Result {
  double attainment;
  double accuracy;
  uint64_t total;
  uint64_t late;
  int live_workers;
  std::vector<Time> last_batch_end;  // per worker
};

Result serve(const std::string& preset, double rate, double cv2, SimOptions options = {}) {
  const App app = supernet_app();
  Deployment d;
  d.groups.push_back(WorkerGroup{0, {0, 1, 2}, "gpu", 16, 4});
  Simulator sim(app, d, supernet_profiles(), PolicySet(preset_config(preset)), options);
  Bounded arrivals(std::make_unique<GammaSource>(rate, cv2, 7), 20.0, std::nullopt);
  sim.run(arrivals);
  const auto& m = sim.metrics();
  const uint64_t total = m.count(Outcome::kOk) + m.count(Outcome::kLate) +
                         m.count(Outcome::kDropped) + m.count(Outcome::kFailed);
  EXPECT_EQ(total, m.submitted());
  std::vector<Time> last_end;
  for (const auto& w : sim.engine().workers()) last_end.push_back(w->last_batch_end);
  return {static_cast<double>(m.count(Outcome::kOk)) / static_cast<double>(m.submitted()),
          m.accuracy_sum() / static_cast<double>(std::max<uint64_t>(1, m.accuracy_count())),
          total,
          m.count(Outcome::kLate),
          static_cast<int>(sim.engine().workers_of(0).size()),
          last_end};
}

TEST(SuperServeRouter, SlackFitKeepsUpWhereMaxAccCannotAndBeatsInfaasAccuracy) {
  // 4 workers; the small variant alone serves ~6,400 req/s at batch 16, the large ~1,000.
  const Result slackfit = serve("slackfit", 3000, 4);
  const Result maxacc = serve("maxacc", 3000, 4);
  const Result infaas = serve("infaas", 3000, 4);
  EXPECT_GT(slackfit.attainment, 0.99);
  EXPECT_GT(slackfit.attainment, maxacc.attainment + 0.05);
  EXPECT_GT(slackfit.accuracy, infaas.accuracy + 0.02);
  EXPECT_NEAR(infaas.accuracy, 0.70, 1e-9);
}

TEST(SuperServeRouter, EarlyDroppingTurnsLateRequestsIntoFewerMisses) {
  // Past capacity in bursts (CV^2 = 8 at ~0.95 of the small variant's 6,400 req/s):
  // SlackFit with the paper's bucket rule and tessera's drain fallback finishes requests
  // late; the early reading never does, and misses fewer.
  const Result paper = serve("slackfit-drain", 6000, 8);
  const Result early = serve("slackfit-early", 6000, 8);
  EXPECT_GT(paper.late, 0u);
  EXPECT_EQ(early.late, 0u);
  EXPECT_GT(early.attainment, paper.attainment);
}

TEST(SuperServeRouter, WorkerLossKeepsTheSharedQueue) {
  SimOptions options;
  options.worker_losses = {{5.0, 0}, {10.0, 1}};
  const Result r = serve("slackfit", 2000, 2, options);
  // The losses happened: two workers left, and neither ran a batch after its loss (a batch
  // running at the loss still finishes, within the largest batch's 40 ms).
  EXPECT_EQ(r.live_workers, 2);
  ASSERT_EQ(r.last_batch_end.size(), 4u);
  EXPECT_LT(r.last_batch_end[0], 5.0 + 0.040);
  EXPECT_LT(r.last_batch_end[1], 10.0 + 0.040);
  EXPECT_GT(r.last_batch_end[2], 19.0);
  EXPECT_GT(r.attainment, 0.95);  // two workers still carry 2,000 req/s on small subnets
}

}  // namespace
}  // namespace tessera
