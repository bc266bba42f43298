#pragma once

// A picture of a plan's GPUs (plan.json's "layout"): one row per GPU across its memory
// slices; every MIG instance a box coloured by its task and labelled with its variant,
// batch size and MIG profile, split into its MPS shares. A variant name too long for its
// box is replaced by a key number, listed under the picture. SVG, no scripts.

#include <nlohmann/json.hpp>
#include <string>

#include "metrics/chart_style.hpp"

namespace tessera::report {

std::string render_plan_svg(const nlohmann::json& plan, Palette& palette, int width = 900);

}  // namespace tessera::report
