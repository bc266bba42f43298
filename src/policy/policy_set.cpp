#include "policy/policy_set.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "core/spec_node.hpp"
#include "policy/budget_queue.hpp"
#include "policy/fifo_queue.hpp"
#include "policy/jigsaw_dropping.hpp"
#include "policy/pard/request_broker.hpp"
#include "policy/pard/state_planner.hpp"
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

PardSettings parse_pard_settings(const SpecNode& node, PardSettings s) {
  node.allow_only({"estimate", "lambda", "queue_window_s", "samples", "sync_period_s", "hysteresis",
                   "rate_window_s"});
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

// A preset's numeric parameter: the whole text must be a finite number in [lo, hi].
double preset_number(const std::string& spec, const std::string& param, double lo, double hi,
                     const char* form) {
  double value = 0;
  const char* end = param.data() + param.size();
  auto [ptr, ec] = std::from_chars(param.data(), end, value);
  if (param.empty() || ec != std::errc() || ptr != end || !std::isfinite(value) || value < lo ||
      value > hi) {
    throw std::invalid_argument(fmt::format(
        "bad parameter in preset '{}' ({}: a number in [{}, {}])", printable(spec), form, lo, hi));
  }
  return value;
}

}  // namespace

std::string PolicyConfig::describe() const {
  std::string out;
  if (!preset.empty()) out += "preset=" + preset + " ";
  out += "dispatch=" + dispatch + " queue=" + queue + " batching=" + batching;
  if (batching == "timeout") out += fmt::format("({:g}ms)", to_ms(batch_timeout));
  out += " dropping=" + dropping;
  if (dropping == "jigsaw") out += fmt::format("(stale={:g}ms)", to_ms(stale_after));
  if (dropping == "pard") {
    out += fmt::format("(estimate={} lambda={:g})", estimate_name(pard.estimate), pard.lambda);
  }
  if (queue == "adaptive" && !pard.hysteresis) out += " hysteresis=off";
  out += " variant=" + variant;
  if (variant == "slackfit") out += fmt::format("(buckets={})", slack.buckets);
  if (variant == "infaas" && slack.accuracy_floor > 0)
    out += fmt::format("(floor={:g})", slack.accuracy_floor);
  if (variant == "clipper+") out += "(" + slack.fixed_variant + ")";
  if (max_queue > 0) out += " max_queue=" + std::to_string(max_queue);
  if (!cancel_siblings) out += " cancel_siblings=off";
  return out;
}

const std::vector<std::string>& policy_presets(const std::string& family) {
  static const std::vector<std::string> pard = {
      "naive",    "nexus",      "clipper++",  "pard",      "pard-back", "pard-sf",  "pard-split",
      "pard-wcl", "pard-lower", "pard-upper", "pard-fcfs", "pard-hbf",  "pard-lbf", "pard-instant"};
  // clipper+ needs the variant it serves ("clipper+:VARIANT"), so it is not in the family.
  static const std::vector<std::string> superserve = {"slackfit", "maxbatch", "maxacc", "infaas"};
  static const std::vector<std::string> all = [] {
    std::vector<std::string> v = pard;
    v.insert(v.end(), superserve.begin(), superserve.end());
    v.push_back("clipper+:VARIANT");
    v.push_back("jigsawserve");
    return v;
  }();
  if (family == "pard") return pard;
  if (family == "superserve") return superserve;
  if (family.empty()) return all;
  throw std::invalid_argument("unknown preset family '" + family + "' (pard, superserve)");
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
  // slackfit:BUCKETS.
  const auto colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const std::string param = colon == std::string::npos ? "" : spec.substr(colon + 1);
  const bool takes_param =
      name == "jigsawserve" || name == "slackfit" || name == "infaas" || name == "clipper+";
  const auto& known = policy_presets("");
  if (colon != std::string::npos && !takes_param &&
      std::find(known.begin(), known.end(), name) != known.end()) {
    throw std::invalid_argument("preset '" + printable(name) + "' takes no parameter (found '" +
                                printable(spec) + "')");
  }
  PolicyConfig c;
  c.preset = spec;
  // Every preset batches the same way (PARD §4.2: form the next batch while one runs).
  auto pard = [&](const std::string& queue) {
    c.queue = queue;
    c.dropping = "pard";
  };
  if (name == "naive") {
    c.queue = "fifo";
    c.dropping = "none";
  } else if (name == "nexus") {  // reactive: Eq. 3b with L_sub = 0, in arrival order
    pard("fifo");
    c.pard.estimate = DownstreamEstimate::kBackward;
  } else if (name == "clipper++") {  // SLO split in proportion to execution time, FIFO
    c.queue = "fifo";
    c.dropping = "split";
  } else if (name == "pard") {
    pard("adaptive");
  } else if (name == "pard-back") {
    pard("adaptive");
    c.pard.estimate = DownstreamEstimate::kBackward;
  } else if (name == "pard-sf") {
    pard("adaptive");
    c.pard.estimate = DownstreamEstimate::kServiceOnly;
  } else if (name == "pard-split") {
    c.queue = "adaptive";
    c.dropping = "split";
  } else if (name == "pard-wcl") {
    c.queue = "adaptive";
    c.dropping = "split_wcl";
  } else if (name == "pard-lower") {
    pard("adaptive");
    c.pard.lambda = 0.0;
  } else if (name == "pard-upper") {
    pard("adaptive");
    c.pard.lambda = 1.0;
  } else if (name == "pard-fcfs") {
    pard("fifo");
  } else if (name == "pard-hbf") {
    pard("hbf");
  } else if (name == "pard-lbf") {
    pard("lbf");
  } else if (name == "pard-instant") {
    pard("adaptive");
    c.pard.hysteresis = false;
  } else if (name == "jigsawserve") {
    // JigsawServe's data plane (§3.3): one queue per task that its instances pull from,
    // batches bounded by the planner's Lhat(t), early and stale dropping.
    c.dispatch = "central";
    c.queue = "fifo";
    c.batching = "jigsaw";
    c.dropping = "jigsaw";
    if (colon != std::string::npos) {
      c.stale_after =
          from_ms(preset_number(spec, param, 0.0, limits::kMaxMs, "jigsawserve:STALE_MS"));
    }
  } else if (name == "slackfit" || name == "maxbatch" || name == "maxacc" || name == "infaas" ||
             name == "clipper+") {
    // SuperServe's router: one earliest-deadline-first queue per task, served by idle workers.
    c.dispatch = "central";
    c.queue = "lbf";
    c.batching = "idle";
    c.dropping = "expired";
    c.variant = name;
    const bool has_param = colon != std::string::npos;
    if (name == "clipper+") c.slack.fixed_variant = param;
    if (name == "infaas" && has_param) {
      c.slack.accuracy_floor = preset_number(spec, param, 0.0, 1.0, "infaas:FLOOR");
    }
    if (name == "slackfit" && has_param) {
      const double buckets = preset_number(spec, param, 1, 10000, "slackfit:BUCKETS");
      if (buckets != std::floor(buckets)) {
        throw std::invalid_argument("bad parameter in preset '" + printable(spec) +
                                    "' (slackfit:BUCKETS: an integer in [1, 10000])");
      }
      c.slack.buckets = static_cast<int>(buckets);
    }
    if (name == "clipper+" && param.empty()) {
      throw std::invalid_argument("preset clipper+ names the variant it serves: clipper+:VARIANT");
    }
  } else {
    std::string list;
    for (const auto& p : policy_presets("")) list += (list.empty() ? "" : ", ") + p;
    throw std::invalid_argument("unknown policy preset '" + printable(name) +
                                "' (expected one of: " + list + ")");
  }
  return c;
}

