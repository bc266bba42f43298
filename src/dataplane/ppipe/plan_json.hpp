#pragma once

// plan.json for a PPipe plan (docs/plan.md#ppipe-planner): the one file the PPipe planner
// writes and the reservation data plane and simulator read. to_json() and plan_from_json()
// round-trip a ppipe::PpipePlan exactly (doubles as JSON numbers). plan_from_json() validates
// shape, types, ranges and consistency (contiguous block ranges from 0, GPU classes of the
// cluster, MPS levels within the class's limit, at least one vGPU per partition) and
// throws a SpecError naming the source, the field path (e.g.
// `dnns[0].pipelines[1].partitions[0].vgpus`) and the problem. Stateless free functions;
// safe to call from several threads.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "dataplane/ppipe/ppipe_plan.hpp"

namespace tessera::ppipe {

nlohmann::json to_json(const PpipePlan& plan);
// `source` names the input in errors (a file name, or "<inline>").
PpipePlan plan_from_json(const nlohmann::json& j, const std::string& source = "<inline>");

// Writes to_json(plan) (indented, newline-terminated); throws std::runtime_error when the
// file cannot be written.
void write_plan_file(const std::filesystem::path& file, const PpipePlan& plan);
// Reads and validates a plan.json; a missing file or a JSON syntax error is a SpecError too.
PpipePlan read_plan_file(const std::filesystem::path& file);

}  // namespace tessera::ppipe
