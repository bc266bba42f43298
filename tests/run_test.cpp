// End to end: run specs loaded from YAML, their workloads built, simulated and reported,
// as `tessera simulate` does.

#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "metrics/report.hpp"
#include "policy/policy_set.hpp"
#include "sim/simulator.hpp"
#include "spec/run_spec.hpp"
#include "workload/workload_spec.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kRoot(TESSERA_SOURCE_DIR);
const fs::path kChainDir = kRoot / "tests" / "data" / "chain";
const fs::path kTraces = kRoot / "data" / "traces";
const fs::path kProfiles = kRoot / "data" / "profiles";

fs::path scratch_dir(const std::string& name) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("tessera_run_test_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

fs::path write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  return path;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A run spec written to its own scratch folder and loaded from there.
RunSpec load_inline_run(const std::string& name, const std::string& yaml) {
  return load_run_spec(write_file(scratch_dir(name) / "run.yaml", yaml));
}

// A finished simulation and the spec it ran (the simulator refers to the spec's parts).
struct SimResult {
  std::unique_ptr<RunSpec> run;
  std::unique_ptr<Simulator> sim;
  json summary;

  const MetricsCollector& m() const { return sim->metrics(); }
};

SimResult simulate(RunSpec spec) {
  SimResult r;
  r.run = std::make_unique<RunSpec>(std::move(spec));
  Workload workload = build_workload(r.run->workload, r.run->sim.seed);
  EXPECT_TRUE(workload.finite);
  r.sim = std::make_unique<Simulator>(r.run->app, r.run->deployment, r.run->profiles,
                                      PolicySet(r.run->policies), r.run->sim);
  r.sim->run(*workload.source);
  r.summary = summarize(r.sim->metrics(), r.run->app);
  return r;
}

// Every submitted request ends exactly one way, in the metrics and in the summary.
void expect_accounting(const SimResult& r, uint64_t submitted) {
  const MetricsCollector& m = r.m();
  EXPECT_EQ(m.submitted(), submitted);
  EXPECT_EQ(m.count(Outcome::kOk) + m.count(Outcome::kLate) + m.count(Outcome::kDropped) +
                m.count(Outcome::kFailed),
            m.submitted());
  const json& s = r.summary;
  EXPECT_EQ(s["submitted"].get<uint64_t>(), submitted);
  EXPECT_EQ(s["ok"].get<uint64_t>() + s["late"].get<uint64_t>() + s["dropped"].get<uint64_t>() +
                s["failed"].get<uint64_t>(),
            submitted);
}

// The chain app of tests/data/chain (detect -> classify) with its profiles, driven by
// `workload` (the lines below `workload:`).
std::string chain_run(const std::string& workload) {
  return "app: " + (kChainDir / "app.yaml").string() +
         "\ncluster: " + (kChainDir / "cluster.yaml").string() +
         "\ndeployment: " + (kChainDir / "deployment.yaml").string() +
         "\nprofiles:\n  - file: " + (kChainDir / "profiles.yaml").string() + "\nworkload:\n" +
         workload;
}

// The latency of one request alone in a two-task chain with no hop delays: the two
// variants' batch-1 latencies.
double lone_latency_ms(const RunSpec& run) {
  const WorkerGroup& first = run.deployment.groups[0];
  const WorkerGroup& second = run.deployment.groups[1];
  const std::string& v0 = run.app.tasks[first.task].variants[first.variants[0]].name;
  const std::string& v1 = run.app.tasks[second.task].variants[second.variants[0]].name;
  return run.profiles.latency_ms(v0, first.segment, 1) +
         run.profiles.latency_ms(v1, second.segment, 1);
}

// ---- the bundled example ---------------------------------------------------------------

TEST(RunExample, TrafficAccountsForEveryRequestAndIsDeterministic) {
  const fs::path file = kRoot / "examples" / "traffic" / "run.yaml";
  const SimResult first = simulate(load_run_spec(file));
  expect_accounting(first, 8819);  // one request per row of the Azure LLM code trace
  EXPECT_EQ(first.summary["app"], "traffic_analysis");

  const SimResult again = simulate(load_run_spec(file));
  EXPECT_EQ(first.summary.dump(), again.summary.dump());

  // The detector's fanout is Poisson: the seed matters, so the check above is not vacuous.
  RunSpec reseeded = load_run_spec(file);
  reseeded.sim.seed = first.run->sim.seed + 1;
  const SimResult other = simulate(std::move(reseeded));
  expect_accounting(other, 8819);
  EXPECT_NE(first.summary["tasks"].dump(), other.summary["tasks"].dump());
}

// ---- trace formats ---------------------------------------------------------------------

TEST(RunFormats, GenericCsvTrace) {
  const fs::path dir = scratch_dir("generic");
  // 20 arrivals 0.1 s apart; every fourth has a 1 ms SLO of its own and must be late.
  std::string csv = "arrival_s,input_tokens,output_tokens,slo_ms,note\n";
  for (int i = 0; i < 20; ++i) {
    csv += std::to_string(0.1 * i) + (i % 2 == 0 ? ",12,3," : ",,,") +
           (i % 4 == 0 ? "1" : (i % 4 == 1 ? "500" : "")) + ",row" + std::to_string(i) + "\n";
  }
  write_file(dir / "trace.csv", csv);
  write_file(dir / "run.yaml", chain_run("  source: {kind: trace, path: trace.csv}\n"));
  const SimResult r = simulate(load_run_spec(dir / "run.yaml"));
  expect_accounting(r, 20);
  EXPECT_EQ(r.m().count(Outcome::kLate), 5u);
  EXPECT_EQ(r.m().count(Outcome::kOk), 15u);
  EXPECT_NEAR(r.summary["duration_s"].get<double>(), 1.9, 1e-9);
}

// `workload:` may name a file (as `tessera plan --workload` writes it), whose paths are
// relative to that file; `models:` names the server's models file and must exist.
TEST(RunFormats, WorkloadFileAndModelsFile) {
  const fs::path dir = scratch_dir("workload_file");
  fs::create_directories(dir / "w");
  write_file(dir / "w" / "trace.csv", "arrival_s\n0\n0.5\n1\n");
  write_file(dir / "w" / "workload.yaml", "source: {kind: trace, path: trace.csv}\n");
  write_file(dir / "models.yaml", "models: []\n");
  std::string yaml = chain_run("");
  yaml.replace(yaml.find("workload:\n"), 10, "workload: w/workload.yaml\nmodels: models.yaml\n");
  write_file(dir / "run.yaml", yaml);
  const RunSpec run = load_run_spec(dir / "run.yaml");
  EXPECT_EQ(run.models_file, dir / "models.yaml");
  expect_accounting(simulate(load_run_spec(dir / "run.yaml")), 3);
  yaml.replace(yaml.find("models.yaml"), 11, "missing.yaml");
  write_file(dir / "run.yaml", yaml);
  try {
    load_run_spec(dir / "run.yaml");
    ADD_FAILURE() << "a missing models file";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("models"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("missing.yaml"), std::string::npos) << e.what();
  }
}

TEST(RunFormats, AzureLlmTraceWithLimit) {
  const SimResult r = simulate(load_inline_run(
      "azure_llm", chain_run("  source: {kind: trace, format: azure-llm, path: " +
                             (kTraces / "azure_llm_code_2023.csv").string() + ", limit: 200}\n")));
  expect_accounting(r, 200);
  EXPECT_GT(r.summary["duration_s"].get<double>(), 0.0);
}

// Invocations in the first `minutes` minutes of the given rows of an Azure Functions file.
uint64_t functions_invocations(const fs::path& file, const std::vector<int>& rows, int minutes) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);  // header
  uint64_t total = 0;
  for (int row = 0; std::getline(in, line); ++row) {
    if (std::find(rows.begin(), rows.end(), row) == rows.end()) continue;
    std::stringstream fields(line);
    std::string field;
    for (int col = 0; std::getline(fields, field, ','); ++col) {
      if (col >= 4 && col < 4 + minutes) total += std::stoull(field);
    }
  }
  return total;
}

