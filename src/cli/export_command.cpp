#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "export/kubernetes_export.hpp"
#include "export/llm_gateway_export.hpp"
#include "export/plan_dir.hpp"
#include "export/ppipe_export.hpp"
#include "export/triton_export.hpp"
#include "export/vllm_export.hpp"

namespace tessera::cli {
namespace {

struct ExportArgs {
  std::string plan_dir;
  std::string to;
  std::string out_dir;  // default: PLAN_DIR/<to>
  exporter::KubernetesOptions kubernetes;
  exporter::LlmExportOptions llm;
};

void run_export(const ExportArgs& args) {
  if (args.to == "vllm") {  // iServe's deployments (tessera llm instances --out DIR)
    const std::filesystem::path out = args.out_dir.empty()
                                          ? std::filesystem::path(args.plan_dir) / "vllm"
                                          : std::filesystem::path(args.out_dir);
    exporter::LlmExportOptions o = args.llm;
    o.namespace_name = args.kubernetes.namespace_name;
    o.tessera_image = args.kubernetes.tessera_image;
    std::cout << "tessera export: vLLM Deployments and InferencePools\n";
    for (const auto& f : exporter::write_vllm_manifests(args.plan_dir, out, o))
      std::cout << "  wrote " << f.string() << "\n";
    std::cout << "  tessera's LLM gateway per model in front of them (tessera serve RUN.yaml)\n";
    for (const auto& f : exporter::write_llm_gateways(args.plan_dir, out, o))
      std::cout << "  wrote " << f.string() << "\n";
    return;
  }
  if (args.to == "kubernetes" && exporter::is_ppipe_plan_dir(args.plan_dir)) {
    const std::filesystem::path out = args.out_dir.empty()
                                          ? std::filesystem::path(args.plan_dir) / "kubernetes"
                                          : std::filesystem::path(args.out_dir);
    exporter::PpipeExportOptions o;
    o.triton_image = args.kubernetes.triton_image;
    o.tessera_image = args.kubernetes.tessera_image;
    o.namespace_name = args.kubernetes.namespace_name;
    std::cout << "tessera export: PPipe partition pools, and per pipeline a front end routing "
                 "to them\n";
    for (const auto& f : exporter::write_ppipe_manifests(args.plan_dir, out, o))
      std::cout << "  wrote " << f.string() << "\n";
    return;
  }
  const exporter::PlanDir plan = exporter::load_plan_dir(args.plan_dir);
  const std::filesystem::path out = args.out_dir.empty()
                                        ? std::filesystem::path(args.plan_dir) / args.to
                                        : std::filesystem::path(args.out_dir);
  int emulated = 0;
  for (const auto& m : plan.models)
    emulated += m.source != exporter::ModelEntry::Source::kTorchScript;
  if (args.to == "triton") {
    const auto variants = exporter::write_triton_repository(plan, out);
    std::cout << "tessera export: a Triton model repository of " << variants.size()
              << " model(s) on " << plan.placements.size() << " device(s) of " << plan.gpus
              << " GPU(s)\n  wrote " << out.string()
              << "/<variant>/config.pbtxt, 1/, devices.json\n";
  } else {
    const auto files = exporter::write_kubernetes_manifests(plan, out, args.kubernetes);
    std::cout << "tessera export: Kubernetes manifests for " << plan.kinds.size()
              << " instance kind(s) on " << plan.gpus << " GPU(s)\n";
    for (const auto& f : files) std::cout << "  wrote " << f.string() << "\n";
    std::cout << "  the front end's models.yaml sends every variant to its Triton Services "
                 "(remote: KServe v2 gRPC; docs/deploy.md)\n";
  }
  if (emulated > 0) {
    std::cout << "  " << emulated
              << " variant(s) are profile-timed EMULATIONS (no real model; give "
                 "`tessera plan --models` TorchScript files to export real ones)\n";
  }
}

}  // namespace

void add_export_command(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "export",
      "Write a plan as a Triton model repository or Kubernetes manifests (JigsawServe and "
      "PPipe plans; iServe deployments as vLLM)");
  cmd->add_option("plan", args->plan_dir, "Plan directory (tessera plan --out)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--to", args->to,
                  "triton, kubernetes, or vllm (a `tessera llm instances --out` directory)")
      ->required()
      ->check(CLI::IsMember({"triton", "kubernetes", "vllm"}));
  cmd->add_option("--out,-o", args->out_dir, "Output directory (default: PLAN/<to>)");
  cmd->add_option("--image", args->kubernetes.tessera_image,
                  "kubernetes, vllm: the tessera image (front end, LLM gateway)")
      ->capture_default_str();
  cmd->add_option("--triton-image", args->kubernetes.triton_image,
                  "kubernetes: the Triton server image")
      ->capture_default_str();
  cmd->add_option("--namespace", args->kubernetes.namespace_name,
                  "kubernetes: metadata.namespace of the objects (default: none)");
  cmd->add_option("--vllm-image", args->llm.vllm_image, "vllm: the vLLM image")
      ->capture_default_str();
  cmd->add_option("--llm-models", args->llm.models_dir,
                  "vllm: directory of the models' config.json (DIR/<model>/config.json)");
  cmd->add_option("--max-model-len", args->llm.max_model_len,
                  "vllm: --max-model-len for every model (default: max_position_embeddings)");
  cmd->callback([args] { run_export(*args); });
}

}  // namespace tessera::cli
