#include "control/plan_verification.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "plan/jigsawserve/plan_report.hpp"
#include "policy/jigsaw_dropping.hpp"
#include "policy/policy_kinds.hpp"
#include "policy/presets.hpp"
#include "workload/workload_spec.hpp"

namespace tessera::control {

std::vector<DataPlaneChoice> default_data_planes() {
  std::vector<DataPlaneChoice> out;
  out.push_back({"jigsawserve", preset_config("jigsawserve")});
  for (const char* preset : {"pard", "clipper++", "naive"}) {
    PolicyConfig c = preset_config(preset);
    c.dispatch = DispatchKind::kCentral;
    c.batching = BatchingKind::kJigsaw;
    out.push_back({std::string(preset) + " (central queues, jigsaw batching)", c});
  }
  out.push_back({"pard", preset_config("pard")});
  return out;
}

std::string policies_yaml(const PolicyConfig& config, int indent) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  std::string s;
  if (!config.preset.empty()) s += pad + "preset: " + config.preset + "\n";
  s += pad + fmt::format("dispatch: {}\n", policy_name(config.dispatch));
  s += pad + fmt::format("queue: {}\n", policy_name(config.queue));
  s += pad + fmt::format("batching: {}\n", policy_name(config.batching));
  s += pad + fmt::format("dropping: {}\n", policy_name(config.dropping));
  if (config.dropping == DroppingKind::kJigsaw) {
    s += pad + fmt::format("stale_ms: {}\n", to_ms(config.stale_after));
    s += pad + fmt::format("stale_rule: {}\n",
                           config.stale_rule == JigsawDropping::StaleRule::kQueued ? "queued"
                                                                                   : "at_pickup");
  }
  s += pad + fmt::format("variant: {}\n", policy_name(config.variant));
  return s;
}

std::pair<std::size_t, nlohmann::json> best_data_plane(const RunSpec& run,
                                                       const std::vector<DataPlaneChoice>& planes) {
  std::size_t best = 0;
  nlohmann::json best_summary;
  for (std::size_t i = 0; i < planes.size(); ++i) {
    nlohmann::json s = simulate_data_plane(run, planes[i].policies);
    const double a = s["slo_attainment"].get<double>();
    const double g = s["goodput_rps"].get<double>();
    if (best_summary.is_null() || a > best_summary["slo_attainment"].get<double>() ||
        (a == best_summary["slo_attainment"].get<double>() &&
         g > best_summary["goodput_rps"].get<double>())) {
      best = i;
      best_summary = std::move(s);
    }
  }
  return {best, best_summary};
}

namespace {

// Lowers the caps of the tasks to blame for the shortfall: where requests were dropped, or
// every task when lateness is most of it. Returns false when no blamed cap can go lower.
// `boost` multiplies the step: rounds whose caps left the plan as it was raise it.
bool feed_back(const nlohmann::json& summary, double target, const App& app,
               const VerifyOptions& verify, double boost, std::vector<double>& caps) {
  const double attainment = summary["slo_attainment"].get<double>();
  const double shortfall = std::max(0.0, target - attainment);
  const double step =
      std::min(verify.max_step, boost * std::clamp(shortfall, verify.min_step, verify.max_step));
  const double late = summary["late"].get<double>();
  const double dropped = summary["dropped"].get<double>();
  std::vector<double> drops(app.tasks.size(), 0.0);
  double most = 0.0;
  for (std::size_t t = 0; t < app.tasks.size(); ++t) {
    const auto& by_stage = summary["dropped_by_stage"];
    if (by_stage.contains(app.tasks[t].name)) drops[t] = by_stage[app.tasks[t].name].get<double>();
    most = std::max(most, drops[t]);
  }
  const bool all = late >= dropped || most <= 0.0;
  bool lowered = false;
  for (std::size_t t = 0; t < caps.size(); ++t) {
    if (!all && drops[t] < 0.1 * most) continue;
    const double next = std::max(verify.min_cap, caps[t] * (1.0 - step));
    if (next < caps[t] - 1e-12) lowered = true;
    caps[t] = next;
  }
  return lowered;
}

}  // namespace

