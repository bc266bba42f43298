// Validation of the spec files: every error names the file, the field path and the
// problem; and the positive parses fill in what the engine relies on.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/spec_node.hpp"
#include "engine/app.hpp"
#include "policy/policy_set.hpp"
#include "profile/profile_table.hpp"
#include "spec/app_spec.hpp"
#include "spec/deployment_spec.hpp"
#include "spec/run_spec.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

const fs::path kChainDir = fs::path(TESSERA_SOURCE_DIR) / "tests" / "data" / "chain";
const std::string kChainProfiles = (kChainDir / "profiles.yaml").string();

// A scratch folder for this process's files (ctest runs tests as parallel processes).
fs::path scratch(const std::string& name) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("tessera_spec_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

fs::path write_file(const std::string& name, const std::string& text) {
  const fs::path path = scratch(name);
  std::ofstream out(path);
  out << text;
  return path;
}

// Runs `fn`, which must throw a SpecError naming `file` and `field` whose problem
// contains `phrase`.
void expect_spec_error(const std::function<void()>& fn, const std::string& file,
                       const std::string& field, const std::string& phrase) {
  try {
    fn();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.file(), file) << e.what();
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_NE(e.problem().find(phrase), std::string::npos)
        << "'" << phrase << "' not in: " << e.what();
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a SpecError, got: " << e.what();
    return;
  }
  ADD_FAILURE() << "expected a SpecError naming " << file << ": " << field;
}

App app_from(const std::string& yaml) { return parse_app(SpecNode::load_string(yaml, "app.yaml")); }

void expect_app_error(const std::string& yaml, const std::string& field,
                      const std::string& phrase) {
  expect_spec_error([&] { app_from(yaml); }, "app.yaml", field, phrase);
}

// ---- application -----------------------------------------------------------------------

TEST(AppSpec, MissingSlo) {
  expect_app_error("tasks:\n  - {name: a, variants: [a1]}\n", "slo_ms",
                   "required field is missing");
}

TEST(AppSpec, UnknownFieldInTask) {
  expect_app_error(R"(
slo_ms: 100
tasks:
  - {name: a, variants: [a1], colour: red}
)",
                   "tasks[0].colour", "unknown field");
}

TEST(AppSpec, DuplicateTask) {
  expect_app_error(R"(
slo_ms: 100
tasks:
  - {name: a, variants: [a1]}
  - {name: a, variants: [a2]}
)",
                   "tasks[1].name", "duplicate task 'a'");
}

TEST(AppSpec, DuplicateVariant) {
  expect_app_error(R"(
slo_ms: 100
tasks:
  - name: a
    variants: [a1, {name: a1, accuracy: 0.5}]
)",
                   "tasks[0].variants[1]", "duplicate variant 'a1'");
}

TEST(AppSpec, EdgeToUnknownTask) {
  expect_app_error(R"(
slo_ms: 100
tasks:
  - {name: a, variants: [a1]}
edges:
  - {from: a, to: zz}
)",
                   "edges[0].to", "unknown task 'zz'");
}

TEST(AppSpec, SelfLoop) {
  expect_app_error(R"(
slo_ms: 100
tasks:
  - {name: a, variants: [a1]}
  - {name: b, variants: [b1]}
edges:
  - {from: a, to: b}
  - {from: b, to: b}
)",
                   "edges[1]", "cannot connect a task to itself");
}

TEST(AppSpec, Cycle) {
  // a is a root, but b -> c -> b never drains.
  expect_app_error(R"(
slo_ms: 100
tasks:
  - {name: a, variants: [a1]}
  - {name: b, variants: [b1]}
  - {name: c, variants: [c1]}
edges:
  - {from: a, to: b}
  - {from: b, to: c}
  - {from: c, to: b}
)",
                   "edges", "cycle");
  // A cycle through every task leaves no root at all.
  expect_app_error(R"(
slo_ms: 100
tasks:
  - {name: a, variants: [a1]}
  - {name: b, variants: [b1]}
edges:
  - {from: a, to: b}
  - {from: b, to: a}
)",
                   "edges", "no root task");
}

