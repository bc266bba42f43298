#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <memory>
#include <set>

#include "cli/commands.hpp"
#include "cli/finite_range.hpp"
#include "experiments/comparison.hpp"
#include "policy/presets.hpp"
#include "spec/run_spec.hpp"

namespace tessera::cli {
namespace {

struct CompareArgs {
  std::string run_file;
  std::string out_dir = "out/compare";
  std::vector<std::string> presets;
  std::vector<double> load_scales;
  std::vector<double> lambdas;
  int64_t seed = -1;
  bool report = false;
};

void run_compare(const CompareArgs& args) {
  RunSpec run = load_run_spec(args.run_file);
  if (args.seed >= 0) run.sim.seed = static_cast<uint64_t>(args.seed);
  const std::vector<std::string> presets =
      args.presets.empty() ? policy_presets() : expand_presets(args.presets);
  std::vector<ComparisonCase> cases;
  try {
    cases = comparison_cases(run, presets, args.load_scales, args.lambdas);
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError("--presets", e.what());
  }
  spdlog::info("{}: {} simulations", args.run_file, cases.size());
  // Each case is the run spec with its preset replaced: the section's other fields hold
  // for every case, as they would beside `preset:` in the spec.
  const std::vector<std::string> fixed =
      run.policies_node ? policy_overrides(*run.policies_node) : std::vector<std::string>{};
  std::set<std::string> presets_run, systems;
  for (const ComparisonCase& c : cases) {
    PolicyConfig without_label = c.policies;
    without_label.preset.clear();
    presets_run.insert(c.policies.preset);
    systems.insert(without_label.describe());
  }
  if (presets_run.size() > 1 && systems.size() == 1) {
    spdlog::warn("every case runs the same policies ({}): the run spec's policies fix them",
                 *systems.begin());
  }
  const auto rows = run_comparison(run, cases, [&](const ComparisonRow& row, std::size_t done) {
    const nlohmann::json& invalid = row.summary["invalid_rate"];  // null: not measured
    spdlog::info("[{}/{}] {:<22} goodput {:8.1f} req/s  drop rate {:.4f}  invalid {}", done,
                 cases.size(), row.run.label, row.summary["goodput_rps"].get<double>(),
                 row.summary["drop_rate"].get<double>(),
                 invalid.is_number() ? fmt::format("{:.4f}", invalid.get<double>()) : "-");
  });
  write_comparison(args.out_dir, rows, run.app, fixed);
  std::cout << comparison_markdown(rows, run.app, fixed);
  std::cout << "wrote " << args.out_dir
            << "/comparison.csv, comparison.md, comparison.svg, comparison_latency.csv\n";
  if (args.report) write_report_and_tell(args.out_dir);
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "Simulate one run spec under several policy presets, loads or PARD λ values");
  cmd->add_option("run", args->run_file, "Run spec (YAML)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--out,-o", args->out_dir, "Output directory")->capture_default_str();
  cmd->add_option("--presets", args->presets,
                  "Comma-separated policy presets or families (pard-all, superserve); default: "
                  "pard-all (docs/policies.md)")
      ->delimiter(',');
  cmd->add_option("--load-scales", args->load_scales,
                  "Comma-separated multipliers of the workload's rate (same duration)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  cmd->add_option("--lambdas", args->lambdas, "Sweep PARD's λ instead of presets")
      ->delimiter(',')
      ->check(finite_range(0.0, 1.0));
  cmd->add_option("--seed", args->seed, "Override the run's seed");
  add_report_flag(*cmd, args->report);
  cmd->callback([args] { run_compare(*args); });
}

}  // namespace tessera::cli
