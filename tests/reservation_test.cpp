// PPipe's reservation data plane (src/dataplane/ppipe): the tables, probe() and reserve() on
// hand-built timelines (the paper's Fig. 5), Algorithm 1's decisions, the placement of a
// plan's vGPUs, and whole simulations: every request ends once, nothing is over-booked.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <random>

#include "dataplane/ppipe/batcher.hpp"
#include "dataplane/ppipe/book.hpp"
#include "dataplane/ppipe/data_plane.hpp"
#include "dataplane/ppipe/reactive_plane.hpp"
#include "dataplane/ppipe/reservation_plane.hpp"
#include "dataplane/ppipe/setup.hpp"
#include "dataplane/ppipe/timeline.hpp"
#include "reservation_usage.hpp"
#include "sim/simulator.hpp"
#include "workload/renewal_sources.hpp"
#include "workload/transforms.hpp"

namespace tessera::reservation {
namespace {

const std::filesystem::path kTimings = std::filesystem::path(TESSERA_SOURCE_DIR) / "data" /
                                       "profiles" / "ppipe" / "models" / "block-timing-tf32";
constexpr Time ms = 1e-3;

// ---- tables ------------------------------------------------------------------------------

TEST(Timeline, EarliestFitSkipsGapsTooShort) {
  Timeline t;
  t.reserve(1, 2.0, 1.0);                           // [2,3)
  t.reserve(2, 4.0, 2.0);                           // [4,6)
  EXPECT_DOUBLE_EQ(t.earliest_fit(0.0, 2.0), 0.0);  // [0,2) is free
  EXPECT_DOUBLE_EQ(t.earliest_fit(0.5, 2.0), 6.0);  // [3,4) is too short
  EXPECT_DOUBLE_EQ(t.earliest_fit(1.5, 1.0), 3.0);  // ... but fits 1
  EXPECT_DOUBLE_EQ(t.earliest_fit(2.5, 0.5), 3.0);
  EXPECT_FALSE(t.overbooked());
  EXPECT_TRUE(t.correct(2, 5.0, 7.0));  // feedback: it ran [5,7)
  EXPECT_DOUBLE_EQ(t.earliest_fit(3.0, 1.5), 3.0);
  EXPECT_DOUBLE_EQ(t.earliest_fit(3.0, 2.5), 7.0);
  EXPECT_TRUE(t.release(1));
  EXPECT_FALSE(t.release(1));
  EXPECT_DOUBLE_EQ(t.earliest_fit(1.5, 4.0), 7.0);
  EXPECT_DOUBLE_EQ(t.earliest_fit(0.5, 4.5), 0.5);
}

TEST(Timeline, OverlapsAfterAnOverrunCountAsBusy) {
  Timeline t;
  t.reserve(1, 0.0, 2.0);
  t.reserve(2, 2.0, 2.0);
  t.correct(1, 0.0, 3.0);  // ran one unit longer than planned
  EXPECT_TRUE(t.overbooked());
  EXPECT_DOUBLE_EQ(t.earliest_fit(0.0, 1.0), 4.0);
}

TEST(Timeline, CommonFitNeedsBothLinksFreeAtOnce) {
  Timeline up, down;
  up.reserve(1, 0.0, 5.0);    // uplink busy [0,5)
  up.reserve(2, 12.0, 8.0);   // ... and [12,20)
  down.reserve(3, 5.0, 5.0);  // downlink busy [5,10)
  EXPECT_DOUBLE_EQ(earliest_common_fit(up, down, 0.0, 2.0), 10.0);
  EXPECT_DOUBLE_EQ(earliest_common_fit(up, down, 0.0, 3.0), 20.0);  // [10,12) is too short
  // Each alone would have started earlier.
  EXPECT_DOUBLE_EQ(up.earliest_fit(0.0, 2.0), 5.0);
  EXPECT_DOUBLE_EQ(down.earliest_fit(0.0, 2.0), 0.0);
}

// ---- probe and reserve: Fig. 5 ---------------------------------------------------------

// Pool 1 = {node 1}, pool 2 = {node 2, node 3}, each GPU on its own node. Partition 1
// takes t1 = 10, the transfer t2 = 2 (2 bytes at 1 byte/unit), partition 2 takes 8.
struct Fig5 {
  ReservationBook book;
  PipelinePlan pipe;
  uint32_t n[4] = {};
  Fig5() {
    for (int node = 1; node <= 3; ++node) {
      const uint32_t up = book.add_link({1.0, 0.0});
      const uint32_t down = book.add_link({1.0, 0.0});
      n[node] = book.add_vgpu(up, down);
    }
    pipe.batch = 1;
    PoolPlan p1;
    p1.members = {n[1]};
    p1.latency = {0.0, 10.0};
    PoolPlan p2;
    p2.members = {n[2], n[3]};
    p2.latency = {0.0, 8.0};
    p2.in_bytes_per_item = 2.0;
    pipe.pools = {p1, p2};
  }
};

TEST(Probe, Figure5WalkThrough) {
  Fig5 f;
  // Node 2's downlink is taken until 13; node 3's GPU until 30.
  f.book.link(f.book.downlink_of(f.n[2])).reserve(900, 9.0, 4.0);
  f.book.gpu(f.n[3]).reserve(901, 12.0, 18.0);
  const Offer o = f.book.probe(f.pipe, 1, 0.0);
  ASSERT_EQ(o.hops, 2);
  EXPECT_EQ(o.hop[0].vgpu, f.n[1]);
  EXPECT_DOUBLE_EQ(o.hop[0].start, 0.0);        // node 1's GPU for t1
  EXPECT_EQ(o.hop[1].vgpu, f.n[2]);             // node 2 finishes at 23, node 3 only at 38
  EXPECT_DOUBLE_EQ(o.hop[1].xfer_start, 13.0);  // node 1 UL + node 2 DL together for t2
  EXPECT_DOUBLE_EQ(o.hop[1].xfer_len, 2.0);
  EXPECT_DOUBLE_EQ(o.hop[1].start, 15.0);  // node 2's GPU for t3
  EXPECT_DOUBLE_EQ(o.finish, 23.0);
  EXPECT_DOUBLE_EQ(o.wait, 3.0);  // the transfer waited 10 -> 13

  f.book.reserve(o, 1);
  const auto& up1 = f.book.link(f.book.uplink_of(f.n[1])).intervals();
  const auto& down2 = f.book.link(f.book.downlink_of(f.n[2])).intervals();
  ASSERT_EQ(up1.size(), 1u);
  EXPECT_DOUBLE_EQ(up1[0].start, 13.0);
  EXPECT_DOUBLE_EQ(up1[0].end, 15.0);
  EXPECT_EQ(down2.size(), 2u);
  EXPECT_EQ(f.book.gpu(f.n[1]).intervals().size(), 1u);
  EXPECT_EQ(f.book.gpu(f.n[2]).intervals().size(), 1u);
  EXPECT_TRUE(f.book.link(f.book.uplink_of(f.n[3])).empty());

  // The next batch: node 1's GPU [10,20); node 2 needs UL1 and DL2 after 20, GPU 2 after
  // 23 -> 31; node 3: transfer [20,22), GPU 3 after 30 -> 38. Node 2 again.
  const Offer o2 = f.book.probe(f.pipe, 1, 0.0);
  EXPECT_DOUBLE_EQ(o2.hop[0].start, 10.0);
  EXPECT_EQ(o2.hop[1].vgpu, f.n[2]);
  EXPECT_DOUBLE_EQ(o2.hop[1].xfer_start, 20.0);
  EXPECT_DOUBLE_EQ(o2.hop[1].start, 23.0);
  EXPECT_DOUBLE_EQ(o2.finish, 31.0);
  EXPECT_EQ(f.book.probes(), 2u);
}

TEST(Probe, SameServerNeedsNoNic) {
  ReservationBook book;
  const uint32_t up = book.add_link({1.0, 0.5});
  const uint32_t down = book.add_link({1.0, 0.5});
  const uint32_t a = book.add_vgpu(up, down);
  const uint32_t b = book.add_vgpu(up, down);
  PipelinePlan pipe;
  pipe.pools = {PoolPlan{{a}, {0.0, 1.0}, 0.0}, PoolPlan{{b}, {0.0, 1.0}, 100.0}};
  const Offer o = book.probe(pipe, 1, 0.0);
  EXPECT_DOUBLE_EQ(o.hop[1].xfer_len, 0.0);
  EXPECT_DOUBLE_EQ(o.finish, 2.0);
}

// ---- Algorithm 1 ---------------------------------------------------------------------------

// Two single-partition pipelines: A (batch 4, 10 + 2 per item) and B (batch 2, 6 per
// batch of up to 2).
struct TwoPipes {
  ReservationBook book;
  std::vector<PipelinePlan> pipes;
  uint32_t a = 0, b = 0;
  TwoPipes() {
    const uint32_t up = book.add_link({1.0, 0.0});
    const uint32_t down = book.add_link({1.0, 0.0});
    a = book.add_vgpu(up, down);
    b = book.add_vgpu(up, down);
    pipes.push_back(PipelinePlan{4, {PoolPlan{{a}, {0.0, 12.0, 14.0, 16.0, 18.0}, 0.0}}});
    pipes.push_back(PipelinePlan{2, {PoolPlan{{b}, {0.0, 6.0, 6.0}, 0.0}}});
  }
};

TEST(Batcher, PicksLeastWaitThenLargestFittingSize) {
  TwoPipes t;
  t.book.gpu(t.b).reserve(7, 0.0, 5.0);  // B waits 5, A waits 0
  AdaptiveBatcher batcher(t.book, t.pipes);
  Decision d = batcher.decide(0.0, 100.0, 10, true);
  ASSERT_EQ(d.kind, Decision::Kind::kDispatch);
  EXPECT_EQ(d.offer.pipeline, 0);
  EXPECT_EQ(d.offer.batch, 4);
  // A deadline of 15 fits only a batch of 2 on A (14).
  d = batcher.decide(0.0, 15.0, 10, true);
  ASSERT_EQ(d.kind, Decision::Kind::kDispatch);
  EXPECT_EQ(d.offer.batch, 2);
  EXPECT_DOUBLE_EQ(d.offer.finish, 14.0);
  // Not even one item by 11: drop the head.
  d = batcher.decide(0.0, 11.0, 10, true);
  EXPECT_EQ(d.kind, Decision::Kind::kDrop);
  EXPECT_FALSE(d.first_look_drop);
}

TEST(Batcher, WaitsUntilTheLastMomentThenDispatchesWhatIsQueued) {
  TwoPipes t;
  t.pipes.pop_back();
  AdaptiveBatcher batcher(t.book, t.pipes);
  // Two queued, batch 4 fits the deadline 40: wait; a batch of 2 takes 14, so the last
  // moment is 40 - 14 = 26.
  Decision d = batcher.decide(0.0, 40.0, 2, true);
  ASSERT_EQ(d.kind, Decision::Kind::kWait);
  EXPECT_NEAR(d.wake_at, 26.0, 1e-6);
  d = batcher.decide(d.wake_at, 40.0, 2, false);
  ASSERT_EQ(d.kind, Decision::Kind::kDispatch);
  EXPECT_EQ(d.offer.batch, 2);
  EXPECT_LE(d.offer.finish, 40.0);
}

TEST(Batcher, FirstLookRuleDropsWhenNearPlannedSizesMiss) {
  TwoPipes t;
  t.pipes.pop_back();
  BatcherOptions opt;
  opt.first_look_fraction = 0.95;  // round(0.95 x 4) = 4: only the planned size
  AdaptiveBatcher batcher(t.book, t.pipes, opt);
  Decision d = batcher.decide(0.0, 15.0, 10, true);
  EXPECT_EQ(d.kind, Decision::Kind::kDrop);
  EXPECT_TRUE(d.first_look_drop);
  d = batcher.decide(0.0, 15.0, 10, false);  // looked at before: the full search
  ASSERT_EQ(d.kind, Decision::Kind::kDispatch);
  EXPECT_EQ(d.offer.batch, 2);
}

// ---- placement -----------------------------------------------------------------------------

using testing::wrn_plan;

std::vector<PpipeBlockProfile> wrn_blocks() {
  auto blocks = load_ppipe_model(kTimings, "wide_resnet101_2");
  // The cut sizes (bytes per sample at each block boundary) of the bundled mapping.
  return blocks;
}

TEST(Placement, VgpusOfOneGpuShareItsServer) {
  const VgpuPlacement p = place_plan(wrn_plan());
  const auto& split = p.server_of[0][1];
  ASSERT_EQ(split[1].size(), 4u);
  // L4 GPUs 0,1 (server 0) run the whole model; GPUs 2,3 (server 1) hold the 4 halves.
  EXPECT_EQ(p.server_of[0][0][0][0], p.server_of[0][0][0][1]);
  for (int s : split[1]) EXPECT_EQ(p.server_name(s), "L4-s1");
  EXPECT_EQ(p.server_name(split[0][0]), "T4-s0");
  EXPECT_EQ(p.server_name(split[0][3]), "T4-s1");
  EXPECT_NEAR(p.servers[static_cast<std::size_t>(split[0][0])].bandwidth, 1.25e9, 1.0);
  EXPECT_THROW(place_plan(wrn_plan(5, 4)), std::invalid_argument);  // 5 T4 of 4
  EXPECT_THROW(place_plan(wrn_plan(4, 5)), std::invalid_argument);  // 2 + 3 L4 of 4
}

TEST(Placement, MixedVgpuSizesShareAGpuOnceAllAreOpen) {
  // 2 T4 (one server): 3 half vGPUs (1.5 GPUs) then `quarters` quarter vGPUs. Two quarters
  // fit in the second GPU's free half (the planner's sum(1/v) <= whole GPUs), three do not.
  auto plan_with = [](int quarters) {
    ppipe::PpipePlan plan;
    plan.cluster.classes = {{"T4", 2, 2, 50.0, 4}};
    ppipe::DnnPlan d;
    d.dnn = "wide_resnet101_2";
    ppipe::Pipeline p;
    p.partitions.push_back({0, 4, "T4", 2, 3});
    p.partitions.push_back({4, 10, "T4", 4, quarters});
    d.pipelines = {p};
    plan.dnns.push_back(d);
    return plan;
  };
  const VgpuPlacement p = place_plan(plan_with(2));
  ASSERT_EQ(p.server_of[0][0][1].size(), 2u);
  EXPECT_EQ(p.servers.size(), 1u);
  EXPECT_EQ(p.servers[0].gpus, (std::vector<int>{0, 1}));
  EXPECT_THROW(place_plan(plan_with(3)), std::invalid_argument);  // 1.5 + 0.75 > 2
}

TEST(Placement, SizesOfOnePositionShareAGpuBeforeANewOneOpens) {
  // 3 T4 free; one DNN, two pipelines whose first partitions take 3 halves and 2 quarters
  // (sum 2 GPUs at position 0): the quarters fill the second GPU's free half.
  ppipe::PpipePlan plan;
  plan.cluster.classes = {{"T4", 3, 4, 50.0, 4}};
  ppipe::DnnPlan d;
  d.dnn = "wide_resnet101_2";
  ppipe::Pipeline a;
  a.partitions.push_back({0, 10, "T4", 2, 3});
  ppipe::Pipeline b;
  b.partitions.push_back({0, 10, "T4", 4, 2});
  d.pipelines = {a, b};
  plan.dnns.push_back(d);
  const VgpuPlacement p = place_plan(plan);
  ASSERT_EQ(p.servers.size(), 1u);
  EXPECT_EQ(p.servers[0].gpus, (std::vector<int>{0, 1}));  // GPU 2 never opened
}

TEST(Setup, BuildsAChainPerPipelineWithOneRoot) {
  const PpipeSetup s = build_setup(wrn_plan(), 0, wrn_blocks());
  ASSERT_EQ(s.app.tasks.size(), 3u);
  EXPECT_EQ(s.app.roots, std::vector<TaskId>{0});
  EXPECT_EQ(s.app.tasks[1].name, "wide_resnet101_2/p1.0");
  ASSERT_EQ(s.pipelines.size(), 2u);
  EXPECT_EQ(s.pipelines[1].tasks, (std::vector<TaskId>{1, 2}));
  EXPECT_DOUBLE_EQ(s.pipelines[1].in_bytes[1], 2230272.0);  // the cut after block 3
  EXPECT_EQ(s.deployment.total_workers(), 2 + 4 + 4);
  EXPECT_DOUBLE_EQ(s.app.edges[0].bytes_per_item, 0.0);  // the plane moves the bytes
  SetupOptions o;
  o.link_edges = true;
  EXPECT_DOUBLE_EQ(build_setup(wrn_plan(), 0, wrn_blocks(), o).app.edges[0].bytes_per_item,
                   2230272.0);
}

// ---- whole runs ----------------------------------------------------------------------------

struct RunResult {
  uint64_t submitted = 0, ok = 0, late = 0, dropped = 0, failed = 0;
  PlaneStats stats;
  std::vector<ReservationPlane::Usage> usage;
  std::size_t steps = 0;
  uint64_t hops = 0;
};

RunResult simulate(const ppipe::PpipePlan& plan, double rate, uint64_t requests, uint64_t seed,
                   double noise_cv = 0.0, BatcherOptions opt = {},
                   std::vector<std::pair<Time, WorkerId>> losses = {}) {
  const PpipeSetup s = build_setup(plan, 0, wrn_blocks());
  auto plane = ReservationPlane::create(s, opt);
  plane->keep_history(true);
  SimOptions so;
  so.seed = seed;
  so.noise_cv = noise_cv;
  so.worker_losses = losses;
  Simulator sim(s.app, s.deployment, s.profiles, plane->policies(), so, EngineOptions{});
  Bounded arrivals(std::make_unique<PoissonSource>(rate, seed), std::nullopt, requests);
  sim.run(arrivals);  // throws if a request did not end exactly once
  RunResult r;
  r.submitted = sim.metrics().submitted();
  r.ok = sim.metrics().count(Outcome::kOk);
  r.late = sim.metrics().count(Outcome::kLate);
  r.dropped = sim.metrics().count(Outcome::kDropped);
  r.failed = sim.metrics().count(Outcome::kFailed);
  r.stats = plane->stats();
  r.usage = plane->usage();
  for (const Offer& o : plane->history()) r.hops += static_cast<uint64_t>(o.hops);
  for (const auto& u : r.usage) r.steps += u.link ? 0 : 1;
  return r;
}

using testing::worst_overlap;

TEST(ReservationPlane, ServesAPlanOnTimeWithoutOverbooking) {
  // Planned: 2 x 2 / 26.8 ms = 149 req/s whole + ~214 req/s split; offer 250 req/s.
  const RunResult r = simulate(wrn_plan(), 250.0, 4000, 7);
  EXPECT_EQ(r.submitted, 4000u);
  EXPECT_EQ(r.ok + r.late + r.dropped + r.failed, r.submitted);
  EXPECT_EQ(r.late, 0u);  // exact profiles: a dispatched batch meets its deadline
  EXPECT_EQ(r.failed, 0u);
  EXPECT_GT(r.ok, 3900u);
  EXPECT_GT(r.stats.per_pipeline[0], 0u);
  EXPECT_GT(r.stats.per_pipeline[1], 0u);
  EXPECT_GT(r.stats.transfers, 0u);
  EXPECT_EQ(r.stats.reslotted, 0u);  // every transfer ran in its reserved slot
  EXPECT_EQ(r.steps, r.hops);        // one step per batch per partition: never split
  EXPECT_LE(worst_overlap(r.usage, false), 1e-12);
  EXPECT_LE(worst_overlap(r.usage, true), 1e-12);
}

TEST(ReservationPlane, NeverOverbooksUnderRandomSeededLoads) {
  // Property: over random loads (under- to overloaded), seeds and latency noise, no vGPU and
  // no NIC direction is ever used by two steps or transfers at once, and every request
  // ends exactly once.
  std::mt19937_64 rng(2025);
  for (int trial = 0; trial < 8; ++trial) {
    const double rate = std::uniform_real_distribution<double>(50.0, 700.0)(rng);
    const double noise = trial % 2 == 0 ? 0.0 : 0.1;
    const uint64_t seed = rng();
    BatcherOptions opt;
    opt.first_look_fraction = trial % 4 == 3 ? 0.95 : 0.0;
    const RunResult r = simulate(wrn_plan(), rate, 1500, seed, noise, opt);
    SCOPED_TRACE("rate " + std::to_string(rate) + " noise " + std::to_string(noise));
    EXPECT_EQ(r.ok + r.late + r.dropped + r.failed, r.submitted);
    EXPECT_EQ(r.failed, 0u);
    EXPECT_LE(worst_overlap(r.usage, false), 1e-12);
    EXPECT_LE(worst_overlap(r.usage, true), 1e-12);
    if (noise == 0.0) {
      EXPECT_EQ(r.late, 0u);
      EXPECT_EQ(r.stats.reslotted, 0u);
    }
    EXPECT_EQ(r.dropped, r.stats.drops);  // every drop is the central queue's, with a reason
  }
}

TEST(ReservationPlane, OverloadDropsAtTheCentralQueue) {
  const RunResult r = simulate(wrn_plan(), 1200.0, 3000, 3);
  EXPECT_EQ(r.ok + r.late + r.dropped + r.failed, r.submitted);
  EXPECT_GT(r.dropped, 1000u);
  EXPECT_EQ(r.late, 0u);
  EXPECT_EQ(r.dropped, r.stats.drops);
}

// ---- the reactive baseline -----------------------------------------------------------------

struct ReactiveResult {
  uint64_t submitted = 0, ok = 0, late = 0, dropped = 0, failed = 0;
  ReactiveStats stats;
};

ReactiveResult simulate_reactive(const ppipe::PpipePlan& plan, double rate, uint64_t requests,
                                 uint64_t seed, double noise_cv = 0.0, BatcherOptions opt = {},
                                 std::vector<std::pair<Time, WorkerId>> losses = {}) {
  SetupOptions so_setup;
  so_setup.link_edges = true;
  const PpipeSetup s = build_setup(plan, 0, wrn_blocks(), so_setup);
  auto plane = ReactivePlane::create(s, opt);
  SimOptions so;
  so.seed = seed;
  so.noise_cv = noise_cv;
  so.worker_losses = losses;
  Simulator sim(s.app, s.deployment, s.profiles, plane->policies(), so, EngineOptions{});
  Bounded arrivals(std::make_unique<PoissonSource>(rate, seed), std::nullopt, requests);
  sim.run(arrivals);
  ReactiveResult r;
  r.submitted = sim.metrics().submitted();
  r.ok = sim.metrics().count(Outcome::kOk);
  r.late = sim.metrics().count(Outcome::kLate);
  r.dropped = sim.metrics().count(Outcome::kDropped);
  r.failed = sim.metrics().count(Outcome::kFailed);
  r.stats = plane->stats();
  return r;
}

TEST(ReactivePlane, EveryRequestEndsOnceUnderRandomSeededLoads) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 6; ++trial) {
    const double rate = std::uniform_real_distribution<double>(50.0, 900.0)(rng);
    BatcherOptions opt;
    opt.first_look_fraction = trial % 3 == 2 ? 0.95 : 0.0;
    const ReactiveResult r =
        simulate_reactive(wrn_plan(), rate, 1500, rng(), trial % 2 ? 0.1 : 0.0, opt);
    SCOPED_TRACE("rate " + std::to_string(rate));
    EXPECT_EQ(r.submitted, 1500u);
    EXPECT_EQ(r.ok + r.late + r.dropped + r.failed, r.submitted);
    EXPECT_EQ(r.failed, 0u);
    EXPECT_EQ(r.dropped, r.stats.drops);
    EXPECT_GT(r.stats.transfers, 0u);
  }
}

