#include "policy/presets.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
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

// PARD's family: every preset batches eagerly (PARD §4.2: form the next batch while one
// runs) and differs in queue order and dropping.
void pard_preset(PolicyConfig& c, const std::string& queue) {
  c.queue = queue;
  c.dropping = "pard";
}

// SuperServe's router: one earliest-deadline-first queue per task, served by idle workers.
void superserve_router(PolicyConfig& c, const std::string& variant) {
  c.dispatch = "central";
  c.queue = "lbf";
  c.batching = "idle";
  c.dropping = "expired";
  c.variant = variant;
}

// The early-dropping reading of SuperServe's router (issue 11): what cannot meet its
// deadline is dropped while queued or as it joins a batch, and a policy that finds nothing
// below the slack runs the largest batch that still fits instead of a late one.
void early(PolicyConfig& c) {
  c.dropping = "infeasible";
  c.slack.fallback = SlackFallback::kFit;
}

using P = PolicyConfig;
using S = const std::string&;

}  // namespace

const std::vector<PresetInfo>& preset_table() {
  static const std::vector<PresetInfo> table = {
      {"naive", "pard", "", false, true, "FIFO queues, no dropping: late requests finish late",
       [](P& c, S, S) {
         c.queue = "fifo";
         c.dropping = "none";
       }},
      {"nexus", "pard", "", false, true,
       "Nexus (PARD §5.1): FIFO window scan against the stage's share of the SLO",
       [](P& c, S, S) {
         c.queue = "fifo";
         c.dropping = "split_window";
       }},
      {"clipper++", "pard", "", false, true,
       "Clipper++ (PARD §5.1): drops once a request has exceeded its stage's share of the "
       "SLO before inference, FIFO",
       [](P& c, S, S) {
         c.queue = "fifo";
         c.dropping = "split_reactive";
       }},
      {"pard", "pard", "", false, true,
       "PARD: proactive dropping (Eq. 3b with the batch-wait quantile) and adaptive HBF/LBF",
       [](P& c, S, S) { pard_preset(c, "adaptive"); }},
      {"pard-back", "pard", "", false, true, "PARD with backward-only latency estimation",
       [](P& c, S, S) {
         pard_preset(c, "adaptive");
         c.pard.estimate = DownstreamEstimate::kBackward;
       }},
      {"pard-sf", "pard", "", false, true, "PARD estimating downstream service time only",
       [](P& c, S, S) {
         pard_preset(c, "adaptive");
         c.pard.estimate = DownstreamEstimate::kServiceOnly;
       }},
      {"pard-split", "pard", "", false, true, "adaptive queues with split-budget dropping",
       [](P& c, S, S) {
         c.queue = "adaptive";
         c.dropping = "split";
       }},
      {"pard-wcl", "pard", "", false, true, "adaptive queues with worst-case-latency split budgets",
       [](P& c, S, S) {
         c.queue = "adaptive";
         c.dropping = "split_wcl";
       }},
      {"pard-lower", "pard", "", false, true, "PARD with lambda = 0 (the lower bound)",
       [](P& c, S, S) {
         pard_preset(c, "adaptive");
         c.pard.lambda = 0.0;
       }},
      {"pard-upper", "pard", "", false, true, "PARD with lambda = 1 (the upper bound)",
       [](P& c, S, S) {
         pard_preset(c, "adaptive");
         c.pard.lambda = 1.0;
       }},
      {"pard-fcfs", "pard", "", false, true, "PARD's dropping with FIFO queues",
       [](P& c, S, S) { pard_preset(c, "fifo"); }},
      {"pard-hbf", "pard", "", false, true, "PARD's dropping, always high-budget-first",
       [](P& c, S, S) { pard_preset(c, "hbf"); }},
      {"pard-lbf", "pard", "", false, true, "PARD's dropping, always low-budget-first",
       [](P& c, S, S) { pard_preset(c, "lbf"); }},
      {"pard-instant", "pard", "", false, true, "PARD without the mu/epsilon hysteresis",
       [](P& c, S, S) {
         pard_preset(c, "adaptive");
         c.pard.hysteresis = false;
       }},
      {"nexus-e2e", "pard", "", false, true,
       "variant of Nexus: Eq. 3b with L_sub = 0 against the end-to-end deadline, FIFO",
       [](P& c, S, S) {
         pard_preset(c, "fifo");
         c.pard.estimate = DownstreamEstimate::kBackward;
         c.pard.purge_hopeless = false;
       }},
      {"clipper++-predictive", "pard", "", false, true,
       "variant of Clipper++: drops when t_e - t_r + d_k would exceed the stage's share, FIFO",
       [](P& c, S, S) {
         c.queue = "fifo";
         c.dropping = "split";
       }},
      {"pard-no-purge", "pard", "", false, true,
       "PARD without the purge of hopeless requests (tessera's PARD before issue 11)",
       [](P& c, S, S) {
         pard_preset(c, "adaptive");
         c.pard.purge_hopeless = false;
       }},
      {"pard-backlog-q", "pard", "", false, true,
       "PARD with q_i at least the time to serve the task's backlog",
       [](P& c, S, S) {
         pard_preset(c, "adaptive");
         c.pard.backlog_queueing = true;
       }},
      {"slackfit", "superserve", "BUCKETS", false, true,
       "SuperServe's SlackFit: variant and batch from the most urgent request's slack",
       [](P& c, S spec, S param) {
         superserve_router(c, "slackfit");
         if (param.empty()) return;
         const double buckets = preset_number(spec, param, 1, 10000, "slackfit:BUCKETS");
         if (buckets != std::floor(buckets)) {
           throw std::invalid_argument("bad parameter in preset '" + printable(spec) +
                                       "' (slackfit:BUCKETS: an integer in [1, 10000])");
         }
         c.slack.buckets = static_cast<int>(buckets);
       }},
      {"slackfit-early", "superserve", "BUCKETS", false, false,
       "SlackFit dropping early what cannot meet its deadline; nothing fits: largest batch "
       "that does",
       [](P& c, S spec, S param) {
         superserve_router(c, "slackfit");
         early(c);
         if (param.empty()) return;
         const double buckets = preset_number(spec, param, 1, 10000, "slackfit-early:BUCKETS");
         if (buckets != std::floor(buckets)) {
           throw std::invalid_argument("bad parameter in preset '" + printable(spec) +
                                       "' (slackfit-early:BUCKETS: an integer in [1, 10000])");
         }
         c.slack.buckets = static_cast<int>(buckets);
       }},
      {"slackfit-drop", "superserve", "", false, false,
       "SlackFit (drain fallback) dropping early what cannot meet its deadline",
       [](P& c, S, S) {
         superserve_router(c, "slackfit");
         c.dropping = "infeasible";
       }},
      {"maxbatch-early", "superserve", "", false, false,
       "MaxBatch dropping early what cannot meet its deadline; nothing fits: largest batch "
       "that does",
       [](P& c, S, S) {
         superserve_router(c, "maxbatch");
         early(c);
       }},
      {"infaas-early", "superserve", "", false, false,
       "INFaaS (no floor) dropping early what cannot meet its deadline",
       [](P& c, S, S) {
         superserve_router(c, "infaas");
         early(c);
       }},
      {"maxbatch", "superserve", "", false, true, "the fastest variant at the largest batch",
       [](P& c, S, S) { superserve_router(c, "maxbatch"); }},
      {"maxacc", "superserve", "", false, true, "the most accurate variant",
       [](P& c, S, S) { superserve_router(c, "maxacc"); }},
      {"infaas", "superserve", "FLOOR", false, true,
       "INFaaS: the cheapest variant meeting the SLO above an accuracy floor",
       [](P& c, S spec, S param) {
         superserve_router(c, "infaas");
         if (!param.empty()) {
           c.slack.accuracy_floor = preset_number(spec, param, 0.0, 1.0, "infaas:FLOOR");
         }
       }},
      {"clipper+", "superserve", "VARIANT", true, false,
       "Clipper+: one fixed variant, the largest batch that fits the slack",
       [](P& c, S, S param) {
         superserve_router(c, "clipper+");
         c.slack.fixed_variant = param;
       }},
      {"jigsawserve", "jigsawserve", "STALE_MS", false, false,
       "JigsawServe's data plane: task-wide queues, L-hat(t) timeout batching, early and stale "
       "dropping",
       [](P& c, S spec, S param) {
         // §3.3: one queue per task that its instances pull from, batches bounded by the
         // planner's Lhat(t), early and stale dropping.
         c.dispatch = "central";
         c.queue = "fifo";
         c.batching = "jigsaw";
         c.dropping = "jigsaw";
         if (!param.empty()) {
           c.stale_after =
               from_ms(preset_number(spec, param, 0.0, limits::kMaxMs, "jigsawserve:STALE_MS"));
         }
       }},
  };
  return table;
}

const PresetInfo* find_preset(const std::string& name) {
  for (const PresetInfo& p : preset_table()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace tessera
