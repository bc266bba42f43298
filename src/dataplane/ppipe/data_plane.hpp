#pragma once

// Choosing PPipe's data plane by name, for the run spec and the CLI: `reservation` (PPipe's
// resource reservation-based adaptive batching, ReservationPlane) or `reactive` (the
// per-pool baseline of its ablation, ReactivePlane). make_data_plane builds the engine's
// policies for one DNN's PpipeSetup and a one-line summary of what the plane did, to print
// after the run.
//
// Use: setup = build_setup(plan, dnn, blocks, setup_options_for(kind));
//      DataPlane dp = make_data_plane(setup, kind, options);
//      Simulator sim(setup.app, setup.deployment, setup.profiles, std::move(dp.policies), ...);
//      ... sim.run(arrivals); std::cout << dp.summary();
// `setup` must outlive the engine. Not thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "dataplane/ppipe/batcher.hpp"
#include "dataplane/ppipe/nic_tables.hpp"
#include "dataplane/ppipe/setup.hpp"
#include "engine/policies.hpp"

namespace tessera::reservation {

enum class DataPlaneKind { kReservation, kReactive };

// "reservation" | "reactive"; anything else throws std::invalid_argument naming the choices.
DataPlaneKind parse_data_plane(const std::string& name);
const char* data_plane_name(DataPlaneKind kind);
// The setup options a data plane needs (the reactive plane moves bytes on the engine's links).
SetupOptions setup_options_for(DataPlaneKind kind, Time link_latency = 0.0);

// What a data plane did in a run, in numbers (for tables; `summary` says it in words).
struct DataPlaneCounts {
  uint64_t batches = 0;
  uint64_t batch_items = 0;
  uint64_t probes = 0;  // probe() calls (reservation plane; 0 for the reactive one)
  uint64_t drops = 0;   // at the central queue (reservation) or at the pools (reactive)
  uint64_t transfers = 0;
  double transfer_mean_ms = 0.0;  // sender end to arrival at the next partition's vGPU
  double transfer_p50_ms = 0.0;
  double transfer_p99_ms = 0.0;
};

struct DataPlane {
  EnginePolicies policies;
  std::function<std::string()> summary;  // batches, probes per batch, drops, transfer times
  std::function<DataPlaneCounts()> counts;
};

// `nics` (reservation plane only): NIC tables shared with the other DNNs' planes of one
// run (nic_tables.hpp); the reactive plane moves bytes on its own engine's links and
// throws std::invalid_argument when given shared tables.
DataPlane make_data_plane(const PpipeSetup& setup, DataPlaneKind kind, BatcherOptions options = {},
                          std::shared_ptr<NicTables> nics = nullptr);

}  // namespace tessera::reservation