Verification verify_plan(plan::PlanInput input, const plan::PlanOptions& plan_options,
                         const RunBuilder& make_run, const VerifyOptions& verify) {
  plan::PlanOptions options = plan_options;  // the slack: burst-aware unless it did not fit
  if (verify.slack_for) options.slack = std::max(options.slack, verify.slack_for(input.demand_rps));
  const std::size_t tasks = input.app.tasks.size();
  std::vector<double> caps(tasks);
  for (std::size_t t = 0; t < tasks; ++t)
    caps[t] = input.utilisation_cap_of(static_cast<TaskId>(t));
  Verification out;
  bool have = false;
  bool caps_lifted = false;  // the caps alone were lifted once after an infeasible solve
  double boost = 1.0;
  for (int round = 1; round <= verify.max_rounds; ++round) {
    input.utilisation_cap = caps;
    plan::JigsawPlan p = plan::make_plan(input, options);
    VerifyRound r;
    r.demand_rps = input.demand_rps;
    r.utilisation_cap = caps;
    r.status = p.status;
    out.rounds = round;
    if (!p.has_plan() || !p.evaluation.ok() || !p.layout_problems.empty()) {
      out.history.push_back(r);
      // The headroom alone does not fit before anything was simulated: the plan at the
      // profiled throughput and the spec's slack may still meet the target; simulate it.
      const bool capped = std::any_of(caps.begin(), caps.end(), [](double c) { return c < 1.0; }) ||
                          input.mdc_wait_s > 0.0;
      const bool burst_slack = options.slack > plan_options.slack;
      if (!have && (capped || burst_slack)) {
        // First the caps alone: a cap learned at a larger demand (largest_verified_demand's
        // probes start from the caps the missed verification ended on) on top of the
        // burst-aware slack counts the headroom twice. Only when the burst-aware slack does not
        // fit at the profiled throughput either is it dropped too. Not a round: nothing was
        // simulated.
        const bool lift_caps_only = capped && burst_slack && !caps_lifted;
        caps_lifted = true;
        std::fill(caps.begin(), caps.end(), 1.0);
        input.mdc_wait_s = 0.0;  // the M/D/c caps too: the profiled throughput
        if (lift_caps_only) {
          --round;
          continue;
        }
        options.slack = plan_options.slack;
        continue;
      }
      out.stop = "GPUs ran out";
      if (!have) {
        out.plan = std::move(p);
        out.input = input;
      }
      return out;
    }
    r.slices = p.evaluation.slices;
    // Caps that did not change the plan's slices: the next step is larger.
    boost = !out.history.empty() && out.history.back().slices == r.slices ? boost * 2.0 : 1.0;
    const RunSpec run = make_run(p, input);
    auto [best, summary] = best_data_plane(run, verify.data_planes);
    r.attainment = summary["slo_attainment"].get<double>();
    r.goodput_rps = summary["goodput_rps"].get<double>();
    r.data_plane = verify.data_planes[best].name;
    out.history.push_back(r);
    spdlog::info("verify round {}: {} slices, attainment {:.4f} under {} (target {})", round,
                 r.slices, r.attainment, r.data_plane, verify.target);
    if (!have || r.attainment > out.attainment) {
      have = true;
      out.attainment = r.attainment;
      out.goodput_rps = r.goodput_rps;
      out.data_plane = verify.data_planes[best];
      out.summary = summary;
      out.plan = p;
      out.input = input;
    }
    if (r.attainment >= verify.target) {
      out.met = true;
      out.stop = "met";
      // The met plan is the one returned (a later round's plan would have more slices).
      out.attainment = r.attainment;
      out.goodput_rps = r.goodput_rps;
      out.data_plane = verify.data_planes[best];
      out.summary = std::move(summary);
      out.plan = std::move(p);
      out.input = input;
      return out;
    }
    if (!feed_back(summary, verify.target, input.app, verify, boost, caps)) {
      out.stop = "caps at minimum";
      return out;
    }
  }
  out.stop = "rounds exhausted";
  return out;
}

VerifiedDemand largest_verified_demand(const plan::PlanInput& input,
                                       const plan::PlanOptions& options, const RunBuilder& make_run,
                                       const VerifyOptions& verify, double upper_rps, int probes,
                                       double gap) {
  VerifiedDemand out;
  double lo = 0.0, hi = upper_rps;
  auto probe = [&](double demand) {
    plan::PlanInput in = input;
    in.demand_rps = demand;
    ++out.probes;
    Verification v = verify_plan(in, options, make_run, verify);
    spdlog::info("largest verified demand: {:.3g} req/s {}", demand,
                 v.met ? "meets the target" : "misses it");
    if (v.met) {
      lo = demand;
      out.demand_rps = demand;
      out.at = std::move(v);
    } else {
      hi = demand;
    }
  };
  while (out.probes < probes && lo <= 0.0) probe(hi * 0.7);
  while (out.probes < probes && lo > 0.0 && hi - lo > gap * lo) probe(0.5 * (lo + hi));
  return out;
}

namespace {

SpecNode poisson_workload(double rate_rps, double seconds) {
  return SpecNode::load_string(
      fmt::format("source: {{kind: poisson, rate_rps: {}}}\nduration_s: {}\n", rate_rps, seconds),
      "<verification workload>");
}

}  // namespace

namespace {

// The controller's verification: `seconds` of Poisson arrivals at each plan's demand with
// `sim`'s seed; burst-aware slack when `queue_delay_s` > 0.
VerifyOptions controller_verify_options(const SimOptions& sim, double target, int rounds,
                                        double queue_delay_s, double burst_excess, double seconds) {
  VerifyOptions vo;
  vo.target = target;
  vo.max_rounds = rounds;
  if (queue_delay_s > 0.0) {
    vo.slack_for = [=](double demand) {
      Workload w = build_workload(poisson_workload(demand, seconds), sim.seed);
      return burst_aware_demand(*w.source, queue_delay_s, burst_excess) / demand - 1.0;
    };
  }
  return vo;
}

// `rate_factor`: the arrivals come at the plan's demand x this (the overload probe).
RunBuilder controller_run_builder(const PolicyConfig& policies, const SimOptions& sim,
                                  double seconds, double rate_factor = 1.0) {
  return [=](const plan::JigsawPlan& p, const plan::PlanInput& in) {
    RunSpec run{.file = {},
                .app = in.app,
                .profiles = plan::plan_profiles(p, in),
                .cluster = std::nullopt,
                .deployment = plan::to_deployment(p, in),
                .policies = policies,
                .sim = sim,
                .workload = poisson_workload(p.demand_rps * rate_factor, seconds),
                .llm = std::nullopt,
                .models_file = {},
                .policies_node = std::nullopt};
    run.sim.progress = false;
    return run;
  };
}

}  // namespace

