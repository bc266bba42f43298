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
#include "export/llm_gateway_export.hpp"
#include "export/ppipe_export.hpp"
#include "export/vllm_export.hpp"
#include "k8s_schema_check.hpp"
#include "models/model_spec.hpp"
#include "spec/llm_backend_spec.hpp"
#include "spec/run_spec.hpp"
#include "spec/run_validation.hpp"

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

// iServe's deployments as `tessera llm instances --out DIR` writes them, each with its llm:
// section (model-<i>.yaml): Llama-2-7B at TP 2 x PP 2 with 8-bit weights and KV cache, and
// Falcon-7B on one GPU in FP16, both on A6000s.
fs::path iserve_dir_with_sections() {
  const fs::path d = fresh_dir("vllm_gateway");
  std::ofstream(d / "deployments.json")
      << R"([{"model": "llama-2-7b", "config": "tp2-pp2-int8-kv8", "gpus": "0,1,2,3",
              "tpot_s": 0.012, "file": "model-0.yaml"},
             {"model": "llama-2-13b", "config": null},
             {"model": "falcon-7b", "config": "tp1-pp1-fp16-kv16", "gpus": "4",
              "tpot_s": 0.02, "file": "model-2.yaml"}])";
  const std::string gpu =
      "  gpu: {name: a6000, memory_gb: 48, memory_utilization: 1, bandwidth_gbs: 768, "
      "tflops: 154.8, mfu: 0.65, mbu: 0.55, step_overhead_ms: 0.96}\n";
  std::ofstream(d / "model-0.yaml")
      << "  # llama-2-7b tp2-pp2-int8-kv8 on a6000\n"
      << "  model: {name: \"meta-llama/Llama-2-7b-hf\", layers: 32, kv_heads: 32, head_dim: 128, "
         "params_b: 6.6, weight_bytes: 1.03}\n"
      << "  kv_cache: {dtype: int8, block_tokens: 16}\n"
      << gpu
      << "  parallel: {tp: 2, pp: 2, hidden: 4096, reduces_per_layer: 2, reserved_gb_per_gpu: 10, "
         "tp_link: {latency_us: 50.5, bus_gbs: 56}, pp_link: {latency_us: 50.5, bus_gbs: 56}}\n";
  std::ofstream(d / "model-2.yaml")
      << "  # falcon-7b tp1-pp1-fp16-kv16 on a6000\n"
      << "  model: {name: \"tiiuae/falcon-7b\", layers: 32, kv_heads: 1, head_dim: 64, "
         "params_b: 6.9, weight_bytes: 2}\n"
      << "  kv_cache: {dtype: fp16, block_tokens: 16}\n"
      << gpu << "  parallel: {tp: 1, pp: 1, hidden: 4544, reduces_per_layer: 2}\n";
  return d;
}

// The gateway `tessera export --to vllm` writes per model is a valid run spec wherever its
// folder is copied, and its backends are exactly the vLLM Deployments: each Service's URL,
// the name vLLM serves, TP and PP as vLLM is started with (and so the GPUs the pod asks
// for), the weights as quantised; the front end's Deployment serves the ConfigMap's files.
TEST(ExportVllm, TheGatewayRunSpecListsEachVllmServiceWithItsDeployment) {
  const fs::path dir = iserve_dir_with_sections();
  exporter::LlmExportOptions o;
  o.models_dir = fs::path(TESSERA_SOURCE_DIR) / "data/llm";
  o.namespace_name = "serving";
  o.tessera_image = "registry.example/tessera:1";
  const auto vllm = objects(exporter::write_vllm_manifests(dir, dir / "out", o));
  const auto files = exporter::write_llm_gateways(dir, dir / "out", o);
  ASSERT_EQ(files.size(), 3u);  // gateway.yaml, and a run.yaml per deployed model
  EXPECT_EQ(files[0], dir / "out/gateway.yaml");
  const auto front = objects({files[0]});
  expect_schema_valid({files[0]}, "");
  const fs::path moved = dir / "elsewhere";
  for (const std::string model : {"llama-2-7b", "falcon-7b"}) {
    SCOPED_TRACE(model);
    // Relocatable: the folder alone is the run spec.
    fs::create_directories(moved / model);
    fs::copy(dir / "out/gateway" / model, moved / model, fs::copy_options::recursive);
    const fs::path run_file = moved / model / "run.yaml";
    std::string report;
    ASSERT_NO_THROW(report = validate_run_file(run_file));
    EXPECT_NE(report.find("backends    1"), std::string::npos) << report;
    const RunSpec run = load_run_spec(run_file);
    ASSERT_TRUE(run.llm);
    EXPECT_EQ(run.llm->model.name, model);  // what clients send
    const auto gateway = load_llm_gateway(run);
    ASSERT_TRUE(gateway);
    ASSERT_EQ(gateway->backends.size(), 1u);
    const LlmBackendSpec& b = gateway->backends[0];
    const std::string service =
        model == "llama-2-7b" ? "tessera-vllm-llama-2-7b-0" : "tessera-vllm-falcon-7b-2";
    EXPECT_EQ(b.url, "http://" + service + ".serving.svc:8000");
    ASSERT_TRUE(vllm.count("Service/" + service));
    EXPECT_EQ(vllm.at("Service/" + service)["spec"]["ports"][0]["port"].as<int>(), b.port);
    const YAML::Node c =
        vllm.at("Deployment/" + service)["spec"]["template"]["spec"]["containers"][0];
    const auto args = strings(c["command"]);
    EXPECT_EQ(flag_value(args, "--served-model-name"), b.model);
    EXPECT_EQ(flag_value(args, "--port"), std::to_string(b.port));
    EXPECT_EQ(flag_value(args, "--tensor-parallel-size"), std::to_string(b.parallel.tp));
    EXPECT_EQ(flag_value(args, "--pipeline-parallel-size"), std::to_string(b.parallel.pp));
    EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"].as<int>(),
              static_cast<int>(b.parallel.gpus()));
    EXPECT_EQ(b.gpu.name, "a6000");
    if (model == "llama-2-7b") {
      EXPECT_EQ(b.parallel.tp, 2u);
      EXPECT_EQ(b.parallel.pp, 2u);
      EXPECT_EQ(flag_value(args, "--quantization"), "fp8");
      EXPECT_DOUBLE_EQ(b.shape.weight_bytes, 1.0);  // 8-bit weights
    } else {
      EXPECT_EQ(flag_value(args, "--dtype"), "float16");
      EXPECT_DOUBLE_EQ(b.shape.weight_bytes, 2.0);
    }
    // The front end: tessera serve on the ConfigMap's run spec, behind a Service on 8000.
    const std::string name = exporter::llm_gateway_name(model);
    ASSERT_TRUE(front.count("ConfigMap/" + name) && front.count("Deployment/" + name) &&
                front.count("Service/" + name));
    const YAML::Node data = front.at("ConfigMap/" + name)["data"];
    for (const char* f : {"run.yaml", "app.yaml", "deployment.yaml", "profiles.yaml"}) {
      std::ifstream in(moved / model / f);
      const std::string text((std::istreambuf_iterator<char>(in)), {});
      EXPECT_EQ(data[f].as<std::string>(), text) << f;
    }
    const YAML::Node pod = front.at("Deployment/" + name)["spec"]["template"]["spec"];
    EXPECT_EQ(pod["containers"][0]["image"].as<std::string>(), o.tessera_image);
    const auto cmd = strings(pod["containers"][0]["command"]);
    ASSERT_GE(cmd.size(), 3u);
    EXPECT_EQ(cmd[1], "serve");
    EXPECT_EQ(cmd[2], "/etc/tessera/run.yaml");
    EXPECT_EQ(pod["containers"][0]["volumeMounts"][0]["mountPath"].as<std::string>(),
              "/etc/tessera");
    EXPECT_EQ(pod["volumes"][0]["configMap"]["name"].as<std::string>(), name);
  }
  fs::remove_all(dir);
}