TEST(AppSpec, ShareForUnknownVariant) {
  expect_app_error(R"(
slo_ms: 100
tasks:
  - {name: a, variants: [a1, a2]}
  - {name: b, variants: [b1]}
edges:
  - {from: a, to: b, share: {a1: 0.5, a3: 0.5}}
)",
                   "edges[0].share.a3", "'a3' is not a variant of task 'a'");
}

TEST(AppSpec, MissingShareForVariant) {
  expect_app_error(R"(
slo_ms: 100
tasks:
  - {name: a, variants: [a1, a2]}
  - {name: b, variants: [b1]}
edges:
  - {from: a, to: b, share: {a1: 0.5}}
)",
                   "edges[0].share", "no share given for variant 'a2'");
}

TEST(AppSpec, SharesOutOfOneTaskAddUpToMoreThanOne) {
  expect_app_error(R"(
slo_ms: 100
tasks:
  - {name: a, variants: [a1, a2]}
  - {name: b, variants: [b1]}
  - {name: c, variants: [c1]}
edges:
  - {from: a, to: b, share: {a1: 0.5, a2: 0.7}}
  - {from: a, to: c, share: {a1: 0.5, a2: 0.4}}
)",
                   "edges", "for variant 'a2' (at most 1)");
  // Exactly 1 is fine.
  EXPECT_NO_THROW(app_from(R"(
slo_ms: 100
tasks:
  - {name: a, variants: [a1]}
  - {name: b, variants: [b1]}
  - {name: c, variants: [c1]}
edges:
  - {from: a, to: b, share: 0.25}
  - {from: a, to: c, share: 0.75}
)"));
}

TEST(AppSpec, AccuracyOutOfRange) {
  expect_app_error(R"(
slo_ms: 100
tasks:
  - name: a
    variants: [{name: a1, accuracy: 1.5}]
)",
                   "tasks[0].variants[0].accuracy", "must be between 0 and 1");
  expect_app_error(R"(
slo_ms: 100
tasks:
  - name: a
    variants: [{name: a1, accuracy: -0.1}]
)",
                   "tasks[0].variants[0].accuracy", "must be between 0 and 1");
}

TEST(AppSpec, BadFanoutKind) {
  expect_app_error(R"(
slo_ms: 100
tasks:
  - {name: a, fanout: binomial, variants: [a1]}
)",
                   "tasks[0].fanout", "'binomial' is not one of: fixed, poisson, geometric");
}

TEST(AppSpec, RootsAncestorsAndJoins) {
  // a -> b -> d, a -> c -> d, e -> d: d joins three branches from two roots.
  const App app = app_from(R"(
name: diamond
slo_ms: 250
ingress_delay_ms: 3
tasks:
  - {name: a, fanout: poisson, variants: [{name: a1, accuracy: 0.9, fanout: 2.5}]}
  - {name: b, variants: [b1]}
  - {name: c, variants: [c1]}
  - {name: d, variants: [d1]}
  - {name: e, variants: [e1]}
edges:
  - {from: a, to: b}
  - {from: a, to: c, share: 0.5}
  - {from: b, to: d, delay_ms: 4}
  - {from: c, to: d}
  - {from: e, to: d}
)");
  EXPECT_EQ(app.name, "diamond");
  EXPECT_DOUBLE_EQ(app.slo, 0.250);
  EXPECT_DOUBLE_EQ(app.ingress_delay, 0.003);
  EXPECT_EQ(app.roots, (std::vector<TaskId>{0, 4}));
  EXPECT_TRUE(app.has_joins());
  EXPECT_TRUE(app.tasks[3].is_join());
  EXPECT_TRUE(app.tasks[3].is_leaf());
  EXPECT_FALSE(app.tasks[1].is_join());
  EXPECT_EQ(app.tasks[3].ancestors, (std::vector<TaskId>{0, 1, 2, 4}));
  EXPECT_EQ(app.tasks[1].ancestors, (std::vector<TaskId>{0}));
  EXPECT_TRUE(app.tasks[0].ancestors.empty());
  EXPECT_EQ(app.tasks[0].out_edges.size(), 2u);
  EXPECT_EQ(app.tasks[0].fanout, FanoutDistribution::kPoisson);
  EXPECT_DOUBLE_EQ(app.tasks[0].variants[0].fanout_mean, 2.5);
  EXPECT_DOUBLE_EQ(app.tasks[0].variants[0].accuracy, 0.9);
  EXPECT_DOUBLE_EQ(app.tasks[1].variants[0].accuracy, 1.0);
  EXPECT_EQ(app.edges[0].mode, EdgeMode::kAll);
  EXPECT_EQ(app.edges[1].mode, EdgeMode::kShare);
  EXPECT_EQ(app.edges[1].share_by_variant, (std::vector<double>{0.5}));
  EXPECT_DOUBLE_EQ(app.edges[2].delay, 0.004);
  EXPECT_DOUBLE_EQ(app.edges[3].delay, 0.0);

  const App chain = app_from("slo_ms: 10\ntasks:\n  - {name: a, variants: [a1]}\n");
  EXPECT_EQ(chain.name, "app");
  EXPECT_EQ(chain.roots, (std::vector<TaskId>{0}));
  EXPECT_FALSE(chain.has_joins());
}

