#pragma once

// The named policy presets, in one table: each row is a published system, baseline or
// ablation and sets every policy family (dispatch, queue, batching, dropping, variant),
// plus the settings it tunes and the parameter it takes. `policies: {preset: X}` in a run
// spec and `tessera compare --presets X` both start from the row's config
// (preset_config), so they are the same system by construction; the run spec's other
// policy fields override it in both. policy_presets(), preset_config() and the docs'
// preset list all read this table. Immutable; safe to read from any thread.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/policy_set.hpp"

namespace tessera {

// The families of presets: the papers they come from.
enum class PresetFamily {
  kPard,         // "pard": PARD, its baselines and ablations
  kSuperServe,   // "superserve": SlackFit and the policies it is compared with
  kJigsawServe,  // "jigsawserve": JigsawServe's data plane
};
std::string_view preset_family_name(PresetFamily family);

struct PresetRow {
  std::string_view name;  // "pard", "clipper+"
  PresetFamily family;
  std::string_view parameter;  // the text after "name:", e.g. "VARIANT"; empty: takes none
  bool parameter_required;     // clipper+ must name its variant
  bool listed;                 // part of its family's list (not clipper+, which needs a variant)
  std::string_view description;
  DispatchKind dispatch;
  QueueKind queue;
  BatchingKind batching;
  DroppingKind dropping;
  VariantKind variant;
  // Settings beyond the families (PARD's estimate or λ, a fallback) and the parameter
  // (`param`, empty when none was given); throws std::invalid_argument naming the preset
  // and the expected form for a bad parameter. nullptr: none.
  void (*tune)(PolicyConfig& config, const std::string& spec, const std::string& param) = nullptr;
};

const std::vector<PresetRow>& preset_table();

// The listed presets of a family, in the order reports list them.
const std::vector<std::string>& policy_presets(PresetFamily family = PresetFamily::kPard);
// Every preset, "clipper+:VARIANT" for one that needs its parameter.
const std::vector<std::string>& all_presets();
// Expands the names of preset families in a list of presets ("pard-all" and "superserve"
// become their presets).
std::vector<std::string> expand_presets(const std::vector<std::string>& names);
// The config of a preset, optionally with one parameter: "clipper+:VARIANT",
// "infaas:FLOOR", "slackfit:BUCKETS", "jigsawserve:STALE_MS". Every family is the row's;
// the other settings are PolicyConfig's defaults unless the row tunes them. Throws
// std::invalid_argument (listing the presets) if unknown or the parameter is bad.
PolicyConfig preset_config(const std::string& spec);
// The row named `name` (the part before any colon), or nullptr.
const PresetRow* find_preset(std::string_view name);

}  // namespace tessera
