// `tessera ppipe-simulate PLAN.json`: a PPipe plan (tessera plan with `planner: ppipe`)
// served by one of PPipe's data planes in the simulator, at one or several load factors:
// per DNN, Poisson arrivals at load x the DNN's planned throughput (or another plan's, so
// that baselines get the same absolute load as the paper does), its SLO from the plan.
// `--trace FILE` replaces Poisson arrivals by a recorded trace fitted to the same rate
// (workload/trace_fit.hpp); `--sweep` stops a DNN's loads at the first one with >= 99 %
// attainment (the paper's downward sweep); `--csv FILE` writes one row per point.
// `--shared-nics` runs every DNN of the plan at once (sim/co_simulation.hpp), their
// reservation planes sharing the NIC tables of the servers they share.

#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

#include "cli/commands.hpp"
#include "metrics/report.hpp"
#include "ppipe/plan_json.hpp"
#include "profile/ppipe_import.hpp"
#include "reservation/data_plane.hpp"
#include "sim/co_simulation.hpp"
#include "sim/simulator.hpp"
#include "workload/azure_llm.hpp"
#include "workload/renewal_sources.hpp"
#include "workload/trace_fit.hpp"
#include "workload/trace_source.hpp"
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
  std::string trace_file;  // azure-llm CSV; empty = Poisson
  std::string trace_fit = "fold";
  bool sweep = false;
  std::string csv_file;
  bool shared_nics = false;
};

// Physical GPU-seconds each GPU class was busy in a run: every partition's vGPU busy time
// weighted by 1/mps (a 1/v vGPU busy for t is t/v of a GPU), as the paper's utilisation.
std::map<std::string, double> busy_by_class(const ppipe::DnnPlan& dnn,
                                            const reservation::PpipeSetup& setup,
                                            const MetricsCollector& metrics) {
  std::map<std::string, double> busy;
  for (std::size_t p = 0; p < dnn.pipelines.size() && p < setup.pipelines.size(); ++p) {
    const auto& parts = dnn.pipelines[p].partitions;
    const auto& tasks = setup.pipelines[p].tasks;
    for (std::size_t k = 0; k < parts.size() && k < tasks.size(); ++k) {
      const TaskId t = tasks[k];
      if (t >= metrics.tasks().size()) continue;
      busy[parts[k].gpu_class] +=
          metrics.tasks()[t].gpu_busy / static_cast<double>(std::max(1, parts[k].mps));
    }
  }
  return busy;
}

double planned_rate(const ppipe::Plan& plan, const std::string& dnn) {
  for (const ppipe::DnnPlan& d : plan.dnns) {
    if (d.dnn == dnn) return d.throughput;
  }
  throw std::invalid_argument("the reference plan has no DNN '" + dnn + "'");
}

// One DNN of the plan: its setup (built once; the app, deployment and profiles do not
// depend on the load) and its rate at load 1.
struct DnnRun {
  std::size_t index = 0;
  reservation::PpipeSetup setup;
  double base_rate = 0.0;
  double best_load = 0.0;
  bool done = false;  // --sweep: reached >= 99 % attainment
};

// One simulated point of one DNN: the engine with its data plane and arrivals.
struct Point {
  reservation::DataPlane dp;
  std::unique_ptr<Simulator> sim;
  std::unique_ptr<ArrivalSource> arrivals;
};

