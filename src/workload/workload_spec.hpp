#pragma once

#include <cstdint>
#include <memory>

#include "core/spec_node.hpp"
#include "workload/arrival.hpp"
#include "workload/stream_size.hpp"

namespace tessera {

// The arrival stream of a run, and whether it ends on its own. A workload that is not
// finite (a synthetic source with no duration_s or limit anywhere) must be bounded by the
// run, e.g. with Bounded (workload/transforms.hpp) and the run's own duration.
struct Workload {
  std::unique_ptr<ArrivalSource> source;
  bool finite = false;
  StreamSize size;  // estimated from the spec: expected arrivals, span, rate
};

// Builds the arrival stream described by the value of a `workload:` key
// (docs/workloads.md):
//
//   source: {kind: trace | poisson | gamma | deterministic | ramp | sum, ...}
//   time_scale: f          # or target_rate_rps: r (not both)
//   rate_scale: r
//   start_s: s             # window [start_s, start_s + duration_s), shifted to 0
//   duration_s: d
//   limit: n
//   slo_ms: ms             # overrides every arrival's SLO
//
// The transforms apply in that order. All randomness derives from `seed`, so the same
// node and seed always give the same stream. Errors are SpecErrors naming the YAML file
// and field path (or, for trace contents, the trace file, line and column). A finite
// workload must expect at most limits::kMaxArrivals arrivals (counting those a late
// start_s skips) spanning at most limits::kMaxSpanS seconds.
Workload build_workload(const SpecNode& workload, uint64_t seed);

// build_workload without the finiteness flag.
std::unique_ptr<ArrivalSource> make_arrival_source(const SpecNode& workload, uint64_t seed);

}  // namespace tessera
