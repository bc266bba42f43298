// The least-loaded dispatcher reading the loads the engine keeps (DispatchLoads) must pick
// exactly what a scan of every worker picks, ties included: random load changes, workers
// stopped and added, private and task-wide queues; and inside the engine, the same picks
// as the scanning dispatcher on an overloaded DAG with lost workers and a reconfiguration
// under every queue, batching and dropping policy, and on LLM instances whose requests are
// stopped from outside (Engine::stop_request) or end at a token (finish_with_step).

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include "engine/deployment_diff.hpp"
#include "engine/dispatch_loads.hpp"
#include "llm_harness.hpp"
#include "metrics/report.hpp"
#include "policy/dispatch.hpp"
#include "policy/fifo_queue.hpp"
#include "policy/registry.hpp"
#include "sim/simulator.hpp"
#include "test_support.hpp"

namespace tessera {
namespace {

struct Fleet {
  bool shared = false;
  std::shared_ptr<WorkQueue> task_queue = std::make_shared<FifoQueue>();
  std::vector<std::unique_ptr<Worker>> owned;
  std::vector<Worker*> live;  // the engine's list: live workers only

  Worker& add(std::mt19937_64& rng) {
    auto w = std::make_unique<Worker>();
    // Ids need not be dense nor follow the list order.
    w->id = static_cast<WorkerId>(owned.size() * 3 + rng() % 3);
    w->queue = shared ? task_queue : std::make_shared<FifoQueue>();
    live.push_back(w.get());
    owned.push_back(std::move(w));
    return *live.back();
  }
};

void check_random_changes(bool shared, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Fleet fleet;
  fleet.shared = shared;
  const int initial = 1 + static_cast<int>(rng() % 12);
  for (int i = 0; i < initial; ++i) fleet.add(rng);
  LeastLoadedDispatcher indexed;
  LeastLoadedDispatcher scanning;  // never given loads: it reads every worker
  DispatchLoads& loads = *indexed.loads();
  loads.reset(fleet.live);
  std::vector<Worker*> copy;  // another list: `scanning` cannot follow it
  const Item item{};
  int picks = 0;
  for (int step = 0; step < 20000; ++step) {
    const auto action = rng() % 100;
    if (action < 2 && fleet.live.size() > 1) {  // a worker stops
      const auto k = rng() % fleet.live.size();
      fleet.live[k]->alive = false;
      fleet.live.erase(fleet.live.begin() + static_cast<std::ptrdiff_t>(k));
      loads.reset(fleet.live);
    } else if (action < 4 && fleet.live.size() < 16) {  // a worker starts
      fleet.add(rng);
      loads.reset(fleet.live);
    } else if (!fleet.live.empty()) {  // one worker's queue, forming or running batch changes
      Worker& w = *fleet.live[rng() % fleet.live.size()];
      // Loads stay small so that ties are common.
      switch (rng() % 6) {
        case 0:
        case 1:
          if (w.queue->size() < 6) w.queue->push(item);
          break;
        case 2:
          if (!w.queue->empty()) w.queue->pop();
          break;
        case 3:
          if (w.forming.size() < 3) w.forming.push_back(item);
          break;
        case 4:
          if (!w.forming.empty()) w.forming.pop_back();
          break;
        default:
          if (w.running.empty()) {
            w.running.swap(w.forming);
          } else {
            w.running.clear();
          }
      }
      loads.refresh(w);
    }
    copy = fleet.live;
    ASSERT_TRUE(loads.follows(fleet.live));
    ASSERT_FALSE(scanning.loads()->follows(copy));
    const int want = scanning.pick(copy, item);
    ASSERT_EQ(indexed.pick(fleet.live, item), want) << "seed " << seed << ", step " << step;
    ++picks;
  }
  EXPECT_EQ(picks, 20000);
}

TEST(DispatchLoads, PicksAsAScanUnderRandomChangesWithPrivateQueues) {
  for (uint64_t seed = 1; seed <= 20; ++seed) check_random_changes(false, seed);
}

TEST(DispatchLoads, PicksAsAScanUnderRandomChangesWithATaskWideQueue) {
  for (uint64_t seed = 1; seed <= 20; ++seed) check_random_changes(true, seed);
}

TEST(DispatchLoads, AnotherListIsScanned) {
  LeastLoadedDispatcher d;
  std::vector<std::unique_ptr<Worker>> owned;
  std::vector<Worker*> list;
  for (WorkerId i = 0; i < 3; ++i) {
    owned.push_back(std::make_unique<Worker>());
    owned.back()->id = i;
    owned.back()->queue = std::make_shared<FifoQueue>();
    list.push_back(owned.back().get());
  }
  d.loads()->reset(list);
  std::vector<Worker*> other = {list[2], list[1], list[0]};
  list[2]->queue->push(Item{});
  EXPECT_FALSE(d.loads()->follows(other));
  EXPECT_EQ(d.pick(other, Item{}), 1);  // starts at 0: worker 2 is loaded, worker 1 is not
}

// Records every pick of the least-loaded dispatcher, which reads the engine's loads or,
// with `index` off, scans the workers as it did before it had them.
class RecordingDispatcher final : public Dispatcher {
 public:
  RecordingDispatcher(bool index, std::vector<int>& picks) : index_(index), picks_(picks) {}
  int pick(const std::vector<Worker*>& workers, const Item& item) override {
    const int at = inner_.pick(workers, item);
    picks_.push_back(at);
    return at;
  }
  DispatchLoads* loads() override { return index_ ? inner_.loads() : nullptr; }