TEST(RunFormats, AzureFunctionsTraceCompressed) {
  const fs::path trace = kTraces / "functions_sample.csv";
  // Half a second per minute and 50 s of it: the first 100 minutes of rows 0 and 1.
  const SimResult r = simulate(load_inline_run(
      "azure_functions",
      chain_run(
          "  source:\n    kind: trace\n    format: azure-functions\n    path: " + trace.string() +
          "\n    rows: [0, 1]\n    seconds_per_minute: 0.5\n"
          "    within_minute: even\n    duration_s: 50\n")));
  const uint64_t expected = functions_invocations(trace, {0, 1}, 100);
  EXPECT_EQ(expected, 547u);
  expect_accounting(r, expected);
  EXPECT_LT(r.m().last_arrival(), 50.0);
}

// ---- profile sources -------------------------------------------------------------------

// A two-task chain with one variant per task on the given segments, one request every half
// second: each runs alone, so its latency is the sum of the two batch-1 latencies.
std::string lone_chain_run(const std::string& v0, const std::string& s0, const std::string& v1,
                           const std::string& s1, const std::string& profiles) {
  return "app:\n  slo_ms: 5000\n  tasks:\n"
         "    - {name: first, variants: ['" +
         v0 + "']}\n    - {name: second, variants: ['" + v1 +
         "']}\n  edges:\n    - {from: first, to: second}\n"
         "deployment:\n  workers:\n    - {task: first, variant: '" +
         v0 + "', segment: '" + s0 + "'}\n    - {task: second, variant: '" + v1 + "', segment: '" +
         s1 + "'}\nprofiles:\n" + profiles +
         "workload:\n  source: {kind: deterministic, rate_rps: 2, limit: 10}\n";
}

