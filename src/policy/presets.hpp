#pragma once

// The named policy presets, in one table: each row is a published system, baseline or
// ablation (name, family, the parameter it takes, a one-line description, and the factory
// that fills a PolicyConfig and validates the parameter). policy_presets(), preset_config()
// and the docs' preset list all read this table. Immutable; safe to read from any thread.

#include <string>
#include <vector>

#include "policy/policy_set.hpp"

namespace tessera {

struct PresetInfo {
  std::string name;         // "pard", "clipper+"
  std::string family;       // "pard", "superserve", "jigsawserve"
  std::string parameter;    // the text after "name:", e.g. "VARIANT"; empty: takes none
  bool parameter_required;  // clipper+ must name its variant
  bool listed;              // part of its family's list (not clipper+, which needs a variant)
  std::string description;
  // Fills `config` for this preset with `param` (empty when none was given); throws
  // std::invalid_argument naming the preset and the expected form for a bad parameter.
  void (*configure)(PolicyConfig& config, const std::string& spec, const std::string& param);
};

const std::vector<PresetInfo>& preset_table();
// The row named `name` (the part before any colon), or nullptr.
const PresetInfo* find_preset(const std::string& name);

}  // namespace tessera
