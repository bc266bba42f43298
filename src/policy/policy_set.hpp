#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/time.hpp"
#include "engine/app.hpp"
#include "engine/policies.hpp"
#include "policy/batching.hpp"
#include "policy/dispatch.hpp"
#include "policy/dropping.hpp"
#include "policy/jigsaw_dropping.hpp"
#include "policy/pard/pard_settings.hpp"
#include "policy/policy_kinds.hpp"
#include "policy/slack_policies.hpp"
#include "policy/variant_choice.hpp"

namespace tessera {

class SpecNode;

// The runtime policy of a run: one choice per policy family (policy/registry.hpp has the
// rows: names, parameters, factories). Families combine freely; a preset names a published
// system or ablation and sets every family for it.
struct PolicyConfig {
  std::string preset;  // the preset this started from ("clipper+:VARIANT"), "" if none
  DispatchKind dispatch = DispatchKind::kRoundRobin;
  QueueKind queue = QueueKind::kFifo;
  BatchingKind batching = BatchingKind::kEager;
  Time batch_timeout = 0.010;  // timeout batching's bound on the oldest wait (jigsaw: when
                               // the deployment sets none)
  DroppingKind dropping = DroppingKind::kNone;
  Time stale_after = 0.020;  // jigsaw dropping: staleness threshold past the timeout
  // jigsaw dropping: when the stale rule applies. kQueued (the paper): an item picked up
  // by no instance within its timeout + stale_after is purged from the queue. kAtPickup
  // (tessera's earlier rule): checked when an instance picks the item up.
  JigsawDropping::StaleRule stale_rule = JigsawDropping::StaleRule::kQueued;
  VariantKind variant = VariantKind::kFixed;
  SlackSettings slack;        // settings of the slack-driven variant policies
  std::size_t max_queue = 0;  // per-worker queue bound; 0 = unbounded
  // A drop cancels the request's other items (EngineOptions::cancel_siblings_on_drop).
  bool cancel_siblings = true;
  PardSettings pard;  // State Planner and Request Broker settings

  // One line such as "preset=pard dispatch=round_robin queue=adaptive ...".
  std::string describe() const;
};

// The spec names of a stale rule: "queued", "at_pickup".
std::string_view stale_rule_name(JigsawDropping::StaleRule rule);

// Why a policy combination cannot run (the field to blame and the problem), if it cannot.
struct PolicyConfigError {
  std::string field;
  std::string message;
};
std::optional<PolicyConfigError> policy_config_error(const PolicyConfig& config);

// Reads the `policies:` section of a run spec: the preset's config (presets.hpp), then
// every other field over it. Unknown names and combinations that cannot run are spec
// errors naming the field. With `preset`, the section is read as if its `preset:` field
// named that one (tessera compare --presets); a bad preset name then throws
// std::invalid_argument.
PolicyConfig parse_policy_config(const SpecNode& node,
                                 const std::optional<std::string>& preset = std::nullopt);
// The fields of a `policies:` section other than `preset`, in the section's order: what
// a run spec fixes for every preset compared on it.
std::vector<std::string> policy_overrides(const SpecNode& node);
// Checks what a parsed policy names against the application (a clipper+ variant must be
// a variant of some task), failing on `node`'s field that named it.
void check_policy_for_app(const SpecNode& node, const PolicyConfig& config, const App& app);

class PolicySet {
 public:
  explicit PolicySet(PolicyConfig config);
  const PolicyConfig& config() const { return config_; }
  // Fresh policy objects for one engine running `app` (with the config's max_queue).
  EnginePolicies instantiate(const App& app, uint64_t seed) const;

 private:
  PolicyConfig config_;
};

}  // namespace tessera
