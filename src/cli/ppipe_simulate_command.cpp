// `tessera ppipe-simulate PLAN.json`: a PPipe plan (tessera plan with `planner: ppipe`)
// served by one of PPipe's data planes in the simulator, at one or several load factors:
// per DNN, Poisson arrivals at load x the DNN's planned throughput (or another plan's, so
// that baselines get the same absolute load as the paper does), its SLO from the plan.

#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "metrics/report.hpp"
#include "ppipe/plan_json.hpp"
#include "profile/ppipe_import.hpp"
#include "reservation/data_plane.hpp"
#include "sim/simulator.hpp"
#include "workload/renewal_sources.hpp"
#include "workload/transforms.hpp"

namespace tessera::cli {
namespace {

struct PpipeSimulateArgs {
  std::string plan_file;
  std::string reference_plan;
  std::string profiles_dir = "data/profiles/ppipe";
  std::string data_plane = "reservation";
  std::vector<double> loads{1.0};
  double duration_s = 30.0;
  double first_look = 0.0;
  int64_t seed = 1;
  std::string out_dir;
};

double planned_rate(const ppipe::Plan& plan, const std::string& dnn) {
  for (const ppipe::DnnPlan& d : plan.dnns) {
    if (d.dnn == dnn) return d.throughput;
  }
  throw std::invalid_argument("the reference plan has no DNN '" + dnn + "'");
}

void run_ppipe_simulate(const PpipeSimulateArgs& args) {
  const ppipe::Plan plan = ppipe::read_plan_file(args.plan_file);
  const ppipe::Plan reference =
      args.reference_plan.empty() ? plan : ppipe::read_plan_file(args.reference_plan);
  const auto kind = reservation::parse_data_plane(args.data_plane);
  const std::filesystem::path timings =
      std::filesystem::path(args.profiles_dir) / "models" / "block-timing-tf32";
  std::printf(
      "| dnn | load | rate (req/s) | goodput (req/s) | SLO attainment | dropped | late |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  for (std::size_t i = 0; i < plan.dnns.size(); ++i) {
    const ppipe::DnnPlan& dnn = plan.dnns[i];
    if (dnn.pipelines.empty()) {
      std::printf("| %s | - | - | no pipeline planned | - | - | - |\n", dnn.dnn.c_str());
      continue;
    }
    const auto blocks = load_ppipe_model(timings, dnn.dnn);
    const double base_rate = planned_rate(reference, dnn.dnn);
    double best_load = 0.0;
    // The app, deployment and profiles do not depend on the load; each point gets a fresh
    // data plane (it holds the run's reservations).
    const reservation::PpipeSetup setup =
        reservation::build_setup(plan, i, blocks, reservation::setup_options_for(kind));
    for (double load : args.loads) {
      reservation::BatcherOptions options;
      options.first_look_fraction = args.first_look;
      reservation::DataPlane dp = reservation::make_data_plane(setup, kind, options);
      SimOptions so;
      so.seed = static_cast<uint64_t>(args.seed);
      const double rate = load * base_rate;
      Simulator sim(setup.app, setup.deployment, setup.profiles, std::move(dp.policies), so,
                    EngineOptions{});
      Bounded arrivals(std::make_unique<PoissonSource>(rate, so.seed), args.duration_s,
                       std::nullopt);
      sim.run(arrivals);
      const nlohmann::json summary = summarize(sim.metrics(), setup.app);
      const double attainment = summary["slo_attainment"].get<double>();
      if (attainment >= 0.99) best_load = std::max(best_load, load);
      std::printf("| %s | %.2f | %.1f | %.1f | %.4f | %.4f | %.4f |\n", dnn.dnn.c_str(), load, rate,
                  summary["goodput_rps"].get<double>(), attainment,
                  summary["drop_rate"].get<double>(),
                  static_cast<double>(summary["late"].get<uint64_t>()) /
                      std::max(1.0, static_cast<double>(summary["submitted"].get<uint64_t>())));
      spdlog::info("{} at load {:.2f}: {}", dnn.dnn, load, dp.summary());
      if (!args.out_dir.empty()) {
        std::ostringstream name;
        name << dnn.dnn << "-load" << load;
        write_report(std::filesystem::path(args.out_dir) / name.str(), summary, sim.metrics(),
                     setup.app);
      }
    }
    if (args.loads.size() > 1) {
      std::printf("| %s | max load at >= 99 %% attainment: %.2f | | | | | |\n", dnn.dnn.c_str(),
                  best_load);
    }
  }
}

}  // namespace

void add_ppipe_simulate_command(CLI::App& app) {
  auto args = std::make_shared<PpipeSimulateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "ppipe-simulate",
      "Serve a PPipe plan.json with PPipe's reservation data plane (or the reactive baseline) "
      "in the simulator, at one or more load factors");
  cmd->add_option("plan", args->plan_file, "plan.json written by `tessera plan` (planner: ppipe)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--data-plane", args->data_plane, "reservation (PPipe) or reactive")
      ->check(CLI::IsMember({"reservation", "reactive"}))
      ->capture_default_str();
  cmd->add_option("--loads", args->loads, "Load factors: rate = load x planned throughput")
      ->delimiter(',')
      ->check(CLI::Range(0.001, 100.0));
  cmd->add_option("--reference-plan", args->reference_plan,
                  "Take the planned throughputs from this plan (e.g. PPipe's, for a baseline's "
                  "plan, so both see the same absolute load)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--profiles", args->profiles_dir, "PPipe's data/ layout (block timings)")
      ->capture_default_str()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--duration", args->duration_s, "Simulated seconds per point")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
  cmd->add_option("--first-look", args->first_look,
                  "The authors' first-look rule fraction (0 = off, the paper; 0.95 = theirs)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--seed", args->seed, "Seed of the arrivals")->capture_default_str();
  cmd->add_option("--out,-o", args->out_dir, "Write each point's summary.json etc. here");
  cmd->callback([args] { run_ppipe_simulate(*args); });
}

}  // namespace tessera::cli
