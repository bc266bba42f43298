// Hostile specs, one per threat of docs/reliability-specs.md: each must be refused at load
// time with a SpecError naming the file and the field, never wrap, hang, read forever or
// throw anything else. The reproducers are here word for word.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "../spec_error.hpp"
#include "core/csv_file.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/spec_node.hpp"
#include "policy/policy_set.hpp"
#include "policy/presets.hpp"
#include "spec/run_validation.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::spec_error;

const std::string kProfiles =
    (fs::path(TESSERA_SOURCE_DIR) / "tests" / "data" / "chain" / "profiles.yaml").string();
const std::string kFunctions =
    (fs::path(TESSERA_SOURCE_DIR) / "data" / "traces" / "functions_sample.csv").string();

// One folder per process: ctest runs each test as its own process, two at a time, and
// they must not overwrite each other's run.yaml.
fs::path scratch(const std::string& name) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("tessera_spec_hostile_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

fs::path write_file(const std::string& name, const std::string& text) {
  const fs::path path = scratch(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return path;
}

struct RunText {
  std::string app =
      "app:\n"
      "  slo_ms: 100\n"
      "  tasks:\n"
      "    - {name: detect, fanout: poisson, variants: [{name: det_small, fanout: 2}]}\n"
      "    - {name: classify, variants: [cls]}\n"
      "  edges: [{from: detect, to: classify}]\n";
  std::string deployment =
      "deployment:\n"
      "  workers:\n"
      "    - {task: detect, variant: det_small, segment: gpu, max_batch: 4, count: 2}\n"
      "    - {task: classify, variant: cls, segment: gpu, max_batch: 8, count: 1}\n";
  std::string cluster = "cluster: {segments: [{name: gpu, count: 4}]}\n";
  std::string workload = "workload: {source: {kind: poisson, rate_rps: 20}, duration_s: 60}\n";
  std::string extra;

  std::string text() const {
    return app + "profiles: [{file: " + kProfiles + "}]\n" + cluster + deployment + workload +
           extra;
  }
};

// Validates `run` and returns its SpecError; the run file is `run.yaml`.
SpecError refused(const RunText& run) {
  const fs::path file = write_file("run.yaml", run.text());
  SpecError e = spec_error([&] { validate_run_file(file); });
  EXPECT_EQ(e.file(), file.string()) << e.what();
  return e;
}

void expect_refused(const RunText& run, const std::string& field, const std::string& phrase) {
  const SpecError e = refused(run);
  EXPECT_EQ(e.field(), field) << e.what();
  EXPECT_NE(e.problem().find(phrase), std::string::npos) << e.what();
}

TEST(HostileSpec, TheBaseRunIsValid) {
  const fs::path file = write_file("run.yaml", RunText{}.text());
  EXPECT_NO_THROW(validate_run_file(file));
}

// ---------------------------------------------------------------------------------------
// Counts and batch sizes do not wrap.

TEST(HostileSpec, CountsAndBatchSizesDoNotWrap) {
  RunText run;
  run.deployment =
      "deployment:\n  workers:\n"
      "    - {task: detect, variant: det_small, segment: gpu, count: 2147483647}\n"
      "    - {task: classify, variant: cls, segment: gpu}\n";
  expect_refused(run, "deployment.workers[0].count", "at most 10000");

  run.cluster = "cluster: {segments: [{name: gpu, count: 4294967295}]}\n";
  run.deployment =
      "deployment:\n  workers:\n"
      "    - {task: detect, variant: det_small, segment: gpu, count: 2147483647}\n"
      "    - {task: classify, variant: cls, segment: gpu, count: 2147483647}\n";
  expect_refused(run, "cluster.segments[0].count", "at most 1000000");

  run = RunText{};
  run.deployment =
      "deployment:\n  workers:\n"
      "    - {task: detect, variant: det_small, segment: gpu, max_batch: 4294967297}\n"
      "    - {task: classify, variant: cls, segment: gpu}\n";
  expect_refused(run, "deployment.workers[0].max_batch", "at most 4096");

  // Many groups within their own bound still may not exceed the deployment's.
  run = RunText{};
  run.cluster = "";
  run.deployment = "deployment:\n  workers:\n";
  for (int i = 0; i < 11; ++i) {
    run.deployment += "    - {task: detect, variant: det_small, segment: gpu, count: 10000}\n";
  }
  run.deployment += "    - {task: classify, variant: cls, segment: gpu}\n";
  expect_refused(run, "deployment.workers[10].count", "more than 100000 workers");
}

TEST(HostileSpec, IntegersMustBeDecimalIntegersThatFit) {
  RunText run;
  run.extra = "simulation: {seed: 9223372036854775808}\n";
  expect_refused(run, "simulation.seed", "out of range");
  run.extra = "simulation: {seed: 1.5}\n";
  expect_refused(run, "simulation.seed", "expected an integer");
  run.extra = "simulation: {seed: 0x10}\n";
  expect_refused(run, "simulation.seed", "expected an integer");
  run.extra = "simulation: {seed: +-1}\n";
  expect_refused(run, "simulation.seed", "expected an integer");
  run.extra = "simulation: {seed: +7}\n";
  EXPECT_NO_THROW(validate_run_file(write_file("run.yaml", run.text())));
  run.extra = "simulation: {seed: -1}\n";
  expect_refused(run, "simulation.seed", "must not be negative");
  run.extra = "policies: {max_queue: 4294967296}\n";
  expect_refused(run, "policies.max_queue", "at most");
}

TEST(HostileSpec, NumbersMustBeFinite) {
  for (const std::string v : {"nan", ".nan", ".inf", "-.inf", "1e309"}) {
    RunText run;
    run.workload = "workload: {source: {kind: poisson, rate_rps: " + v + "}, duration_s: 60}\n";
    const SpecError e = refused(run);
    EXPECT_EQ(e.field(), "workload.source.rate_rps") << e.what();
  }
}

// ---------------------------------------------------------------------------------------
// Upper bounds: nothing validate accepts makes simulate hang or exhaust memory.

TEST(HostileSpec, DelaysAndWindowsAreBounded) {
  RunText run;
  run.app =
      "app:\n  slo_ms: 100\n  tasks: [{name: detect, variants: [det_small]}, {name: classify, "
      "variants: [cls]}]\n  edges: [{from: detect, to: classify, delay_ms: 1e12}]\n";
  expect_refused(run, "app.edges[0].delay_ms", "at most 8.64e+07");

  run = RunText{};
  run.extra = "simulation: {window_s: 1e-9}\n";
  expect_refused(run, "simulation.window_s", "between 0.001");

  // Each bound alone is fine, together they make 10^7 windows.
  run.workload = "workload: {source: {kind: poisson, rate_rps: 0.1}, duration_s: 1e5}\n";
  run.extra = "simulation: {window_s: 0.01}\n";
  expect_refused(run, "workload", "time-series windows");
}

TEST(HostileSpec, TheTimeToDrainTheWorkIsBounded) {
  // A model that takes a day per item: 100 requests keep the run going for 200 days.
  const fs::path slow =
      write_file("slow.yaml",
                 "profiles:\n  - {variant: det_small, segment: gpu, latency_ms: {1: 86400000}}\n"
                 "  - {variant: cls, segment: gpu, latency_ms: {1: 1}}\n");
  RunText run;
  run.extra = "";
  const std::string text = run.text();
  std::string changed = text;
  changed.replace(changed.find(kProfiles), kProfiles.size(), slow.string());
  changed.replace(changed.find("duration_s: 60"), 14, "limit: 100");
  const fs::path file = write_file("run.yaml", changed);
  const SpecError e = spec_error([&] { validate_run_file(file); });
  EXPECT_EQ(e.field(), "workload") << e.what();
  EXPECT_NE(e.problem().find("time-series windows"), std::string::npos) << e.what();
}

TEST(HostileSpec, FanOutIsBounded) {
  RunText run;
  run.app =
      "app:\n  slo_ms: 100\n  tasks:\n"
      "    - {name: detect, fanout: poisson, variants: [{name: det_small, fanout: 1e300}]}\n"
      "    - {name: classify, variants: [cls]}\n  edges: [{from: detect, to: classify}]\n";
  expect_refused(run, "app.tasks[0].variants[0].fanout", "at most 1000");

  // Within the per-variant bound, a chain of fan-outs multiplies.
  run.app =
      "app:\n  slo_ms: 100\n  tasks:\n"
      "    - {name: a, variants: [{name: det_small, fanout: 1000}]}\n"
      "    - {name: b, variants: [{name: det_large, fanout: 1000}]}\n"
      "    - {name: classify, variants: [cls]}\n"
      "  edges: [{from: a, to: b}, {from: b, to: classify}]\n";
  run.deployment =
      "deployment:\n  workers:\n"
      "    - {task: a, variant: det_small, segment: gpu}\n"
      "    - {task: b, variant: det_large, segment: gpu}\n"
      "    - {task: classify, variant: cls, segment: gpu}\n";
  expect_refused(run, "app.edges", "items across the tasks");
}

TEST(HostileSpec, WorkloadSizeIsBounded) {
  RunText run;
  run.workload = "workload: {source: {kind: poisson, rate_rps: 1e9}, duration_s: 1e7}\n";
  expect_refused(run, "workload", "arrivals");

  // Ten arrivals, the last one ~10^301 s in: the span is bounded as well as the count.
  run.workload = "workload: {source: {kind: poisson, rate_rps: 1e-300}, limit: 10}\n";
  expect_refused(run, "workload", "span");

  run.workload = "workload: {source: {kind: poisson, rate_rps: 10}, limit: 2147483648}\n";
  expect_refused(run, "workload.limit", "at most 100000000");

  // Arrivals before start_s are generated and skipped: they count.
  run.workload =
      "workload: {source: {kind: poisson, rate_rps: 1e6}, start_s: 1e6, duration_s: 1}\n";
  expect_refused(run, "workload", "before start_s");

  // target_rate_rps reads its source to the end: the source is checked first.
  run.workload =
      "workload: {source: {kind: poisson, rate_rps: 1e9, duration_s: 1e7}, target_rate_rps: 5, "
      "limit: 10}\n";
  expect_refused(run, "workload.source", "arrivals");

  std::string streams;
  for (int i = 0; i < 1001; ++i)
    streams += std::string(i ? ", " : "") + "{kind: poisson, rate_rps: 1}";
  run.workload = "workload: {source: {kind: sum, streams: [" + streams + "]}, duration_s: 10}\n";
  expect_refused(run, "workload.source.streams[1000]", "more than 1000 sources");

  run.workload = "workload: {source: {kind: poisson, rate_rps: 20}, rate_scale: 1e300}\n";
  expect_refused(run, "workload.rate_scale", "at most 1e+06");

  run.workload = "workload: {source: {kind: gamma, rate_rps: 20, cv2: 1e300, duration_s: 60}}\n";
  expect_refused(run, "workload.source.cv2", "at most 10000");
}

TEST(HostileSpec, AzureFunctionsCountsAreBounded) {
  std::string header = "HashOwner,HashApp,HashFunction,Trigger,1,2\n";
  const fs::path trace = write_file("functions.csv", header + "a,b,c,http,1000000000000,1\n");
  RunText run;
  run.workload =
      "workload: {source: {kind: trace, format: azure-functions, path: " + trace.string() + "}}\n";
  const fs::path file = write_file("run.yaml", run.text());
  const SpecError e = spec_error([&] { validate_run_file(file); });
  EXPECT_EQ(e.file(), trace.string());
  EXPECT_EQ(e.field(), "line 2, column 1") << e.what();

  // Counts that each fit but sum past the bound.
  const fs::path wide =
      write_file("functions2.csv", header + "a,b,c,http,90000000,1\na,b,c,http,90000000,1\n");
  run.workload =
      "workload: {source: {kind: trace, format: azure-functions, path: " + wide.string() + "}}\n";
  const fs::path file2 = write_file("run.yaml", run.text());
  const SpecError e2 = spec_error([&] { validate_run_file(file2); });
  EXPECT_EQ(e2.file(), wide.string()) << e2.what();
}

TEST(HostileSpec, PardPlannerWorkIsBounded) {
  RunText run;
  run.workload = "workload: {source: {kind: poisson, rate_rps: 0.01}, duration_s: 1e6}\n";
  run.extra =
      "policies: {preset: pard, pard: {sync_period_s: 0.001, samples: 1000000}}\n"
      "simulation: {window_s: 10}\n";
  expect_refused(run, "workload", "State Planner");
  run.extra = "policies: {preset: pard, pard: {sync_period_s: 1e-300}}\n";
  expect_refused(run, "policies.pard.sync_period_s", "between 0.001");
}

// Every dropping policy that runs PARD's State Planner is bounded the same way, whether
// named directly or through a preset (nexus: split_window, clipper++: split_reactive).
TEST(HostileSpec, PlannerWorkIsBoundedForEveryPolicyThatRunsThePlanner) {
  RunText run;
  run.workload = "workload: {source: {kind: poisson, rate_rps: 0.01}, duration_s: 1e6}\n";
  const std::string hostile = "pard: {sync_period_s: 0.001, samples: 1000000}}\n";
  for (const char* dropping : {"pard", "split", "split_reactive", "split_window", "split_wcl"}) {
    SCOPED_TRACE(dropping);
    run.extra = std::string("policies: {dropping: ") + dropping + ", " + hostile +
                "simulation: {window_s: 10}\n";
    expect_refused(run, "workload", "State Planner");
  }
  for (const char* preset : {"nexus", "clipper++", "clipper++-predictive", "pard-wcl"}) {
    SCOPED_TRACE(preset);
    run.extra = std::string("policies: {preset: ") + preset + ", " + hostile +
                "simulation: {window_s: 10}\n";
    expect_refused(run, "workload", "State Planner");
  }
}

// ---------------------------------------------------------------------------------------
// Files: special files are refused, sizes are bounded.

TEST(HostileSpec, SpecialFilesAreRefusedWithoutReading) {
  RunText run;
  run.deployment = "deployment: /dev/zero\n";
  const auto t0 = std::chrono::steady_clock::now();
  expect_refused(run, "deployment", "not a regular file");

  const fs::path fifo = scratch("fifo.yaml");
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  run.deployment = "deployment: " + fifo.string() + "\n";
  expect_refused(run, "deployment", "not a regular file");

  run.deployment = "deployment: " + scratch("").string() + "\n";
  expect_refused(run, "deployment", "directory");

  run = RunText{};
  run.workload = "workload: {source: {kind: trace, path: /dev/urandom}}\n";
  expect_refused(run, "workload.source.path", "not a regular file");

  // The loaders refuse them too when called directly.
  SpecError e = spec_error([] { SpecNode::load_file("/dev/zero"); });
  EXPECT_EQ(e.file(), "/dev/zero");
  e = spec_error([] { CsvFile csv("/dev/zero"); });
  EXPECT_EQ(e.file(), "/dev/zero");
  e = spec_error([&] { CsvFile csv(fifo); });
  EXPECT_NE(e.problem().find("not a regular file"), std::string::npos);
  // /proc files report size 0 but are regular: the read is bounded, and /proc/self/mem fails.
  e = spec_error([] { SpecNode::load_file("/proc/self/mem"); });
  EXPECT_EQ(e.file(), "/proc/self/mem");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

TEST(HostileSpec, OversizedFilesAreRefused) {
  const fs::path big = scratch("big.yaml");
  {
    std::ofstream out(big, std::ios::binary | std::ios::trunc);
    out << "a: 1\n";
  }
  fs::resize_file(big, (16ull << 20) + 1);  // sparse: no real disk use
  RunText run;
  run.deployment = "deployment: " + big.string() + "\n";
  expect_refused(run, "deployment", "file too large");
  fs::remove(big);

  const std::string wide = "arrival_s" + std::string(200'000, ',') + "\n";
  const fs::path csv = write_file("wide.csv", wide);
  const SpecError e = spec_error([&] {
    CsvFile f(csv);
    f.next_row();
  });
  EXPECT_NE(e.problem().find("fields in one row"), std::string::npos) << e.what();
}

TEST(HostileSpec, OneLoadReadsABoundedTotal) {
  charge_read_bytes("x.csv", 3ull << 30);  // no budget open: not counted
  LoadBudget outer;
  {
    LoadBudget inner;  // joins the outer budget
    charge_read_bytes("a.csv", 1ull << 30);
  }
  const SpecError e = spec_error([] { charge_read_bytes("b.csv", (1ull << 30) + 1); });
  EXPECT_EQ(e.file(), "b.csv");
  EXPECT_NE(e.problem().find("more than 2 GiB"), std::string::npos) << e.what();
}

// ---------------------------------------------------------------------------------------
// Presets.

TEST(HostileSpec, PresetParametersAreValidated) {
  for (const std::string preset : {"slackfit:-5", "slackfit:1.5", "slackfit:", "jigsawserve:-100",
                                   "jigsawserve:nan", "jigsawserve:5x", "infaas:2", "naive:3"}) {
    RunText run;
    run.extra = "policies: {preset: '" + preset + "'}\n";
    const SpecError e = refused(run);
    EXPECT_EQ(e.field(), "policies.preset") << preset << ": " << e.what();
  }
  RunText run;
  run.extra = "policies: {preset: 'clipper+:nonexistent'}\n";
  expect_refused(run, "policies.preset", "not a variant of any task");
  run.extra = "policies: {variant: {kind: clipper+, variant: nonexistent}}\n";
  expect_refused(run, "policies.variant", "not a variant of any task");
  run.extra = "policies: {preset: 'clipper+:cls'}\n";
  EXPECT_NO_THROW(validate_run_file(write_file("run.yaml", run.text())));
  run.extra = "policies: {preset: 'slackfit:4'}\n";
  EXPECT_NO_THROW(validate_run_file(write_file("run.yaml", run.text())));
  EXPECT_EQ(preset_config("jigsawserve:50").stale_after, 0.05);
}

// ---------------------------------------------------------------------------------------
// YAML documents.

TEST(HostileSpec, DuplicateKeysAreErrors) {
  SpecError e = spec_error([] { SpecNode::load_string("a: 1\nb: 2\na: 3\n", "x.yaml"); });
  EXPECT_EQ(e.file(), "x.yaml");
  EXPECT_EQ(e.field(), "a");
  EXPECT_NE(e.problem().find("duplicate key (first at line 1, again at line 3)"), std::string::npos)
      << e.what();
  e = spec_error(
      [] { SpecNode::load_string("w:\n  - {task: a, count: 1, count: 2}\n", "x.yaml"); });
  EXPECT_EQ(e.field(), "w[0].count");

  RunText run;
  run.workload =
      "workload: {source: {kind: poisson, rate_rps: 20}, duration_s: 60, duration_s: 1e7}\n";
  expect_refused(run, "workload.duration_s", "duplicate key");
}

TEST(HostileSpec, KeysMustBeScalars) {
  const SpecError e = spec_error([] { SpecNode::load_string("? [a, b]\n: 1\n", "x.yaml"); });
  EXPECT_NE(e.problem().find("map keys must be plain strings"), std::string::npos);
}

TEST(HostileSpec, DeepAndAliasExpandedDocumentsAreBounded) {
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "[";
  for (int i = 0; i < 100; ++i) deep += "]";
  SpecError e = spec_error([&] { SpecNode::load_string("a: " + deep + "\n", "x.yaml"); });
  EXPECT_NE(e.problem().find("nested more than 64"), std::string::npos) << e.what();

  std::string very_deep(100'000, '[');
  e = spec_error([&] { SpecNode::load_string("a: " + very_deep + "\n", "x.yaml"); });
  EXPECT_EQ(e.file(), "x.yaml");

  std::string bomb = "x0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  for (int i = 1; i < 9; ++i) {
    bomb += "x" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) bomb += (k ? ", *a" : "*a") + std::to_string(i - 1);
    bomb += "]\n";
  }
  e = spec_error([&] { SpecNode::load_string(bomb, "x.yaml"); });
  EXPECT_NE(e.problem().find("more than 1000000 nodes"), std::string::npos) << e.what();
}

TEST(HostileSpec, EveryErrorMessageIsPrintableAscii) {
  // Found by the long fuzz run: readers that quote input without printable() (a Loki
  // accelerator name, a plan variant) still give a clean what().
  const SpecError e("f\xff.csv", "column 'Accel'",
                    "no rows for 'gpu\xed\xa0\x80\t' " + std::string(5000, 'y'));
  const std::string text = e.what();
  EXPECT_LT(text.size(), 2000u);
  EXPECT_NE(text.find("f\\xff.csv: column 'Accel': no rows for 'gpu\\xed\\xa0\\x80\\x09'"),
            std::string::npos)
      << text;
  EXPECT_EQ(e.file(), "f\xff.csv");  // the parts stay as given
}

TEST(HostileSpec, MessagesArePrintableAndShort) {
  RunText run;
  run.extra = "policies: {dispatch: \"\\xff\\xc3(" + std::string(10'000, 'z') + "\"}\n";
  const SpecError e = refused(run);
  const std::string text = e.what();
  EXPECT_LT(text.size(), 1000u);
  for (const char c : text) {
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "byte " << static_cast<int>(c) << " in " << text;
  }
}

}  // namespace
}  // namespace tessera
