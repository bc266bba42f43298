#include "spec/run_spec.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/input_file.hpp"
#include "llm/llm_cost_model.hpp"
#include "policy/presets.hpp"
#include "policy/registry.hpp"
#include "profile/profile_sources.hpp"
#include "spec/app_spec.hpp"
#include "spec/llm_backend_spec.hpp"
#include "spec/llm_fleet_sim.hpp"
#include "spec/llm_measured_spec.hpp"
#include "workload/workload_spec.hpp"

namespace tessera {
namespace {

// A section that is either a path to its own YAML file or written inline.
SpecNode section(const SpecNode& node) {
  if (node.is_scalar()) return SpecNode::load_file(node.as_file_path());
  return node;
}

SimOptions parse_sim_options(const SpecNode& node, const SpecNode& app_node, App& app, int workers,
                             const std::optional<LlmSpec>& llm) {
  node.allow_only({"seed", "noise_cv", "window_s", "hop_delay_ms", "worker_losses", "cost_model",
                   "gateway_hop_ms", "gateway_bytes_per_token"});
  SimOptions options;
  if (auto s = node.get("seed")) {
    options.seed = static_cast<uint64_t>(s->as_integer_in(0, INT64_MAX));
  }
  if (auto n = node.get("noise_cv")) options.noise_cv = n->as_number_in(0.0, 10.0);
  if (auto w = node.get("window_s")) {
    options.window = w->as_number_in(limits::kMinPeriodS, limits::kMaxSpanS);
  }
  if (auto h = node.get("hop_delay_ms")) {
    // A default for edges that set no delay of their own (an explicit `delay_ms: 0`
    // counts as one). parse_app makes one edge per item of `edges`, in order.
    const Time delay = from_ms(h->as_ms());
    const auto edges = app_node.get("edges");
    const std::vector<SpecNode> items = edges ? edges->items() : std::vector<SpecNode>{};
    for (std::size_t i = 0; i < app.edges.size() && i < items.size(); ++i) {
      if (!items[i].has("delay_ms")) app.edges[i].delay = delay;
    }
  }
  if (auto g = node.get("gateway_hop_ms")) {
    options.gateway_hop = from_ms(g->as_number_in(0.0, 1e6));
  }
  if (auto b = node.get("gateway_bytes_per_token")) {
    options.gateway_bytes_per_token = static_cast<uint32_t>(b->as_integer_in(1, 16));
  }
  if (auto cost = node.get("cost_model")) {
    const std::string kind =
        cost->at("kind").as_choice({"profile", "token_linear", "llm_analytic", "llm_measured"});
    if (kind == "llm_measured") {
      options.cost_model = parse_llm_measured_cost(*cost);
    } else {
      cost->allow_only({"kind", "per_input_token_ms", "per_output_token_ms"});
    }
    if (kind == "llm_analytic") {
      if (!llm) cost->at("kind").fail("llm_analytic needs the run's llm: section (model and gpu)");
      options.cost_model = llm_cost_model(*llm);
    }
    if (kind == "token_linear") {
      const auto per = [&](const char* field) {
        auto n = cost->get(field);
        return n ? from_ms(n->as_number_in(0.0, 1e4)) : 0.0;
      };
      options.cost_model = std::make_shared<TokenLinearCostModel>(per("per_input_token_ms"),
                                                                  per("per_output_token_ms"));
    } else if (cost->has("per_input_token_ms") || cost->has("per_output_token_ms")) {
      cost->fail("only the token_linear cost model takes per-token costs");
    }
  }
  if (auto losses = node.get("worker_losses")) {
    for (const SpecNode& l : losses->items()) {
      l.allow_only({"at_s", "worker"});
      const auto worker = l.at("worker").as_integer();
      if (worker < 0 || worker >= workers) {
        l.at("worker").fail("no worker " + std::to_string(worker) +
                            ": the deployment has workers 0.." + std::to_string(workers - 1) +
                            ", numbered in the order of its groups");
      }
      options.worker_losses.emplace_back(l.at("at_s").as_non_negative(limits::kMaxSpanS),
                                         static_cast<WorkerId>(worker));
    }
  }
  return options;
}

// The time each task's workers need for `requests` requests, summed over the tasks: the
// expected items at the task times the slowest per-item latency of its worker groups
// (at batch 1 or at max_batch), divided among its workers.
double busy_seconds(const RunSpec& run, double requests) {
  const std::vector<double> items = expected_items_by_task(run.app);
  double total = 0;
  for (std::size_t t = 0; t < run.app.tasks.size(); ++t) {
    double per_item = 0;
    int workers = 0;
    for (const WorkerGroup& g : run.deployment.groups) {
      if (g.task != t) continue;
      workers += g.count;
      for (const int v : g.variants) {
        const std::string& name = run.app.tasks[t].variants[static_cast<std::size_t>(v)].name;
        per_item = std::max({per_item, run.profiles.latency(name, g.segment, 1),
                             run.profiles.latency(name, g.segment, g.max_batch) / g.max_batch});
      }
    }
    if (workers > 0) total += requests * items[t] * per_item / workers;
  }
  return total;
}

std::string approx(double v) {
  std::ostringstream out;
  out.precision(3);
  out << v;
  return out.str();
}

}  // namespace

RunSpec parse_run_spec(const SpecNode& node) {
  node.allow_only({"app", "profiles", "cluster", "deployment", "workload", "policies", "simulation",
                   "llm", "models"});
  RunSpec run{std::filesystem::path(node.file()), {},           {}, std::nullopt, {}, {}, {},
              section(node.at("workload")),       std::nullopt, {}, std::nullopt};
  if (auto m = node.get("models")) run.models_file = m->as_file_path();
  const SpecNode app_node = section(node.at("app"));
  run.app = parse_app(app_node);
  run.profiles = load_profiles(node.at("profiles"));
  if (auto c = node.get("cluster")) run.cluster = parse_cluster(section(*c));
  run.deployment = parse_deployment(section(node.at("deployment")), run.app, run.profiles,
                                    run.cluster ? &*run.cluster : nullptr);
  if (auto p = node.get("policies")) {
    run.policies = parse_policy_config(*p);
    check_policy_for_app(*p, run.policies, run.app);
    run.policies_node = *p;
  }
  if (auto l = node.get("llm")) run.llm = parse_llm_spec(*l, run.app);
  // An LLM gateway run simulates its fleet (docs/llm-gateway.md#simulation): one instance
  // per backend instead of the deployment's workers.
  std::optional<LlmGatewaySpec> gateway;
  if (auto l = node.get("llm"); l && l->has("backends")) {
    gateway = parse_llm_gateway(l->at("backends"), l->get("gateway"), *run.llm);
    run.deployment = llm_fleet_deployment(run.deployment, gateway->backends.size());
  }
  if (auto s = node.get("simulation")) {
    run.sim = parse_sim_options(*s, app_node, run.app, run.deployment.total_workers(), run.llm);
    for (const char* field : {"gateway_hop_ms", "gateway_bytes_per_token"}) {
      if (s->has(field) && !gateway) {
        s->at(field).fail(std::string(field) + " needs an LLM gateway run (llm.backends)");
      }
    }
  }
  if (gateway) {
    simulate_llm_fleet(*gateway, *run.llm, run.sim);
    run.app.ingress_delay += run.sim.gateway_hop;
  }
  if (run.llm) {
    if (!gateway) run.sim.make_scheduler = llm_scheduler_factory(run.llm->scheduler);
    run.sim.max_positions = run.llm->model.max_positions;
    if (!run.sim.cost_model) {
      run.sim.cost_model = llm_cost_model(*run.llm);
    }
  }
  run.workload.expect_map();
  return run;
}

std::unique_ptr<ArrivalSource> make_run_arrivals(const RunSpec& run) {
  return make_run_arrivals(run, run.policies);
}

std::unique_ptr<ArrivalSource> make_run_arrivals(const RunSpec& run, const PolicyConfig& p) {
  Workload workload = build_workload(run.workload, run.sim.seed);
  if (!workload.finite) {
    run.workload.fail(
        "this workload never ends: give its source or the workload a duration_s or a limit");
  }
  // The time series holds one window per window_s of the run: the arrivals' span, one SLO
  // for the last requests, and the time the workers need for all of the work (if nothing
  // is dropped an overloaded run lasts that long).
  const double windows =
      (workload.size.span_s + run.app.slo + busy_seconds(run, workload.size.count)) /
      run.sim.window;
  if (!(windows <= limits::kMaxWindows)) {
    run.workload.fail("the run would need about " + approx(windows) + " time-series windows of " +
                      approx(run.sim.window) + " s (at most " + approx(limits::kMaxWindows) +
                      "): raise simulation.window_s or shorten the workload");
  }
  // PARD's State Planner draws `samples` per task at every sync.
  if (runs_state_planner(p)) {
    const double draws = (workload.size.span_s + run.app.slo) / p.pard.sync_period *
                         static_cast<double>(run.app.tasks.size()) * p.pard.samples;
    if (!(draws <= limits::kMaxPlannerDraws)) {
      run.workload.fail("PARD's State Planner would make about " + approx(draws) +
                        " draws over this workload (at most " + approx(limits::kMaxPlannerDraws) +
                        "): raise policies.pard.sync_period_s, lower its samples or shorten "
                        "the workload");
    }
  }
  const double items = workload.size.count * expected_items_per_request(run.app);
  if (!(items <= limits::kMaxItems)) {
    run.workload.fail("the run would process about " + approx(items) + " items (" +
                      approx(workload.size.count) + " requests through the task graph; at most " +
                      approx(limits::kMaxItems) + ")");
  }
  return std::move(workload.source);
}

PolicyConfig policies_with_preset(const RunSpec& run, const std::string& preset) {
  const PolicyConfig config =
      run.policies_node ? parse_policy_config(*run.policies_node, preset) : preset_config(preset);
  if (run.policies_node && run.policies_node->has("variant")) {
    check_policy_for_app(*run.policies_node, config, run.app);
  } else if (config.variant == VariantKind::kClipperPlus) {
    bool known = false;
    for (const Task& task : run.app.tasks) {
      known = known || task.variant_index(config.slack.fixed_variant) >= 0;
    }
    if (!known) {
      throw std::invalid_argument("preset '" + printable(preset) + "' serves variant '" +
                                  printable(config.slack.fixed_variant) +
                                  "', which is not a variant of any task of the application");
    }
  }
  return config;
}

RunSpec load_run_spec(const std::filesystem::path& file) {
  LoadBudget budget;
  return parse_run_spec(SpecNode::load_file(file));
}

}  // namespace tessera