// ---- cluster ---------------------------------------------------------------------------

TEST(ClusterSpec, DuplicateSegment) {
  expect_spec_error(
      [] {
        parse_cluster(SpecNode::load_string(R"(
segments:
  - {name: gpu, count: 2}
  - {name: gpu, count: 1}
)",
                                            "cluster.yaml"));
      },
      "cluster.yaml", "segments[1].name", "duplicate segment 'gpu'");
}

TEST(ClusterSpec, NegativeCount) {
  expect_spec_error(
      [] {
        parse_cluster(
            SpecNode::load_string("segments:\n  - {name: gpu, count: -1}\n", "cluster.yaml"));
      },
      "cluster.yaml", "segments[0].count", "must not be negative");
}

// ---- deployment ------------------------------------------------------------------------

class DeploymentSpec : public ::testing::Test {
 protected:
  void SetUp() override {
    app_ = app_from(R"(
slo_ms: 100
tasks:
  - {name: a, variants: [a1, a2]}
  - {name: b, variants: [b1]}
edges:
  - {from: a, to: b}
)");
    for (const char* v : {"a1", "a2", "b1"}) profiles_.add(v, "gpu", 1, 10.0);
    profiles_.add("b1", "tpu", 1, 5.0);
    cluster_ =
        parse_cluster(SpecNode::load_string("segments:\n  - {name: gpu, count: 3}\n", "c.yaml"));
  }

  Deployment parse(const std::string& yaml, bool with_cluster = true) {
    return parse_deployment(SpecNode::load_string(yaml, "deployment.yaml"), app_, profiles_,
                            with_cluster ? &cluster_ : nullptr);
  }

  void expect_error(const std::string& yaml, const std::string& field, const std::string& phrase) {
    expect_spec_error([&] { parse(yaml); }, "deployment.yaml", field, phrase);
  }

  App app_;
  ProfileTable profiles_;
  Cluster cluster_;
};

TEST_F(DeploymentSpec, Parses) {
  const Deployment d = parse(R"(
workers:
  - {task: a, variants: [a1, a2], segment: gpu, max_batch: 4, count: 2}
  - {task: b, variant: b1, segment: gpu}
)");
  ASSERT_EQ(d.groups.size(), 2u);
  EXPECT_EQ(d.groups[0].variants, (std::vector<int>{0, 1}));
  EXPECT_EQ(d.groups[0].max_batch, 4);
  EXPECT_EQ(d.groups[0].count, 2);
  EXPECT_EQ(d.groups[1].task, 1);
  EXPECT_EQ(d.groups[1].max_batch, 1);
  EXPECT_EQ(d.groups[1].count, 1);
  EXPECT_EQ(d.workers_of(0), 2);
}

TEST_F(DeploymentSpec, UnknownTask) {
  expect_error("workers:\n  - {task: zz, variant: a1, segment: gpu}\n", "workers[0].task",
               "unknown task 'zz'");
}

TEST_F(DeploymentSpec, UnknownVariant) {
  expect_error(R"(
workers:
  - {task: b, variant: b1, segment: gpu}
  - {task: a, variants: [a1, b1], segment: gpu}
)",
               "workers[1].variants[1]", "'b1' is not a variant of task 'a'");
}

