#include <spdlog/spdlog.h>

#include <chrono>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "metrics/report.hpp"
#include "sim/simulator.hpp"
#include "spec/run_spec.hpp"

namespace tessera::cli {
namespace {

struct SimulateArgs {
  std::string run_file;
  std::string out_dir = "out";
  int64_t seed = -1;
  bool quiet = false;
  bool report = false;
};

void run_simulate(const SimulateArgs& args) {
  RunSpec run = load_run_spec(args.run_file);
  if (args.seed >= 0) run.sim.seed = static_cast<uint64_t>(args.seed);
  run.sim.progress = !args.quiet;
  run.sim.spill_windows = true;  // memory flat in simulated time
  const PolicySet policies(run.policies);
  auto arrivals = make_run_arrivals(run);
  if (!args.quiet) {
    spdlog::info("app '{}' with {} tasks, SLO {} ms", run.app.name, run.app.tasks.size(),
                 to_ms(run.app.slo));
    spdlog::info("workload: {}", arrivals->describe());
    spdlog::info("policies: {}", policies.config().describe());
  }
  const auto wall_start = std::chrono::steady_clock::now();
  Simulator sim(run.app, run.deployment, run.profiles, policies, run.sim);
  sim.run(*arrivals);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  nlohmann::json summary = summarize(sim.metrics(), run.app);
  write_report(args.out_dir, summary, sim.metrics(), run.app);
  std::cout << format_summary(summary);
  std::cout << "  wrote " << args.out_dir
            << "/summary.json, timeseries.csv, timeseries.svg, latency_histogram.csv\n";
  if (args.report) write_report_and_tell(args.out_dir);
  if (!args.quiet) {
    spdlog::info("simulated {} requests ({} events) in {:.2f} s wall",
                 summary["submitted"].get<uint64_t>(), sim.events_processed(), wall);
  }
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "simulate", "Simulate a run spec on virtual time and write summary.json and a time series");
  cmd->add_option("run", args->run_file, "Run spec (YAML): app, profiles, deployment, workload")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out,-o", args->out_dir, "Output directory")->capture_default_str();
  cmd->add_option("--seed", args->seed, "Override the run's seed");
  cmd->add_flag("--quiet,-q", args->quiet, "No progress or log lines, only the summary table");
  add_report_flag(*cmd, args->report);
  cmd->callback([args] { run_simulate(*args); });
}

}  // namespace tessera::cli
