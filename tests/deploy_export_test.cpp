// `tessera export` of the other planners' outputs (docs/deploy.md): iServe's deployments as
// vLLM Deployments with InferencePools, and a PPipe plan as partition pools on GPU classes.
// The manifests are read back with yaml-cpp, compared with their inputs, and validated
// against the Kubernetes schemas (kubernetes-models) where installed.

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/error.hpp"
#include "dataplane/ppipe/plan_json.hpp"
#include "export/ppipe_export.hpp"
#include "export/vllm_export.hpp"
#include "k8s_schema_check.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("tessera_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::map<std::string, YAML::Node> objects(const std::vector<fs::path>& files) {
  std::map<std::string, YAML::Node> out;
  for (const auto& f : files) {
    for (const YAML::Node& d : YAML::LoadAllFromFile(f.string()))
      out[d["kind"].as<std::string>() + "/" + d["metadata"]["name"].as<std::string>()] = d;
  }
  return out;
}

std::vector<std::string> strings(const YAML::Node& seq) {
  std::vector<std::string> out;
  for (const YAML::Node& s : seq) out.push_back(s.as<std::string>());
  return out;
}

// The value after `flag` in `args`, or "" when absent.
std::string flag_value(const std::vector<std::string>& args, const std::string& flag) {
  for (std::size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == flag) return args[i + 1];
  return "";
}

void expect_schema_valid(const std::vector<fs::path>& files, const std::string& custom_kind) {
  if (!testing::k8s_validator_available()) return;  // ExportSchema tests say so
  const auto result = testing::k8s_validate(testing::k8s_documents(files));
  ASSERT_FALSE(result.empty());
  for (const auto& [object, verdict] : result) {
    if (!custom_kind.empty() && object.rfind(custom_kind + " ", 0) == 0) {
      EXPECT_EQ(verdict, "unknown") << object;
    } else {
      EXPECT_EQ(verdict, "ok") << object;
    }
  }
}

// What `tessera llm instances --out DIR` writes: two deployed models and one not deployed.
fs::path iserve_dir() {
  const fs::path d = fresh_dir("vllm_export");
  std::ofstream(d / "deployments.json")
      << R"([{"model": "llama-2-7b", "config": "tp2-pp2-int8-kv8", "gpus": "0,1,2,3"},
             {"model": "llama-2-13b", "config": null},
             {"model": "falcon-7b", "config": "tp1-pp1-fp16-kv16", "gpus": "4"}])";
  return d;
}

TEST(ExportVllm, IserveDeploymentsBecomeVllmServeWithTheirParallelismAndQuantisation) {
  const fs::path dir = iserve_dir();
  exporter::LlmExportOptions o;
  o.models_dir = fs::path(TESSERA_SOURCE_DIR) / "data/llm";
  const auto files = exporter::write_vllm_manifests(dir, dir / "out", o);
  auto by = objects(files);
  const YAML::Node llama = by["Deployment/tessera-vllm-llama-2-7b-0"];
  ASSERT_TRUE(llama);
  const YAML::Node c = llama["spec"]["template"]["spec"]["containers"][0];
  const auto cmd = strings(c["command"]);
  ASSERT_GE(cmd.size(), 3u);
  EXPECT_EQ(cmd[0], "vllm");
  EXPECT_EQ(cmd[1], "serve");
  EXPECT_EQ(flag_value(cmd, "--tensor-parallel-size"), "2");
  EXPECT_EQ(flag_value(cmd, "--pipeline-parallel-size"), "2");
  EXPECT_EQ(flag_value(cmd, "--quantization"), "fp8");
  EXPECT_EQ(flag_value(cmd, "--kv-cache-dtype"), "fp8");
  const nlohmann::json config =
      nlohmann::json::parse(std::ifstream(o.models_dir / "llama-2-7b/config.json"));
  EXPECT_EQ(flag_value(cmd, "--max-model-len"),
            std::to_string(config["max_position_embeddings"].get<int>()));
  // Falcon-7B's config.json names no length: Falcon's 2048.
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"].as<int>(), 4);  // TP x PP
  const auto falcon = strings(by["Deployment/tessera-vllm-falcon-7b-2"]["spec"]["template"]["spec"]
                                ["containers"][0]["command"]);
  EXPECT_EQ(flag_value(falcon, "--dtype"), "float16");
  EXPECT_EQ(flag_value(falcon, "--max-model-len"), "2048");
  EXPECT_EQ(flag_value(falcon, "--quantization"), "");
  EXPECT_EQ(flag_value(falcon, "--kv-cache-dtype"), "");
  EXPECT_FALSE(by.count("Deployment/tessera-vllm-llama-2-13b-1"));  // iServe placed none
  // One InferencePool per model, selecting its pods on the port vLLM serves.
  const YAML::Node pool = by["InferencePool/tessera-llm-llama-2-7b"];
  ASSERT_TRUE(pool);
  EXPECT_EQ(pool["apiVersion"].as<std::string>(), "inference.networking.k8s.io/v1");
  EXPECT_EQ(pool["spec"]["targetPorts"][0]["number"].as<int>(), 8000);
  EXPECT_TRUE(pool["spec"]["endpointPickerRef"]["name"]);
  const YAML::Node pod_labels = llama["spec"]["template"]["metadata"]["labels"];
  for (const auto& kv : pool["spec"]["selector"]["matchLabels"]) {
    EXPECT_EQ(pod_labels[kv.first.as<std::string>()].as<std::string>(),
              kv.second.as<std::string>());
  }
  EXPECT_TRUE(by.count("Service/tessera-vllm-llama-2-7b-0"));
  expect_schema_valid(files, "InferencePool");
  fs::remove_all(dir);
}

