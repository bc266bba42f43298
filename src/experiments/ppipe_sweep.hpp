#pragma once

// PPipe's load sweeps (tessera ppipe-simulate, scripts/ppipe-results.sh): a PPipe plan
// (tessera plan with `planner: ppipe`) served by one of PPipe's data planes in the
// simulator, at one or several load factors: per DNN, Poisson arrivals at load x the DNN's
// planned throughput (or another plan's, so that baselines get the same absolute load as
// the paper does), its SLO from the plan. A trace replaces Poisson arrivals, fitted to the
// same rate (workload/trace_fit.hpp); `sweep` stops a DNN's loads at the first one with
// >= 99 % attainment (the paper's downward sweep); `shared_nics` runs every DNN of the plan
// at once (sim/co_simulation.hpp), their reservation planes sharing the NIC tables of the
// servers they share. One thread; the sweep owns its simulators.

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <vector>

#include "dataplane/ppipe/data_plane.hpp"

namespace tessera::experiments {

// How a trace reaches a point's rate.
enum class TraceFit {
  kFold,      // the PPipe authors' MAF 2021 scaling: overlay segments (fold_trace_to_rate)
  kCompress,  // scale time, keep the gap sequence (fit_trace_to_rate)
};

struct PpipeSweepOptions {
  std::filesystem::path plan_file;       // plan.json
  std::filesystem::path reference_plan;  // planned throughputs from here; empty: plan_file
  std::filesystem::path profiles_dir = "data/profiles/ppipe";  // PPipe's data/ layout
  reservation::DataPlaneKind data_plane = reservation::DataPlaneKind::kReservation;
  std::vector<double> loads{1.0};    // rate = load x planned throughput
  double duration_s = 30.0;          // simulated seconds per point
  double first_look = 0.0;           // the authors' first-look rule fraction (0: off)
  uint64_t seed = 1;                 // of the arrivals
  std::filesystem::path out_dir;     // each point's summary.json etc.; empty: none
  std::filesystem::path trace_file;  // azure-llm CSV; empty: Poisson arrivals
  TraceFit trace_fit = TraceFit::kFold;
  bool sweep = false;              // stop a DNN at its first load with >= 99 % attainment
  std::filesystem::path csv_file;  // one row per point; empty: none
  bool shared_nics = false;        // every DNN at once, sharing the servers' NIC tables
};

// Runs the points and prints one markdown row per point (and, with several loads, each
// DNN's largest load at >= 99 % attainment) to `out`. Throws std::invalid_argument for
// options that cannot run (shared NICs without the reservation plane, a reference plan
// without one of the plan's DNNs), SpecError for a bad plan or trace file, and
// std::runtime_error when a file cannot be written.
void run_ppipe_sweep(const PpipeSweepOptions& options, std::ostream& out);

}  // namespace tessera::experiments
