// The engine's ledger and router driven directly through a fake driver and a manual clock:
// the driver contract, per-sub-request accounting, link transfers with contention, token
// sizes reaching the cost model, and atomic reconfiguration edits.

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "core/spec_node.hpp"
#include "engine/engine.hpp"
#include "policy/policy_set.hpp"
#include "policy/presets.hpp"
#include "spec_error.hpp"
#include "test_support.hpp"

namespace tessera {
namespace {

using testing::add_affine;
using testing::chain;
using testing::evenly;
using testing::make_edge;
using testing::make_task;

// Records every call the engine makes; the test plays the driver's part by hand.
class FakeDriver final : public EngineDriver {
 public:
  struct Delivery {
    std::vector<Item> items;
    Time at;
  };
  void start_batch(const Worker& worker) override {
    started.push_back(worker.id);
    durations.push_back(worker.running_duration);
  }
  void set_timer(WorkerId worker, uint64_t generation, Time at) override {
    timers.push_back({worker, generation, at});
  }
  void deliver_later(std::span<const Item> items, Time at) override {
    deliveries.push_back({std::vector<Item>(items.begin(), items.end()), at});
  }
  struct Timer {
    WorkerId worker;
    uint64_t generation;
    Time at;
  };
  std::vector<WorkerId> started;
  std::vector<Time> durations;
  std::vector<Timer> timers;
  std::vector<Delivery> deliveries;
};

class Records final : public EngineObserver {
 public:
  void on_request_done(const RequestRecord& r) override { done.push_back(r); }
  void on_request_stopped(uint64_t id, Outcome, TaskId, DropReason) override {
    stopped.push_back(id);
  }
  std::vector<RequestRecord> done;
  std::vector<uint64_t> stopped;
};

struct Rig {
  App app;
  Deployment deployment;
  ProfileTable profiles;
  ManualClock clock;
  FakeDriver driver;
  Records records;
  std::unique_ptr<Engine> engine;

  void start(const PolicyConfig& config, EngineOptions options = {}) {
    engine =
        std::make_unique<Engine>(app, deployment, profiles, PolicySet(config).instantiate(app, 1),
                                 clock, driver, records, 1, std::move(options));
  }
  uint64_t submit(Time at, uint32_t tokens_in = 0, uint32_t tokens_out = 0) {
    clock.set(at);
    Arrival a;
    a.time = at;
    a.input_tokens = tokens_in;
    a.output_tokens = tokens_out;
    return engine->submit(a);
  }
  void finish(WorkerId w, Time at) {
    clock.set(at);
    engine->on_batch_done(w);
  }
};

TEST(Ledger, EagerWorkerRunsThenStartsTheFormedBatchAndEveryRequestEndsOnce) {
  Rig rig;
  rig.app = chain(1, 1.0);
  add_affine(rig.profiles, "t0", 10.0, 0.0, 4);
  rig.deployment.groups.push_back(WorkerGroup{0, {0}, "gpu", 4, 1});
  rig.start(preset_config("naive"));

  rig.submit(0.0);  // idle worker: starts a batch of one at once
  ASSERT_EQ(rig.driver.started.size(), 1u);
  EXPECT_DOUBLE_EQ(rig.driver.durations[0], 0.010);
  rig.submit(0.001);  // these two form the next batch while the first runs
  rig.submit(0.002);
  EXPECT_EQ(rig.driver.started.size(), 1u);
  EXPECT_EQ(rig.engine->queued_at(0), 2u);

  rig.finish(0, 0.010);
  ASSERT_EQ(rig.driver.started.size(), 2u);  // the formed batch starts the moment it ends
  ASSERT_EQ(rig.records.done.size(), 1u);
  EXPECT_EQ(rig.records.done[0].outcome, Outcome::kOk);
  EXPECT_DOUBLE_EQ(rig.records.done[0].subrequests, 1.0);
  EXPECT_DOUBLE_EQ(rig.records.done[0].subrequests_violated, 0.0);

  rig.finish(0, 0.020);
  ASSERT_EQ(rig.records.done.size(), 3u);
  EXPECT_EQ(rig.engine->requests_in_flight(), 0u);
  std::vector<uint64_t> ids;
  for (const auto& r : rig.records.done) ids.push_back(r.id);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<uint64_t>{0, 1, 2}));
}

