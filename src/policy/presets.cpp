#include "policy/presets.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <stdexcept>

#include "core/error.hpp"
#include "core/input_limits.hpp"

namespace tessera {
namespace {

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

// slackfit:BUCKETS and slackfit-early:BUCKETS: an integer number of buckets.
void buckets_parameter(PolicyConfig& c, const std::string& spec, const std::string& param,
                       const char* form) {
  if (param.empty()) return;
  const double buckets = preset_number(spec, param, 1, 10000, form);
  if (buckets != std::floor(buckets)) {
    throw std::invalid_argument("bad parameter in preset '" + printable(spec) + "' (" + form +
                                ": an integer in [1, 10000])");
  }
  c.slack.buckets = static_cast<int>(buckets);
}

using P = PolicyConfig;
using S = const std::string&;
using D = DispatchKind;
using Q = QueueKind;
using B = BatchingKind;
using X = DroppingKind;
using V = VariantKind;
constexpr PresetFamily kPard = PresetFamily::kPard;
constexpr PresetFamily kSuperServe = PresetFamily::kSuperServe;

}  // namespace

std::string_view preset_family_name(PresetFamily family) {
  switch (family) {
    case PresetFamily::kPard:
      return "pard";
    case PresetFamily::kSuperServe:
      return "superserve";
    case PresetFamily::kJigsawServe:
      return "jigsawserve";
  }
  return "?";
}

// PARD's family batches eagerly (PARD §4.2: form the next batch while one runs) on
// round-robin dispatch and differs in queue order and dropping. SuperServe's router: one
// earliest-deadline-first queue per task, served by idle workers (central, lbf, idle),
// dropping what expired; its presets differ in the variant policy. The "-early" rows are
// tessera's early-dropping reading of that router: what cannot meet its deadline is
// dropped while queued or as it joins a batch, and a policy that finds nothing below the
// slack runs the largest batch that still fits instead of a late one.
const std::vector<PresetRow>& preset_table() {
  static const std::vector<PresetRow> table = {
      {"naive", kPard, "", false, true, "FIFO queues, no dropping: late requests finish late",
       D::kRoundRobin, Q::kFifo, B::kEager, X::kNone, V::kFixed},
      {"nexus", kPard, "", false, true,
       "Nexus (PARD §5.1): FIFO window scan against the stage's share of the SLO", D::kRoundRobin,
       Q::kFifo, B::kEager, X::kSplitWindow, V::kFixed},
      {"clipper++", kPard, "", false, true,
       "Clipper++ (PARD §5.1): drops once a request has exceeded its stage's share of the "
       "SLO before inference, FIFO",
       D::kRoundRobin, Q::kFifo, B::kEager, X::kSplitReactive, V::kFixed},
      {"pard", kPard, "", false, true,
       "PARD: proactive dropping (Eq. 3b with the batch-wait quantile) and adaptive HBF/LBF",
       D::kRoundRobin, Q::kAdaptive, B::kEager, X::kPard, V::kFixed},
      {"pard-back", kPard, "", false, true, "PARD with backward-only latency estimation",
       D::kRoundRobin, Q::kAdaptive, B::kEager, X::kPard, V::kFixed,
       [](P& c, S, S) { c.pard.estimate = DownstreamEstimate::kBackward; }},
      {"pard-sf", kPard, "", false, true, "PARD estimating downstream service time only",
       D::kRoundRobin, Q::kAdaptive, B::kEager, X::kPard, V::kFixed,
       [](P& c, S, S) { c.pard.estimate = DownstreamEstimate::kServiceOnly; }},
      {"pard-split", kPard, "", false, true, "adaptive queues with split-budget dropping",
       D::kRoundRobin, Q::kAdaptive, B::kEager, X::kSplit, V::kFixed},
      {"pard-wcl", kPard, "", false, true, "adaptive queues with worst-case-latency split budgets",
       D::kRoundRobin, Q::kAdaptive, B::kEager, X::kSplitWcl, V::kFixed},
      {"pard-lower", kPard, "", false, true, "PARD with lambda = 0 (the lower bound)",
       D::kRoundRobin, Q::kAdaptive, B::kEager, X::kPard, V::kFixed,
       [](P& c, S, S) { c.pard.lambda = 0.0; }},
      {"pard-upper", kPard, "", false, true, "PARD with lambda = 1 (the upper bound)",
       D::kRoundRobin, Q::kAdaptive, B::kEager, X::kPard, V::kFixed,
       [](P& c, S, S) { c.pard.lambda = 1.0; }},
      {"pard-fcfs", kPard, "", false, true, "PARD's dropping with FIFO queues", D::kRoundRobin,
       Q::kFifo, B::kEager, X::kPard, V::kFixed},
      {"pard-hbf", kPard, "", false, true, "PARD's dropping, always high-budget-first",
       D::kRoundRobin, Q::kHbf, B::kEager, X::kPard, V::kFixed},
      {"pard-lbf", kPard, "", false, true, "PARD's dropping, always low-budget-first",
       D::kRoundRobin, Q::kLbf, B::kEager, X::kPard, V::kFixed},
      {"pard-instant", kPard, "", false, true, "PARD without the mu/epsilon hysteresis",
       D::kRoundRobin, Q::kAdaptive, B::kEager, X::kPard, V::kFixed,
       [](P& c, S, S) { c.pard.hysteresis = false; }},
      {"nexus-e2e", kPard, "", false, true,
       "variant of Nexus: Eq. 3b with L_sub = 0 against the end-to-end deadline, FIFO",
       D::kRoundRobin, Q::kFifo, B::kEager, X::kPard, V::kFixed,
       [](P& c, S, S) {
         c.pard.estimate = DownstreamEstimate::kBackward;
         c.pard.purge_hopeless = false;
       }},
      {"clipper++-predictive", kPard, "", false, true,
       "variant of Clipper++: drops when t_e - t_r + d_k would exceed the stage's share, FIFO",
       D::kRoundRobin, Q::kFifo, B::kEager, X::kSplit, V::kFixed},
      {"pard-no-purge", kPard, "", false, true,
       "PARD without the purge of hopeless requests (tessera's PARD before issue 11)",
       D::kRoundRobin, Q::kAdaptive, B::kEager, X::kPard, V::kFixed,
       [](P& c, S, S) { c.pard.purge_hopeless = false; }},
      {"pard-backlog-q", kPard, "", false, true,
       "PARD with q_i at least the time to serve the task's backlog", D::kRoundRobin, Q::kAdaptive,
       B::kEager, X::kPard, V::kFixed, [](P& c, S, S) { c.pard.backlog_queueing = true; }},
      {"pard-backlog-mu", kPard, "", false, true,
       "PARD with the load factor's input workload counting the queued requests", D::kRoundRobin,
       Q::kAdaptive, B::kEager, X::kPard, V::kFixed,
       [](P& c, S, S) { c.pard.backlog_load = true; }},
      {"pard-local-mu", kPard, "", false, true,
       "PARD whose tasks re-read their own load factor every 0.1 s, counting queued requests",
       D::kRoundRobin, Q::kAdaptive, B::kEager, X::kPard, V::kFixed,
       [](P& c, S, S) {
         c.pard.backlog_load = true;
         c.pard.mode_period = 0.1;
       }},
      {"slackfit", kSuperServe, "BUCKETS", false, true,
       "SuperServe's SlackFit: variant and batch from the most urgent request's slack; no "
       "bucket fits: drop what cannot meet its deadline, fit a batch if that is not slower",
       D::kCentral, Q::kLbf, B::kIdle, X::kInfeasible, V::kSlackFit,
       [](P& c, S spec, S param) {
         c.slack.fallback = SlackFallback::kRate;
         buckets_parameter(c, spec, param, "slackfit:BUCKETS");
       }},
      {"slackfit-drain", kSuperServe, "BUCKETS", false, false,
       "SlackFit serving late what nothing fits: fastest variant at the max batch, expired "
       "dropped",
       D::kCentral, Q::kLbf, B::kIdle, X::kExpired, V::kSlackFit,
       [](P& c, S spec, S param) { buckets_parameter(c, spec, param, "slackfit-drain:BUCKETS"); }},
      {"slackfit-early", kSuperServe, "BUCKETS", false, false,
       "SlackFit dropping early what cannot meet its deadline; nothing fits: largest batch "
       "that does",
       D::kCentral, Q::kLbf, B::kIdle, X::kInfeasible, V::kSlackFit,
       [](P& c, S spec, S param) {
         c.slack.fallback = SlackFallback::kFit;
         buckets_parameter(c, spec, param, "slackfit-early:BUCKETS");
       }},
      {"slackfit-drop", kSuperServe, "", false, false,
       "SlackFit (drain fallback) dropping early what cannot meet its deadline", D::kCentral,
       Q::kLbf, B::kIdle, X::kInfeasible, V::kSlackFit},
      {"maxbatch-early", kSuperServe, "", false, false,
       "MaxBatch dropping early what cannot meet its deadline; nothing fits: largest batch "
       "that does",
       D::kCentral, Q::kLbf, B::kIdle, X::kInfeasible, V::kMaxBatch,
       [](P& c, S, S) { c.slack.fallback = SlackFallback::kFit; }},
      {"infaas-early", kSuperServe, "", false, false,
       "INFaaS (no floor) dropping early what cannot meet its deadline", D::kCentral, Q::kLbf,
       B::kIdle, X::kInfeasible, V::kInfaas,
       [](P& c, S, S) { c.slack.fallback = SlackFallback::kFit; }},
      {"maxbatch", kSuperServe, "", false, true, "the fastest variant at the largest batch",
       D::kCentral, Q::kLbf, B::kIdle, X::kExpired, V::kMaxBatch},
      {"maxacc", kSuperServe, "", false, true, "the most accurate variant", D::kCentral, Q::kLbf,
       B::kIdle, X::kExpired, V::kMaxAcc},
      {"infaas", kSuperServe, "FLOOR", false, true,
       "INFaaS: the cheapest variant meeting the SLO above an accuracy floor", D::kCentral, Q::kLbf,
       B::kIdle, X::kExpired, V::kInfaas,
       [](P& c, S spec, S param) {
         if (!param.empty()) {
           c.slack.accuracy_floor = preset_number(spec, param, 0.0, 1.0, "infaas:FLOOR");
         }
       }},
      {"clipper+", kSuperServe, "VARIANT", true, false,
       "Clipper+: one fixed variant, the largest batch that fits the slack", D::kCentral, Q::kLbf,
       B::kIdle, X::kExpired, V::kClipperPlus,
       [](P& c, S, S param) { c.slack.fixed_variant = param; }},
      // §3.3: one queue per task that its instances pull from, batches bounded by the
      // planner's Lhat(t), early and stale dropping.
      {"jigsawserve", PresetFamily::kJigsawServe, "STALE_MS", false, false,
       "JigsawServe's data plane: task-wide queues, L-hat(t) timeout batching, early and stale "
       "dropping",
       D::kCentral, Q::kFifo, B::kJigsaw, X::kJigsaw, V::kFixed,
       [](P& c, S spec, S param) {
         if (!param.empty()) {
           c.stale_after =
               from_ms(preset_number(spec, param, 0.0, limits::kMaxMs, "jigsawserve:STALE_MS"));
         }
       }},
  };
  return table;
}

const PresetRow* find_preset(std::string_view name) {
  for (const PresetRow& p : preset_table()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

const std::vector<std::string>& policy_presets(PresetFamily family) {
  // Built once from the preset table, in its order.
  static const auto lists = [] {
    std::vector<std::vector<std::string>> by_family(3);
    for (const PresetRow& p : preset_table()) {
      if (p.listed) by_family[static_cast<std::size_t>(p.family)].emplace_back(p.name);
    }
    return by_family;
  }();
  return lists[static_cast<std::size_t>(family)];
}

const std::vector<std::string>& all_presets() {
  static const auto all = [] {
    std::vector<std::string> out;
    for (const PresetRow& p : preset_table()) {
      out.push_back(p.parameter_required ? fmt::format("{}:{}", p.name, p.parameter)
                                         : std::string(p.name));
    }
    return out;
  }();
  return all;
}

std::vector<std::string> expand_presets(const std::vector<std::string>& names) {
  // The names that stand for a family's list.
  static constexpr std::pair<std::string_view, PresetFamily> kFamilies[] = {
      {"pard-all", PresetFamily::kPard}, {"superserve", PresetFamily::kSuperServe}};
  std::vector<std::string> out;
  for (const std::string& n : names) {
    const auto* family = std::find_if(std::begin(kFamilies), std::end(kFamilies),
                                      [&](const auto& f) { return f.first == n; });
    if (family == std::end(kFamilies)) {
      out.push_back(n);
    } else {
      const auto& list = policy_presets(family->second);
      out.insert(out.end(), list.begin(), list.end());
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
  const PresetRow* preset = find_preset(name);
  if (preset == nullptr) {
    std::string list;
    for (const auto& p : all_presets()) list += (list.empty() ? "" : ", ") + p;
    throw std::invalid_argument("unknown policy preset '" + printable(name) +
                                "' (expected one of: " + list + ")");
  }
  const std::string form = fmt::format("{}:{}", name, preset->parameter);
  if (colon != std::string::npos && preset->parameter.empty()) {
    throw std::invalid_argument("preset '" + printable(name) + "' takes no parameter (found '" +
                                printable(spec) + "')");
  }
  if (colon != std::string::npos && param.empty()) {
    throw std::invalid_argument("bad parameter in preset '" + printable(spec) + "' (" + form +
                                ": the parameter is empty)");
  }
  if (preset->parameter_required && param.empty()) {
    throw std::invalid_argument("preset " + name + " needs its parameter: " + form);
  }
  PolicyConfig c;
  c.preset = spec;
  c.dispatch = preset->dispatch;
  c.queue = preset->queue;
  c.batching = preset->batching;
  c.dropping = preset->dropping;
  c.variant = preset->variant;
  if (preset->tune != nullptr) preset->tune(c, spec, param);
  return c;
}

}  // namespace tessera