TEST(ExportVllm, ADeploymentWithoutItsLlmSectionIsASpecErrorNamingIt) {
  const fs::path dir = iserve_dir();  // deployments.json names no model-<i>.yaml
  exporter::LlmExportOptions o;
  o.max_model_len = 2048;
  try {
    exporter::write_llm_gateways(dir, dir / "out", o);
    FAIL() << "accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("[0].file"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "deployments.json")
      << R"([{"model": "m", "config": "tp1-pp1-fp16-kv16", "file": "model-0.yaml"}])";
  std::ofstream(dir / "model-0.yaml") << "  model: [1, 2]\n";
  try {
    exporter::write_llm_gateways(dir, dir / "out", o);
    FAIL() << "accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("model-0.yaml"), std::string::npos) << e.what();
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
  // The pipeline's front end: its run spec's files, every partition remote on its pool's
  // Service over gRPC, each after the first taking the previous one's output (the cut: 4096
  // fp16 bytes, 2048 FP32 values).
  const YAML::Node fe = by["ConfigMap/tessera-ppipe-effnet-p0-frontend-config"];
  ASSERT_TRUE(fe);
  EXPECT_TRUE(by.count("Deployment/tessera-ppipe-effnet-p0-frontend"));
  EXPECT_TRUE(by.count("Service/tessera-ppipe-effnet-p0-frontend"));
  EXPECT_EQ(graph["dnns"][0]["pipelines"][0]["frontend"], "tessera-ppipe-effnet-p0-frontend");
  for (const char* f : {"run.yaml", "app.yaml", "deployment.yaml", "profiles.yaml"})
    EXPECT_TRUE(fe["data"][f]) << f;
  const ModelsConfig routes = parse_models_config(
      SpecNode::load_string(fe["data"]["models.yaml"].as<std::string>(), "models.yaml"));
  ASSERT_EQ(routes.models.size(), 2u);
  for (std::size_t k = 0; k < 2; ++k) {
    const ModelSpec& m = routes.models[k];
    EXPECT_EQ(m.variant, parts[k]["model"].get<std::string>());
    EXPECT_EQ(m.source, ModelSpec::Source::kRemote);
    EXPECT_EQ(m.remote.protocol, RemoteSpec::Protocol::kGrpc);
    ASSERT_EQ(m.remote.endpoints.size(), 1u);
    EXPECT_EQ(m.remote.endpoints[0], parts[k]["grpc"].get<std::string>());
    EXPECT_EQ(m.stage_input,
              k == 0 ? ModelSpec::StageInput::kRequest : ModelSpec::StageInput::kParent);
  }
  EXPECT_EQ(routes.models[0].remote.output, (std::vector<int64_t>{2048}));
  EXPECT_EQ(routes.models[1].input_shape, (std::vector<int64_t>{2048}));
  // plan.json travels with it, and reads back as the plan.
  const auto again = ppipe::plan_from_json(
      nlohmann::json::parse(cm["data"]["plan.json"].as<std::string>()), "configmap");
  EXPECT_EQ(again.dnns[0].pipelines[0].partitions[1].vgpus, 5);
  expect_schema_valid(files, "");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tessera
