// `tessera ppipe-simulate PLAN.json`: argument parsing for PPipe's load sweeps
// (experiments/ppipe_sweep.hpp), which serve a PPipe plan with one of PPipe's data planes
// in the simulator at one or several load factors.

#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "cli/finite_range.hpp"
#include "dataplane/ppipe/data_plane.hpp"
#include "experiments/ppipe_sweep.hpp"

namespace tessera::cli {
namespace {

struct PpipeSimulateArgs {
  experiments::PpipeSweepOptions options;
  std::string data_plane = "reservation";
  std::string trace_fit = "fold";
  int64_t seed = 1;
};

void run_ppipe_simulate(PpipeSimulateArgs& args) {
  args.options.data_plane = reservation::parse_data_plane(args.data_plane);
  args.options.trace_fit =
      args.trace_fit == "fold" ? experiments::TraceFit::kFold : experiments::TraceFit::kCompress;
  args.options.seed = static_cast<uint64_t>(args.seed);
  experiments::run_ppipe_sweep(args.options, std::cout);
}

}  // namespace

void add_ppipe_simulate_command(CLI::App& app) {
  auto args = std::make_shared<PpipeSimulateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "ppipe-simulate",
      "Serve a PPipe plan.json with PPipe's reservation data plane (or the reactive baseline) "
      "in the simulator, at one or more load factors");
  cmd->add_option("plan", args->options.plan_file,
                  "plan.json written by `tessera plan` (planner: ppipe)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--data-plane", args->data_plane, "reservation (PPipe) or reactive")
      ->check(CLI::IsMember({"reservation", "reactive"}))
      ->capture_default_str();
  cmd->add_option("--loads", args->options.loads, "Load factors: rate = load x planned throughput")
      ->delimiter(',')
      ->check(finite_range(0.001, 100.0));
  cmd->add_option("--reference-plan", args->options.reference_plan,
                  "Take the planned throughputs from this plan (e.g. PPipe's, for a baseline's "
                  "plan, so both see the same absolute load)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--profiles", args->options.profiles_dir, "PPipe's data/ layout (block timings)")
      ->capture_default_str()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--duration", args->options.duration_s, "Simulated seconds per point")
      ->check(finite_range(0.1, 86400.0))
      ->capture_default_str();
  cmd->add_option("--first-look", args->options.first_look,
                  "The authors' first-look rule fraction (0 = off, the paper; 0.95 = theirs)")
      ->check(finite_range(0.0, 1.0));
  cmd->add_option("--seed", args->seed, "Seed of the arrivals")->capture_default_str();
  cmd->add_option("--out,-o", args->options.out_dir, "Write each point's summary.json etc. here");
  cmd->add_option("--trace", args->options.trace_file,
                  "Arrivals from this azure-llm CSV trace (per-request timestamps) brought to "
                  "each point's rate (--trace-fit) for --duration, instead of Poisson")
      ->check(CLI::ExistingFile);
  cmd->add_option("--trace-fit", args->trace_fit,
                  "How --trace reaches the rate: fold (the PPipe authors' MAF 2021 scaling: "
                  "overlay segments) or compress (scale time, keep the gap sequence)")
      ->check(CLI::IsMember({"fold", "compress"}))
      ->capture_default_str();
  cmd->add_flag("--sweep", args->options.sweep,
                "Stop a DNN's loads at the first with >= 99 % attainment (give them in "
                "descending order: the paper's sweep)");
  cmd->add_option("--csv", args->options.csv_file, "Write one CSV row per point to this file");
  cmd->add_flag("--shared-nics", args->options.shared_nics,
                "Simulate every DNN of the plan at once on one virtual time, their reservation "
                "planes sharing each server's NIC tables (without it each DNN runs alone)");
  cmd->callback([args] { run_ppipe_simulate(*args); });
}

}  // namespace tessera::cli