void expect_lone_latencies(const SimResult& r) {
  expect_accounting(r, 10);
  EXPECT_EQ(r.m().count(Outcome::kOk), 10u);
  const double expected = lone_latency_ms(*r.run);
  const json& latency = r.summary["latency_ms"];
  EXPECT_NEAR(latency["p50"].get<double>(), expected, expected * 0.02);
  EXPECT_NEAR(latency["mean"].get<double>(), expected, expected * 1e-6);
  EXPECT_NEAR(r.summary["gpu_seconds"].get<double>(), 10 * expected * 1e-3, 1e-9);
}

TEST(RunProfiles, LokiRuntimes) {
  RunSpec run = load_inline_run(
      "loki", lone_chain_run("yolov5n", "pascal", "efficientnet-b0", "pascal",
                             "  - format: loki\n    runtimes: " +
                                 (kProfiles / "loki" / "simulator_runtimes.csv").string() +
                                 "\n    segments: {onnxruntime_gpu_pascal: pascal}\n"
                                 "    column: 50th_pct\n"));
  EXPECT_FALSE(run.profiles.has("yolov5n", "onnxruntime_gpu_ampere"));  // only the mapped one
  EXPECT_GT(run.profiles.latency_ms("yolov5n", "pascal", 1), 0.0);
  expect_lone_latencies(simulate(std::move(run)));
}

TEST(RunProfiles, PpipeBlockTimings) {
  RunSpec run = load_inline_run(
      "ppipe", lone_chain_run("convnext_large", "T4", "convnext_large", "T4/mps2",
                              "  - format: ppipe\n    dir: " + (kProfiles / "ppipe").string() +
                                  "\n    models: [convnext_large]\n"));
  // Sharing the GPU through MPS makes the same model slower.
  EXPECT_GT(run.profiles.latency_ms("convnext_large", "T4/mps2", 1),
            run.profiles.latency_ms("convnext_large", "T4", 1));
  expect_lone_latencies(simulate(std::move(run)));
}

