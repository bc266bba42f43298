#include "export/vllm_export.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>
#include <stdexcept>

#include "core/error.hpp"
#include "export/plan_dir.hpp"
#include "export/yaml_text.hpp"
#include "llm_arch/llm_architecture.hpp"

namespace tessera::exporter {
namespace {

nlohmann::json read_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw SpecError(file.string(), "", "cannot read the file");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw SpecError(file.string(), "", std::string("not JSON: ") + e.what());
  }
}

// The context length of <models_dir>/<model>/config.json, as tessera reads the model
// (max_position_embeddings or n_positions; 2048 without either, as Falcon's default).
int model_context(const std::filesystem::path& models_dir, const std::string& model,
                  const std::string& field) {
  if (models_dir.empty()) {
    throw SpecError(field, "max_model_len",
                    "unknown: give the models' directory (config.json) or --max-model-len");
  }
  return static_cast<int>(
      load_llm_architecture(models_dir / model / "config.json").context_length());
}

}  // namespace

std::vector<LlmDeployment> load_llm_deployments(const std::filesystem::path& dir,
                                                const LlmExportOptions& o) {
  const auto file = dir / "deployments.json";
  const nlohmann::json all = read_json(file);
  if (!all.is_array()) throw SpecError(file.string(), "", "expected an array of deployments");
  std::vector<LlmDeployment> out;
  static const std::regex quantised(R"(tp(\d+)-pp(\d+)-(fp16|int8|int4|gptq4)-(kv16|kv8))");
  static const std::regex pruned(R"(tp(\d+)-pp(\d+)-([a-z0-9:-]+))");
  for (std::size_t i = 0; i < all.size(); ++i) {
    const nlohmann::json& e = all[i];
    const std::string at = "[" + std::to_string(i) + "]";
    if (!e.is_object() || !e.contains("model") || !e["model"].is_string())
      throw SpecError(file.string(), at + ".model", "missing");
    if (!e.contains("config") || e["config"].is_null()) continue;  // not deployed
    if (!e["config"].is_string()) throw SpecError(file.string(), at + ".config", "not a string");
    LlmDeployment d;
    d.index = static_cast<int>(i);
    d.deployments_file = file;
    d.model = e["model"].get<std::string>();
    d.config = e["config"].get<std::string>();
    std::smatch m;
    if (std::regex_match(d.config, m, quantised)) {
      d.weights = m[3];
      d.kv = m[4];
    } else if (std::regex_match(d.config, m, pruned)) {
      d.weights = m[3];
    } else {
      throw SpecError(file.string(), at + ".config",
                      "'" + d.config + "' is not tpN-ppN-WEIGHTS-KV or tpN-ppN-PRUNING");
    }
    d.tp = std::stoi(m[1]);
    d.pp = std::stoi(m[2]);
    if (d.tp < 1 || d.pp < 1 || d.tp * d.pp > 64)
      throw SpecError(file.string(), at + ".config", "TP x PP must be 1..64");
    if (e.contains("file")) {
      if (!e["file"].is_string() || e["file"].get<std::string>().empty())
        throw SpecError(file.string(), at + ".file", "not a file name");
      d.section_file = dir / e["file"].get<std::string>();
    }
    if (e.contains("tpot_s")) {
      if (!e["tpot_s"].is_number() || !(e["tpot_s"].get<double>() >= 0.0) ||
          e["tpot_s"].get<double>() > 3600.0)
        throw SpecError(file.string(), at + ".tpot_s", "not a number of seconds in 0..3600");
      d.tpot_ms = e["tpot_s"].get<double>() * 1e3;
    }
    d.max_model_len =
        o.max_model_len > 0 ? o.max_model_len : model_context(o.models_dir, d.model, file.string());
    out.push_back(d);
  }
  return out;
}

ojson llm_metadata(const std::string& name, const std::string& model, const std::string& component,
                   const LlmExportOptions& o) {
  ojson m = {{"name", name}};
  if (!o.namespace_name.empty()) m["namespace"] = o.namespace_name;
  m["labels"] = {{"app.kubernetes.io/name", name},
                 {"app.kubernetes.io/part-of", "tessera-llm"},
                 {"app.kubernetes.io/component", component},
                 {"app.kubernetes.io/managed-by", "tessera-export"},
                 {"tessera.io/llm-model", dns_label(model)}};
  return m;
}

ojson llm_deployment(const ojson& meta, const ojson& pod_labels, ojson pod) {
  const std::string name = meta["name"].get<std::string>();
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", meta},
          {"spec",
           {{"replicas", 1},
            {"selector", {{"matchLabels", {{"app.kubernetes.io/name", name}}}}},
            {"template", {{"metadata", {{"labels", pod_labels}}}, {"spec", std::move(pod)}}}}}};
}

ojson llm_service(const std::string& name, const std::string& model, const std::string& component,
                  const LlmExportOptions& o) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", llm_metadata(name, model, component, o)},
          {"spec",
           {{"selector", {{"app.kubernetes.io/name", name}}},
            {"ports",
             ojson::array(
                 {{{"name", "http"}, {"port", 8000}, {"targetPort", 8000}, {"protocol", "TCP"}}})},
            {"type", "ClusterIP"}}}};
}