std::function<plan::JigsawPlan(const plan::PlanInput&, const plan::PlanOptions&)> verified_planner(
    const PolicyConfig& policies, const SimOptions& sim, double target, int rounds,
    double queue_delay_s, double burst_excess, double seconds,
    std::shared_ptr<VerifiedPlanLog> log) {
  VerifyOptions vo =
      controller_verify_options(sim, target, rounds, queue_delay_s, burst_excess, seconds);
  vo.data_planes = {{"the controller's data plane", policies}};
  RunBuilder make_run = controller_run_builder(policies, sim, seconds);
  return [vo, make_run, log](const plan::PlanInput& in, const plan::PlanOptions& options) {
    Verification v = verify_plan(in, options, make_run, vo);
    if (log) (*log)[in.demand_rps] = {v.attainment, v.stop, v.rounds};
    return std::move(v.plan);
  };
}

Verification verify_data_planes(const plan::PlanInput& input, const plan::PlanOptions& options,
                                const SimOptions& sim, double target, int rounds,
                                double queue_delay_s, double burst_excess, double seconds,
                                double overload, double overload_share,
                                const std::vector<DataPlaneChoice>& planes) {
  VerifyOptions vo =
      controller_verify_options(sim, target, rounds, queue_delay_s, burst_excess, seconds);
  vo.data_planes = planes;
  const RunBuilder make_run = controller_run_builder({}, sim, seconds);
  Verification v = verify_plan(input, options, make_run, vo);
  if (overload <= 1.0 || !v.plan.has_plan() || !v.plan.evaluation.ok()) return v;
  // The overload probe: the same plan, arrivals at its demand x the factor.
  const RunSpec at_demand = make_run(v.plan, v.input);
  const RunSpec overloaded = controller_run_builder({}, sim, seconds, overload)(v.plan, v.input);
  OverloadPick pick = pick_under_overload(at_demand, overloaded, planes, overload_share);
  const DataPlaneScore& s = pick.scores[pick.index];
  v.data_plane = planes[pick.index];
  v.attainment = s.attainment;
  v.goodput_rps = s.goodput_rps;
  v.summary = s.summary;
  v.met = s.attainment >= target;
  v.overload_factor = overload;
  v.overload_share = std::clamp(overload_share, 0.0, 1.0);
  v.overload_attainment = s.overload_attainment;
  v.scores = std::move(pick.scores);
  for (const DataPlaneScore& sc : v.scores) {
    spdlog::info("  {}: attainment {:.4f} at the demand, {:.4f} under the probe, expected {:.4f}",
                 sc.name, sc.attainment, sc.overload_attainment, sc.expected);
  }
  spdlog::info("data plane under a {:.3f}x overload probe in {:.1f} % of the bins: {}", overload,
               100.0 * v.overload_share, v.data_plane.name);
  return v;
}

void attach_verification(const VerifiedPlanLog& log, ReplanResult& result) {
  for (BinRecord& b : result.bins) {
    if (b.fallback) continue;
    const auto it = log.find(b.planned_rps);
    if (it == log.end()) continue;
    b.verified_attainment = it->second.attainment;
    b.verify_stop = it->second.stop;
  }
}

double burst_aware_demand(ArrivalSource& arrivals, double delay_s, double excess) {
  std::vector<double> times;
  Arrival a;
  while (arrivals.next(a)) times.push_back(a.time);
  if (times.size() < 2) return 0.0;
  const double n = static_cast<double>(times.size());
  const double mean = (n - 1.0) / std::max(times.back() - times.front(), 1e-9);
  // The fraction turned away at service rate c: the backlog (in seconds of work) drains at
  // 1 s per s; each admitted request adds 1 / c.
  auto turned_away = [&](double c) {
    double backlog = 0.0, last = times.front(), lost = 0.0;
    for (double t : times) {
      backlog = std::max(0.0, backlog - (t - last));
      last = t;
      if (backlog > delay_s) {
        lost += 1.0;
      } else {
        backlog += 1.0 / c;
      }
    }
    return lost / n;
  };
  double lo = mean, hi = mean;
  if (turned_away(lo) <= excess) return lo;
  while (turned_away(hi) > excess && hi < 1e9) hi *= 2.0;
  for (int i = 0; i < 50 && hi - lo > 1e-4 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (turned_away(mid) <= excess ? hi : lo) = mid;
  }
  return hi;
}

}  // namespace tessera::control