PolicyConfig parse_policy_config(const SpecNode& node) {
  node.allow_only({"preset", "dispatch", "queue", "batching", "dropping", "stale_ms", "variant",
                   "max_queue", "pard", "cancel_siblings"});
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
    config.dropping = n->as_choice({"none", "expired", "pard", "split", "split_wcl", "jigsaw"});
  }
  if (auto n = node.get("stale_ms")) {
    if (config.dropping != "jigsaw") n->fail("only jigsaw dropping takes a staleness threshold");
    config.stale_after = from_ms(n->as_ms());
  }
  if (auto n = node.get("variant")) {
    const SpecNode kind = n->is_scalar() ? *n : n->at("kind");
    config.variant =
        kind.as_choice({"fixed", "slackfit", "maxbatch", "maxacc", "infaas", "clipper+"});
    if (!n->is_scalar()) {
      n->allow_only({"kind", "buckets", "accuracy_floor", "variant"});
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
    out.variant = std::make_unique<SlackFit>(app, c.slack.buckets);
  } else if (c.variant == "maxbatch") {
    out.variant = std::make_unique<MaxBatch>(app);
  } else if (c.variant == "maxacc") {
    out.variant = std::make_unique<MaxAcc>(app);
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
  const bool needs_planner = c.queue == "adaptive" || c.dropping == "pard" ||
                             c.dropping == "split" || c.dropping == "split_wcl";
  if (needs_planner) planner = std::make_shared<StatePlanner>(app, c.pard, seed ^ 0x5eedULL);

  if (c.dropping == "pard") {
    out.dropping = std::make_unique<RequestBroker>(planner);
  } else if (c.dropping == "split" || c.dropping == "split_wcl") {
    out.dropping = std::make_unique<SplitBudgetDropping>(planner, c.dropping == "split_wcl");
  } else if (c.dropping == "expired") {
    out.dropping = std::make_unique<DropExpired>();
  } else if (c.dropping == "jigsaw") {
    out.dropping = std::make_unique<JigsawDropping>(app, c.stale_after, c.batch_timeout);
  } else if (c.dropping == "none") {
    out.dropping = std::make_unique<NoDropping>();
  } else {
    throw std::invalid_argument("unknown dropping policy: " + c.dropping);
  }
  if (c.queue == "adaptive" && c.dropping != "pard" && c.dropping != "split" &&
      c.dropping != "split_wcl") {
    throw std::invalid_argument(
        "queue 'adaptive' needs a dropping policy that runs the State "
        "Planner (pard, split or split_wcl)");
  }

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
