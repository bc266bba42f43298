// The loopback cluster test of an exported PPipe plan (docs/deploy.md#ppipe-plans): `tessera
// export --to kubernetes` of a three-partition pipeline writes its pools and its front end,
// and the exported topology runs on this machine — every pool Service a `tessera serve
// --worker` process at its own loopback address on the Service's ports, serving the pool's
// partition model `<dnn>_b<first>_<end>` stood in for by the zoo's `sleep` model (the plan's
// partition latency per batch; it takes the incoming cut and returns the outgoing one,
// shapes from the exported models.yaml: tessera does not cut real DNNs); the front end is
// `tessera serve` of the exported ConfigMap's run spec, unchanged but for the Service names
// resolved to those addresses. Requests run partition after partition, each on the previous
// one's output; every request is answered and counted once, and every pool served batches.
// The data plane is the engine's ordinary one, not PPipe's reservation plane.

#include <gtest/gtest.h>
#include <httplib.h>
#include <yaml-cpp/yaml.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "dataplane/ppipe/plan_json.hpp"
#include "export/ppipe_export.hpp"
#include "loopback_cluster.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

#ifdef TESSERA_BINARY
using testing::LoopbackProcess;
using testing::metric_sum;

// effnet cut three ways: blocks [0, 4) on L4 vGPUs at MPS 2, [4, 8) on a T4, [8, 10) on P4s.
ppipe::PpipePlan three_partition_plan() {
  ppipe::PpipePlan plan;
  plan.cluster.classes = {{"L4", 4, 4, 25.0, 4}, {"T4", 4, 4, 25.0, 1}, {"P4", 8, 4, 10.0, 1}};
  ppipe::DnnPlan dnn;
  dnn.dnn = "effnet";
  dnn.slo_ms = 400;
  ppipe::Pipeline pipe;
  pipe.batch = 4;
  pipe.partitions = {{0, 4, "L4", 2, 2, 6.0, 0.0, 0.0, 100.0},
                     {4, 8, "T4", 1, 1, 4.0, 1.0, 2048.0, 100.0},
                     {8, 10, "P4", 1, 2, 3.0, 0.5, 512.0, 100.0}};
  pipe.latency_ms = 14.5;
  pipe.throughput = 100;
  dnn.pipelines = {pipe};
  dnn.throughput = 100;
  plan.dnns = {dnn};
  plan.solve.status = plan::PlanStatus::kOptimal;
  return plan;
}

void write(const fs::path& f, const std::string& text) { std::ofstream(f) << text; }

std::string flow(const YAML::Node& shape) {
  std::string s;
  for (const YAML::Node& d : shape) s += (s.empty() ? "" : ", ") + d.as<std::string>();
  return "[" + s + "]";
}

