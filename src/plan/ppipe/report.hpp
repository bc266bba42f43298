#pragma once

// The readable form of a PPipe plan (docs/plan.md#ppipe-planner): per DNN its pipelines and
// partitions (block range, GPU class, vGPU size, vGPU count, latencies, throughput), the
// GPUs used per class, how the solve ended, and what the re-check found. Writes only to the
// stream it is given; safe to call from several threads on different streams.

#include <ostream>
#include <vector>

#include "plan/ppipe/planner.hpp"

namespace tessera::plan {

void print_ppipe_plan(std::ostream& out, const PpipeResult& result);
// Physical GPUs a plan uses per class of its cluster (whole GPUs per DNN, class and
// partition position, as the planner counts them).
std::vector<int> ppipe_gpus_used(const ppipe::PpipePlan& plan);
// One line per DNN: planned req/s under each plan (same DNNs, same order).
void print_ppipe_comparison(std::ostream& out, const std::vector<const ppipe::PpipePlan*>& plans);

}  // namespace tessera::plan
