#include "experiments/ppipe_sweep.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>

#include "dataplane/ppipe/plan_json.hpp"
#include "metrics/report.hpp"
#include "profile/ppipe_import.hpp"
#include "sim/co_simulation.hpp"
#include "sim/simulator.hpp"
#include "workload/azure_llm.hpp"
#include "workload/renewal_sources.hpp"
#include "workload/trace_fit.hpp"
#include "workload/trace_source.hpp"
#include "workload/transforms.hpp"

namespace tessera::experiments {
namespace {

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

double planned_rate(const ppipe::PpipePlan& plan, const std::string& dnn) {
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
  bool done = false;  // sweep: reached >= 99 % attainment
};

// One simulated point of one DNN: the engine with its data plane and arrivals.
struct Point {
  reservation::DataPlane dp;
  std::unique_ptr<Simulator> sim;
  std::unique_ptr<ArrivalSource> arrivals;
};

const char* kCsvHeader =
    "method,data_plane,arrivals,dnn,load,rate_rps,duration_s,submitted,goodput_rps,"
    "slo_attainment,drop_rate,late_rate,batches,mean_batch,probes_per_batch,transfers,"
    "transfer_mean_ms,transfer_p50_ms,transfer_p99_ms,busy_gpu_s\n";

// The sweep's state: the plan, the trace, the DNNs' runs and the outputs.
class PpipeSweep {
 public:
  PpipeSweep(const PpipeSweepOptions& options, std::ostream& out)
      : o_(options),
        out_(out),
        plan_(ppipe::read_plan_file(options.plan_file)),
        reference_(options.reference_plan.empty() ? plan_
                                                  : ppipe::read_plan_file(options.reference_plan)) {
    if (o_.shared_nics && o_.data_plane != reservation::DataPlaneKind::kReservation) {
      throw std::invalid_argument("--shared-nics needs --data-plane reservation");
    }
    if (!o_.trace_file.empty()) trace_ = read_azure_llm_csv(o_.trace_file);
    if (!o_.csv_file.empty()) {
      csv_.open(o_.csv_file);
      if (!csv_) throw std::runtime_error("cannot write --csv file '" + o_.csv_file.string() + "'");
      csv_ << kCsvHeader;
    }
  }

  void run() {
    out_ << "| dnn | load | rate (req/s) | goodput (req/s) | SLO attainment | dropped | late |\n"
         << "|---|---:|---:|---:|---:|---:|---:|\n";
    load_runs();
    if (o_.shared_nics) {
      run_shared();
    } else {
      run_alone();
    }
    if (o_.loads.size() > 1) {
      for (const DnnRun& r : runs_) {
        out_ << fmt::format("| {} | max load at >= 99 % attainment: {:.2f} | | | | | |\n",
                            plan_.dnns[r.index].dnn, r.best_load);
      }
    }
  }

 private:
  // Every DNN with a pipeline: its setup on the engine and its rate at load 1.
  void load_runs() {
    const std::filesystem::path timings = o_.profiles_dir / "models" / "block-timing-tf32";
    for (std::size_t i = 0; i < plan_.dnns.size(); ++i) {
      const ppipe::DnnPlan& dnn = plan_.dnns[i];
      if (dnn.pipelines.empty()) {
        out_ << fmt::format("| {} | - | - | no pipeline planned | - | - | - |\n", dnn.dnn);
        continue;
      }
      const auto blocks = load_ppipe_model(timings, dnn.dnn);
      DnnRun r;
      r.index = i;
      r.setup =
          reservation::build_setup(plan_, i, blocks, reservation::setup_options_for(o_.data_plane));
      r.base_rate = planned_rate(reference_, dnn.dnn);
      runs_.push_back(std::move(r));
    }
  }

  // One point's engine; `nics` shares the NIC tables with the other DNNs' planes.
  Point make_point(const DnnRun& r, double load,
                   const std::shared_ptr<reservation::NicTables>& nics) const {
    reservation::BatcherOptions options;
    options.first_look_fraction = o_.first_look;
    Point pt;
    pt.dp = reservation::make_data_plane(r.setup, o_.data_plane, options, nics);
    SimOptions so;
    so.seed = o_.seed;
    so.spill_windows = true;  // memory flat in simulated time
    const double rate = load * r.base_rate;
    pt.sim = std::make_unique<Simulator>(r.setup.app, r.setup.deployment, r.setup.profiles,
                                         std::move(pt.dp.policies), so, EngineOptions{});
    if (trace_.empty()) {
      pt.arrivals = std::make_unique<Bounded>(std::make_unique<PoissonSource>(rate, so.seed),
                                              o_.duration_s, std::nullopt);
    } else {
      const std::string name = o_.trace_file.string();
      pt.arrivals = std::make_unique<TraceSource>(
          o_.trace_fit == TraceFit::kFold ? fold_trace_to_rate(trace_, rate, o_.duration_s, name)
                                          : fit_trace_to_rate(trace_, rate, o_.duration_s, name),
          "trace '" + name + "'");
    }
    return pt;
  }