TEST(ReactivePlane, ReservationsServeMoreNearCapacity) {
  // The ablation's direction (§7.4) on the small plan: near its planned throughput (~360
  // req/s) the reservation plane completes more requests on time than the reactive one.
  for (double rate : {300.0, 350.0}) {
    const RunResult a = simulate(wrn_plan(), rate, 6000, 11);
    const ReactiveResult b = simulate_reactive(wrn_plan(), rate, 6000, 11);
    SCOPED_TRACE("rate " + std::to_string(rate));
    EXPECT_GT(a.ok, b.ok);
    EXPECT_EQ(a.late, 0u);
  }
}

TEST(ReservationPlane, ThreePartitionsKeepABatchOnOnePath) {
  // One pipeline: T4 [0,3) -> half-L4 [3,7) -> half-L4 [7,10), batch 1; two transfers per
  // batch (4.3 MB and 2.2 MB per sample).
  ppipe::PpipePlan plan;
  plan.cluster.classes = {{"L4", 4, 2, 50.0, 4}, {"T4", 4, 2, 50.0, 4}};
  ppipe::DnnPlan d;
  d.dnn = "wide_resnet101_2";
  d.slo_ms = 67.1;
  ppipe::Pipeline p;
  p.batch = 1;
  p.partitions.push_back({0, 3, "T4", 1, 4});
  p.partitions.push_back({3, 7, "L4", 2, 4});
  p.partitions.push_back({7, 10, "L4", 2, 4});
  d.pipelines = {p};
  plan.dnns.push_back(d);
  for (double noise : {0.0, 0.1}) {
    const RunResult r = simulate(plan, 250.0, 3000, 5, noise);
    SCOPED_TRACE("noise " + std::to_string(noise));
    EXPECT_EQ(r.ok + r.late + r.dropped + r.failed, r.submitted);
    EXPECT_EQ(r.steps, r.hops);  // 3 steps per batch
    EXPECT_EQ(r.hops, 3 * r.stats.batches);
    EXPECT_EQ(r.stats.transfers, 2 * r.stats.batches);
    EXPECT_LE(worst_overlap(r.usage, false), 1e-12);
    EXPECT_LE(worst_overlap(r.usage, true), 1e-12);
    if (noise == 0.0) {
      EXPECT_EQ(r.late, 0u);
      EXPECT_GT(r.ok, 2900u);
    }
  }
}