std::string vllm_service_name(const LlmDeployment& d) {
  return dns_label("tessera-vllm-" + d.model + "-" + std::to_string(d.index));
}

std::vector<std::string> vllm_serve_args(const LlmDeployment& d) {
  std::vector<std::string> a = {"--served-model-name",
                                d.model,
                                "--tensor-parallel-size",
                                std::to_string(d.tp),
                                "--pipeline-parallel-size",
                                std::to_string(d.pp),
                                "--max-model-len",
                                std::to_string(d.max_model_len),
                                "--host",
                                "0.0.0.0",
                                "--port",
                                "8000"};
  // Weights: FP16 as is; 8-bit as vLLM's online FP8 quantisation (its nearest to INT8 on an
  // FP16 checkpoint); 4-bit ones need a checkpoint quantised that way (AWQ, GPTQ) at the
  // model's path. A pruned configuration is its pruned checkpoint: no flag.
  if (d.weights == "fp16") {
    a.insert(a.end(), {"--dtype", "float16"});
  } else if (d.weights == "int8") {
    a.insert(a.end(), {"--quantization", "fp8"});
  } else if (d.weights == "int4") {
    a.insert(a.end(), {"--quantization", "awq"});
  } else if (d.weights == "gptq4") {
    a.insert(a.end(), {"--quantization", "gptq"});
  }
  if (d.kv == "kv8") a.insert(a.end(), {"--kv-cache-dtype", "fp8"});
  return a;
}

std::vector<std::filesystem::path> write_vllm_manifests(const std::filesystem::path& dir,
                                                        const std::filesystem::path& out,
                                                        const LlmExportOptions& o) {
  const std::vector<LlmDeployment> deployments = load_llm_deployments(dir, o);
  std::filesystem::create_directories(out);
  std::vector<ojson> docs;
  auto metadata = [&](const std::string& name, const std::string& model) {
    return llm_metadata(name, model, "vllm", o);
  };
  std::vector<std::string> pools;  // one InferencePool per model
  for (const LlmDeployment& d : deployments) {
    const std::string name = vllm_service_name(d);
    ojson command = ojson::array({"vllm", "serve", "/models/" + d.model});
    for (const std::string& arg : vllm_serve_args(d)) command.push_back(arg);
    ojson container = {
        {"name", "vllm"},
        {"image", o.vllm_image},
        {"command", command},
        {"ports", ojson::array({{{"name", "http"}, {"containerPort", 8000}}})},
        {"resources", {{"limits", {{"nvidia.com/gpu", d.tp * d.pp}}}}},
        {"readinessProbe",
         {{"httpGet", {{"path", "/health"}, {"port", 8000}}}, {"periodSeconds", 5}}},
        {"volumeMounts",
         ojson::array({{{"name", "models"}, {"mountPath", "/models"}, {"readOnly", true}},
                       {{"name", "shm"}, {"mountPath", "/dev/shm"}}})}};
    ojson pod = {{"containers", ojson::array({container})},
                 {"volumes",
                  ojson::array({{{"name", "models"},
                                 {"persistentVolumeClaim", {{"claimName", "tessera-llm-models"}}}},
                                {{"name", "shm"}, {"emptyDir", {{"medium", "Memory"}}}}})}};
    ojson meta = metadata(name, d.model);
    ojson labels = meta["labels"];
    labels["tessera.io/llm-config"] = d.config;
    meta["labels"]["tessera.io/llm-config"] = d.config;
    docs.push_back(llm_deployment(meta, labels, pod));
    docs.push_back(llm_service(name, d.model, "vllm", o));
    const std::string pool = dns_label("tessera-llm-" + d.model);
    bool seen = false;
    for (const auto& p : pools) seen = seen || p == pool;
    if (seen) continue;
    pools.push_back(pool);
    docs.push_back({{"apiVersion", "inference.networking.k8s.io/v1"},
                    {"kind", "InferencePool"},
                    {"metadata", metadata(pool, d.model)},
                    {"spec",
                     {{"selector",
                       {{"matchLabels",
                         {{"app.kubernetes.io/part-of", "tessera-llm"},
                          {"tessera.io/llm-model", dns_label(d.model)}}}}},
                      {"targetPorts", ojson::array({{{"number", 8000}}})},
                      {"endpointPickerRef",
                       {{"name", o.endpoint_picker.empty() ? pool + "-epp" : o.endpoint_picker},
                        {"port", {{"number", 9002}}}}}}}});
  }
  const auto file = out / "vllm.yaml";
  std::ofstream f(file);
  if (!f) throw std::runtime_error("cannot write " + file.string());
  f << yaml_documents(docs, "Written by `tessera export --to vllm` from " + dir.string() +
                                " (docs/deploy.md#iserve-deployments-on-vllm)");
  return {file};
}

}  // namespace tessera::exporter
