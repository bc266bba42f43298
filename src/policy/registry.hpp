#pragma once

// The policy registry: one row per runtime policy per family (dispatch, queue, batching,
// dropping, variant), in the order the spec's error messages and docs list them. A row
// holds the policy's spec name (and aliases), a one-line summary, the typed parameters it
// takes (each parses its spec field into PolicyConfig, with errors naming the field),
// whether it runs or reads PARD's State Planner, the "(...)" it adds to
// PolicyConfig::describe(), a check of the combination, and the factory that installs the
// policy's objects into an engine's EnginePolicies. Parsing (parse_policy_config),
// describing, checking and instantiating (PolicySet) all read these tables, so a policy is
// added in one place (docs/architecture.md, "To add a policy"). Presets are the rows of
// policy/presets.hpp. Immutable after first use; safe to read from any thread.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/app.hpp"
#include "engine/policies.hpp"
#include "policy/policy_kinds.hpp"

namespace tessera {

class SpecNode;
class StatePlanner;
struct PolicyConfig;
struct PolicyConfigError;

// What a factory builds from: the run's config, the application, and PARD's State
// Planner when a chosen row runs or reads it (null otherwise).
struct PolicyContext {
  const PolicyConfig& config;
  const App& app;
  const std::shared_ptr<StatePlanner>& planner;
};

// A parameter a policy takes besides its name.
struct PolicyParameter {
  std::string_view key;  // its spec field: "timeout_ms"
  std::string_view
      what;  // for errors: "a timeout" ("only timeout and jigsaw batching take a timeout")
  // Reads `node` (the field) into `config`; fails on `node` for a bad value.
  void (*parse)(const SpecNode& node, PolicyConfig& config);
  // Whether `config` holds a value other than the default, for the combination check of
  // configs built without the parser (a value only another policy takes is an error);
  // nullptr: not checked.
  bool (*is_set)(const PolicyConfig& config) = nullptr;
};

template <typename Kind>
struct PolicyRow {
  Kind kind;
  std::string_view name;
  std::string_view summary;
  std::vector<std::string_view> aliases;           // other spec names: edf for lbf
  std::vector<const PolicyParameter*> parameters;  // the parameters it takes
  // dropping: runs PARD's State Planner (and so can drive adaptive queues);
  // queue: reads the State Planner (needs a dropping row that runs it).
  bool state_planner = false;
  // The "(...)" describe() adds after the name; nullptr: nothing.
  std::string (*describe)(const PolicyConfig& config) = nullptr;
  // Why the config cannot run with this row, if it cannot; nullptr: always can.
  std::optional<PolicyConfigError> (*check)(const PolicyConfig& config) = nullptr;
  // Puts the policy's objects into `out`.
  void (*install)(const PolicyContext& context, EnginePolicies& out) = nullptr;
};

template <typename Kind>
struct PolicyFamily {
  std::string_view field;  // the spec field: "batching"
  std::string_view noun;   // after the names in errors: "batching" ("" for variant)
  // Where the rows' parameters are written: inside the family's map ({kind, timeout_ms}),
  // or beside it in the policies section (dropping's stale_ms, stale_rule).
  bool parameters_beside = false;
  std::vector<PolicyRow<Kind>> rows;

  const PolicyRow<Kind>& row(Kind kind) const;
  // The row named `name` or one of its aliases; nullptr when none.
  const PolicyRow<Kind>* find(std::string_view name) const;
  // The spec names, aliases after their row's name, for as_choice.
  std::vector<std::string> choices() const;
  // Every parameter some row takes, each once, in row order.
  std::vector<const PolicyParameter*> parameters() const;
  // "only timeout and jigsaw batching take a timeout".
  std::string only_message(const PolicyParameter& parameter) const;
};

const PolicyFamily<DispatchKind>& dispatch_policies();
const PolicyFamily<QueueKind>& queue_policies();
const PolicyFamily<BatchingKind>& batching_policies();
const PolicyFamily<DroppingKind>& dropping_policies();
const PolicyFamily<VariantKind>& variant_policies();

// Whether the config runs PARD's State Planner (its dropping row does).
bool runs_state_planner(const PolicyConfig& config);

}  // namespace tessera