TEST(DataPlane, SelectedByName) {
  EXPECT_EQ(parse_data_plane("reservation"), DataPlaneKind::kReservation);
  EXPECT_EQ(parse_data_plane("reactive"), DataPlaneKind::kReactive);
  EXPECT_THROW(parse_data_plane("ppipe"), std::invalid_argument);
  for (DataPlaneKind kind : {DataPlaneKind::kReservation, DataPlaneKind::kReactive}) {
    const PpipeSetup s = build_setup(wrn_plan(), 0, wrn_blocks(), setup_options_for(kind));
    EXPECT_EQ(s.app.edges[0].bytes_per_item > 0, kind == DataPlaneKind::kReactive);
    DataPlane dp = make_data_plane(s, kind);
    Simulator sim(s.app, s.deployment, s.profiles, std::move(dp.policies), SimOptions{},
                  EngineOptions{});
    Bounded arrivals(std::make_unique<PoissonSource>(200.0, 1), std::nullopt, 500);
    sim.run(arrivals);
    EXPECT_EQ(sim.metrics().count(Outcome::kOk) + sim.metrics().count(Outcome::kDropped), 500u);
    EXPECT_NE(dp.summary().find(data_plane_name(kind)), std::string::npos);
    EXPECT_NE(dp.summary().find("transfers"), std::string::npos);
  }
}

