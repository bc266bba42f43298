#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/finite_range.hpp"
#include "control/plan_verification.hpp"
#include "control/replan_report.hpp"
#include "control/replan_spec.hpp"
#include "workload/workload_spec.hpp"

namespace tessera::cli {
namespace {

struct ReplanArgs {
  std::string spec_file;
  std::string out_dir = "out/replan";
  std::vector<std::string> spaces;
  double time_limit = 0.0;
  long node_limit = -1;
  double stale_ms = -1.0;
  double slack = -1.0;
  bool disruptive = false;
  bool verify = false;
  std::string data_plane;  // "verified" or a name of control::default_data_planes()
  double overload = 0.0;   // --overload: the probe's factor (0: the day's prediction error)
  bool quiet = false;
  bool report = false;
};

// --data-plane: one of the verification's short list by name, or "verified": on the
// verified plan for the day's busiest bin (the first search space), the one with the best
// expected attainment over the day's bins at the bin's demand and under an overload probe
// (control::pick_under_overload; the probe's factor is `overload`, or when 0 the day's
// 95th-percentile demand / prediction; the probe's weight is the share of the day's bins that
// beat their prediction by more than the slack). Returns what it chose, as the YAML the run's
// folder keeps (data_plane.yaml).
const char* args_factor_note(bool observed) {
  return observed ? " (the day's 95th-percentile demand / prediction)" : " (--overload)";
}

std::string choose_data_plane(const std::string& name, double overload,
                              const std::vector<uint64_t>& counts, control::ReplanSpec& spec) {
  std::string chosen = name, why = "named by --data-plane", scores_yaml;
  if (name == "verified") {
    if (counts.empty()) throw std::invalid_argument("--data-plane verified: the day is empty");
    plan::PlanInput peak = spec.plan.input;
    peak.demand_rps =
        static_cast<double>(*std::max_element(counts.begin(), counts.end())) / spec.controller.bin;
    plan::PlanOptions options = spec.plan.options;
    options.space = spec.spaces.front();
    // Beyond what the slices serve, the controller runs its largest plan: the choice is made
    // on the largest demand, in 5 % steps down, that has a plan.
    const control::ObservedOverload observed =
        control::observed_overload(counts, spec.controller.history_bins, spec.plan.options.slack);
    if (overload <= 0.0) overload = observed.factor;
    std::cout << fmt::format(
        "overload probe: {:.3f}x the demand{}, weighted by the {:.1f} % of the day's bins whose "
        "demand beat the prediction + {:.0f} % slack\n",
        overload, args_factor_note(overload == observed.factor), 100.0 * observed.share,
        100.0 * spec.plan.options.slack);
    control::Verification v;
    for (int step = 0; step < 20 && !v.plan.has_plan(); ++step) {
      if (step > 0) peak.demand_rps *= 0.95;
      v = control::verify_data_planes(peak, options, spec.sim, spec.plan.attainment_target,
                                      spec.plan.verify_rounds, spec.plan.queue_delay_ms / 1000.0,
                                      spec.plan.burst_excess, 60.0, overload, observed.share);
    }
    if (!v.plan.has_plan()) {
      throw std::invalid_argument("--data-plane verified: no plan near the busiest bin's demand");
    }
    chosen = v.data_plane.name;
    why = v.scores.empty()
              ? fmt::format(
                    "the best of the short list on the verified plan for the busiest bin (or the "
                    "largest demand below it with a plan), {:.3f} req/s: attainment {:.4f} ({}); "
                    "no overload probe (factor {:.3f})",
                    peak.demand_rps, v.attainment, v.stop, overload)
              : fmt::format(
                    "on the verified plan for the busiest bin (or the largest demand below it "
                    "with a plan), {:.3f} req/s ({}), the best expected attainment of the short "
                    "list with a {:.3f}x overload probe in {:.1f} % of the bins: attainment {:.4f} "
                    "at the demand, {:.4f} under the probe",
                    peak.demand_rps, v.stop, v.overload_factor, 100.0 * v.overload_share,
                    v.attainment, v.overload_attainment);
    std::string table;
    for (const control::DataPlaneScore& s : v.scores) {
      std::cout << fmt::format(
          "  {:<45} attainment {:.4f}, under the probe {:.4f}, expected {:.4f}\n", s.name,
          s.attainment, s.overload_attainment, s.expected);
      table += fmt::format(
          "  - {{name: \"{}\", attainment: {:.4f}, overload_attainment: {:.4f}, expected: "
          "{:.4f}}}\n",
          s.name, s.attainment, s.overload_attainment, s.expected);
    }
    if (!table.empty()) scores_yaml = "scores:\n" + table;
  }
  for (const control::DataPlaneChoice& d : control::default_data_planes()) {
    if (d.name != chosen) continue;
    spec.policies = d.policies;
    std::cout << "data plane: " << chosen << " (" << why << ")\n";
    return fmt::format("name: \"{}\"\nwhy: \"{}\"\npolicies:\n{}{}", chosen, why,
                       control::policies_yaml(d.policies), scores_yaml);
  }
  std::string names;
  for (const control::DataPlaneChoice& d : control::default_data_planes()) names += "\n  " + d.name;
  throw CLI::ValidationError("--data-plane",
                             "'" + name + "' is not verified nor one of these:" + names);
}

void run_replan(const ReplanArgs& args) {
  control::ReplanSpec spec = control::load_replan_spec(args.spec_file);
  if (!args.spaces.empty()) {
    spec.spaces.clear();
    for (const auto& s : args.spaces) spec.spaces.push_back(plan::parse_search_space(s));
  }
  if (args.time_limit > 0.0) spec.plan.options.milp.time_limit_s = args.time_limit;
  if (args.node_limit >= 0) spec.plan.options.milp.node_limit = args.node_limit;
  if (args.stale_ms >= 0.0) {
    if (spec.policies.dropping != DroppingKind::kJigsaw) {
      throw std::invalid_argument("--stale-ms needs the spec's dropping policy to be jigsaw");
    }
    spec.policies.stale_after = from_ms(args.stale_ms);
  }
  if (args.slack >= 0.0) spec.plan.options.slack = args.slack;
  if (args.disruptive) spec.controller.disruptive = true;
  if (args.verify) spec.controller.verify = true;
  // The day's arrivals per bin, read once up front: the first bin is planned for its own
  // demand, and the controller stops after the last bin.
  Workload counting = build_workload(*spec.workload, spec.sim.seed);
  if (!counting.finite) {
    spec.workload->fail("this workload never ends: give its source or the workload a duration_s");
  }
  const std::vector<uint64_t> counts =
      control::count_per_bin(*counting.source, spec.controller.bin);
  const std::string data_plane =
      args.data_plane.empty() ? std::string()
                              : choose_data_plane(args.data_plane, args.overload, counts, spec);

  auto verified = std::make_shared<control::VerifiedPlanLog>();
  if (spec.controller.verify) {
    // Each plan verified by simulation with the plan spec's headroom and attainment target
    // (docs/replan.md#verification); what each verification found goes into bins.csv.
    spec.controller.planner = control::verified_planner(
        spec.policies, spec.sim, spec.plan.attainment_target, spec.plan.verify_rounds,
        spec.plan.queue_delay_ms / 1000.0, spec.plan.burst_excess, 60.0, verified);
  }
  spec.sim.progress = !args.quiet;
  // The controller and the plan cache log as they go; --quiet keeps only the table.
  if (args.quiet) spdlog::set_level(spdlog::level::warn);

  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  if (!args.quiet) {
    spdlog::info("app '{}': {} requests in {} bins of {} s; policies: {}", spec.plan.input.app.name,
                 total, counts.size(), spec.controller.bin, spec.policies.describe());
  }

  std::vector<control::ReplanResult> runs;
  for (const plan::SearchSpace& space : spec.spaces) {
    plan::PlanOptions options = spec.plan.options;
    options.space = space;
    Workload workload = build_workload(*spec.workload, spec.sim.seed);
    if (!args.quiet) spdlog::info("{}: re-planning the day", space.name());
    verified->clear();
    runs.push_back(control::run_replanning(spec.plan.input, options, spec.policies, spec.sim,
                                           spec.controller, *workload.source, counts));
    control::attach_verification(*verified, runs.back());
    const auto s = control::summarize_replan(runs.back());
    if (s.infeasible) {
      spdlog::warn("{}: infeasible: {}", s.space, s.message);
    } else if (!args.quiet) {
      spdlog::info(
          "{}: {:.1f} % slices, accuracy drop {:.2f} %, SLO violations {:.2f} % per frame, "
          "{:.2f} % per sub-request ({} MILP solves, {} cut short by a solver limit, {:.0f} s "
          "wall)",
          s.space, s.slices_pct, s.accuracy_drop_pct, s.violation_pct, s.subrequest_violation_pct,
          s.solves, s.limited_solves, runs.back().wall_seconds);
    }
    if (s.limited_solves > 0) {
      spdlog::warn(
          "{}: {} MILP solve(s) were cut short by a solver limit: their plans may not be "
          "optimal (bins.csv: solve_limited)",
          s.space, s.limited_solves);
    }
  }
  std::vector<control::ReplanSummary> rows;
  for (const auto& r : runs) rows.push_back(control::summarize_replan(r));
  control::write_replan_report(args.out_dir, runs, spec.plan.input.app.name);
  if (!data_plane.empty()) {
    std::ofstream(std::filesystem::path(args.out_dir) / "data_plane.yaml") << data_plane;
  }
  std::cout << control::comparison_table(rows);
  std::cout << "  wrote " << args.out_dir
            << "/summary.json, comparison.md, day.svg and <space>/bins.csv\n";
  if (args.report) write_report_and_tell(args.out_dir);
}

}  // namespace

void add_replan_command(CLI::App& app) {
  auto args = std::make_shared<ReplanArgs>();
  CLI::App* cmd = app.add_subcommand(
      "replan",
      "Simulate JigsawServe's controller over a day: re-plan every bin, reconfigure, compare "
      "search spaces");
  cmd->add_option("spec", args->spec_file,
                  "Re-planning spec (YAML): plan spec, workload, controller")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out,-o", args->out_dir, "Output directory")->capture_default_str();
  cmd->add_option("--space", args->spaces,
                  "Search space to run (repeatable; default: the spec's spaces)");
  cmd->add_option("--time-limit", args->time_limit,
                  "CBC time limit per solve, CPU seconds (a backstop)");
  cmd->add_option("--node-limit", args->node_limit,
                  "CBC node limit per solve (0: none), overriding the plan spec's node_limit")
      ->check(CLI::Range(0L, 1'000'000'000L));
  cmd->add_option("--stale-ms", args->stale_ms,
                  "Override the jigsaw dropping policy's staleness threshold, ms");
  cmd->add_option("--slack", args->slack,
                  "Override the plan spec's slack: plans serve the prediction x (1 + slack)")
      ->check(finite_range(0.0, 10.0));
  cmd->add_flag("--verify", args->verify,
                "Verify each plan by simulation with the plan spec's headroom and attainment "
                "target (controller.verify: true)");
  cmd->add_option("--data-plane", args->data_plane,
                  "Run the day on this data plane instead of the spec's policies: a name of the "
                  "verification's short list, or 'verified' (on the verified plan for the day's "
                  "busiest bin: the best expected attainment at the demand and under an overload "
                  "probe)");
  cmd->add_option("--overload", args->overload,
                  "--data-plane verified: the overload probe's demand factor (default: the "
                  "day's 95th-percentile demand / prediction)")
      ->check(finite_range(1.0, 10.0));
  cmd->add_flag("--disruptive", args->disruptive,
                "Replaced workers stop at the bin boundary (controller.disruptive: true)");
  cmd->add_flag("--quiet,-q", args->quiet, "No progress or log lines, only the table");
  add_report_flag(*cmd, args->report);
  cmd->callback([args] { run_replan(*args); });
}

}  // namespace tessera::cli
