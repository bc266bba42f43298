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
#include "policy/pard/pard_settings.hpp"
#include "policy/slack_policies.hpp"
#include "policy/variant_choice.hpp"

namespace tessera {

class SpecNode;

// The runtime policy of a run: one choice per policy family. Families combine freely; a
// preset names a published system or ablation and fills in the families for it.
struct PolicyConfig {
  std::string preset;                    // the preset this started from, "" if none
  std::string dispatch = "round_robin";  // round_robin | least_loaded | central
  std::string queue = "fifo";            // fifo | lbf (= edf) | hbf | adaptive
  std::string batching = "eager";        // eager | timeout | idle | jigsaw
  Time batch_timeout = 0.010;     // timeout batching's bound on the oldest wait (jigsaw: when
                                  // the deployment sets none)
  std::string dropping = "none";  // none | expired | pard | split | split_reactive |
                                  // split_window | split_wcl | jigsaw
  Time stale_after = 0.020;       // jigsaw dropping: staleness threshold past the timeout
  // jigsaw dropping: when the stale rule applies. "queued" (the paper): an item picked up
  // by no instance within its timeout + stale_after is purged from the queue. "at_pickup"
  // (tessera's earlier rule): checked when an instance picks the item up.
  std::string stale_rule = "queued";
  std::string variant = "fixed";  // fixed | slackfit | maxbatch | maxacc | infaas | clipper+
  SlackSettings slack;            // settings of the slack-driven variant policies
  std::size_t max_queue = 0;      // per-worker queue bound; 0 = unbounded
  // A drop cancels the request's other items (EngineOptions::cancel_siblings_on_drop).
  bool cancel_siblings = true;
  PardSettings pard;  // State Planner and Request Broker settings

  // One line such as "preset=pard dispatch=round_robin queue=adaptive ...".
  std::string describe() const;
};

// The presets of a family ("pard": PARD, its baselines and ablations; "superserve": SlackFit
// and the policies it is compared with), in the order reports list them; all of them for
// "". Throws std::invalid_argument for an unknown family.
const std::vector<std::string>& policy_presets(const std::string& family = "pard");
// Expands family names in a list of presets ("pard-all", "superserve" -> their presets).
std::vector<std::string> expand_presets(const std::vector<std::string>& names);
// The config of a preset, optionally with one parameter: "clipper+:VARIANT",
// "infaas:FLOOR", "slackfit:BUCKETS". Throws std::invalid_argument (listing the presets)
// if unknown.
PolicyConfig preset_config(const std::string& spec);

// Why a policy combination cannot run (the field to blame and the problem), if it cannot.
struct PolicyConfigError {
  std::string field;
  std::string message;
};
std::optional<PolicyConfigError> policy_config_error(const PolicyConfig& config);

// Reads the `policies:` section of a run spec. Unknown names are spec errors.
PolicyConfig parse_policy_config(const SpecNode& node);
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