TEST(Ledger, TimeoutBatchingAsksForATimerAndIgnoresStaleOnes) {
  Rig rig;
  rig.app = chain(1, 1.0);
  add_affine(rig.profiles, "t0", 10.0, 0.0, 4);
  rig.deployment.groups.push_back(WorkerGroup{0, {0}, "gpu", 4, 1});
  PolicyConfig c;
  c.batching = BatchingKind::kTimeout;
  c.batch_timeout = 0.005;
  rig.start(c);
  rig.submit(0.0);
  EXPECT_TRUE(rig.driver.started.empty());
  ASSERT_EQ(rig.driver.timers.size(), 1u);
  EXPECT_DOUBLE_EQ(rig.driver.timers[0].at, 0.005);
  rig.clock.set(0.005);
  rig.engine->on_timer(0, rig.driver.timers[0].generation + 1);  // stale: nothing happens
  EXPECT_TRUE(rig.driver.started.empty());
  rig.engine->on_timer(0, rig.driver.timers[0].generation);
  EXPECT_EQ(rig.driver.started.size(), 1u);
}

// A detector deriving three objects per frame, a classifier after it.
Rig fanout_rig(PolicyConfig config, EngineOptions options = {}) {
  Rig rig;
  rig.app.slo = 1.0;
  rig.app.tasks = {make_task("det", 3.0), make_task("cls")};
  rig.app.edges = {make_edge(0, 1)};
  rig.app.finalize();
  add_affine(rig.profiles, "det", 10.0, 0.0, 4);
  add_affine(rig.profiles, "cls", 10.0, 0.0, 1);
  rig.deployment.groups.push_back(WorkerGroup{0, {0}, "gpu", 4, 1});
  rig.deployment.groups.push_back(WorkerGroup{1, {0}, "gpu", 1, 1});
  rig.start(config, std::move(options));
  return rig;
}

TEST(Ledger, ADropAtATaskWithFactorThreeCountsThreeSubRequests) {
  PolicyConfig c = preset_config("naive");
  c.dropping = DroppingKind::kExpired;
  Rig rig = fanout_rig(c);
  EXPECT_DOUBLE_EQ(rig.engine->subrequest_weight(0), 3.0);
  EXPECT_DOUBLE_EQ(rig.engine->subrequest_weight(1), 1.0);
  // Occupy the detector past the next request's deadline: that one is dropped at the
  // detector as it would join the forming batch (expected start 10 ms > deadline 6 ms).
  rig.submit(0.0);
  Arrival late;
  late.slo_s = 0.005;
  rig.clock.set(0.001);
  rig.engine->submit(late);
  rig.finish(0, 0.010);
  const auto it = std::find_if(rig.records.done.begin(), rig.records.done.end(),
                               [](const RequestRecord& r) { return r.id == 1; });
  ASSERT_NE(it, rig.records.done.end());
  EXPECT_EQ(it->outcome, Outcome::kDropped);
  EXPECT_DOUBLE_EQ(it->subrequests, 3.0);
  EXPECT_DOUBLE_EQ(it->subrequests_violated, 3.0);
}

// Three objects reach a classifier whose queue holds two: the third is dropped (queue_full).
// Cancelling siblings discards the two queued objects; not cancelling runs them.
struct SiblingCase {
  bool cancel;
  double done_subrequests;
  double violated;
};

class SiblingCancellation : public ::testing::TestWithParam<SiblingCase> {};

TEST_P(SiblingCancellation, CountsEachSubRequestExactlyOnce) {
  PolicyConfig c = preset_config("naive");
  c.max_queue = 2;
  EngineOptions options;
  options.cancel_siblings_on_drop = GetParam().cancel;
  Rig rig = fanout_rig(c, options);
  rig.submit(0.0);
  rig.finish(0, 0.010);  // the detector derives 3 objects: two queue, one is dropped
  ASSERT_EQ(rig.records.stopped.size(), 1u);
  for (Time t = 0.020; rig.engine->requests_in_flight() > 0 && t < 1.0; t += 0.010) {
    if (rig.engine->workers()[1]->busy) rig.finish(1, t);
  }
  ASSERT_EQ(rig.records.done.size(), 1u);
  const RequestRecord& r = rig.records.done[0];
  EXPECT_EQ(r.outcome, Outcome::kDropped);
  EXPECT_EQ(r.reason, DropReason::kQueueFull);
  EXPECT_DOUBLE_EQ(r.subrequests, 3.0);
  EXPECT_DOUBLE_EQ(r.subrequests - r.subrequests_violated, GetParam().done_subrequests);
  EXPECT_DOUBLE_EQ(r.subrequests_violated, GetParam().violated);
}

INSTANTIATE_TEST_SUITE_P(Ledger, SiblingCancellation,
                         ::testing::Values(SiblingCase{true, 0.0, 3.0},
                                           SiblingCase{false, 2.0, 1.0}));

