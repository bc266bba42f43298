#include "plan/jigsawserve/plan_report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <ostream>

namespace tessera::plan {

namespace {

const std::string& task_name(const PlanInput& in, TaskId t) { return in.app.tasks[t].name; }
const std::string& variant_name(const PlanInput& in, const Candidate& c) {
  return in.app.tasks[c.task].variants[static_cast<size_t>(c.variant)].name;
}
const SegmentType& segment(const PlanInput& in, const Candidate& c) {
  return in.catalogue.segments[static_cast<size_t>(c.segment)];
}

std::string path_text(const PlanInput& in, const std::vector<TaskId>& path) {
  std::string out;
  for (TaskId t : path) out += (out.empty() ? "" : " -> ") + task_name(in, t);
  return out;
}

nlohmann::json finite_or_null(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json plan_to_json(const JigsawPlan& plan, const PlanInput& in) {
  using nlohmann::json;
  json j;
  j["app"] = in.app.name;
  j["search_space"] = plan.space.name();
  j["status"] = to_string(plan.status);
  if (!plan.message.empty()) j["message"] = plan.message;
  j["demand_rps"] = plan.demand_rps;
  j["planned_demand_rps"] = plan.planned_demand_rps;
  j["latency_slo_ms"] = in.latency_slo_ms;
  j["accuracy_slo"] = in.accuracy_slo;
  j["slices_available"] = in.slices;
  j["gpu"] = in.catalogue.gpu;
  if (!plan.has_plan()) return j;
  const auto& ev = plan.evaluation;
  j["predicted"] = {{"accuracy", ev.accuracy},
                    {"slices", ev.slices},
                    {"objective", ev.objective},
                    {"gpus", plan.layout.num_gpus()},
                    {"gpus_available", plan.gpus_available}};
  j["check"] = {{"ok", ev.ok() && plan.layout_problems.empty()},
                {"violations", ev.violations},
                {"layout_problems", plan.layout_problems}};
  json tasks = json::array();
  for (TaskId t = 0; t < in.app.tasks.size(); ++t) {
    const auto& tr = ev.tasks[t];
    json instances = json::array();
    for (const auto& e : plan.entries) {
      if (e.type.task != t) continue;
      const auto& seg = segment(in, e.type);
      instances.push_back({{"variant", variant_name(in, e.type)},
                           {"segment", seg.name},
                           {"mig", in.catalogue.mig[static_cast<size_t>(seg.mig)].name},
                           {"mps", seg.mps},
                           {"max_batch", e.type.batch},
                           {"count", e.count},
                           {"workers", e.count * seg.mps},
                           {"slices", e.count * e.type.cost},
                           {"latency_ms", e.type.latency_ms},
                           {"throughput_rps", e.type.throughput_rps * e.count},
                           {"profile", e.type.measured ? "measured" : "derived"}});
    }
    json tj = {{"task", task_name(in, t)},    {"latency_ms", tr.latency_ms},
               {"demand_rps", tr.demand_rps}, {"throughput_rps", tr.capacity_rps},
               {"accuracy", tr.accuracy},     {"slices", tr.slices},
               {"instances", instances}};
    if (plan.budgets) {
      tj["latency_budget_ms"] = finite_or_null(tr.latency_budget_ms);
      tj["slice_budget"] = finite_or_null(tr.slice_budget);
    }
    tasks.push_back(tj);
  }
  j["tasks"] = tasks;
  json paths = json::array();
  for (const auto& p : ev.paths) {
    paths.push_back({{"path", path_text(in, p.tasks)},
                     {"fraction", p.fraction},
                     {"latency_ms", p.latency_ms},
                     {"accuracy", p.accuracy}});
  }
  j["paths"] = paths;
  json gpus = json::array();
  for (const auto& gpu : plan.layout.gpus) {
    json g = json::array();
    for (const auto& pl : gpu) {
      const auto& e =
          plan.entries[static_cast<size_t>(plan.layout_entry[static_cast<size_t>(pl.item)])];
      const auto& seg = segment(in, e.type);
      const auto& mig = in.catalogue.mig[static_cast<size_t>(pl.mig)];
      g.push_back({{"mig", mig.name},
                   {"start", pl.start},
                   {"memory", mig.memory},
                   {"mps", seg.mps},
                   {"task", task_name(in, e.type.task)},
                   {"variant", variant_name(in, e.type)},
                   {"max_batch", e.type.batch}});
    }
    gpus.push_back(g);
  }
  j["layout"] = gpus;
  j["gpu_memory_slices"] = in.catalogue.gpu_memory;
  j["solver"] = {{"name", "CBC"},
                 {"seconds", plan.stats.seconds},
                 {"nodes", plan.stats.nodes},
                 {"variables", plan.stats.variables},
                 {"integers", plan.stats.integers},
                 {"rows", plan.stats.rows},
                 {"candidates", plan.stats.candidates},
                 {"milp_objective", plan.stats.milp_objective},
                 {"milp_bound", plan.stats.milp_bound},
                 {"limit", to_string(plan.stats.limit)},
                 {"tie_break", plan.stats.tie_break},
                 {"tie_break_nodes", plan.stats.tie_break_nodes}};
  return j;
}

void print_plan(std::ostream& out, const JigsawPlan& plan, const PlanInput& in) {
  out << fmt::format("tessera plan: {} [{}] at {:.4g} req/s (planned {:.4g} with slack)\n",
                     in.app.name, plan.space.name(), plan.demand_rps, plan.planned_demand_rps);
  out << fmt::format("  status  {}\n", to_string(plan.status));
  if (!plan.has_plan()) {
    out << "  " << plan.message << "\n";
    return;
  }
  const auto& ev = plan.evaluation;
  out << fmt::format("  {:<20} {:<16} {:<14} {:>5} {:>5} {:>7} {:>10} {:>11}  {}\n", "task",
                     "variant", "segment", "batch", "count", "slices", "latency ms", "capacity/s",
                     "profile");
  for (const auto& e : plan.entries) {
    out << fmt::format("  {:<20} {:<16} {:<14} {:>5} {:>5} {:>7} {:>10.2f} {:>11.1f}  {}\n",
                       task_name(in, e.type.task), variant_name(in, e.type),
                       segment(in, e.type).name, e.type.batch, e.count, e.count * e.type.cost,
                       e.type.latency_ms, e.count * e.type.throughput_rps,
                       e.type.measured ? "measured" : "derived");
  }
  out << "\n";
  out << fmt::format("  {:<20} {:>10} {:>11} {:>9} {:>7}\n", "task", "demand/s", "capacity/s",
                     "accuracy", "slices");
  for (TaskId t = 0; t < in.app.tasks.size(); ++t) {
    const auto& tr = ev.tasks[t];
    out << fmt::format("  {:<20} {:>10.1f} {:>11.1f} {:>9.4f} {:>7}\n", task_name(in, t),
                       tr.demand_rps, tr.capacity_rps, tr.accuracy, tr.slices);
  }
  out << "\n";
  for (const auto& p : ev.paths) {
    out << fmt::format("  path {:<40} f={:.3f}  2xL = {:>7.1f} ms (SLO {:g})  accuracy {:.4f}\n",
                       path_text(in, p.tasks), p.fraction, p.latency_ms, in.latency_slo_ms,
                       p.accuracy);
  }
  out << fmt::format("\n  accuracy {:.4f} of the best (SLO {:g})   slices {} / {}   GPUs {} / {}\n",
                     ev.accuracy, in.accuracy_slo, ev.slices, in.slices, plan.layout.num_gpus(),
                     plan.gpus_available);
  out << "  layout";
  for (size_t g = 0; g < plan.layout.gpus.size(); ++g) {
    out << (g ? "\n        " : " ") << "GPU " << g << ":";
    for (const auto& pl : plan.layout.gpus[g]) {
      const auto& e =
          plan.entries[static_cast<size_t>(plan.layout_entry[static_cast<size_t>(pl.item)])];
      out << " " << in.catalogue.mig[static_cast<size_t>(pl.mig)].name << "@" << pl.start << "("
          << variant_name(in, e.type) << ")";
    }
  }
  out << "\n";
  out << fmt::format("  check   {}\n", ev.ok() && plan.layout_problems.empty()
                                           ? "ok: every nonlinear constraint holds"
                                           : "FAILED");
  for (const auto& v : ev.violations) out << "    " << v << "\n";
  for (const auto& v : plan.layout_problems) out << "    " << v << "\n";
  out << fmt::format(
      "  solver  CBC {:.3f} s, {} nodes, {} variables ({} integer), {} rows; objective {:.4f}, "
      "bound {:.4f}\n",
      plan.stats.seconds, plan.stats.nodes, plan.stats.variables, plan.stats.integers,
      plan.stats.rows, plan.stats.milp_objective, plan.stats.milp_bound);
  out << fmt::format("  solver  tie-break among equal-optimal plans: {} ({} nodes)\n",
                     plan.stats.tie_break, plan.stats.tie_break_nodes);
  if (plan.stats.limit != MilpLimit::kNone) {
    out << fmt::format(
        "  solver  stopped by the {} before proving optimality: the plan may differ from the "
        "optimum (raise node_limit / time_limit_s)\n",
        to_string(plan.stats.limit));
  }
}

void write_deployment_yaml(std::ostream& out, const JigsawPlan& plan, const PlanInput& in) {
  out << "# Written by `tessera plan` (" << plan.space.name() << ", " << plan.demand_rps
      << " req/s). One worker per MPS process: count = MIG instances x MPS.\n";
  out << "workers:\n";
  for (const auto& g : to_deployment(plan, in).groups) {
    const auto& task = in.app.tasks[g.task];
    out << "  - {task: " << task.name << ", variant: \""
        << task.variants[static_cast<size_t>(g.variants.front())].name << "\", segment: \""
        << g.segment << "\", max_batch: " << g.max_batch << ", count: " << g.count
        << ", batch_timeout_ms: " << to_ms(g.batch_timeout) << "}\n";
  }
}

ProfileTable plan_profiles(const JigsawPlan& plan, const PlanInput& in) {
  ProfileTable t;
  for (const auto& e : plan.entries) {
    const auto& name = variant_name(in, e.type);
    const auto& seg = segment(in, e.type).name;
    if (!t.has(name, seg)) t.set_curve(in.profiles.curve(name, seg));
  }
  return t;
}

void print_max_demand(std::ostream& out, const std::vector<MaxDemand>& rows, int slices) {
  double unopt = 0.0;
  for (const auto& r : rows) {
    if (r.space.name() == "Unopt") unopt = r.max_demand_rps;
  }
  out << fmt::format("  {:<8} {:>12} {:>9} {:>13} {:>9} {:>8} {:>8}  {}\n", "space", "max req/s",
                     "x Unopt", "slices used", "accuracy", "max s", "plan s",
                     "status (max / plan)");
  for (const auto& r : rows) {
    const bool ok = r.status == PlanStatus::kOptimal || r.status == PlanStatus::kFeasible;
    const std::string rel =
        ok && unopt > 0.0 ? fmt::format("{:.2f}", r.max_demand_rps / unopt) : "-";
    const std::string used = ok && r.plan.has_plan()
                                 ? fmt::format("{} ({:.0f}%)", r.plan.evaluation.slices,
                                               100.0 * r.plan.evaluation.slices / slices)
                                 : "-";
    const std::string acc =
        ok && r.plan.has_plan() ? fmt::format("{:.4f}", r.plan.evaluation.accuracy) : "-";
    std::string status =
        ok ? std::string(to_string(r.status)) + " / " + to_string(r.plan.status) : r.message;
    if (!r.limit.empty()) status += " [search stopped by the " + r.limit + "]";
    if (r.plan.stats.limit != MilpLimit::kNone) {
      status += std::string(" [plan stopped by the ") + to_string(r.plan.stats.limit) + "]";
    }
    out << fmt::format("  {:<8} {:>12.2f} {:>9} {:>13} {:>9} {:>8.2f} {:>8.2f}  {}\n",
                       r.space.name(), r.max_demand_rps, rel, used, acc, r.seconds,
                       r.plan.stats.seconds, status);
  }
}

nlohmann::json max_demand_to_json(const std::vector<MaxDemand>& rows, const PlanInput& input) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json j = {{"search_space", r.space.name()},
                        {"status", to_string(r.status)},
                        {"max_demand_rps", r.max_demand_rps},
                        {"upper_bound_rps", r.upper_bound_rps},
                        {"milps", r.solves},
                        {"nodes", r.nodes},
                        {"limit", r.limit.empty() ? "none" : r.limit},
                        {"seconds", r.seconds}};
    if (!r.message.empty()) j["message"] = r.message;
    if (r.plan.has_plan()) j["plan"] = plan_to_json(r.plan, input);
    arr.push_back(j);
  }
  return arr;
}

}  // namespace tessera::plan