TEST(ExportVllm, ABadDeploymentIsASpecErrorNamingTheField) {
  const fs::path dir = fresh_dir("vllm_bad");
  std::ofstream(dir / "deployments.json") << R"([{"model": "m", "config": "tp2-fast"}])";
  exporter::LlmExportOptions o;
  o.max_model_len = 2048;
  try {
    exporter::write_vllm_manifests(dir, dir / "out", o);
    FAIL() << "accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("[0].config"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "deployments.json") << R"([{"model": "m", "config": "tp1-pp1-fp16-kv16"}])";
  try {  // no context length: neither --max-model-len nor the model's config.json
    exporter::write_vllm_manifests(dir, dir / "out", {});
    FAIL() << "accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("max_model_len"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// A two-partition PPipe pipeline: blocks [0, 6) on L4 vGPUs at MPS 2, [6, 10) on whole P4s.
ppipe::PpipePlan two_partition_plan() {
  ppipe::PpipePlan plan;
  plan.cluster.classes = {{"L4", 4, 4, 25.0, 4}, {"P4", 8, 4, 10.0, 1}};
  ppipe::DnnPlan dnn;
  dnn.dnn = "effnet";
  dnn.slo_ms = 120;
  ppipe::Pipeline pipe;
  pipe.batch = 4;
  pipe.partitions = {{0, 6, "L4", 2, 3, 10.0, 0.0, 0.0, 100.0},
                     {6, 10, "P4", 1, 5, 20.0, 2.0, 4096.0, 90.0}};
  pipe.latency_ms = 32;
  pipe.throughput = 90;
  dnn.pipelines = {pipe};
  dnn.throughput = 90;
  plan.dnns = {dnn};
  plan.solve.status = plan::PlanStatus::kOptimal;
  return plan;
}

TEST(ExportPpipe, PartitionsBecomePoolsOnTheirGpuClassesWithTheGraph) {
  const fs::path dir = fresh_dir("ppipe_export");
  ppipe::write_plan_file(dir / "plan.json", two_partition_plan());
  ASSERT_TRUE(exporter::is_ppipe_plan_dir(dir));
  const auto files = exporter::write_ppipe_manifests(dir, dir / "out", {});
  ASSERT_EQ(files.size(), 2u);  // the pools, and the device plugin's MPS sharing
  auto by = objects(files);
  const YAML::Node l4 = by["Deployment/tessera-ppipe-effnet-p0-k0-l4-mps2"];
  const YAML::Node p4 = by["Deployment/tessera-ppipe-effnet-p0-k1-p4"];
  ASSERT_TRUE(l4 && p4);
  EXPECT_EQ(l4["spec"]["replicas"].as<int>(), 3);  // one pod per vGPU
  EXPECT_EQ(p4["spec"]["replicas"].as<int>(), 5);
  for (const YAML::Node& d : {l4, p4}) {
    const YAML::Node pod = d["spec"]["template"]["spec"];
    EXPECT_EQ(pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"].as<int>(), 1);
  }
  EXPECT_EQ(
      l4["spec"]["template"]["spec"]["nodeSelector"]["tessera.io/gpu-class"].as<std::string>(),
      "L4");
  EXPECT_EQ(l4["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/device-plugin.config"]
                .as<std::string>(),
            "tessera-ppipe-mps2");
  EXPECT_FALSE(p4["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/device-plugin.config"]);
  // The device plugin shares the L4s two ways by MPS.
  const YAML::Node dp = by["ConfigMap/tessera-ppipe-device-plugin"];
  ASSERT_TRUE(dp);
  const YAML::Node sharing = YAML::Load(dp["data"]["tessera-ppipe-mps2"].as<std::string>());
  EXPECT_EQ(sharing["sharing"]["mps"]["resources"][0]["name"].as<std::string>(), "nvidia.com/gpu");
  EXPECT_EQ(sharing["sharing"]["mps"]["resources"][0]["replicas"].as<int>(), 2);
  // The partition graph: the partitions in order, each naming a pool Service that exists.
  const YAML::Node cm = by["ConfigMap/tessera-ppipe-graph"];
  ASSERT_TRUE(cm);
  const auto graph = nlohmann::json::parse(cm["data"]["partition-graph.json"].as<std::string>());
  const auto& parts = graph["dnns"][0]["pipelines"][0]["partitions"];
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(graph["dnns"][0]["pipelines"][0]["batch"], 4);
  EXPECT_EQ(parts[0]["end_block"], parts[1]["first_block"]);
  EXPECT_EQ(parts[1]["in_bytes_per_sample"], 4096.0);
  for (const auto& part : parts) {
    EXPECT_TRUE(by.count("Service/" + part["service"].get<std::string>())) << part.dump();
  }
  // plan.json travels with it, and reads back as the plan.
  const auto again = ppipe::plan_from_json(
      nlohmann::json::parse(cm["data"]["plan.json"].as<std::string>()), "configmap");
  EXPECT_EQ(again.dnns[0].pipelines[0].partitions[1].vgpus, 5);
  expect_schema_valid(files, "");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tessera