TEST(ExportPpipeLoopback, ThePipelineRunsPartitionAfterPartitionThroughItsPools) {
  const fs::path dir =
      fs::temp_directory_path() / ("tessera_ppipe_loopback_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "etc");
  ppipe::write_plan_file(dir / "plan.json", three_partition_plan());
  exporter::PpipeExportOptions o;
  o.frontend.input = {3, 4, 4};
  o.frontend.output = {10};
  exporter::write_ppipe_manifests(dir, dir / "manifests", o);

  // The front end's ConfigMap and the partition graph, as exported.
  YAML::Node files;
  nlohmann::json graph;
  for (const YAML::Node& d : YAML::LoadAllFromFile((dir / "manifests/ppipe.yaml").string())) {
    const std::string name = d["metadata"]["name"].as<std::string>();
    if (d["kind"].as<std::string>() != "ConfigMap") continue;
    if (name == "tessera-ppipe-effnet-p0-frontend-config") files = d["data"];
    if (name == "tessera-ppipe-graph")
      graph = nlohmann::json::parse(d["data"]["partition-graph.json"].as<std::string>());
  }
  ASSERT_TRUE(files) << "no front end ConfigMap";
  const auto& pipeline = graph["dnns"][0]["pipelines"][0];
  ASSERT_EQ(pipeline["endpoint"], "effnet_p0");
  const auto& parts = pipeline["partitions"];
  ASSERT_EQ(parts.size(), 3u);
  const YAML::Node models = YAML::Load(files["models.yaml"].as<std::string>());
  ASSERT_EQ(models["models"].size(), 3u);
  // Partitions after the first take the previous one's output; shapes chain.
  for (std::size_t k = 1; k < 3; ++k) {
    EXPECT_EQ(models["models"][k]["stage_input"].as<std::string>(), "parent");
    EXPECT_EQ(flow(models["models"][k]["input"]),
              flow(models["models"][k - 1]["remote"]["output"]));
  }
  EXPECT_EQ(flow(models["models"][1]["input"]), "[1024]");  // 2048 fp16 bytes

  // "Cluster DNS": pool k at 127.79.B.(k + 2), the front end at 127.79.B.1.
  const std::string block = testing::loopback_block(79);
  const std::string front_address = block + "1";
  std::string routed = files["models.yaml"].as<std::string>();
  std::vector<LoopbackProcess> pools;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const std::string service = parts[k]["service"].get<std::string>();
    const std::string model = parts[k]["model"].get<std::string>();
    const YAML::Node entry = models["models"][k];
    ASSERT_EQ(entry["variant"].as<std::string>(), model);
    const std::string address = block + std::to_string(k + 2);
    const std::string from = service + ":8001";
    const auto at = routed.find(from);
    ASSERT_NE(at, std::string::npos) << service << " is not in the front end's models.yaml";
    routed.replace(at, from.size(), address + ":8001");
    const fs::path worker = dir / "etc" / (service + ".worker.yaml");
    write(worker,
          "models:\n  - {variant: " + model + ", zoo: sleep, input: " + flow(entry["input"]) +
              ", output: " + flow(entry["remote"]["output"]) +
              ", latency_ms: " + std::to_string(parts[k]["infer_ms"].get<double>()) + "}\n");
    pools.push_back(testing::spawn_tessera({"serve", "--worker", worker.string(), "--host", address,
                                            "--port", "8000", "--grpc-port", "8001", "--no-warmup"},
                                           address, 8000, dir / "etc", dir / (service + ".log")));
  }
  for (const auto& f : files) {
    const std::string name = f.first.as<std::string>();
    write(dir / "etc" / name, name == "models.yaml" ? routed : f.second.as<std::string>());
  }
  bool pools_ready = true;
  for (const auto& p : pools) pools_ready = testing::wait_ready(p) && pools_ready;
  LoopbackProcess front =
      testing::spawn_tessera({"serve", (dir / "etc/run.yaml").string(), "--host", front_address,
                              "--port", "8000", "--no-warmup"},
                             front_address, 8000, dir / "etc", dir / "frontend.log");
  const bool front_ready = pools_ready && testing::wait_ready(front);

  constexpr int kRequests = 24;
  std::atomic<int> answered{0}, ok{0}, right{0};
  std::string failure, metrics;
  if (front_ready) {
    const nlohmann::json body = {{"inputs",
                                  {{{"name", "input"},
                                    {"shape", {1, 3, 4, 4}},
                                    {"datatype", "FP32"},
                                    {"data", std::vector<float>(48, 0.5f)}}}}};
    const std::string text = body.dump();
    std::mutex failure_mutex;
    std::vector<std::thread> clients;
    for (int c = 0; c < 4; ++c) {
      clients.emplace_back([&] {
        httplib::Client one(front_address, 8000);
        one.set_read_timeout(30, 0);
        for (int r = 0; r < kRequests / 4; ++r) {
          auto res = one.Post("/v2/models/effnet_p0/infer", text, "application/json");
          if (!res) continue;
          ++answered;
          if (res->status != 200) {
            std::lock_guard lock(failure_mutex);
            if (failure.empty()) failure = std::to_string(res->status) + " " + res->body;
            continue;
          }
          ++ok;
          // The input's 48 values went through every cut: the last partition's [10] output
          // is the first ten of them.
          const auto out = nlohmann::json::parse(res->body)["outputs"][0];
          if (out["shape"] == nlohmann::json::array({1, 10}) &&
              out["data"] == nlohmann::json(std::vector<float>(10, 0.5f)))
            ++right;
        }
      });
    }
    for (auto& t : clients) t.join();
    httplib::Client cli(front_address, 8000);
    if (auto res = cli.Get("/metrics")) metrics = res->body;
  }
  std::vector<LoopbackProcess> all = pools;
  all.push_back(front);
  testing::stop_all(all);
  ASSERT_TRUE(front_ready) << "see " << dir;
  EXPECT_EQ(answered, kRequests);  // every request answered, once
  EXPECT_GT(ok, 0) << failure;
  EXPECT_EQ(right, ok) << "an answer did not carry the chained outputs";
  EXPECT_EQ(metric_sum(metrics, "tessera_requests_total{"), kRequests) << metrics;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    EXPECT_GT(metric_sum(metrics, "tessera_backend_requests_total{model=\"" +
                                      parts[k]["model"].get<std::string>() + "\",backend=\"" +
                                      pools[k].address + ":8001\"}"),
              0)
        << "pool " << k << " served nothing\n"
        << metrics;
  }
  if (!HasFailure()) fs::remove_all(dir);
}
#endif

}  // namespace
}  // namespace tessera
