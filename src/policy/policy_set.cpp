#include "policy/policy_set.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>

#include "core/spec_node.hpp"
#include "policy/budget_queue.hpp"
#include "policy/fifo_queue.hpp"
#include "policy/jigsaw_dropping.hpp"
#include "policy/pard/request_broker.hpp"
#include "policy/pard/state_planner.hpp"
#include "policy/presets.hpp"
#include "policy/split_budget.hpp"

namespace tessera {
namespace {

std::string estimate_name(DownstreamEstimate e) {
  switch (e) {
    case DownstreamEstimate::kFull:
      return "full";
    case DownstreamEstimate::kBackward:
      return "backward";
    case DownstreamEstimate::kServiceOnly:
      return "service";
  }
  return "?";
}

// The dropping policies that run PARD's State Planner (and so can drive adaptive queues).
bool runs_state_planner(const std::string& dropping) {
  return dropping == "pard" || dropping == "split" || dropping == "split_reactive" ||
         dropping == "split_window" || dropping == "split_wcl";
}

PardSettings parse_pard_settings(const SpecNode& node, PardSettings s) {
  node.allow_only({"estimate", "lambda", "queue_window_s", "samples", "sync_period_s", "hysteresis",
                   "rate_window_s", "backlog_queueing", "purge_hopeless"});
  if (auto n = node.get("estimate")) {
    const std::string e = n->as_choice({"full", "backward", "service"});
    s.estimate = e == "backward"  ? DownstreamEstimate::kBackward
                 : e == "service" ? DownstreamEstimate::kServiceOnly
                                  : DownstreamEstimate::kFull;
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

}  // namespace

std::string PolicyConfig::describe() const {
  std::string out;
  if (!preset.empty()) out += "preset=" + preset + " ";
  out += "dispatch=" + dispatch + " queue=" + queue + " batching=" + batching;
  if (batching == "timeout") out += fmt::format("({:g}ms)", to_ms(batch_timeout));
  out += " dropping=" + dropping;
  if (dropping == "jigsaw") {
    out += fmt::format("(stale={:g}ms {})", to_ms(stale_after), stale_rule);
  }
  if (dropping == "pard") {
    out += fmt::format("(estimate={} lambda={:g})", estimate_name(pard.estimate), pard.lambda);
  }
  if (queue == "adaptive" && !pard.hysteresis) out += " hysteresis=off";
  if (dropping == "pard" && !pard.purge_hopeless) out += " purge=off";
  if (runs_state_planner(dropping) && pard.backlog_queueing) out += " backlog_q=on";
  out += " variant=" + variant;
  if (variant == "slackfit") out += fmt::format("(buckets={})", slack.buckets);
  if (slack.fallback == SlackFallback::kFit) out += " fallback=fit";
  if (variant == "infaas" && slack.accuracy_floor > 0)
    out += fmt::format("(floor={:g})", slack.accuracy_floor);
  if (variant == "clipper+") out += "(" + slack.fixed_variant + ")";
  if (max_queue > 0) out += " max_queue=" + std::to_string(max_queue);
  if (!cancel_siblings) out += " cancel_siblings=off";
  return out;
}

const std::vector<std::string>& policy_presets(const std::string& family) {
  // Built once from the preset table, in its order.
  static const auto lists = [] {
    std::map<std::string, std::vector<std::string>> by_family;
    std::vector<std::string> all;
    for (const PresetInfo& p : preset_table()) {
      if (p.listed) by_family[p.family].push_back(p.name);
      all.push_back(p.parameter_required ? p.name + ":" + p.parameter : p.name);
    }
    by_family[""] = all;
    return by_family;
  }();
  const auto it = lists.find(family);
  if (it == lists.end() || (family != "" && family != "pard" && family != "superserve")) {
    throw std::invalid_argument("unknown preset family '" + printable(family) +
                                "' (pard, superserve)");
  }
  return it->second;
}

std::vector<std::string> expand_presets(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& n : names) {
    if (n == "pard-all" || n == "superserve") {
      const auto& family = policy_presets(n == "superserve" ? "superserve" : "pard");
      out.insert(out.end(), family.begin(), family.end());
    } else {
      out.push_back(n);
    }
  }
  return out;
}

PolicyConfig preset_config(const std::string& spec) {
  // A preset may carry one parameter after a colon: clipper+:VARIANT, infaas:FLOOR,
  // slackfit:BUCKETS, jigsawserve:STALE_MS (the table says which).
  const auto colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const std::string param = colon == std::string::npos ? "" : spec.substr(colon + 1);
  const PresetInfo* preset = find_preset(name);
  if (preset == nullptr) {
    std::string list;
    for (const auto& p : policy_presets("")) list += (list.empty() ? "" : ", ") + p;
    throw std::invalid_argument("unknown policy preset '" + printable(name) +
                                "' (expected one of: " + list + ")");
  }
  if (colon != std::string::npos && preset->parameter.empty()) {
    throw std::invalid_argument("preset '" + printable(name) + "' takes no parameter (found '" +
                                printable(spec) + "')");
  }
  if (colon != std::string::npos && param.empty()) {
    throw std::invalid_argument("bad parameter in preset '" + printable(spec) + "' (" + name + ":" +
                                preset->parameter + ": the parameter is empty)");
  }
  if (preset->parameter_required && param.empty()) {
    throw std::invalid_argument("preset " + name + " needs its parameter: " + name + ":" +
                                preset->parameter);
  }
  PolicyConfig c;
  c.preset = spec;
  preset->configure(c, spec, param);
  return c;
}

std::optional<PolicyConfigError> policy_config_error(const PolicyConfig& c) {
  if (c.queue == "adaptive" && !runs_state_planner(c.dropping)) {
    return PolicyConfigError{"queue",
                             "queue 'adaptive' needs a dropping policy that runs the State "
                             "Planner (pard, split, split_reactive, split_window or split_wcl), "
                             "not '" +
                                 c.dropping + "'"};
  }
  if (c.variant == "clipper+" && c.slack.fixed_variant.empty()) {
    return PolicyConfigError{
        "variant", "clipper+ serves one variant: write variant: {kind: clipper+, variant: NAME}"};
  }
  if (c.dropping != "jigsaw" && c.stale_after != PolicyConfig{}.stale_after) {
    return PolicyConfigError{"stale_ms", "only jigsaw dropping takes a staleness threshold"};
  }
  if (c.dropping != "jigsaw" && c.stale_rule != PolicyConfig{}.stale_rule) {
    return PolicyConfigError{"stale_rule", "only jigsaw dropping takes a stale rule"};
  }
  return std::nullopt;
}

PolicyConfig parse_policy_config(const SpecNode& node) {
  node.allow_only({"preset", "dispatch", "queue", "batching", "dropping", "stale_ms", "stale_rule",
                   "variant", "max_queue", "pard", "cancel_siblings"});
  PolicyConfig config;
  if (auto n = node.get("preset")) {
    try {
      config = preset_config(n->as_string());
    } catch (const std::invalid_argument& e) {
      n->fail(e.what());
    }
  }
  if (auto n = node.get("dispatch")) {
    config.dispatch = n->as_choice({"round_robin", "least_loaded", "central"});
  }
  if (auto n = node.get("queue")) {
    config.queue = n->as_choice({"fifo", "edf", "lbf", "hbf", "adaptive"});
    if (config.queue == "edf") config.queue = "lbf";
  }
  if (auto n = node.get("dropping")) {
    config.dropping = n->as_choice({"none", "expired", "infeasible", "pard", "split",
                                    "split_reactive", "split_window", "split_wcl", "jigsaw"});
  }
  if (auto n = node.get("stale_ms")) {
    if (config.dropping != "jigsaw") n->fail("only jigsaw dropping takes a staleness threshold");
    config.stale_after = from_ms(n->as_ms());
  }
  if (auto n = node.get("stale_rule")) {
    if (config.dropping != "jigsaw") n->fail("only jigsaw dropping takes a stale rule");
    config.stale_rule = n->as_choice({"queued", "at_pickup"});
  }
  if (auto n = node.get("variant")) {
    const SpecNode kind = n->is_scalar() ? *n : n->at("kind");
    config.variant =
        kind.as_choice({"fixed", "slackfit", "maxbatch", "maxacc", "infaas", "clipper+"});
    if (!n->is_scalar()) {
      n->allow_only({"kind", "buckets", "accuracy_floor", "variant", "fallback"});
      if (auto b = n->get("buckets")) {
        if (config.variant != "slackfit") b->fail("only slackfit takes buckets");
        config.slack.buckets = static_cast<int>(b->as_integer_in(1, 10000));
      }
      if (auto f = n->get("accuracy_floor")) {
        if (config.variant != "infaas") f->fail("only infaas takes an accuracy floor");
        config.slack.accuracy_floor = f->as_number_in(0.0, 1.0);
      }
      if (auto v = n->get("variant")) {
        if (config.variant != "clipper+") v->fail("only clipper+ takes a fixed variant");
        config.slack.fixed_variant = v->as_string();
      }
      if (auto fb = n->get("fallback")) {
        if (config.variant != "slackfit" && config.variant != "maxbatch" &&
            config.variant != "maxacc") {
          fb->fail("only slackfit, maxbatch and maxacc take a fallback");
        }
        config.slack.fallback =
            fb->as_choice({"drain", "fit"}) == "fit" ? SlackFallback::kFit : SlackFallback::kDrain;
      }
    }
    if (config.variant == "clipper+" && config.slack.fixed_variant.empty()) {
      n->fail("clipper+ serves one variant: write variant: {kind: clipper+, variant: NAME}");
    }
  }
  if (auto n = node.get("max_queue")) {
    config.max_queue = static_cast<std::size_t>(n->as_integer_in(0, INT32_MAX));
  }
  if (auto n = node.get("batching")) {
    if (n->is_scalar()) {
      config.batching = n->as_choice({"eager", "timeout", "idle", "jigsaw"});
    } else {
      n->allow_only({"kind", "timeout_ms"});
      config.batching = n->at("kind").as_choice({"eager", "timeout", "idle", "jigsaw"});
      if (auto t = n->get("timeout_ms")) {
        if (config.batching != "timeout" && config.batching != "jigsaw")
          t->fail("only timeout and jigsaw batching take a timeout");
        config.batch_timeout = from_ms(t->as_ms());
      }
    }
  }
  if (auto n = node.get("pard")) config.pard = parse_pard_settings(*n, config.pard);
  if (auto n = node.get("cancel_siblings")) config.cancel_siblings = n->as_bool();
  // An invalid combination is an error here, naming the field, not an exception later.
  if (const auto error = policy_config_error(config)) {
    const auto field = node.get(error->field);
    if (field) field->fail(error->message);
    if (auto preset = node.get("preset")) preset->fail(error->message);
    node.fail(error->message);
  }
  return config;
}

void check_policy_for_app(const SpecNode& node, const PolicyConfig& config, const App& app) {
  if (config.variant != "clipper+") return;
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
  EnginePolicies out;
  out.max_queue = c.max_queue;
  if (c.batching == "timeout") {
    out.batching = std::make_unique<TimeoutBatching>(c.batch_timeout);
  } else if (c.batching == "jigsaw") {
    out.batching = std::make_unique<TimeoutBatching>(c.batch_timeout, true);
  } else if (c.batching == "idle") {
    out.batching = std::make_unique<IdleBatching>();
  } else if (c.batching == "eager") {
    out.batching = std::make_unique<EagerBatching>();
  } else {
    throw std::invalid_argument("unknown batching policy: " + c.batching);
  }

  if (c.variant == "fixed") {
    out.variant = std::make_unique<FixedVariant>();
  } else if (c.variant == "slackfit") {
    out.variant = std::make_unique<SlackFit>(app, c.slack.buckets, c.slack.fallback);
  } else if (c.variant == "maxbatch") {
    out.variant = std::make_unique<MaxBatch>(app, c.slack.fallback);
  } else if (c.variant == "maxacc") {
    out.variant = std::make_unique<MaxAcc>(app, c.slack.fallback);
  } else if (c.variant == "infaas") {
    out.variant = std::make_unique<Infaas>(app, c.slack.accuracy_floor);
  } else if (c.variant == "clipper+") {
    if (c.slack.fixed_variant.empty()) {
      throw std::invalid_argument(
          "clipper+ needs the variant it serves (variant: {kind: clipper+, variant: NAME})");
    }
    out.variant = std::make_unique<ClipperPlus>(app, c.slack.fixed_variant);
  } else {
    throw std::invalid_argument("unknown variant policy: " + c.variant);
  }

  // The State Planner exists when a policy reads pipeline state.
  std::shared_ptr<StatePlanner> planner;
  const bool needs_planner = c.queue == "adaptive" || runs_state_planner(c.dropping);
  if (needs_planner) planner = std::make_shared<StatePlanner>(app, c.pard, seed ^ 0x5eedULL);

  if (c.dropping == "pard") {
    out.dropping = std::make_unique<RequestBroker>(planner);
  } else if (c.dropping == "split" || c.dropping == "split_wcl") {
    out.dropping = std::make_unique<SplitBudgetDropping>(planner, c.dropping == "split_wcl");
  } else if (c.dropping == "split_reactive") {
    out.dropping = std::make_unique<SplitBudgetDropping>(
        planner, false, SplitBudgetDropping::SplitCheck::kReactive);
  } else if (c.dropping == "split_window") {
    out.dropping = std::make_unique<SplitBudgetDropping>(planner, false,
                                                         SplitBudgetDropping::SplitCheck::kWindow);
  } else if (c.dropping == "expired") {
    out.dropping = std::make_unique<DropExpired>();
  } else if (c.dropping == "infeasible") {
    out.dropping = std::make_unique<DropInfeasible>();
  } else if (c.dropping == "jigsaw") {
    out.dropping = std::make_unique<JigsawDropping>(app, c.stale_after, c.batch_timeout,
                                                    c.stale_rule == "at_pickup"
                                                        ? JigsawDropping::StaleRule::kAtPickup
                                                        : JigsawDropping::StaleRule::kQueued);
  } else if (c.dropping == "none") {
    out.dropping = std::make_unique<NoDropping>();
  } else {
    throw std::invalid_argument("unknown dropping policy: " + c.dropping);
  }
  if (const auto error = policy_config_error(c)) throw std::invalid_argument(error->message);

  if (c.queue == "fifo") {
    out.make_queue = [](TaskId) { return std::make_unique<FifoQueue>(); };
  } else if (c.queue == "lbf") {
    out.make_queue = [](TaskId) { return std::make_unique<BudgetQueue>(&BudgetQueue::kAlwaysLbf); };
  } else if (c.queue == "hbf") {
    out.make_queue = [](TaskId) { return std::make_unique<BudgetQueue>(&BudgetQueue::kAlwaysHbf); };
  } else if (c.queue == "adaptive") {
    out.make_queue = [planner](TaskId task) {
      return std::make_unique<BudgetQueue>(planner->mode_ref(task));
    };
  } else {
    throw std::invalid_argument("unknown queue policy: " + c.queue);
  }

  out.shared_queue = c.dispatch == "central";
  if (c.dispatch == "central") {
    out.make_dispatcher = [](TaskId) { return std::make_unique<IdleFirstDispatcher>(); };
  } else if (c.dispatch == "least_loaded") {
    out.make_dispatcher = [](TaskId) { return std::make_unique<LeastLoadedDispatcher>(); };
  } else if (c.dispatch == "round_robin") {
    out.make_dispatcher = [](TaskId) { return std::make_unique<RoundRobinDispatcher>(); };
  } else {
    throw std::invalid_argument("unknown dispatch policy: " + c.dispatch);
  }
  return out;
}

}  // namespace tessera
