// The policy registry and the presets: every row parses back from its name, every preset
// sets every family, and `tessera compare --presets X` runs the same system as
// `policies: {preset: X}` in the same run spec (equal summary.json).

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>

#include "core/spec_node.hpp"
#include "experiments/comparison.hpp"
#include "metrics/report.hpp"
#include "policy/presets.hpp"
#include "policy/registry.hpp"
#include "sim/simulator.hpp"
#include "spec/run_spec.hpp"
#include "spec_error.hpp"

namespace tessera {
namespace {

const std::string kChainProfiles =
    std::string(TESSERA_SOURCE_DIR) + "/tests/data/chain/profiles.yaml";

// The chain app (tests/data/chain) with both detector variants deployed, overloaded so
// that the presets' queues, drops and variant choices differ. Both tasks can run det_large,
// so that clipper+ (one variant everywhere) runs too.
std::string run_text(
    const std::string& policies,
    const std::string& workload = "{kind: poisson, rate_rps: 400, duration_s: 2}") {
  return R"(
app:
  name: chain
  slo_ms: 60
  tasks:
    - name: detect
      variants:
        - {name: det_small, accuracy: 0.8}
        - {name: det_large, accuracy: 0.9}
    - name: classify
      variants: [{name: cls, accuracy: 0.95}, {name: det_large, accuracy: 0.9}]
  edges:
    - {from: detect, to: classify, delay_ms: 2}
deployment:
  workers:
    - {task: detect, variants: [det_small, det_large], segment: gpu, max_batch: 4, count: 2}
    - {task: classify, variants: [cls, det_large], segment: gpu, max_batch: 4, count: 1}
profiles:
  - file: )" +
         kChainProfiles +
         R"(
workload:
  source: )" +
         workload + R"(
simulation: {seed: 3, window_s: 10, noise_cv: 0.1}
)" + policies;
}

void expect_spec_error(const std::function<void()>& fn, const std::string& field,
                       const std::string& phrase) {
  const SpecError e = testing::spec_error(fn);
  EXPECT_EQ(e.file(), "run.yaml") << e.what();
  EXPECT_EQ(e.field(), field) << e.what();
  EXPECT_NE(e.problem().find(phrase), std::string::npos)
      << "'" << phrase << "' not in: " << e.what();
}

RunSpec run_from(const std::string& yaml) {
  return parse_run_spec(SpecNode::load_string(yaml, "run.yaml"));
}

// What `tessera simulate` writes as summary.json for a run spec.
std::string simulate_summary(const RunSpec& run) {
  auto arrivals = make_run_arrivals(run);
  Simulator sim(run.app, run.deployment, run.profiles, PolicySet(run.policies), run.sim);
  sim.run(*arrivals);
  return summarize(sim.metrics(), run.app).dump(2);
}

// A preset name usable on the chain app (clipper+ needs one of its variants).
std::string usable(const std::string& preset) {
  return preset == "clipper+:VARIANT" ? "clipper+:det_large" : preset;
}

template <typename Kind>
void expect_rows_round_trip(const PolicyFamily<Kind>& family, int enumerators) {
  EXPECT_EQ(static_cast<int>(family.rows.size()), enumerators) << family.field;
  std::set<std::string_view> names;
  for (const auto& row : family.rows) {
    EXPECT_TRUE(names.insert(row.name).second) << family.field << ": " << row.name;
    ASSERT_NE(family.find(row.name), nullptr);
    EXPECT_EQ(family.find(row.name)->kind, row.kind);
    EXPECT_EQ(&family.row(row.kind), &row);
    EXPECT_NE(row.install, nullptr) << row.name;
    EXPECT_EQ(policy_name(row.kind), row.name);
  }
}

TEST(PolicyRegistry, EveryEnumeratorHasOneRowThatParsesBack) {
  expect_rows_round_trip(dispatch_policies(), 3);
  expect_rows_round_trip(queue_policies(), 4);
  expect_rows_round_trip(batching_policies(), 4);
  expect_rows_round_trip(dropping_policies(), 9);
  expect_rows_round_trip(variant_policies(), 6);
  EXPECT_EQ(queue_policies().find("edf")->kind, QueueKind::kLbf);
}