TEST_F(DeploymentSpec, NoProfileForVariantOnSegment) {
  expect_error(R"(
workers:
  - {task: a, variant: a1, segment: tpu}
  - {task: b, variant: b1, segment: gpu}
)",
               "workers[0].variant", "no latency profile for variant 'a1' on segment 'tpu'");
}

TEST_F(DeploymentSpec, SegmentNotInCluster) {
  const std::string yaml = R"(
workers:
  - {task: a, variant: a1, segment: gpu}
  - {task: b, variant: b1, segment: tpu}
)";
  expect_error(yaml, "workers[1].segment", "segment 'tpu' is not in the cluster");
  EXPECT_NO_THROW(parse(yaml, /*with_cluster=*/false));  // no cluster: nothing to check
}

TEST_F(DeploymentSpec, OverClusterCapacity) {
  expect_error(R"(
workers:
  - {task: a, variant: a1, segment: gpu, count: 2}
  - {task: b, variant: b1, segment: gpu, count: 2}
)",
               "workers", "needs 4 of segment 'gpu' but the cluster has 3");
}

TEST_F(DeploymentSpec, TaskWithNoWorkers) {
  expect_error("workers:\n  - {task: a, variant: a1, segment: gpu}\n", "workers",
               "task 'b' has no workers");
  expect_error(R"(
workers:
  - {task: a, variant: a1, segment: gpu}
  - {task: b, variant: b1, segment: gpu, count: 0}
)",
               "workers", "task 'b' has no workers");
}

TEST_F(DeploymentSpec, MaxBatchZero) {
  expect_error(R"(
workers:
  - {task: a, variant: a1, segment: gpu, max_batch: 0}
  - {task: b, variant: b1, segment: gpu}
)",
               "workers[0].max_batch", "must be at least 1");
}

TEST_F(DeploymentSpec, BothVariantAndVariants) {
  expect_error(R"(
workers:
  - {task: a, variant: a1, variants: [a2], segment: gpu}
  - {task: b, variant: b1, segment: gpu}
)",
               "workers[0]", "give either 'variant' or 'variants'");
}

// ---- run spec --------------------------------------------------------------------------

// The chain app of tests/data/chain written inline, with `extra` appended at top level.
std::string inline_run(const std::string& extra = "") {
  return R"(
app:
  name: chain
  slo_ms: 100
  tasks:
    - name: detect
      variants:
        - {name: det_small, accuracy: 0.8}
        - {name: det_large, accuracy: 0.9}
    - {name: classify, variants: [cls]}
  edges:
    - {from: detect, to: classify, delay_ms: 2}
cluster:
  name: small
  segments:
    - {name: gpu, count: 4}
deployment:
  workers:
    - {task: detect, variant: det_small, segment: gpu, max_batch: 4, count: 2}
    - {task: classify, variant: cls, segment: gpu, max_batch: 8, count: 1}
profiles:
  - file: )" +
         kChainProfiles +
         R"(
workload:
  source: {kind: deterministic, rate_rps: 20, limit: 100}
)" + extra;
}

RunSpec run_from(const std::string& yaml) {
  return parse_run_spec(SpecNode::load_string(yaml, "run.yaml"));
}

void expect_run_error(const std::string& yaml, const std::string& field,
                      const std::string& phrase) {
  expect_spec_error([&] { run_from(yaml); }, "run.yaml", field, phrase);
}

TEST(PolicySpec, UnknownDispatch) {
  expect_run_error(inline_run("policies: {dispatch: random}\n"), "policies.dispatch",
                   "'random' is not one of: round_robin, least_loaded");
}

TEST(PolicySpec, TimeoutWithEagerBatching) {
  expect_run_error(inline_run("policies:\n  batching: {kind: eager, timeout_ms: 5}\n"),
                   "policies.batching.timeout_ms",
                   "only timeout and jigsaw batching take a timeout");
}

TEST(PolicySpec, UnknownField) {
  expect_run_error(inline_run("policies: {dispatch: round_robin, colour: red}\n"),
                   "policies.colour", "unknown field");
}

