// JigsawServe's data plane (src/policy: jigsaw batching and dropping) and the engine's
// runtime reconfiguration (add_workers, kill_worker, set_reconfiguring).
#include <gtest/gtest.h>

#include "policy/jigsaw_dropping.hpp"
#include "policy/presets.hpp"
#include "sim/simulator.hpp"
#include "test_support.hpp"

namespace tessera {
namespace {

using testing::add_affine;
using testing::chain;
using testing::evenly;
using testing::uniform_deployment;

using testing::SimRun;
using testing::simulate;

SimRun run(const App& app, const Deployment& d, const ProfileTable& p, const PolicyConfig& c,
           std::vector<Time> arrivals, const std::function<void(Simulator&)>& before = {}) {
  return simulate(app, d, p, c, std::move(arrivals), {}, before);
}

PolicyConfig jigsaw(double stale_ms = 20.0) {
  return preset_config("jigsawserve:" + std::to_string(stale_ms));
}

TEST(JigsawBatching, WaitsForTheDeploymentsTimeoutThenStartsOnCompletion) {
  App app = chain(1, 10.0);
  ProfileTable p;
  add_affine(p, "t0", 10.0, 0.0, 4);
  Deployment d = uniform_deployment(app, 1, 4);
  d.groups[0].batch_timeout = 0.030;  // the planner's Lhat(t)
  // A lone request waits the deployment's 30 ms (not the policy default of 10 ms).
  SimRun lone = run(app, d, p, jigsaw(), {0.0});
  EXPECT_NEAR(lone.m().last_finish(), 0.040, 1e-9);
  // Four at once fill the batch and start now.
  SimRun full = run(app, d, p, jigsaw(), {0.0, 0.0, 0.0, 0.0});
  EXPECT_NEAR(full.m().last_finish(), 0.010, 1e-9);
  // A request queued while a batch runs starts the moment that batch ends, without
  // waiting its own timeout: 0 -> [30, 40], the second (at 35) runs at 40 -> 50.
  SimRun chained = run(app, d, p, jigsaw(), {0.0, 0.035});
  EXPECT_NEAR(chained.m().last_finish(), 0.050, 1e-9);
  EXPECT_EQ(chained.m().tasks()[0].batches, 2u);
}

TEST(JigsawDropping, DropsWhatTheFastestDownstreamCannotSave) {
  // t0 (50 ms) -> t1 (fastest deployed: 40 ms); SLO 100 ms. A request that reaches t0's
  // batch after 15 ms of queueing could finish at best at 15 + 50 + 40 = 105 ms.
  App app = chain(2, 0.100);
  ProfileTable p;
  add_affine(p, "t0", 50.0, 0.0, 1);
  add_affine(p, "t1", 40.0, 0.0, 1);
  Deployment d = uniform_deployment(app, 1, 1);
  d.groups[0].batch_timeout = d.groups[1].batch_timeout = 0.050;
  SimRun r = run(app, d, p, jigsaw(1000.0), {0.0, 0.0});
  // The first runs (0 -> 50 -> 90 ms); the second would start t0 at 50 ms: dropped there.
  EXPECT_EQ(r.m().count(Outcome::kOk), 1u);
  EXPECT_EQ(r.m().count(Outcome::kDropped), 1u);
  EXPECT_EQ(r.m().dropped_for(DropReason::kPredictedLate), 1u);
  EXPECT_EQ(r.m().tasks()[0].dropped, 1u);
  EXPECT_EQ(r.m().tasks()[0].batches, 1u);  // no GPU time spent on the doomed one
}

TEST(JigsawDropping, DropsStaleItemsPastTimeoutPlusThreshold) {
  // One worker, batch 1, 10 ms per item, timeout 10 ms, stale after 10 + 5 ms of waiting.
  App app = chain(1, 10.0);
  ProfileTable p;
  add_affine(p, "t0", 10.0, 0.0, 1);
  Deployment d = uniform_deployment(app, 1, 1);
  d.groups[0].batch_timeout = 0.010;
  // Three at once: #1 runs at 0, #2 at 10 ms (waited 10), #3 would start at 20 ms after
  // waiting 20 > 15 ms: stale.
  SimRun r = run(app, d, p, jigsaw(5.0), {0.0, 0.0, 0.0});
  EXPECT_EQ(r.m().count(Outcome::kOk), 2u);
  EXPECT_EQ(r.m().dropped_for(DropReason::kStale), 1u);
  // With a generous threshold nothing is stale.
  SimRun relaxed = run(app, d, p, jigsaw(100.0), {0.0, 0.0, 0.0});
  EXPECT_EQ(relaxed.m().count(Outcome::kOk), 3u);
}

PolicyConfig jigsaw_at_pickup(double stale_ms) {
  PolicyConfig c = jigsaw(stale_ms);
  c.stale_rule = JigsawDropping::StaleRule::kAtPickup;
  return c;
}

// The paper's stale rule purges an item that no instance has picked up within its timeout
// + threshold, while it still waits; the earlier rule (stale_rule: at_pickup) finds it
// only when an instance picks it up. One worker busy for 100 ms, timeout 10 ms, stale
// 5 ms: the second request goes stale at 15 ms.
TEST(JigsawDropping, PurgesQueuedItemsNoInstancePicksUp) {
  App app = chain(1, 10.0);
  ProfileTable p;
  add_affine(p, "t0", 100.0, 0.0, 1);
  Deployment d = uniform_deployment(app, 1, 1);
  d.groups[0].batch_timeout = 0.010;
  SimOptions o;
  o.window = 0.010;
  SimRun queued = simulate(app, d, p, jigsaw(5.0), {0.0, 0.0}, o);
  EXPECT_EQ(queued.m().count(Outcome::kOk), 1u);
  EXPECT_EQ(queued.m().dropped_for(DropReason::kStale), 1u);
  ASSERT_GT(queued.m().windows().size(), 1u);
  EXPECT_EQ(queued.m().windows()[1].dropped, 1u);  // dropped at 15 ms, by the timer
  EXPECT_EQ(queued.m().tasks()[0].batches, 1u);

  SimRun pickup = simulate(app, d, p, jigsaw_at_pickup(5.0), {0.0, 0.0}, o);
  EXPECT_EQ(pickup.m().count(Outcome::kOk), 1u);
  EXPECT_EQ(pickup.m().dropped_for(DropReason::kStale), 1u);
  ASSERT_GT(pickup.m().windows().size(), 10u);
  EXPECT_EQ(pickup.m().windows()[1].dropped, 0u);
  EXPECT_EQ(pickup.m().windows()[10].dropped, 1u);  // found stale at 100 ms, at pickup
}

// The queued rule keeps purging while the instance stays busy: an arrival re-arms the
// timer for the new front of the queue.
TEST(JigsawDropping, QueuedRuleKeepsPurgingWhileBusy) {
  App app = chain(1, 10.0);
  ProfileTable p;
  add_affine(p, "t0", 100.0, 0.0, 1);
  Deployment d = uniform_deployment(app, 1, 1);
  d.groups[0].batch_timeout = 0.010;
  // #1 runs 0-100 ms, #2 (at 0) is stale from 15 ms, #3 arrives at 50 ms and is stale
  // from 65 ms; #4 at 101 ms is picked up at once by the idle worker.
  SimOptions o;
  o.window = 0.010;
  SimRun r = simulate(app, d, p, jigsaw(5.0), {0.0, 0.0, 0.050, 0.101}, o);
  EXPECT_EQ(r.m().count(Outcome::kOk), 2u);
  EXPECT_EQ(r.m().dropped_for(DropReason::kStale), 2u);
  EXPECT_EQ(r.m().windows()[1].dropped, 1u);
  EXPECT_EQ(r.m().windows()[6].dropped, 1u);
  EXPECT_EQ(r.m().tasks()[0].batches, 2u);
}

TEST(JigsawDropping, StaleRuleIsAJigsawOption) {
  PolicyConfig c = preset_config("jigsawserve");
  EXPECT_EQ(c.stale_rule, JigsawDropping::StaleRule::kQueued);
  EXPECT_NE(c.describe().find("queued"), std::string::npos);
  c.stale_rule = JigsawDropping::StaleRule::kAtPickup;
  EXPECT_NE(c.describe().find("at_pickup"), std::string::npos);
}

TEST(JigsawDropping, FastestAfterFollowsTheLiveWorkers) {
  App app = chain(3, 1.0);
  app.edges[1].delay = 0.005;
  ProfileTable p;
  add_affine(p, "t0", 10.0, 0.0, 2);
  add_affine(p, "t1", 20.0, 0.0, 2);
  add_affine(p, "t2", 30.0, 0.0, 2);
  add_affine(p, "t2", 12.0, 0.0, 2, "fast");
  Simulator sim(app, uniform_deployment(app, 1, 2), p, PolicySet(jigsaw()), {});
  JigsawDropping drop(app, 0.020, 0.010);
  EXPECT_NEAR(drop.fastest_after(0, sim.engine()), 0.020 + 0.005 + 0.030, 1e-12);
  EXPECT_NEAR(drop.fastest_after(2, sim.engine()), 0.0, 1e-12);
  // A faster t2 instance comes up: the bound follows.
  sim.engine().add_workers(WorkerGroup{2, {0}, "fast", 2, 1}, p);
  EXPECT_NEAR(drop.fastest_after(0, sim.engine()), 0.020 + 0.005 + 0.012, 1e-12);
}

TEST(EngineReconfiguration, AddedWorkersTakeLoadAndKilledOnesStop) {
  App app = chain(1, 10.0);
  ProfileTable p;
  add_affine(p, "t0", 100.0, 0.0, 1);
  PolicyConfig c;
  c.dispatch = DispatchKind::kLeastLoaded;
  // One worker; a second joins at t = 0.05 and the first leaves at t = 0.15.
  SimRun r =
      run(app, uniform_deployment(app, 1, 1), p, c, {0.0, 0.0, 0.06, 0.07}, [&](Simulator& sim) {
        sim.schedule(0.05, [&sim, &p] {
          sim.engine().add_workers(WorkerGroup{0, {0}, "gpu", 1, 1}, p);
        });
        sim.schedule(0.15, [&sim] { sim.engine().kill_worker(0); });
      });
  // w0 runs #1 [0, 0.1] and #2 [0.1, 0.2] (it leaves at 0.15 mid-batch, which still
  // finishes); the new w1 takes #3 [0.06, 0.16] and #4 [0.16, 0.26].
  EXPECT_EQ(r.m().count(Outcome::kOk), 4u);
  EXPECT_NEAR(r.m().last_finish(), 0.26, 1e-9);
  EXPECT_EQ(r.sim->engine().workers_of(0).size(), 1u);
}

TEST(EngineReconfiguration, ItemsWaitForNewWorkersWhileReconfiguring) {
  App app = chain(1, 10.0);
  ProfileTable p;
  add_affine(p, "t0", 10.0, 0.0, 1);
  for (bool shared : {false, true}) {
    PolicyConfig c = shared ? jigsaw() : PolicyConfig{};
    // The only worker stops at 0.5; arrivals at 0.6 and 0.7 wait; the new one starts at 1.0.
    SimRun r = run(app, uniform_deployment(app, 1, 1), p, c, {0.0, 0.6, 0.7}, [&](Simulator& sim) {
      sim.schedule(0.5, [&sim] {
        sim.engine().set_reconfiguring(true);
        sim.engine().kill_worker(0);
      });
      sim.schedule(1.0, [&sim, &p] {
        sim.engine().add_workers(WorkerGroup{0, {0}, "gpu", 1, 1}, p);
        sim.engine().set_reconfiguring(false);
      });
    });
    EXPECT_EQ(r.m().count(Outcome::kOk), 3u) << (shared ? "shared queue" : "own queues");
    EXPECT_NEAR(r.m().last_finish(), 1.020, 1e-9);
  }
}

TEST(EngineReconfiguration, EndingAReconfigurationWithoutWorkersFailsTheWaitingItems) {
  App app = chain(1, 10.0);
  ProfileTable p;
  add_affine(p, "t0", 10.0, 0.0, 1);
  SimRun r = run(app, uniform_deployment(app, 1, 1), p, {}, {0.6, 0.7}, [&](Simulator& sim) {
    sim.schedule(0.5, [&sim] {
      sim.engine().set_reconfiguring(true);
      sim.engine().kill_worker(0);
    });
    sim.schedule(1.0, [&sim] { sim.engine().set_reconfiguring(false); });
  });
  EXPECT_EQ(r.m().count(Outcome::kFailed), 2u);
}

}  // namespace
}  // namespace tessera