TEST(RunProfiles, TesseraYamlFile) {
  RunSpec run =
      load_inline_run("yaml_profiles",
                      lone_chain_run("det_small", "gpu", "cls", "gpu",
                                     "  - file: " + (kChainDir / "profiles.yaml").string() + "\n"));
  EXPECT_DOUBLE_EQ(lone_latency_ms(run), 15.0);  // 10 ms + 5 ms in tests/data/chain
  expect_lone_latencies(simulate(std::move(run)));
}

// ---- summary and report ----------------------------------------------------------------

TEST(RunReport, SummaryHasEveryDocumentedField) {
  const SimResult r = simulate(load_run_spec(kChainDir / "run.yaml"));
  expect_accounting(r, 100);
  const json& s = r.summary;
  for (const char* key : {"submitted", "ok", "late", "dropped", "failed"}) {
    ASSERT_TRUE(s.contains(key)) << key;
    EXPECT_TRUE(s[key].is_number_unsigned()) << key;
  }
  for (const char* key : {"goodput_rps", "slo_attainment", "drop_rate", "invalid_rate",
                          "mean_accuracy", "gpu_seconds"}) {
    ASSERT_TRUE(s.contains(key)) << key;
    EXPECT_TRUE(s[key].is_number()) << key;
  }
  ASSERT_TRUE(s.contains("latency_ms"));
  for (const char* q : {"p50", "p90", "p99"}) {
    ASSERT_TRUE(s["latency_ms"].contains(q)) << q;
    EXPECT_TRUE(s["latency_ms"][q].is_number()) << q;
  }
  ASSERT_TRUE(s.contains("dropped_by_stage"));
  EXPECT_EQ(s["dropped_by_stage"].size(), 2u);
  EXPECT_TRUE(s["dropped_by_stage"].contains("detect"));
  EXPECT_TRUE(s["dropped_by_stage"].contains("classify"));

  // The values agree with each other and with the chain: det_small (0.8) then cls (1.0).
  const double submitted = s["submitted"].get<double>();
  EXPECT_DOUBLE_EQ(s["slo_attainment"].get<double>(), s["ok"].get<double>() / submitted);
  EXPECT_DOUBLE_EQ(s["drop_rate"].get<double>(), s["dropped"].get<double>() / submitted);
  EXPECT_NEAR(s["mean_accuracy"].get<double>(), 0.8, 1e-12);
  EXPECT_EQ(s["ok"].get<uint64_t>(), 100u);  // 20 rps is far below the chain's capacity
  EXPECT_GT(s["gpu_seconds"].get<double>(), 0.0);
  EXPECT_LE(s["latency_ms"]["p50"].get<double>(), s["latency_ms"]["p90"].get<double>());
  EXPECT_LE(s["latency_ms"]["p90"].get<double>(), s["latency_ms"]["p99"].get<double>());
}

TEST(RunReport, WritesSummaryTimeSeriesAndChart) {
  const SimResult r = simulate(load_run_spec(kChainDir / "run.yaml"));
  const fs::path dir = scratch_dir("report") / "out";
  write_report(dir, r.summary, r.m(), r.run->app);

  EXPECT_EQ(json::parse(read_file(dir / "summary.json")), r.summary);

  std::istringstream csv(read_file(dir / "timeseries.csv"));
  std::vector<std::string> lines;
  for (std::string line; std::getline(csv, line);) lines.push_back(line);
  ASSERT_FALSE(r.m().windows().empty());
  ASSERT_EQ(lines.size(), 1 + r.m().windows().size());
  EXPECT_EQ(lines[0],
            "window_start_s,arrivals_rps,goodput_rps,late_rps,dropped_rps,failed_rps,gpu_busy,"
            "queue_detect,queue_classify,wasted_gpu_detect,wasted_gpu_classify,dropped_at_detect,"
            "dropped_at_classify");
  EXPECT_EQ(lines[1].rfind("0,", 0), 0u) << lines[1];
  // 100 arrivals at 20 rps in half-second windows: 10 per window, i.e. 20 per second.
  EXPECT_EQ(lines[1].rfind("0,20,", 0), 0u) << lines[1];

  const std::string svg = read_file(dir / "timeseries.svg");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u) << svg.substr(0, 80);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

}  // namespace
}  // namespace tessera