TEST(PolicySpec, Parses) {
  const RunSpec run = run_from(inline_run(R"(
policies:
  dispatch: least_loaded
  queue: edf
  batching: {kind: timeout, timeout_ms: 5}
  dropping: expired
  max_queue: 16
)"));
  EXPECT_EQ(run.policies.dispatch, DispatchKind::kLeastLoaded);
  EXPECT_EQ(run.policies.queue, QueueKind::kLbf);
  EXPECT_EQ(run.policies.batching, BatchingKind::kTimeout);
  EXPECT_DOUBLE_EQ(run.policies.batch_timeout, 0.005);
  EXPECT_EQ(run.policies.dropping, DroppingKind::kExpired);
  EXPECT_EQ(run.policies.max_queue, 16u);
  // Without a policies section the defaults hold.
  const RunSpec plain = run_from(inline_run());
  EXPECT_EQ(plain.policies.dispatch, DispatchKind::kRoundRobin);
  EXPECT_EQ(plain.policies.batching, BatchingKind::kEager);
}

TEST(SimulationSpec, NegativeSeed) {
  expect_run_error(inline_run("simulation: {seed: -1}\n"), "simulation.seed",
                   "must not be negative");
}

TEST(SimulationSpec, UnknownField) {
  expect_run_error(inline_run("simulation: {seed: 1, duration_s: 5}\n"), "simulation.duration_s",
                   "unknown field");
}

TEST(SimulationSpec, WorkerLossBeyondTheDeployment) {
  // The inline deployment has workers 0..2.
  expect_run_error(inline_run("simulation:\n  worker_losses: [{at_s: 1, worker: 3}]\n"),
                   "simulation.worker_losses[0].worker", "workers 0..2");
}

TEST(RunSpec, WorkloadThatNeverEnds) {
  std::string yaml = inline_run();
  yaml.replace(yaml.find("limit: 100"), 10, "cv2: 1");
  yaml.replace(yaml.find("deterministic"), 13, "gamma");
  const RunSpec run = run_from(yaml);
  expect_spec_error([&] { make_run_arrivals(run); }, "run.yaml", "workload", "never ends");
}

TEST(SimulationSpec, Parses) {
  const RunSpec run = run_from(inline_run(R"(
simulation:
  seed: 42
  noise_cv: 0.1
  window_s: 0.5
  worker_losses:
    - {at_s: 3, worker: 1}
)"));
  EXPECT_EQ(run.sim.seed, 42u);
  EXPECT_DOUBLE_EQ(run.sim.noise_cv, 0.1);
  EXPECT_DOUBLE_EQ(run.sim.window, 0.5);
  ASSERT_EQ(run.sim.worker_losses.size(), 1u);
  EXPECT_DOUBLE_EQ(run.sim.worker_losses[0].first, 3.0);
  EXPECT_EQ(run.sim.worker_losses[0].second, 1u);
}

TEST(RunSpec, MissingWorkload) {
  std::string yaml = inline_run();
  yaml.erase(yaml.find("workload:"));
  expect_run_error(yaml, "workload", "required field is missing");
}

TEST(RunSpec, AppPathThatDoesNotExist) {
  const std::string missing = scratch("no_such_app.yaml").string();
  const fs::path run =
      write_file("missing_app_run.yaml",
                 "app: no_such_app.yaml\n" + inline_run().substr(inline_run().find("cluster:")));
  try {
    load_run_spec(run);
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.file(), run.string());
    EXPECT_EQ(e.field(), "app");
    EXPECT_NE(e.problem().find("file not found"), std::string::npos) << e.what();
    EXPECT_NE(e.problem().find(missing), std::string::npos) << e.what();
  }
}

TEST(RunSpec, ErrorsInsideSectionsNameTheirFile) {
  // Inline: the run file and the path below `app`.
  expect_run_error(
      [] {
        std::string yaml = inline_run();
        yaml.replace(yaml.find("slo_ms: 100"), 11, "slo_ms: 0");
        return yaml;
      }(),
      "app.slo_ms", "must be greater than 0");
  // In its own file: that file and the path inside it.
  const fs::path app = write_file("bad_app.yaml", "slo_ms: 100\ntasks:\n  - {name: a}\n");
  const fs::path run =
      write_file("bad_app_run.yaml",
                 "app: bad_app.yaml\n" + inline_run().substr(inline_run().find("cluster:")));
  expect_spec_error([&] { load_run_spec(run); }, app.string(), "tasks[0].variants",
                    "required field is missing");
}

TEST(RunSpec, InlineSectionsAndFilePathsGiveTheSameRun) {
  const RunSpec from_files = load_run_spec(kChainDir / "run.yaml");
  const RunSpec inline_spec = run_from(inline_run());
  for (const RunSpec* run : {&from_files, &inline_spec}) {
    EXPECT_EQ(run->app.name, "chain");
    EXPECT_DOUBLE_EQ(run->app.slo, 0.100);
    ASSERT_EQ(run->app.tasks.size(), 2u);
    EXPECT_EQ(run->app.tasks[0].variants.size(), 2u);
    EXPECT_DOUBLE_EQ(run->app.tasks[0].variants[1].accuracy, 0.9);
    ASSERT_EQ(run->app.edges.size(), 1u);
    EXPECT_DOUBLE_EQ(run->app.edges[0].delay, 0.002);
    ASSERT_TRUE(run->cluster.has_value());
    EXPECT_EQ(run->cluster->segments, (std::map<std::string, int>{{"gpu", 4}}));
    ASSERT_EQ(run->deployment.groups.size(), 2u);
    EXPECT_EQ(run->deployment.groups[0].count, 2);
    EXPECT_EQ(run->deployment.groups[0].max_batch, 4);
    EXPECT_EQ(run->deployment.groups[1].max_batch, 8);
    EXPECT_DOUBLE_EQ(run->profiles.latency_ms("det_small", "gpu", 4), 16.0);
    EXPECT_TRUE(run->workload.is_map());
  }
  EXPECT_EQ(from_files.file, kChainDir / "run.yaml");
  // run.yaml also sets policies and simulation options.
  EXPECT_EQ(from_files.policies.dispatch, DispatchKind::kLeastLoaded);
  EXPECT_DOUBLE_EQ(from_files.policies.batch_timeout, 0.005);
  EXPECT_EQ(from_files.sim.seed, 7u);
  EXPECT_DOUBLE_EQ(from_files.sim.window, 0.5);
  EXPECT_EQ(inline_spec.sim.seed, 1u);  // the default
}

TEST(RunSpec, HopDelayDefaultsOnlyEdgesWithoutTheirOwnDelay) {
  const std::string yaml = R"(
app:
  slo_ms: 100
  tasks:
    - {name: a, variants: [det_small]}
    - {name: b, variants: [det_large]}
    - {name: c, variants: [cls]}
    - {name: d, variants: [cls]}
  edges:
    - {from: a, to: b, delay_ms: 3}
    - {from: b, to: c}
    - {from: c, to: d, delay_ms: 0}
deployment:
  workers:
    - {task: a, variant: det_small, segment: gpu}
    - {task: b, variant: det_large, segment: gpu}
    - {task: c, variant: cls, segment: gpu}
    - {task: d, variant: cls, segment: gpu}
profiles:
  - file: )" + kChainProfiles +
                           R"(
workload:
  source: {kind: deterministic, rate_rps: 20, limit: 100}
)";
  const RunSpec plain = run_from(yaml);
  EXPECT_DOUBLE_EQ(plain.app.edges[0].delay, 0.003);
  EXPECT_DOUBLE_EQ(plain.app.edges[1].delay, 0.0);
  EXPECT_DOUBLE_EQ(plain.app.edges[2].delay, 0.0);
  EXPECT_FALSE(plain.cluster.has_value());

  const RunSpec hop = run_from(yaml + "simulation: {hop_delay_ms: 1.5}\n");
  EXPECT_DOUBLE_EQ(hop.app.edges[0].delay, 0.003);   // its own delay
  EXPECT_DOUBLE_EQ(hop.app.edges[1].delay, 0.0015);  // the default
  EXPECT_DOUBLE_EQ(hop.app.edges[2].delay, 0.0);     // an explicit 0 is its own delay too
}

}  // namespace
}  // namespace tessera
