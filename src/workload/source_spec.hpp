#pragma once

#include <cstdint>
#include <memory>

#include "core/spec_node.hpp"
#include "workload/arrival.hpp"
#include "workload/stream_size.hpp"

namespace tessera {

// A source built from its spec, and whether it ends on its own.
struct BuiltSource {
  std::unique_ptr<ArrivalSource> source;
  bool finite = false;
  StreamSize size;         // estimated from the spec (and a trace's contents), never by reading
  std::size_t leaves = 1;  // sources that are not sums (at most limits::kMaxStreams)
};

// Builds the source described by a `workload.source` map (docs/workloads.md): `kind` is
// trace, poisson, gamma, deterministic, ramp or sum, and each kind has its own fields.
// Unknown fields and bad values are SpecErrors naming the YAML file and field path;
// problems inside a trace file name that file, line and column. The same node and seed
// always build the same stream.
BuiltSource build_source(const SpecNode& node, uint64_t seed);

}  // namespace tessera
