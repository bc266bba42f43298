#include "policy/registry.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/spec_node.hpp"
#include "policy/batching.hpp"
#include "policy/budget_queue.hpp"
#include "policy/dispatch.hpp"
#include "policy/dropping.hpp"
#include "policy/fifo_queue.hpp"
#include "policy/jigsaw_dropping.hpp"
#include "policy/pard/request_broker.hpp"
#include "policy/pard/state_planner.hpp"
#include "policy/policy_set.hpp"
#include "policy/slack_policies.hpp"
#include "policy/spec_choice.hpp"
#include "policy/split_budget.hpp"
#include "policy/variant_choice.hpp"

namespace tessera {

template <typename Kind>
const PolicyRow<Kind>& PolicyFamily<Kind>::row(Kind kind) const {
  for (const PolicyRow<Kind>& r : rows) {
    if (r.kind == kind) return r;
  }
  throw std::logic_error(fmt::format("no {} policy row for kind {}", field,
                                     static_cast<int>(kind)));  // every enumerator has a row
}

template <typename Kind>
const PolicyRow<Kind>* PolicyFamily<Kind>::find(std::string_view name) const {
  for (const PolicyRow<Kind>& r : rows) {
    if (r.name == name) return &r;
    if (std::find(r.aliases.begin(), r.aliases.end(), name) != r.aliases.end()) return &r;
  }
  return nullptr;
}

template <typename Kind>
std::vector<std::string> PolicyFamily<Kind>::choices() const {
  std::vector<std::string> out;
  for (const PolicyRow<Kind>& r : rows) {
    out.emplace_back(r.name);
    for (std::string_view a : r.aliases) out.emplace_back(a);
  }
  return out;
}

template <typename Kind>
std::vector<const PolicyParameter*> PolicyFamily<Kind>::parameters() const {
  std::vector<const PolicyParameter*> out;
  for (const PolicyRow<Kind>& r : rows) {
    for (const PolicyParameter* p : r.parameters) {
      if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    }
  }
  return out;
}

template <typename Kind>
std::string PolicyFamily<Kind>::only_message(const PolicyParameter& parameter) const {
  std::vector<std::string_view> takers;
  for (const PolicyRow<Kind>& r : rows) {
    if (std::find(r.parameters.begin(), r.parameters.end(), &parameter) != r.parameters.end()) {
      takers.push_back(r.name);
    }
  }
  std::string names;
  for (std::size_t i = 0; i < takers.size(); ++i) {
    names += i == 0 ? "" : i + 1 == takers.size() ? " and " : ", ";
    names += takers[i];
  }
  return fmt::format("only {}{}{} {} {}", names, noun.empty() ? "" : " ", noun,
                     takers.size() == 1 ? "takes" : "take", parameter.what);
}

template struct PolicyFamily<DispatchKind>;
template struct PolicyFamily<QueueKind>;
template struct PolicyFamily<BatchingKind>;
template struct PolicyFamily<DroppingKind>;
template struct PolicyFamily<VariantKind>;

namespace {

// ---------------------------------------------------------------- parameters

const PolicyParameter kTimeout{"timeout_ms", "a timeout", [](const SpecNode& n, PolicyConfig& c) {
                                 c.batch_timeout = from_ms(n.as_ms());
                               }};

const PolicyParameter kStaleMs{
    "stale_ms", "a staleness threshold",
    [](const SpecNode& n, PolicyConfig& c) { c.stale_after = from_ms(n.as_ms()); },
    [](const PolicyConfig& c) { return c.stale_after != PolicyConfig{}.stale_after; }};

const PolicyParameter kStaleRule{
    "stale_rule", "a stale rule",
    [](const SpecNode& n, PolicyConfig& c) {
      using R = JigsawDropping::StaleRule;
      c.stale_rule = spec_enum<R>(n, {{"queued", R::kQueued}, {"at_pickup", R::kAtPickup}});
    },
    [](const PolicyConfig& c) { return c.stale_rule != PolicyConfig{}.stale_rule; }};

const PolicyParameter kBuckets{"buckets", "buckets", [](const SpecNode& n, PolicyConfig& c) {
                                 c.slack.buckets = static_cast<int>(n.as_integer_in(1, 10000));
                               }};

const PolicyParameter kAccuracyFloor{
    "accuracy_floor", "an accuracy floor",
    [](const SpecNode& n, PolicyConfig& c) { c.slack.accuracy_floor = n.as_number_in(0.0, 1.0); }};

const PolicyParameter kFixedVariant{
    "variant", "a fixed variant",
    [](const SpecNode& n, PolicyConfig& c) { c.slack.fixed_variant = n.as_string(); }};

const PolicyParameter kFallback{"fallback", "a fallback", [](const SpecNode& n, PolicyConfig& c) {
                                  c.slack.fallback =
                                      spec_enum<SlackFallback>(n, {{"drain", SlackFallback::kDrain},
                                                                   {"fit", SlackFallback::kFit},
                                                                   {"rate", SlackFallback::kRate}});
                                }};

// ---------------------------------------------------------------- factories

template <typename Policy>
void install_dispatcher(const PolicyContext&, EnginePolicies& out) {
  out.make_dispatcher = [](TaskId) { return std::make_unique<Policy>(); };
}

void install_budget_queue(EnginePolicies& out, const PriorityMode* mode) {
  out.make_queue = [mode](TaskId) { return std::make_unique<BudgetQueue>(mode); };
}

template <typename Policy>
void install_slack(const PolicyContext& x, EnginePolicies& out) {
  out.variant = std::make_unique<Policy>(x.app, x.config.slack.fallback);
}

void install_split(const PolicyContext& x, EnginePolicies& out, bool worst_case,
                   SplitBudgetDropping::SplitCheck check) {
  out.dropping = std::make_unique<SplitBudgetDropping>(x.planner, worst_case, check);
}

std::string pard_describe(const PolicyConfig& c) {
  static constexpr std::string_view kEstimate[] = {"full", "backward", "service"};
  return fmt::format("(estimate={} lambda={:g})", kEstimate[static_cast<int>(c.pard.estimate)],
                     c.pard.lambda);
}

}  // namespace

const PolicyFamily<DispatchKind>& dispatch_policies() {
  using K = DispatchKind;
  static const PolicyFamily<DispatchKind> family{
      "dispatch",
      "dispatch",
      false,
      {
          {K::kRoundRobin,
           "round_robin",
           "each task's instances in turn",
           {},
           {},
           false,
           nullptr,
           nullptr,
           install_dispatcher<RoundRobinDispatcher>},
          {K::kLeastLoaded,
           "least_loaded",
           "the instance with the fewest queued items",
           {},
           {},
           false,
           nullptr,
           nullptr,
           install_dispatcher<LeastLoadedDispatcher>},
          {K::kCentral,
           "central",
           "one queue per task, served by its idle instances (no per-instance queue)",
           {},
           {},
           false,
           nullptr,
           nullptr,
           [](const PolicyContext& x, EnginePolicies& out) {
             install_dispatcher<IdleFirstDispatcher>(x, out);
             out.shared_queue = true;
           }},
      }};
  return family;
}

const PolicyFamily<QueueKind>& queue_policies() {
  using K = QueueKind;
  static const PolicyFamily<QueueKind> family{
      "queue",
      "queue",
      false,
      {
          {K::kFifo,
           "fifo",
           "arrival order",
           {},
           {},
           false,
           nullptr,
           nullptr,
           [](const PolicyContext&, EnginePolicies& out) {
             out.make_queue = [](TaskId) { return std::make_unique<FifoQueue>(); };
           }},
          {K::kLbf,
           "lbf",
           "lowest remaining budget first (earliest deadline first)",
           {"edf"},
           {},
           false,
           nullptr,
           nullptr,
           [](const PolicyContext&, EnginePolicies& out) {
             install_budget_queue(out, &BudgetQueue::kAlwaysLbf);
           }},
          {K::kHbf,
           "hbf",
           "highest remaining budget first",
           {},
           {},
           false,
           nullptr,
           nullptr,
           [](const PolicyContext&, EnginePolicies& out) {
             install_budget_queue(out, &BudgetQueue::kAlwaysHbf);
           }},
          {K::kAdaptive,
           "adaptive",
           "PARD's switch between HBF and LBF per task",
           {},
           {},
           true,
           nullptr,
           [](const PolicyConfig& c) -> std::optional<PolicyConfigError> {
             if (runs_state_planner(c)) return std::nullopt;
             std::vector<std::string_view> runners;
             for (const auto& r : dropping_policies().rows) {
               if (r.state_planner) runners.push_back(r.name);
             }
             std::string names;
             for (std::size_t i = 0; i < runners.size(); ++i) {
               names += i == 0 ? "" : i + 1 == runners.size() ? " or " : ", ";
               names += runners[i];
             }
             return PolicyConfigError{
                 "queue", fmt::format("queue 'adaptive' needs a dropping policy that runs the "
                                      "State Planner ({}), not '{}'",
                                      names, policy_name(c.dropping))};
           },
           [](const PolicyContext& x, EnginePolicies& out) {
             out.make_queue = [planner = x.planner](TaskId task) {
               return std::make_unique<BudgetQueue>(planner->mode_ref(task));
             };
           }},
      }};
  return family;
}

const PolicyFamily<BatchingKind>& batching_policies() {
  using K = BatchingKind;
  static const PolicyFamily<BatchingKind> family{
      "batching",
      "batching",
      false,
      {
          {K::kEager,
           "eager",
           "start at once; the next batch forms while one runs",
           {},
           {},
           false,
           nullptr,
           nullptr,
           [](const PolicyContext&, EnginePolicies& out) {
             out.batching = std::make_unique<EagerBatching>();
           }},
          {K::kTimeout,
           "timeout",
           "start when full or the oldest item waited the timeout",
           {},
           {&kTimeout},
           false,
           [](const PolicyConfig& c) { return fmt::format("({:g}ms)", to_ms(c.batch_timeout)); },
           nullptr,
           [](const PolicyContext& x, EnginePolicies& out) {
             out.batching = std::make_unique<TimeoutBatching>(x.config.batch_timeout);
           }},
          {K::kIdle,
           "idle",
           "start only on an idle instance",
           {},
           {},
           false,
           nullptr,
           nullptr,
           [](const PolicyContext&, EnginePolicies& out) {
             out.batching = std::make_unique<IdleBatching>();
           }},
          {K::kJigsaw,
           "jigsaw",
           "timeout with the worker group's batch_timeout_ms (L-hat(t)); the next batch at once",
           {},
           {&kTimeout},
           false,
           nullptr,
           nullptr,
           [](const PolicyContext& x, EnginePolicies& out) {
             out.batching = std::make_unique<TimeoutBatching>(x.config.batch_timeout, true);
           }},
      }};
  return family;
}

const PolicyFamily<DroppingKind>& dropping_policies() {
  using K = DroppingKind;
  using Check = SplitBudgetDropping::SplitCheck;
  static const PolicyFamily<DroppingKind> family{
      "dropping",
      "dropping",
      true,
      {
          {K::kNone,
           "none",
           "nothing is dropped",
           {},
           {},
           false,
           nullptr,
           nullptr,
           [](const PolicyContext&, EnginePolicies& out) {
             out.dropping = std::make_unique<NoDropping>();
           }},
          {K::kExpired,
           "expired",
           "drops what has passed its deadline",
           {},
           {},
           false,
           nullptr,
           nullptr,
           [](const PolicyContext&, EnginePolicies& out) {
             out.dropping = std::make_unique<DropExpired>();
           }},
          {K::kInfeasible,
           "infeasible",
           "drops what can no longer meet its deadline",
           {},
           {},
           false,
           nullptr,
           nullptr,
           [](const PolicyContext&, EnginePolicies& out) {
             out.dropping = std::make_unique<DropInfeasible>();
           }},
          {K::kPard,
           "pard",
           "PARD's Request Broker (Eq. 3b)",
           {},
           {},
           true,
           pard_describe,
           nullptr,
           [](const PolicyContext& x, EnginePolicies& out) {
             out.dropping = std::make_unique<RequestBroker>(x.planner);
           }},
          {K::kSplit,
           "split",
           "per-stage budgets, predictive",
           {},
           {},
           true,
           nullptr,
           nullptr,
           [](const PolicyContext& x, EnginePolicies& out) {
             install_split(x, out, false, Check::kPredictive);
           }},
          {K::kSplitReactive,
           "split_reactive",
           "per-stage budgets, reactive (Clipper++)",
           {},
           {},
           true,
           nullptr,
           nullptr,
           [](const PolicyContext& x, EnginePolicies& out) {
             install_split(x, out, false, Check::kReactive);
           }},
          {K::kSplitWindow,
           "split_window",
           "per-stage budgets, Nexus's window scan",
           {},
           {},
           true,
           nullptr,
           nullptr,
           [](const PolicyContext& x, EnginePolicies& out) {
             install_split(x, out, false, Check::kWindow);
           }},
          {K::kSplitWcl,
           "split_wcl",
           "per-stage budgets by worst-case stage latency",
           {},
           {},
           true,
           nullptr,
           nullptr,
           [](const PolicyContext& x, EnginePolicies& out) {
             install_split(x, out, true, Check::kPredictive);
           }},
          {K::kJigsaw,
           "jigsaw",
           "JigsawServe's early and stale dropping",
           {},
           {&kStaleMs, &kStaleRule},
           false,
           [](const PolicyConfig& c) {
             return fmt::format("(stale={:g}ms {})", to_ms(c.stale_after),
                                stale_rule_name(c.stale_rule));
           },
           nullptr,
           [](const PolicyContext& x, EnginePolicies& out) {
             out.dropping = std::make_unique<JigsawDropping>(
                 x.app, x.config.stale_after, x.config.batch_timeout, x.config.stale_rule);
           }},
      }};
  return family;
}

const PolicyFamily<VariantKind>& variant_policies() {
  using K = VariantKind;
  static const PolicyFamily<VariantKind> family{
      "variant",
      "",
      false,
      {
          {K::kFixed,
           "fixed",
           "each worker group's first variant",
           {},
           {},
           false,
           nullptr,
           nullptr,
           [](const PolicyContext&, EnginePolicies& out) {
             out.variant = std::make_unique<FixedVariant>();
           }},
          {K::kSlackFit,
           "slackfit",
           "SuperServe's SlackFit",
           {},
           {&kBuckets, &kFallback},
           false,
           [](const PolicyConfig& c) { return fmt::format("(buckets={})", c.slack.buckets); },
           nullptr,
           [](const PolicyContext& x, EnginePolicies& out) {
             out.variant =
                 std::make_unique<SlackFit>(x.app, x.config.slack.buckets, x.config.slack.fallback);
           }},
          {K::kMaxBatch,
           "maxbatch",
           "the largest batch first, then accuracy",
           {},
           {&kFallback},
           false,
           nullptr,
           nullptr,
           install_slack<MaxBatch>},
          {K::kMaxAcc,
           "maxacc",
           "the highest accuracy first, then batch",
           {},
           {&kFallback},
           false,
           nullptr,
           nullptr,
           install_slack<MaxAcc>},
          {K::kInfaas,
           "infaas",
           "INFaaS: the cheapest variant meeting an accuracy floor",
           {},
           {&kAccuracyFloor},
           false,
           [](const PolicyConfig& c) {
             return c.slack.accuracy_floor > 0 ? fmt::format("(floor={:g})", c.slack.accuracy_floor)
                                               : std::string();
           },
           nullptr,
           [](const PolicyContext& x, EnginePolicies& out) {
             out.variant = std::make_unique<Infaas>(x.app, x.config.slack.accuracy_floor);
           }},
          {K::kClipperPlus,
           "clipper+",
           "Clipper+: one fixed variant, the largest batch that fits",
           {},
           {&kFixedVariant},
           false,
           [](const PolicyConfig& c) { return "(" + c.slack.fixed_variant + ")"; },
           [](const PolicyConfig& c) -> std::optional<PolicyConfigError> {
             if (!c.slack.fixed_variant.empty()) return std::nullopt;
             return PolicyConfigError{"variant",
                                      "clipper+ serves one variant: write variant: {kind: "
                                      "clipper+, variant: NAME}"};
           },
           [](const PolicyContext& x, EnginePolicies& out) {
             out.variant = std::make_unique<ClipperPlus>(x.app, x.config.slack.fixed_variant);
           }},
      }};
  return family;
}

bool runs_state_planner(const PolicyConfig& config) {
  return dropping_policies().row(config.dropping).state_planner;
}

std::string_view policy_name(DispatchKind kind) { return dispatch_policies().row(kind).name; }
std::string_view policy_name(QueueKind kind) { return queue_policies().row(kind).name; }
std::string_view policy_name(BatchingKind kind) { return batching_policies().row(kind).name; }
std::string_view policy_name(DroppingKind kind) { return dropping_policies().row(kind).name; }
std::string_view policy_name(VariantKind kind) { return variant_policies().row(kind).name; }

}  // namespace tessera
