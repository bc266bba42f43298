#include "policy/policy_set.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/spec_node.hpp"
#include "policy/pard/state_planner.hpp"
#include "policy/presets.hpp"
#include "policy/registry.hpp"
#include "policy/spec_choice.hpp"

namespace tessera {
namespace {

PardSettings parse_pard_settings(const SpecNode& node, PardSettings s) {
  node.allow_only({"estimate", "lambda", "queue_window_s", "samples", "sync_period_s", "hysteresis",
                   "rate_window_s", "backlog_queueing", "purge_hopeless", "backlog_load",
                   "mode_period_s"});
  if (auto n = node.get("estimate")) {
    s.estimate = spec_enum<DownstreamEstimate>(*n, {{"full", DownstreamEstimate::kFull},
                                                    {"backward", DownstreamEstimate::kBackward},
                                                    {"service", DownstreamEstimate::kServiceOnly}});
  }
  if (auto n = node.get("lambda")) s.lambda = n->as_number_in(0.0, 1.0);
  if (auto n = node.get("queue_window_s")) {
    s.queue_window = n->as_number_in(limits::kMinPeriodS, limits::kMaxSpanS);
  }
  if (auto n = node.get("samples")) s.samples = static_cast<int>(n->as_integer_in(1, 1'000'000));
  if (auto n = node.get("sync_period_s")) {
    s.sync_period = n->as_number_in(limits::kMinPeriodS, 86'400.0);
  }
  if (auto n = node.get("hysteresis")) s.hysteresis = n->as_bool();
  if (auto n = node.get("backlog_queueing")) s.backlog_queueing = n->as_bool();
  if (auto n = node.get("purge_hopeless")) s.purge_hopeless = n->as_bool();
  if (auto n = node.get("backlog_load")) s.backlog_load = n->as_bool();
  if (auto n = node.get("mode_period_s")) s.mode_period = n->as_number_in(0.0, 86'400.0);
  if (auto n = node.get("rate_window_s")) {
    s.rate_window = n->as_number_in(limits::kMinPeriodS, limits::kMaxSpanS);
  }
  // The planner keeps rate_window_s / sync_period_s periods of history.
  if (s.rate_window / s.sync_period > 1e6) {
    node.fail(
        "rate_window_s / sync_period_s must be at most 1000000 (the periods of history kept)");
  }
  return s;
}

// The parameters of `family` that `holder` (the family's map, or the policies section for
// parameters written beside it: dropping's stale_ms, stale_rule) names, each checked
// against the row of `kind` ("only jigsaw dropping takes a staleness threshold").
template <typename Kind>
void parse_parameters(const SpecNode& holder, const PolicyFamily<Kind>& family, Kind kind,
                      PolicyConfig& config) {
  const PolicyRow<Kind>& row = family.row(kind);
  for (const PolicyParameter* p : family.parameters()) {
    const auto value = holder.get(p->key);
    if (!value) continue;
    if (std::find(row.parameters.begin(), row.parameters.end(), p) == row.parameters.end()) {
      value->fail(family.only_message(*p));
    }
    p->parse(*value, config);
  }
}

// The field `family.field` of a policies section: a name, or, for a family whose rows take
// parameters written inside it (batching, variant), a map {kind, parameters...}. Sets the family's
// kind in `config` and parses the parameters the chosen row takes.
template <typename Kind>
void parse_family(const SpecNode& node, const PolicyFamily<Kind>& family, Kind& kind,
                  PolicyConfig& config) {
  const bool as_map =
      !node.is_scalar() && !family.parameters_beside && !family.parameters().empty();
  const SpecNode name_node = as_map ? node.at("kind") : node;
  kind = family.find(spec_choice(name_node, family.choices()))->kind;
  if (!as_map) return;
  std::vector<std::string_view> keys{"kind"};
  for (const PolicyParameter* p : family.parameters()) keys.push_back(p->key);
  spec_allow_only(node, keys);
  parse_parameters(node, family, kind, config);
}

// A row's parameters that another row's config holds ("only jigsaw dropping takes a
// staleness threshold"), then the row's own check.
template <typename Kind>
std::optional<PolicyConfigError> family_error(const PolicyFamily<Kind>& family, Kind kind,
                                              const PolicyConfig& config) {
  const PolicyRow<Kind>& row = family.row(kind);
  for (const PolicyParameter* p : family.parameters()) {
    if (p->is_set == nullptr || !p->is_set(config)) continue;
    if (std::find(row.parameters.begin(), row.parameters.end(), p) == row.parameters.end()) {
      return PolicyConfigError{std::string(p->key), family.only_message(*p)};
    }
  }
  if (row.check != nullptr) return row.check(config);
  return std::nullopt;
}

template <typename Kind>
std::string describe_choice(const PolicyFamily<Kind>& family, Kind kind,
                            const PolicyConfig& config) {
  const PolicyRow<Kind>& row = family.row(kind);
  std::string out = std::string(family.field) + "=" + std::string(row.name);
  if (row.describe != nullptr) out += row.describe(config);
  return out;
}

}  // namespace

std::string_view stale_rule_name(JigsawDropping::StaleRule rule) {
  return rule == JigsawDropping::StaleRule::kAtPickup ? "at_pickup" : "queued";
}

std::string PolicyConfig::describe() const {
  std::string out;
  if (!preset.empty()) out += "preset=" + preset + " ";
  out += describe_choice(dispatch_policies(), dispatch, *this) + " ";
  out += describe_choice(queue_policies(), queue, *this) + " ";
  out += describe_choice(batching_policies(), batching, *this) + " ";
  out += describe_choice(dropping_policies(), dropping, *this);
  // Settings of PARD's State Planner and Request Broker that differ from the paper's.
  if (queue == QueueKind::kAdaptive && !pard.hysteresis) out += " hysteresis=off";
  if (dropping == DroppingKind::kPard && !pard.purge_hopeless) out += " purge=off";
  if (runs_state_planner(*this) && pard.backlog_queueing) out += " backlog_q=on";
  if (runs_state_planner(*this) && pard.backlog_load) out += " backlog_load=on";
  if (runs_state_planner(*this) && pard.mode_period > 0) {
    out += fmt::format(" mode_period={:g}s", pard.mode_period);
  }
  out += " " + describe_choice(variant_policies(), variant, *this);
  if (slack.fallback == SlackFallback::kFit) out += " fallback=fit";
  if (slack.fallback == SlackFallback::kRate) out += " fallback=rate";
  if (max_queue > 0) out += " max_queue=" + std::to_string(max_queue);
  if (!cancel_siblings) out += " cancel_siblings=off";
  return out;
}

std::optional<PolicyConfigError> policy_config_error(const PolicyConfig& c) {
  if (auto e = family_error(queue_policies(), c.queue, c)) return e;
  if (auto e = family_error(variant_policies(), c.variant, c)) return e;
  if (auto e = family_error(dispatch_policies(), c.dispatch, c)) return e;
  if (auto e = family_error(batching_policies(), c.batching, c)) return e;
  if (auto e = family_error(dropping_policies(), c.dropping, c)) return e;
  return std::nullopt;
}

PolicyConfig parse_policy_config(const SpecNode& node, const std::optional<std::string>& preset) {
  node.allow_only({"preset", "dispatch", "queue", "batching", "dropping", "stale_ms", "stale_rule",
                   "variant", "max_queue", "pard", "cancel_siblings"});
  PolicyConfig config;
  if (preset) {
    config = preset_config(*preset);
  } else if (auto n = node.get("preset")) {
    try {
      config = preset_config(n->as_string());
    } catch (const std::invalid_argument& e) {
      n->fail(e.what());
    }
  }
  if (auto n = node.get("dispatch")) parse_family(*n, dispatch_policies(), config.dispatch, config);
  if (auto n = node.get("queue")) parse_family(*n, queue_policies(), config.queue, config);
  if (auto n = node.get("dropping")) parse_family(*n, dropping_policies(), config.dropping, config);
  parse_parameters(node, dropping_policies(), config.dropping, config);
  if (auto n = node.get("variant")) parse_family(*n, variant_policies(), config.variant, config);
  if (auto n = node.get("max_queue")) {
    config.max_queue = static_cast<std::size_t>(n->as_integer_in(0, INT32_MAX));
  }
  if (auto n = node.get("batching")) parse_family(*n, batching_policies(), config.batching, config);
  if (auto n = node.get("pard")) config.pard = parse_pard_settings(*n, config.pard);
  if (auto n = node.get("cancel_siblings")) config.cancel_siblings = n->as_bool();
  // An invalid combination is an error here, naming the field, not an exception later.
  if (const auto error = policy_config_error(config)) {
    const auto field = node.get(error->field);
    if (field) field->fail(error->message);
    if (auto p = node.get("preset")) p->fail(error->message);
    node.fail(error->message);
  }
  return config;
}

std::vector<std::string> policy_overrides(const SpecNode& node) {
  std::vector<std::string> out;
  for (const auto& [key, value] : node.entries()) {
    if (key != "preset") out.push_back(key);
  }
  return out;
}

void check_policy_for_app(const SpecNode& node, const PolicyConfig& config, const App& app) {
  if (config.variant != VariantKind::kClipperPlus) return;
  for (const Task& task : app.tasks) {
    if (task.variant_index(config.slack.fixed_variant) >= 0) return;
  }
  const SpecNode where = node.has("variant")  ? node.at("variant")
                         : node.has("preset") ? node.at("preset")
                                              : node;
  where.fail("clipper+ serves variant '" + printable(config.slack.fixed_variant) +
             "', which is not a variant of any task of the application");
}

PolicySet::PolicySet(PolicyConfig config) : config_(std::move(config)) {}

EnginePolicies PolicySet::instantiate(const App& app, uint64_t seed) const {
  const PolicyConfig& c = config_;
  if (const auto error = policy_config_error(c)) throw std::invalid_argument(error->message);
  // The State Planner exists when a policy runs or reads it; the dropping policy and the
  // adaptive queues then share it.
  std::shared_ptr<StatePlanner> planner;
  if (runs_state_planner(c) || queue_policies().row(c.queue).state_planner) {
    planner = std::make_shared<StatePlanner>(app, c.pard, seed ^ 0x5eedULL);
  }
  const PolicyContext context{c, app, planner};
  EnginePolicies out;
  out.max_queue = c.max_queue;
  batching_policies().row(c.batching).install(context, out);
  variant_policies().row(c.variant).install(context, out);
  dropping_policies().row(c.dropping).install(context, out);
  queue_policies().row(c.queue).install(context, out);
  dispatch_policies().row(c.dispatch).install(context, out);
  return out;
}

}  // namespace tessera