void run_ppipe_simulate(const PpipeSimulateArgs& args) {
  const ppipe::Plan plan = ppipe::read_plan_file(args.plan_file);
  const ppipe::Plan reference =
      args.reference_plan.empty() ? plan : ppipe::read_plan_file(args.reference_plan);
  const auto kind = reservation::parse_data_plane(args.data_plane);
  if (args.shared_nics && kind != reservation::DataPlaneKind::kReservation) {
    throw std::invalid_argument("--shared-nics needs --data-plane reservation");
  }
  std::vector<Arrival> trace;
  if (!args.trace_file.empty()) trace = read_azure_llm_csv(args.trace_file);
  std::ofstream csv;
  if (!args.csv_file.empty()) {
    csv.open(args.csv_file);
    if (!csv) throw std::runtime_error("cannot write --csv file '" + args.csv_file + "'");
    csv << "method,data_plane,arrivals,dnn,load,rate_rps,duration_s,submitted,goodput_rps,"
           "slo_attainment,drop_rate,late_rate,batches,mean_batch,probes_per_batch,transfers,"
           "transfer_mean_ms,transfer_p50_ms,transfer_p99_ms,busy_gpu_s\n";
  }
  const std::filesystem::path timings =
      std::filesystem::path(args.profiles_dir) / "models" / "block-timing-tf32";
  std::printf(
      "| dnn | load | rate (req/s) | goodput (req/s) | SLO attainment | dropped | late |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  std::vector<DnnRun> runs;
  for (std::size_t i = 0; i < plan.dnns.size(); ++i) {
    const ppipe::DnnPlan& dnn = plan.dnns[i];
    if (dnn.pipelines.empty()) {
      std::printf("| %s | - | - | no pipeline planned | - | - | - |\n", dnn.dnn.c_str());
      continue;
    }
    const auto blocks = load_ppipe_model(timings, dnn.dnn);
    DnnRun r;
    r.index = i;
    r.setup = reservation::build_setup(plan, i, blocks, reservation::setup_options_for(kind));
    r.base_rate = planned_rate(reference, dnn.dnn);
    runs.push_back(std::move(r));
  }

  // Builds one point's engine; `nics` shares the NIC tables with the other DNNs' planes.
  auto make_point = [&](const DnnRun& r, double load,
                        const std::shared_ptr<reservation::NicTables>& nics) {
    reservation::BatcherOptions options;
    options.first_look_fraction = args.first_look;
    Point pt;
    pt.dp = reservation::make_data_plane(r.setup, kind, options, nics);
    SimOptions so;
    so.seed = static_cast<uint64_t>(args.seed);
    so.spill_windows = true;  // memory flat in simulated time
    const double rate = load * r.base_rate;
    pt.sim = std::make_unique<Simulator>(r.setup.app, r.setup.deployment, r.setup.profiles,
                                         std::move(pt.dp.policies), so, EngineOptions{});
    if (trace.empty()) {
      pt.arrivals = std::make_unique<Bounded>(std::make_unique<PoissonSource>(rate, so.seed),
                                              args.duration_s, std::nullopt);
    } else {
      pt.arrivals = std::make_unique<TraceSource>(
          args.trace_fit == "fold"
              ? fold_trace_to_rate(trace, rate, args.duration_s, args.trace_file)
              : fit_trace_to_rate(trace, rate, args.duration_s, args.trace_file),
          "trace '" + args.trace_file + "'");
    }
    return pt;
  };

  // Prints and records one finished point; returns its SLO attainment.
  auto report_point = [&](DnnRun& r, double load, Point& pt) {
    const ppipe::DnnPlan& dnn = plan.dnns[r.index];
    const Simulator& sim = *pt.sim;
    const double rate = load * r.base_rate;
    const nlohmann::json summary = summarize(sim.metrics(), r.setup.app);
    const double attainment = summary["slo_attainment"].get<double>();
    if (attainment >= 0.99) r.best_load = std::max(r.best_load, load);
    std::printf("| %s | %.2f | %.1f | %.1f | %.4f | %.4f | %.4f |\n", dnn.dnn.c_str(), load, rate,
                summary["goodput_rps"].get<double>(), attainment,
                summary["drop_rate"].get<double>(),
                static_cast<double>(summary["late"].get<uint64_t>()) /
                    std::max(1.0, static_cast<double>(summary["submitted"].get<uint64_t>())));
    spdlog::info("{} at load {:.2f}: {}", dnn.dnn, load, pt.dp.summary());
    if (csv.is_open()) {
      const reservation::DataPlaneCounts c = pt.dp.counts();
      const double submitted = static_cast<double>(summary["submitted"].get<uint64_t>());
      std::string busy;
      for (const auto& [cls, sec] : busy_by_class(dnn, r.setup, sim.metrics())) {
        busy += (busy.empty() ? "" : ";") + cls + ":" + std::to_string(sec);
      }
      char row[640];
      std::snprintf(
          row, sizeof row,
          "%s,%s,%s,%s,%.4f,%.3f,%.3f,%.0f,%.3f,%.6f,%.6f,%.6f,%llu,%.3f,%.3f,%llu,%.4f,%.4f,"
          "%.4f,",
          plan.method.c_str(),
          args.shared_nics ? "reservation-shared-nics" : reservation::data_plane_name(kind),
          trace.empty() ? "poisson" : ("trace-" + args.trace_fit).c_str(), dnn.dnn.c_str(), load,
          rate, args.duration_s, submitted, summary["goodput_rps"].get<double>(), attainment,
          summary["drop_rate"].get<double>(),
          static_cast<double>(summary["late"].get<uint64_t>()) / std::max(1.0, submitted),
          static_cast<unsigned long long>(c.batches),
          c.batches ? static_cast<double>(c.batch_items) / static_cast<double>(c.batches) : 0.0,
          c.batches ? static_cast<double>(c.probes) / static_cast<double>(c.batches) : 0.0,
          static_cast<unsigned long long>(c.transfers), c.transfer_mean_ms, c.transfer_p50_ms,
          c.transfer_p99_ms);
      csv << row << busy << "\n";
    }
    if (!args.out_dir.empty()) {
      std::ostringstream name;
      name << dnn.dnn << "-load" << load;
      write_report(std::filesystem::path(args.out_dir) / name.str(), summary, sim.metrics(),
                   r.setup.app);
    }
    return attainment;
  };

  if (!args.shared_nics) {
    // Each DNN alone on its engine and its own NIC tables.
    for (DnnRun& r : runs) {
      for (double load : args.loads) {
        Point pt = make_point(r, load, nullptr);
        pt.sim->run(*pt.arrivals);
        const double attainment = report_point(r, load, pt);
        if (args.sweep && attainment >= 0.99) break;
      }
    }
  } else {
    // How many servers hold vGPUs of more than one DNN (their NICs are what sharing changes).
    const reservation::Placement placement = reservation::place_plan(plan);
    std::vector<std::set<std::size_t>> dnns_on(placement.servers.size());
    for (std::size_t m = 0; m < placement.server_of.size(); ++m) {
      for (const auto& pipe : placement.server_of[m]) {
        for (const auto& part : pipe) {
          for (int srv : part) dnns_on[static_cast<std::size_t>(srv)].insert(m);
        }
      }
    }
    std::size_t shared_servers = 0;
    for (const auto& d : dnns_on) shared_servers += d.size() > 1 ? 1 : 0;
    std::printf("shared NICs: %zu of %zu servers hold vGPUs of several DNNs\n", shared_servers,
                placement.servers.size());
    // Every DNN at once, one virtual time, one set of NIC tables: the planes of DNNs whose
    // vGPUs share a server contend for its NIC. --sweep goes on until every DNN is done
    // (the ones already done keep loading the NICs at that load).
    for (double load : args.loads) {
      auto nics = std::make_shared<reservation::NicTables>();
      std::vector<Point> points;
      for (const DnnRun& r : runs) points.push_back(make_point(r, load, nics));
      std::vector<Simulator*> sims;
      std::vector<ArrivalSource*> sources;
      for (Point& pt : points) {
        sims.push_back(pt.sim.get());
        sources.push_back(pt.arrivals.get());
      }
      run_together(sims, sources);
      bool all_done = true;
      for (std::size_t k = 0; k < runs.size(); ++k) {
        if (runs[k].done) continue;
        runs[k].done = report_point(runs[k], load, points[k]) >= 0.99;
        all_done = all_done && runs[k].done;
      }
      if (args.sweep && all_done) break;
    }
  }
  if (args.loads.size() > 1) {
    for (const DnnRun& r : runs) {
      std::printf("| %s | max load at >= 99 %% attainment: %.2f | | | | | |\n",
                  plan.dnns[r.index].dnn.c_str(), r.best_load);
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
  cmd->add_option("--trace", args->trace_file,
                  "Arrivals from this azure-llm CSV trace (per-request timestamps) brought to "
                  "each point's rate (--trace-fit) for --duration, instead of Poisson")
      ->check(CLI::ExistingFile);
  cmd->add_option("--trace-fit", args->trace_fit,
                  "How --trace reaches the rate: fold (the PPipe authors' MAF 2021 scaling: "
                  "overlay segments) or compress (scale time, keep the gap sequence)")
      ->check(CLI::IsMember({"fold", "compress"}))
      ->capture_default_str();
  cmd->add_flag("--sweep", args->sweep,
                "Stop a DNN's loads at the first with >= 99 % attainment (give them in "
                "descending order: the paper's sweep)");
  cmd->add_option("--csv", args->csv_file, "Write one CSV row per point to this file");
  cmd->add_flag("--shared-nics", args->shared_nics,
                "Simulate every DNN of the plan at once on one virtual time, their reservation "
                "planes sharing each server's NIC tables (without it each DNN runs alone)");
  cmd->callback([args] { run_ppipe_simulate(*args); });
}

}  // namespace tessera::cli