 private:
  bool index_;
  std::vector<int>& picks_;
  LeastLoadedDispatcher inner_;
};

using Combo = std::tuple<QueueKind, BatchingKind, DroppingKind>;
class IndexedLeastLoaded : public ::testing::TestWithParam<Combo> {};

TEST_P(IndexedLeastLoaded, PicksAsTheScanInTheEngine) {
  const auto& [queue, batching, dropping] = GetParam();
  if (queue_policies().row(queue).state_planner &&
      !dropping_policies().row(dropping).state_planner) {
    GTEST_SKIP() << "the adaptive queue needs the State Planner of pard or split dropping";
  }
  App app;
  app.slo = 0.2;
  app.tasks = {testing::make_task("det", 3.0, 0.9, FanoutDistribution::kPoisson),
               testing::make_task("cars"), testing::make_task("faces"),
               testing::make_task("merge")};
  app.edges = {testing::share_edge(0, 1, 0.6), testing::share_edge(0, 2, 0.3),
               testing::make_edge(1, 3, 0.001), testing::make_edge(2, 3, 0.001)};
  app.finalize();
  ProfileTable p;
  for (auto n : {"det", "cars", "faces", "merge"}) testing::add_affine(p, n, 5.0, 2.0);
  PolicyConfig c;
  c.dispatch = DispatchKind::kLeastLoaded;
  c.queue = queue;
  c.batching = batching;
  c.dropping = dropping;
  c.max_queue = 200;
  SimOptions options;
  options.noise_cv = 0.2;
  options.worker_losses = {{1.0, 0}, {2.2, 9}, {3.1, 5}};
  std::vector<Time> times;
  for (int i = 0; i < 1000; ++i) times.push_back(i * 0.001);
  for (int i = 0; i < 5000; ++i) times.push_back(1.0 + i * 0.0001);
  for (int i = 0; i < 1000; ++i) times.push_back(1.5 + i * 0.001);
  for (int i = 0; i < 2000; ++i) times.push_back(3.0 + i * 0.0001);
  const Deployment deployment = testing::uniform_deployment(app, 4, 8);
  // A re-plan at 2.5 s: more "cars" instances, fewer "faces", a new "merge" timeout.
  Deployment target = deployment;
  target.groups[1].count = 6;
  target.groups[2].count = 2;
  target.groups[3].batch_timeout = 0.004;
  auto run = [&](bool index, std::vector<int>& picks) {
    const PolicySet set(c);
    EnginePolicies policies = set.instantiate(app, options.seed);
    policies.make_dispatcher = [&picks, index](TaskId) {
      return std::make_unique<RecordingDispatcher>(index, picks);
    };
    Simulator sim(app, deployment, p, std::move(policies), options,
                  EngineOptions{c.cancel_siblings, nullptr});
    sim.schedule(2.5, [&] {
      LiveInstances live = LiveInstances::of(sim.engine());
      const DeploymentEdit edit = live.change_to(target);
      ASSERT_FALSE(edit.start.empty());
      ASSERT_FALSE(edit.stop.empty());
      sim.engine().apply(edit, p);
    });
    testing::VectorSource source(times);
    sim.run(source);
    return summarize(sim.metrics(), app).dump();
  };
  std::vector<int> indexed;
  std::vector<int> scanned;
  const std::string with_index = run(true, indexed);
  const std::string with_scan = run(false, scanned);
  EXPECT_GT(indexed.size(), 9000u);
  EXPECT_EQ(indexed, scanned);
  EXPECT_EQ(with_index, with_scan);
}

INSTANTIATE_TEST_SUITE_P(
    EveryQueueBatchingDropping, IndexedLeastLoaded,
    ::testing::Combine(
        ::testing::Values(QueueKind::kFifo, QueueKind::kLbf, QueueKind::kHbf, QueueKind::kAdaptive),
        ::testing::Values(BatchingKind::kEager, BatchingKind::kTimeout, BatchingKind::kJigsaw),
        ::testing::Values(DroppingKind::kNone, DroppingKind::kExpired, DroppingKind::kPard,
                          DroppingKind::kSplit, DroppingKind::kJigsaw)));

// LLM instances hold their requests outside the queue; a request's item is in
// worker.running while its last step runs. Requests stopped from outside and requests that
// end at a token (the live server's calls, here between events) change those loads.
TEST(IndexedLeastLoadedLlm, PicksAsTheScanWithStopsAndEarlyEnds) {
  auto run = [](bool index, std::vector<int>& picks) {
    LlmSchedulerConfig config;
    config.policy = LlmPolicy::kContinuous;
    config.kv_blocks = 400;
    config.block_tokens = 16;
    testing::LlmHarness h(config, std::make_shared<testing::SimpleLlmCost>(0.010, 0.0001), 4, 0.0,
                          0.0, 1000.0, [&picks, index](EnginePolicies& policies) {
                            policies.make_dispatcher = [&picks, index](TaskId) {
                              return std::make_unique<RecordingDispatcher>(index, picks);
                            };
                          });
    std::mt19937_64 rng(7);
    std::vector<Arrival> arrivals;
    for (int i = 0; i < 600; ++i) {
      arrivals.push_back(testing::llm_arrival(i * 0.004, 20 + static_cast<uint32_t>(rng() % 200),
                                              1 + static_cast<uint32_t>(rng() % 12)));
    }
    int stopped = 0;
    int ended_early = 0;
    for (int k = 0; k < 300; ++k) {
      const Time at = 0.0013 + k * 0.0079;
      h.at(at, [&h, &rng, &stopped, &ended_early, k] {
        Engine& engine = h.engine();
        if (k % 3 == 0) {
          stopped += engine.stop_request(rng() % (engine.submitted() + 1), Outcome::kDropped,
                                         DropReason::kCancelled);
          return;
        }
        const auto w = static_cast<WorkerId>(rng() % 4);
        Worker& worker = *engine.workers()[w];
        std::vector<LlmInstanceScheduler::StepEntry> entries;
        h.scheduler(w).step_entries(entries);
        for (const auto& e : entries) {
          if (h.scheduler(w).finish_with_step(worker, e.request)) {
            ++ended_early;
            break;
          }
        }
        engine.note_worker_changed(w);
      });
    }
    h.run(arrivals);
    EXPECT_GT(stopped, 20);
    EXPECT_GT(ended_early, 50);
    EXPECT_EQ(h.engine().requests_in_flight(), 0u);
    std::vector<std::tuple<uint64_t, Outcome, Time, uint32_t>> ends;
    for (const RequestRecord& r : h.records)
      ends.emplace_back(r.id, r.outcome, r.finish, r.output_tokens);
    return ends;
  };
  std::vector<int> indexed;
  std::vector<int> scanned;
  const auto with_index = run(true, indexed);
  const auto with_scan = run(false, scanned);
  EXPECT_EQ(indexed.size(), 600u);
  EXPECT_EQ(indexed, scanned);
  EXPECT_EQ(with_index, with_scan);
}

}  // namespace
}  // namespace tessera