TEST(CostModel, TokensOfTheBatchReachTheCostModel) {
  Rig rig;
  rig.app = chain(1, 10.0);
  add_affine(rig.profiles, "t0", 10.0, 0.0, 4);
  rig.deployment.groups.push_back(WorkerGroup{0, {0}, "gpu", 4, 1});
  EngineOptions options;
  options.cost_model = std::make_shared<TokenLinearCostModel>(0.001, 0.010);
  rig.start(preset_config("naive"), options);
  rig.submit(0.0, 100, 5);  // 10 ms + 100 x 1 ms + 5 x 10 ms
  ASSERT_EQ(rig.driver.durations.size(), 1u);
  EXPECT_NEAR(rig.driver.durations[0], 0.010 + 0.100 + 0.050, 1e-12);
  rig.submit(0.001, 10, 0);
  rig.submit(0.002, 20, 1);
  rig.finish(0, rig.driver.durations[0]);
  ASSERT_EQ(rig.driver.durations.size(), 2u);  // both in one batch: tokens add up
  EXPECT_NEAR(rig.driver.durations[1], 0.010 + 0.030 + 0.010, 1e-12);
}

TEST(CostModel, SimulatorTakesTheCostModelsStepTime) {
  App app = chain(1, 10.0);
  ProfileTable p;
  add_affine(p, "t0", 10.0, 0.0, 1);
  Deployment d;
  d.groups.push_back(WorkerGroup{0, {0}, "gpu", 1, 1});
  EngineOptions options;
  options.cost_model = std::make_shared<TokenLinearCostModel>(0.001, 0.0);
  Simulator sim(app, d, p, PolicySet(preset_config("naive")).instantiate(app, 1), SimOptions{},
                options);
  class Tokens final : public ArrivalSource {
   public:
    bool next(Arrival& out) override {
      if (n_ == 2) return false;
      out = Arrival{};
      out.time = 0.0;
      out.input_tokens = n_++ == 0 ? 90 : 190;
      return true;
    }
    std::string describe() const override { return "tokens"; }

   private:
    int n_ = 0;
  } tokens;
  sim.run(tokens);
  // 10 + 90 ms, then 10 + 190 ms after it: the second ends at 0.3 s.
  EXPECT_NEAR(sim.engine().workers()[0]->busy_time, 0.300, 1e-9);
}

// Two detector instances on one server share its uplink; one classifier receives.
Deployment link_deployment(double bandwidth) {
  Deployment d;
  d.links.push_back(LinkSpec{"server0/up", bandwidth, 0.0});
  d.links.push_back(LinkSpec{"server1/down", bandwidth, 0.0});
  WorkerGroup det{0, {0}, "gpu", 1, 2};
  det.uplink = "server0/up";
  WorkerGroup cls{1, {0}, "gpu", 4, 1};
  cls.downlink = "server1/down";
  d.groups = {det, cls};
  return d;
}