TEST(BothPlanes, EveryRequestEndsOnceWhenInstancesAreLost) {
  // Workers: 0-1 whole-model L4 (0 is the anchor), 2-5 T4, 6-9 half-L4 vGPUs. Lose the
  // anchor, a T4 and a receiving vGPU while batches are in flight: capacity falls to about
  // 235 req/s under 320 offered.
  const std::vector<std::pair<Time, WorkerId>> losses = {{1.0, 0}, {2.0, 3}, {3.0, 7}};
  for (uint64_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const RunResult a = simulate(wrn_plan(), 320.0, 2000, seed, 0.0, {}, losses);
    EXPECT_EQ(a.submitted, 2000u);
    EXPECT_EQ(a.ok + a.late + a.dropped + a.failed, a.submitted);
    EXPECT_EQ(a.late, 0u);
    EXPECT_LE(a.failed, 10u);  // only batches reserved on a lost vGPU fail
    EXPECT_GT(a.ok, 1600u);    // the rest serve on; the new anchor takes the arrivals
    // With latency noise too (overruns then push later reservations: some end late).
    const RunResult n = simulate(wrn_plan(), 320.0, 2000, seed, 0.05, {}, losses);
    EXPECT_EQ(n.ok + n.late + n.dropped + n.failed, n.submitted);
    EXPECT_LE(worst_overlap(n.usage, true), 1e-12);
    const ReactiveResult b = simulate_reactive(wrn_plan(), 320.0, 2000, seed, 0.05, {}, losses);
    EXPECT_EQ(b.submitted, 2000u);
    EXPECT_EQ(b.ok + b.late + b.dropped + b.failed, b.submitted);
    EXPECT_GT(b.ok, 1300u);
  }
}

}  // namespace
}  // namespace tessera::reservation
