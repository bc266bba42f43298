#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "export/kubernetes_export.hpp"
#include "export/plan_dir.hpp"
#include "export/triton_export.hpp"

namespace tessera::cli {
namespace {

struct ExportArgs {
  std::string plan_dir;
  std::string to;
  std::string out_dir;  // default: PLAN_DIR/<to>
  exporter::KubernetesOptions kubernetes;
};

void run_export(const ExportArgs& args) {
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
    std::cout << "  the front end serves the plan itself: it sends nothing to the Triton "
                 "backends unless its models.yaml is changed to remote: entries "
                 "(docs/export.md#kubernetes)\n";
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
      "export", "Write a plan as a Triton model repository or Kubernetes manifests");
  cmd->add_option("plan", args->plan_dir, "Plan directory (tessera plan --out)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--to", args->to, "triton or kubernetes")
      ->required()
      ->check(CLI::IsMember({"triton", "kubernetes"}));
  cmd->add_option("--out,-o", args->out_dir, "Output directory (default: PLAN/<to>)");
  cmd->add_option("--image", args->kubernetes.tessera_image, "kubernetes: the tessera image")
      ->capture_default_str();
  cmd->add_option("--triton-image", args->kubernetes.triton_image,
                  "kubernetes: the Triton server image")
      ->capture_default_str();
  cmd->add_option("--namespace", args->kubernetes.namespace_name,
                  "kubernetes: metadata.namespace of the objects (default: none)");
  cmd->callback([args] { run_export(*args); });
}

}  // namespace tessera::cli