TEST(Links, TwoBatchesOnOneUplinkQueueUp) {
  App app = chain(2, 10.0);
  app.edges[0].bytes_per_item = 1000.0;  // 1000 B at 10,000 B/s: 0.1 s per transfer
  ProfileTable p;
  add_affine(p, "t0", 10.0, 0.0, 4);
  add_affine(p, "t1", 1.0, 0.0, 4);
  auto run =
      testing::simulate(app, link_deployment(10'000.0), p, preset_config("naive"), evenly(2, 0.0));
  const Engine& engine = run.sim->engine();
  const LinkId up = engine.links().find("server0/up");
  ASSERT_NE(up, kNoLink);
  // Both detectors finish at 10 ms; the second transfer waits 0.1 s for the first.
  EXPECT_EQ(engine.links().stats(up).transfers, 2u);
  EXPECT_NEAR(engine.links().stats(up).queueing, 0.1, 1e-9);
  EXPECT_NEAR(engine.links().stats(up).busy, 0.2, 1e-9);
  // The classifier ran once per transfer: at 0.11 s and at 0.21 s.
  EXPECT_EQ(engine.workers()[2]->batches, 2u);
  EXPECT_NEAR(engine.workers()[2]->last_batch_end, 0.21 + 0.001, 1e-9);
  EXPECT_EQ(run.m().count(Outcome::kOk), 2u);
}

TEST(Links, ABatchTravelsAsOneTransferOfCountTimesBytes) {
  App app = chain(2, 10.0);
  app.edges[0].bytes_per_item = 500.0;
  ProfileTable p;
  add_affine(p, "t0", 10.0, 0.0, 4);
  add_affine(p, "t1", 1.0, 0.0, 4);
  Deployment d = link_deployment(10'000.0);
  d.groups[0].count = 1;
  d.groups[0].max_batch = 4;
  // Four at once on one eager detector: a batch of one, then a formed batch of three.
  auto run = testing::simulate(app, d, p, preset_config("naive"), evenly(4, 0.0));
  const Engine& engine = run.sim->engine();
  const LinkStats& up = engine.links().stats(engine.links().find("server0/up"));
  EXPECT_EQ(up.transfers, 2u);
  EXPECT_DOUBLE_EQ(up.bytes, 2000.0);
  // The three travelled together and ran together: the batch kept its identity.
  EXPECT_EQ(engine.workers()[1]->batches, 2u);
  EXPECT_EQ(engine.workers()[1]->items_done, 4u);
}

TEST(DeploymentEdit, ABadEditChangesNothingAndAGoodOneAppliesWhole) {
  Rig rig;
  rig.app = chain(1, 1.0);
  add_affine(rig.profiles, "t0", 10.0, 0.0, 4);
  rig.deployment.groups.push_back(WorkerGroup{0, {0}, "gpu", 4, 2});
  rig.start(preset_config("naive"));
  DeploymentEdit bad;
  bad.start.push_back(WorkerGroup{0, {0}, "gpu", 4, 1});
  bad.stop = {7};  // no such instance
  EXPECT_THROW(rig.engine->apply(bad, rig.profiles), std::invalid_argument);
  EXPECT_EQ(rig.engine->workers().size(), 2u);
  EXPECT_EQ(rig.engine->workers_of(0).size(), 2u);
  const uint64_t version = rig.engine->deployment_version();

  DeploymentEdit good;
  good.start.push_back(WorkerGroup{0, {0}, "gpu", 4, 1});
  good.stop = {0};
  good.batch_timeouts = {{0, 0.004}};
  const auto ids = rig.engine->apply(good, rig.profiles);
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(ids[0], 2u);
  EXPECT_EQ(rig.engine->workers_of(0).size(), 2u);
  EXPECT_FALSE(rig.engine->workers()[0]->alive);
  for (const Worker* w : rig.engine->workers_of(0)) EXPECT_DOUBLE_EQ(w->batch_timeout, 0.004);
  EXPECT_GT(rig.engine->deployment_version(), version);
}

TEST(DeploymentEdit, DisruptiveEditParksItemsUntilTheNewInstancesStart) {
  Rig rig;
  rig.app = chain(1, 1.0);
  add_affine(rig.profiles, "t0", 10.0, 0.0, 4);
  rig.deployment.groups.push_back(WorkerGroup{0, {0}, "gpu", 4, 1});
  rig.start(preset_config("naive"));
  DeploymentEdit down;
  down.reconfiguring = true;
  down.stop = {0};
  rig.engine->apply(down, rig.profiles);
  rig.submit(0.001);  // no live instance: it waits
  EXPECT_TRUE(rig.records.done.empty());
  DeploymentEdit up;
  up.start.push_back(WorkerGroup{0, {0}, "gpu", 4, 1});
  up.reconfiguring = false;
  rig.clock.set(0.002);
  rig.engine->apply(up, rig.profiles);
  ASSERT_EQ(rig.driver.started.size(), 1u);
  EXPECT_EQ(rig.driver.started[0], 1u);
  rig.finish(1, 0.012);
  ASSERT_EQ(rig.records.done.size(), 1u);
  EXPECT_EQ(rig.records.done[0].outcome, Outcome::kOk);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

PolicyConfig parse_policies(const std::string& yaml) {
  return parse_policy_config(SpecNode::load_string(yaml, "run.yaml").at("policies"));
}

TEST(Presets, TheTableListsEveryFamilyAndEveryPresetLoads) {
  EXPECT_EQ(policy_presets(PresetFamily::kPard).front(), "naive");
  EXPECT_EQ(policy_presets(PresetFamily::kSuperServe).size(), 4u);
  for (const std::string& name : all_presets()) {
    const std::string spec = name == "clipper+:VARIANT" ? "clipper+:resnet" : name;
    const PolicyConfig c = preset_config(spec);
    EXPECT_FALSE(policy_config_error(c).has_value()) << spec;
    EXPECT_EQ(c.preset, spec);
  }
  EXPECT_THROW(preset_config("slackfit:"), std::invalid_argument);
  EXPECT_THROW(preset_config("pard:3"), std::invalid_argument);
  EXPECT_THROW(preset_config("clipper+"), std::invalid_argument);
  EXPECT_THROW(preset_config("nosuch"), std::invalid_argument);
}

TEST(Presets, AnInvalidCombinationIsASpecErrorNamingTheField) {
  const SpecError e = testing::spec_error(
      [] { parse_policies("policies: {queue: adaptive, dropping: expired}\n"); });
  EXPECT_NE(std::string(e.what()).find("policies.queue"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("State Planner"), std::string::npos) << e.what();
  // A preset's queue with a dropping rule that cannot feed it: blamed on the preset, which
  // chose the queue.
  const SpecError p =
      testing::spec_error([] { parse_policies("policies: {preset: pard, dropping: none}\n"); });
  EXPECT_NE(std::string(p.what()).find("policies.preset"), std::string::npos) << p.what();
  EXPECT_NO_THROW(parse_policies("policies: {preset: pard, queue: fifo, dropping: none}\n"));
}

}  // namespace
}  // namespace tessera
