// Plan -> serve with no hand edits (docs/plan.md#serving-the-plan): `tessera plan` on the
// traffic app writes a run spec and models file that the server takes as is; its
// variants (no real models here) are profile-timed emulations, labelled as such in the
// metadata, /metrics and the load generator's summary, and a batch never ends before its
// profiled latency. A short workload (`--duration`) keeps it fast; the goodput comparison
// with the simulator is a measurement (docs/serve.md#profile-timed-emulation), not a test.

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "loadgen/http_loadgen.hpp"
#include "models/model_spec.hpp"
#include "serve/kserve/protocol.hpp"
#include "serve/server/server.hpp"
#include "spec/run_spec.hpp"

namespace tessera {
namespace {

using nlohmann::json;

#ifdef TESSERA_BINARY
std::filesystem::path plan_traffic(const std::string& name, const std::string& extra = "") {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tessera_serve_plan_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string cmd = std::string(TESSERA_BINARY) + " plan " + TESSERA_SOURCE_DIR +
                          "/examples/plan/traffic.yaml --out " + dir.string() + " " +
                          (extra.find("--duration") == std::string::npos ? "--duration 3 " : "") +
                          extra + " > " + (dir.string() + ".log") + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return dir;
}

TEST(ServePlan, PlanDirectoryServesAsIsWithProfileTimedEmulations) {
  const auto dir = plan_traffic("serve");
  RunSpec run = load_run_spec(dir / "run.yaml");
  ASSERT_EQ(run.models_file, dir / "models.yaml");
  const ModelsConfig models = load_models_config(run.models_file);
  std::vector<std::string> deployed;
  for (const WorkerGroup& g : run.deployment.groups) {
    const std::string& v =
        run.app.tasks[g.task].variants[static_cast<std::size_t>(g.variants[0])].name;
    if (std::find(deployed.begin(), deployed.end(), v) == deployed.end()) deployed.push_back(v);
  }
  ASSERT_EQ(models.models.size(), deployed.size());
  for (const ModelSpec& m : models.models) {
    EXPECT_EQ(m.source, ModelSpec::Source::kProfileTimed) << m.variant;
  }

  ServeOptions options;
  options.port = 0;
  options.model_endpoints = false;
  Server server(run, models, options);
  const int port = server.start();

  // Metadata and /metrics say which variants are emulated.
  httplib::Client cli("127.0.0.1", port);
  auto meta = cli.Get("/v2/models/" + run.app.name);
  ASSERT_TRUE(meta);
  ASSERT_EQ(meta->status, 200);
  // Every parameter is a $parameter of the protocol: a bool, a number or a string.
  const json params = json::parse(meta->body)["parameters"];
  for (const auto& [key, value] : params.items()) {
    EXPECT_TRUE(value.is_boolean() || value.is_number() || value.is_string())
        << key << ": " << value;
  }
  std::vector<std::string> emulated;
  std::istringstream names(params["emulated"].get<std::string>());
  for (std::string n; std::getline(names, n, ',');) emulated.push_back(n);
  std::sort(emulated.begin(), emulated.end());
  std::sort(deployed.begin(), deployed.end());
  EXPECT_EQ(emulated, deployed);
  auto metrics = cli.Get("/metrics");
  ASSERT_TRUE(metrics);
  for (const std::string& v : deployed) {
    EXPECT_NE(metrics->body.find("tessera_model_info{variant=\"" + v +
                                 "\",executor=\"profile-timed\",emulated=\"true\"} 1"),
              std::string::npos)
        << v;
  }

  // One request: it cannot finish before its root stage's profiled batch-1 latency.
  double root_ms = 1e9;
  for (const WorkerGroup& g : run.deployment.groups) {
    if (!run.app.tasks[g.task].in_edges.empty()) continue;
    const auto& v = run.app.tasks[g.task].variants[static_cast<std::size_t>(g.variants[0])].name;
    root_ms = std::min(root_ms, run.profiles.latency_ms(v, g.segment, 1));
  }
  FloatTensor input{models.models[0].input_shape,
                    std::vector<float>(
                        static_cast<std::size_t>(shape_numel(models.models[0].input_shape)), 0.5f)};
  auto answer = cli.Post("/v2/models/" + run.app.name + "/infer", make_infer_body(input, "1", 0),
                         "application/json");
  ASSERT_TRUE(answer);
  ASSERT_EQ(answer->status, 200) << answer->body;
  EXPECT_GE(json::parse(answer->body)["parameters"]["latency_ms"].get<double>(), root_ms);

  // The run spec's workload through the load generator: every request answered once, the
  // summary labelled.
  auto source = make_run_arrivals(run);
  std::vector<Arrival> arrivals;
  Arrival a;
  while (source->next(a)) arrivals.push_back(a);
  ASSERT_GT(arrivals.size(), 20u);
  LoadgenOptions o;
  o.port = port;
  o.connections = 16;
  const LoadgenResult r = run_loadgen(run.app, arrivals, o);
  EXPECT_EQ(r.metrics.submitted(), arrivals.size());
  uint64_t answered = 0;
  for (const auto& [status, n] : r.stats.status_counts) answered += status != 0 ? n : 0;
  EXPECT_EQ(answered, arrivals.size());
  EXPECT_GT(r.metrics.count(Outcome::kOk), 0u);
  auto labelled = r.stats.emulated;
  std::sort(labelled.begin(), labelled.end());
  EXPECT_EQ(labelled, deployed);
  server.shutdown();
  std::filesystem::remove_all(dir);
}

// The plan's promise holds when served: `tessera plan` verifies the traffic plan by
// simulation; served as is (profile-timed emulations) under the load generator, its SLO
// attainment is within 5 % of the verified one.
TEST(ServePlan, ServedAttainmentIsWithinFivePercentOfTheVerifiedOne) {
  const auto dir = plan_traffic("promise", "--duration 10");
  std::ifstream plan_file(dir / "plan.json");
  const json plan = json::parse(plan_file);
  ASSERT_TRUE(plan["verification"]["met"].get<bool>());
  const double verified = plan["verification"]["attainment"].get<double>();
  RunSpec run = load_run_spec(dir / "run.yaml");
  const ModelsConfig models = load_models_config(run.models_file);
  ServeOptions options;
  options.port = 0;
  options.model_endpoints = false;
  Server server(run, models, options);
  const int port = server.start();
  auto source = make_run_arrivals(run);
  std::vector<Arrival> arrivals;
  Arrival a;
  while (source->next(a)) arrivals.push_back(a);
  LoadgenOptions o;
  o.port = port;
  o.connections = 32;
  const LoadgenResult r = run_loadgen(run.app, arrivals, o);
  server.shutdown();
  ASSERT_EQ(r.metrics.submitted(), arrivals.size());
  const double served = static_cast<double>(r.metrics.count(Outcome::kOk)) /
                        static_cast<double>(r.metrics.submitted());
  std::cout << "served attainment " << served << ", verified " << verified << "\n";
  EXPECT_NEAR(served, verified, 0.05);
  std::filesystem::remove_all(dir);
}

TEST(ServePlan, AModelsFileChoosesRealModelsAndTheWorkloadFlagSwapsTheWorkload) {
  const auto tmp = std::filesystem::temp_directory_path() /
                   ("tessera_serve_plan_inputs_" + std::to_string(::getpid()));
  std::filesystem::create_directories(tmp);
  {
    std::ofstream(tmp / "models.yaml") << "input: [8]\nmodels:\n"
                                          "  - {variant: yolov5l, zoo: noop}\n"
                                          "  - {variant: not_deployed, zoo: noop}\n";
    std::ofstream(tmp / "workload.yaml") << "source: {kind: poisson, rate_rps: 5}\nduration_s: 2\n";
  }
  const auto dir = plan_traffic("models", "--models " + (tmp / "models.yaml").string() +
                                              " --workload " + (tmp / "workload.yaml").string());
  const RunSpec run = load_run_spec(dir / "run.yaml");
  EXPECT_EQ(run.workload.file(), (tmp / "workload.yaml").string());
  const ModelsConfig models = load_models_config(run.models_file);
  EXPECT_EQ(models.default_input, (std::vector<int64_t>{8}));
  for (const ModelSpec& m : models.models) {
    EXPECT_NE(m.variant, "not_deployed");
    if (m.variant == "yolov5l") {
      EXPECT_EQ(m.source, ModelSpec::Source::kZoo);
    } else {
      EXPECT_EQ(m.source, ModelSpec::Source::kProfileTimed) << m.variant;
    }
  }
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(tmp);
}
#endif

}  // namespace
}  // namespace tessera
