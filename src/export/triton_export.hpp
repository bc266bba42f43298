#pragma once

// `tessera export PLAN_DIR --to triton`: a Triton model repository for the plan, served
// by one Triton process that sees every GPU and MIG slice of the plan
// (docs/export.md#triton).
//
// Contract: writes OUT/<variant>/config.pbtxt and OUT/<variant>/1/ (model.pt, a copy of
// the TorchScript file, or model.py, the profile-timed emulation) for every deployed
// variant, and OUT/devices.json, the device order the instance groups' `gpus` indices
// refer to (plan GPU, MIG profile, start slice). Existing files of those names are
// replaced; nothing else in OUT is touched. Returns the variants written.

#include <filesystem>
#include <string>
#include <vector>

#include "export/plan_dir.hpp"

namespace tessera::exporter {

std::vector<std::string> write_triton_repository(const PlanDir& plan,
                                                 const std::filesystem::path& out);

}  // namespace tessera::exporter
