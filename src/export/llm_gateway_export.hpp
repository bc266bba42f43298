#pragma once

// `tessera export DIR --to vllm`, second half: tessera's LLM gateway in front of the exported
// vLLM Services (docs/deploy.md#iserve-deployments-on-vllm, docs/llm-gateway.md).
//
// Contract: for every model iServe deployed (one gateway serves one model: the body's
// `model`), writes OUT/gateway/<model>/ — run.yaml (an `llm:` run whose `backends:` are that
// model's vLLM Services, http://<service>[.<namespace>.svc]:8000, each with its deployment's
// GPU, TP x PP and weights from DIR/model-<i>.yaml, and the name `vllm serve` serves), with
// the app.yaml, deployment.yaml and profiles.yaml a run spec needs, all beside it (the folder
// is relocatable) — and OUT/gateway.yaml: per model a ConfigMap holding those four files, a
// Deployment running `tessera serve` on them and its Service on port 8000. Bad input throws
// SpecError naming the file and the field. Returns the files written. Pure file I/O.

#include <filesystem>
#include <string>
#include <vector>

#include "export/vllm_export.hpp"

namespace tessera::exporter {

// The gateway's Deployment and Service for `model`: tessera-llm-<model>-gateway.
std::string llm_gateway_name(const std::string& model);

// Reads DIR/deployments.json as write_vllm_manifests does; returns gateway.yaml first, then
// each model's run.yaml.
std::vector<std::filesystem::path> write_llm_gateways(const std::filesystem::path& dir,
                                                      const std::filesystem::path& out,
                                                      const LlmExportOptions& options);

}  // namespace tessera::exporter
