#include "policy/policy_set.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "policy/budget_queue.hpp"
#include "policy/fifo_queue.hpp"
#include "policy/pard/request_broker.hpp"
#include "policy/pard/state_planner.hpp"
#include "policy/split_budget.hpp"
#include "spec/spec_node.hpp"

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
  if (auto n = node.get("queue_window_s")) s.queue_window = n->as_positive();
  if (auto n = node.get("samples")) {
    const auto m = n->as_integer();
    if (m < 1 || m > 10'000'000) n->fail("must be between 1 and 10000000");
    s.samples = static_cast<int>(m);
  }
  if (auto n = node.get("sync_period_s")) s.sync_period = n->as_positive();
  if (auto n = node.get("hysteresis")) s.hysteresis = n->as_bool();
  if (auto n = node.get("rate_window_s")) s.rate_window = n->as_positive();
  return s;
}

}  // namespace

std::string PolicyConfig::describe() const {
  std::string out;
  if (!preset.empty()) out += "preset=" + preset + " ";
  out += "dispatch=" + dispatch + " queue=" + queue + " batching=" + batching;
  if (batching == "timeout") out += fmt::format("({:g}ms)", to_ms(batch_timeout));
  out += " dropping=" + dropping;
  if (dropping == "pard") {
    out += fmt::format("(estimate={} lambda={:g})", estimate_name(pard.estimate), pard.lambda);
  }
  if (queue == "adaptive" && !pard.hysteresis) out += " hysteresis=off";
  out += " variant=" + variant;
  if (max_queue > 0) out += " max_queue=" + std::to_string(max_queue);
  return out;
}

const std::vector<std::string>& policy_presets() {
  static const std::vector<std::string> names = {
      "naive",    "nexus",      "clipper++",  "pard",      "pard-back", "pard-sf",  "pard-split",
      "pard-wcl", "pard-lower", "pard-upper", "pard-fcfs", "pard-hbf",  "pard-lbf", "pard-instant"};
  return names;
}

PolicyConfig preset_config(const std::string& name) {
  PolicyConfig c;
  c.preset = name;
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
  } else {
    std::string list;
    for (const auto& p : policy_presets()) list += (list.empty() ? "" : ", ") + p;
    throw std::invalid_argument("unknown policy preset '" + name + "' (expected one of: " + list +
                                ")");
  }
  return c;
}

PolicyConfig parse_policy_config(const SpecNode& node) {
  node.allow_only(
      {"preset", "dispatch", "queue", "batching", "dropping", "variant", "max_queue", "pard"});
  PolicyConfig config;
  if (auto n = node.get("preset")) {
    try {
      config = preset_config(n->as_string());
    } catch (const std::invalid_argument& e) {
      n->fail(e.what());
    }
  }
  if (auto n = node.get("dispatch"))
    config.dispatch = n->as_choice({"round_robin", "least_loaded"});
  if (auto n = node.get("queue")) {
    config.queue = n->as_choice({"fifo", "edf", "lbf", "hbf", "adaptive"});
    if (config.queue == "edf") config.queue = "lbf";
  }
  if (auto n = node.get("dropping")) {
    config.dropping = n->as_choice({"none", "expired", "pard", "split", "split_wcl"});
  }
  if (auto n = node.get("variant")) config.variant = n->as_choice({"fixed"});
  if (auto n = node.get("max_queue")) {
    auto v = n->as_integer();
    if (v < 0) n->fail("must not be negative");
    config.max_queue = static_cast<std::size_t>(v);
  }
  if (auto n = node.get("batching")) {
    if (n->is_scalar()) {
      config.batching = n->as_choice({"eager", "timeout"});
    } else {
      n->allow_only({"kind", "timeout_ms"});
      config.batching = n->at("kind").as_choice({"eager", "timeout"});
      if (auto t = n->get("timeout_ms")) {
        if (config.batching != "timeout") t->fail("only timeout batching takes a timeout");
        config.batch_timeout = from_ms(t->as_non_negative());
      }
    }
  }
  if (auto n = node.get("pard")) config.pard = parse_pard_settings(*n, config.pard);
  return config;
}

PolicySet::PolicySet(PolicyConfig config) : config_(std::move(config)) {}

EnginePolicies PolicySet::instantiate(const App& app, uint64_t seed) const {
  const PolicyConfig& c = config_;
  EnginePolicies out;
  out.batching =
      c.batching == "timeout"
          ? std::unique_ptr<BatchingPolicy>(std::make_unique<TimeoutBatching>(c.batch_timeout))
          : std::make_unique<EagerBatching>();
  out.variant = std::make_unique<FixedVariant>();

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

  if (c.dispatch == "least_loaded") {
    out.make_dispatcher = [](TaskId) { return std::make_unique<LeastLoadedDispatcher>(); };
  } else if (c.dispatch == "round_robin") {
    out.make_dispatcher = [](TaskId) { return std::make_unique<RoundRobinDispatcher>(); };
  } else {
    throw std::invalid_argument("unknown dispatch policy: " + c.dispatch);
  }
  return out;
}

}  // namespace tessera