  // Prints and records one finished point; returns its SLO attainment.
  double report_point(DnnRun& r, double load, Point& pt) {
    const ppipe::DnnPlan& dnn = plan_.dnns[r.index];
    const Simulator& sim = *pt.sim;
    const double rate = load * r.base_rate;
    const nlohmann::json summary = summarize(sim.metrics(), r.setup.app);
    const double attainment = summary["slo_attainment"].get<double>();
    const double submitted = static_cast<double>(summary["submitted"].get<uint64_t>());
    const double late =
        static_cast<double>(summary["late"].get<uint64_t>()) / std::max(1.0, submitted);
    if (attainment >= 0.99) r.best_load = std::max(r.best_load, load);
    out_ << fmt::format("| {} | {:.2f} | {:.1f} | {:.1f} | {:.4f} | {:.4f} | {:.4f} |\n", dnn.dnn,
                        load, rate, summary["goodput_rps"].get<double>(), attainment,
                        summary["drop_rate"].get<double>(), late);
    spdlog::info("{} at load {:.2f}: {}", dnn.dnn, load, pt.dp.summary());
    if (csv_.is_open()) write_csv_row(r, load, pt, summary);
    if (!o_.out_dir.empty()) {
      write_report(o_.out_dir / fmt::format("{}-load{:g}", dnn.dnn, load), summary, sim.metrics(),
                   r.setup.app);
    }
    return attainment;
  }

  void write_csv_row(const DnnRun& r, double load, const Point& pt, const nlohmann::json& summary) {
    const ppipe::DnnPlan& dnn = plan_.dnns[r.index];
    const reservation::DataPlaneCounts c = pt.dp.counts();
    const double submitted = static_cast<double>(summary["submitted"].get<uint64_t>());
    std::string busy;
    for (const auto& [cls, sec] : busy_by_class(dnn, r.setup, pt.sim->metrics())) {
      busy += (busy.empty() ? "" : ";") + cls + ":" + std::to_string(sec);
    }
    const std::string arrivals =
        trace_.empty()
            ? "poisson"
            : std::string("trace-") + (o_.trace_fit == TraceFit::kFold ? "fold" : "compress");
    csv_ << fmt::format(
        "{},{},{},{},{:.4f},{:.3f},{:.3f},{:.0f},{:.3f},{:.6f},{:.6f},{:.6f},{},{:.3f},{:.3f},{},"
        "{:.4f},{:.4f},{:.4f},{}\n",
        ppipe::method_name(plan_.method),
        o_.shared_nics ? "reservation-shared-nics" : reservation::data_plane_name(o_.data_plane),
        arrivals, dnn.dnn, load, load * r.base_rate, o_.duration_s, submitted,
        summary["goodput_rps"].get<double>(), summary["slo_attainment"].get<double>(),
        summary["drop_rate"].get<double>(),
        static_cast<double>(summary["late"].get<uint64_t>()) / std::max(1.0, submitted), c.batches,
        c.batches ? static_cast<double>(c.batch_items) / static_cast<double>(c.batches) : 0.0,
        c.batches ? static_cast<double>(c.probes) / static_cast<double>(c.batches) : 0.0,
        c.transfers, c.transfer_mean_ms, c.transfer_p50_ms, c.transfer_p99_ms, busy);
  }

  // Each DNN alone on its engine and its own NIC tables.
  void run_alone() {
    for (DnnRun& r : runs_) {
      for (double load : o_.loads) {
        Point pt = make_point(r, load, nullptr);
        pt.sim->run(*pt.arrivals);
        if (report_point(r, load, pt) >= 0.99 && o_.sweep) break;
      }
    }
  }

  // Every DNN at once, one virtual time, one set of NIC tables: the planes of DNNs whose
  // vGPUs share a server contend for its NIC. The sweep goes on until every DNN is done
  // (the ones already done keep loading the NICs at that load).
  void run_shared() {
    print_shared_servers();
    for (double load : o_.loads) {
      auto nics = std::make_shared<reservation::NicTables>();
      std::vector<Point> points;
      for (const DnnRun& r : runs_) points.push_back(make_point(r, load, nics));
      std::vector<Simulator*> sims;
      std::vector<ArrivalSource*> sources;
      for (Point& pt : points) {
        sims.push_back(pt.sim.get());
        sources.push_back(pt.arrivals.get());
      }
      run_together(sims, sources);
      bool all_done = true;
      for (std::size_t k = 0; k < runs_.size(); ++k) {
        if (runs_[k].done) continue;
        runs_[k].done = report_point(runs_[k], load, points[k]) >= 0.99;
        all_done = all_done && runs_[k].done;
      }
      if (o_.sweep && all_done) break;
    }
  }

  // How many servers hold vGPUs of more than one DNN (their NICs are what sharing changes).
  void print_shared_servers() {
    const reservation::VgpuPlacement placement = reservation::place_plan(plan_);
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
    out_ << fmt::format("shared NICs: {} of {} servers hold vGPUs of several DNNs\n",
                        shared_servers, placement.servers.size());
  }

  const PpipeSweepOptions& o_;
  std::ostream& out_;
  const ppipe::PpipePlan plan_;
  const ppipe::PpipePlan reference_;
  std::vector<Arrival> trace_;
  std::ofstream csv_;
  std::vector<DnnRun> runs_;
};

}  // namespace

void run_ppipe_sweep(const PpipeSweepOptions& options, std::ostream& out) {
  PpipeSweep(options, out).run();
}

}  // namespace tessera::experiments