TEST(PolicyRegistry, ParametersAreCheckedAgainstTheRowsThatTakeThem) {
  const auto fails = [](const std::string& policies, const std::string& field,
                        const std::string& phrase) {
    expect_spec_error([&] { run_from(run_text(policies)); }, field, phrase);
  };
  fails("policies: {batching: {kind: eager, timeout_ms: 5}}\n", "policies.batching.timeout_ms",
        "only timeout and jigsaw batching take a timeout");
  fails("policies: {variant: {kind: maxacc, buckets: 5}}\n", "policies.variant.buckets",
        "only slackfit takes buckets");
  fails("policies: {variant: {kind: fixed, fallback: fit}}\n", "policies.variant.fallback",
        "only slackfit, maxbatch and maxacc take a fallback");
  fails("policies: {dropping: expired, stale_ms: 5}\n", "policies.stale_ms",
        "only jigsaw dropping takes a staleness threshold");
  fails("policies: {queue: adaptive}\n", "policies.queue",
        "(pard, split, split_reactive, split_window or split_wcl)");
  // A config built in C++ is checked the same way.
  PolicyConfig c;
  c.stale_after = 0.5;
  ASSERT_TRUE(policy_config_error(c).has_value());
  EXPECT_EQ(policy_config_error(c)->field, "stale_ms");
  EXPECT_THROW(PolicySet(c).instantiate(run_from(run_text("")).app, 1), std::invalid_argument);
}

TEST(PolicyRegistry, RowsThatRunTheStatePlannerAreThePardAndSplitDroppers) {
  std::set<DroppingKind> runners;
  for (const auto& row : dropping_policies().rows) {
    if (row.state_planner) runners.insert(row.kind);
  }
  EXPECT_EQ(runners, (std::set<DroppingKind>{DroppingKind::kPard, DroppingKind::kSplit,
                                             DroppingKind::kSplitReactive,
                                             DroppingKind::kSplitWindow, DroppingKind::kSplitWcl}));
  // Each of them bounds the planner's draws when the workload loads (the hostile-spec
  // test names them in YAML).
  for (DroppingKind kind : runners) {
    const std::string name(policy_name(kind));
    SCOPED_TRACE(name);
    const RunSpec run = run_from(run_text(
        "policies: {dropping: " + name + ", pard: {sync_period_s: 0.001, samples: 1000000}}\n",
        "{kind: poisson, rate_rps: 0.01, duration_s: 1e6}"));
    expect_spec_error([&] { make_run_arrivals(run); }, "workload", "State Planner");
  }
}

// Every preset: `compare --presets X` on a run spec equals that run spec with `preset: X`,
// without other policy fields and with fields that override the preset in both.
TEST(Presets, CompareEqualsThePresetInTheRunSpec) {
  for (const std::string& extra :
       {std::string(), std::string(", dispatch: least_loaded, max_queue: 12")}) {
    // The spec compare runs on names some other preset.
    const RunSpec base = run_from(run_text("policies: {preset: naive" + extra + "}\n"));
    std::set<std::string> distinct;
    for (const std::string& listed : all_presets()) {
      const std::string preset = usable(listed);
      SCOPED_TRACE(preset + extra);
      const auto cases = comparison_cases(base, {preset}, {}, {});
      ASSERT_EQ(cases.size(), 1u);
      const auto rows = run_comparison(base, cases);
      const RunSpec named = run_from(run_text("policies: {preset: " + preset + extra + "}\n"));
      EXPECT_EQ(cases[0].policies.describe(), named.policies.describe());
      EXPECT_EQ(rows[0].summary.dump(2), simulate_summary(named));
      distinct.insert(rows[0].summary.dump());
    }
    // The run is loaded enough that the presets' systems serve it differently.
    EXPECT_GE(distinct.size(), 10u) << extra;
  }
}

TEST(Presets, EveryPresetSetsEveryFamilyWhateverTheDefaults) {
  // A preset's families are its row's, never PolicyConfig's defaults by accident: the
  // rows differ from the defaults where the papers do.
  EXPECT_EQ(preset_config("slackfit").dispatch, DispatchKind::kCentral);
  EXPECT_EQ(preset_config("slackfit").batching, BatchingKind::kIdle);
  EXPECT_EQ(preset_config("jigsawserve").batching, BatchingKind::kJigsaw);
  for (const PresetRow& row : preset_table()) {
    const PolicyConfig c = preset_config(usable(all_presets()[&row - preset_table().data()]));
    EXPECT_EQ(c.dispatch, row.dispatch) << row.name;
    EXPECT_EQ(c.queue, row.queue) << row.name;
    EXPECT_EQ(c.batching, row.batching) << row.name;
    EXPECT_EQ(c.dropping, row.dropping) << row.name;
    EXPECT_EQ(c.variant, row.variant) << row.name;
  }
}

}  // namespace
}  // namespace tessera
