#pragma once

// `tessera export DIR --to vllm`: the LLM deployments iServe chose (`tessera llm instances
// --out DIR`: DIR/deployments.json) as Kubernetes manifests running vLLM
// (docs/deploy.md#iserve-deployments-on-vllm).
//
// Contract: reads DIR/deployments.json (and, for the context length, the models' config.json
// under LlmExportOptions::models_dir) and writes OUT/vllm.yaml: per deployed model a
// Deployment of one pod running `vllm serve` with the chosen tensor and pipeline parallel
// sizes, quantisation flags and maximum model length, requesting TP x PP `nvidia.com/gpu`;
// a Service (port 8000, OpenAI API and /metrics); and, per model, a Gateway API Inference
// Extension InferencePool (inference.networking.k8s.io/v1) selecting its pods. A model iServe
// could not deploy (config null) gets nothing. Bad input throws SpecError naming the file and
// the field. Returns the files written.

#include <filesystem>
#include <string>
#include <vector>

#include "export/yaml_text.hpp"

namespace tessera::exporter {

struct LlmExportOptions {
  std::string vllm_image = "vllm/vllm-openai:v0.10.1";
  std::string namespace_name;        // empty: none set
  std::filesystem::path models_dir;  // <models_dir>/<model>/config.json (default: none)
  int max_model_len = 0;             // 0: the model's max_position_embeddings
  std::string endpoint_picker = "";  // InferencePool's endpointPickerRef (default <pool>-epp)
  std::string tessera_image = "tessera:latest";  // the LLM gateway's front end
};

// One deployment of deployments.json, as vLLM takes it.
struct LlmDeployment {
  int index = 0;       // its place in deployments.json (names its objects)
  std::string model;   // the label ("llama-2-7b")
  std::string config;  // "tp2-pp1-int8-kv8"
  int tp = 1;
  int pp = 1;
  std::string weights;  // fp16 | int8 | int4 | gptq4 | a pruning name
  std::string kv;       // kv16 | kv8 ("" for pruned configurations)
  int max_model_len = 0;
  // Its `llm:` section as iServe modelled it (`file` in deployments.json: DIR/model-<i>.yaml;
  // empty when the entry names none).
  std::filesystem::path section_file;
  std::filesystem::path deployments_file;  // DIR/deployments.json (for errors)
  double tpot_ms = 0.0;                    // iServe's modelled time per output token (0: not given)
};

std::vector<LlmDeployment> load_llm_deployments(const std::filesystem::path& dir,
                                                const LlmExportOptions& options);

// The name of the deployment's vLLM Deployment and Service: tessera-vllm-<model>-<index>.
std::string vllm_service_name(const LlmDeployment& d);

// An exported LLM object's metadata: its name, the namespace, and the labels tying it to
// `model` (tessera.io/llm-model) and its `component` (vllm, gateway).
ojson llm_metadata(const std::string& name, const std::string& model, const std::string& component,
                   const LlmExportOptions& options);

// A Deployment of one replica of `pod`, named and labelled by `meta`, its pods labelled
// `pod_labels` (which hold meta's app.kubernetes.io/name, its selector).
ojson llm_deployment(const ojson& meta, const ojson& pod_labels, ojson pod);
// The ClusterIP Service `name` on port 8000 ("http") selecting the pods of `name`.
ojson llm_service(const std::string& name, const std::string& model, const std::string& component,
                  const LlmExportOptions& options);

// The `vllm serve` arguments of one deployment (after `vllm serve MODEL_PATH`).
std::vector<std::string> vllm_serve_args(const LlmDeployment& d);

std::vector<std::filesystem::path> write_vllm_manifests(const std::filesystem::path& dir,
                                                        const std::filesystem::path& out,
                                                        const LlmExportOptions& options);

}  // namespace tessera::exporter
