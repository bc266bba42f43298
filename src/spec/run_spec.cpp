#include "spec/run_spec.hpp"

#include "profile/profile_sources.hpp"
#include "spec/app_spec.hpp"
#include "workload/workload_spec.hpp"

namespace tessera {
namespace {

// A section that is either a path to its own YAML file or written inline.
SpecNode section(const SpecNode& node) {
  if (node.is_scalar()) return SpecNode::load_file(node.as_path());
  return node;
}

SimOptions parse_sim_options(const SpecNode& node, const SpecNode& app_node, App& app,
                             int workers) {
  node.allow_only({"seed", "noise_cv", "window_s", "hop_delay_ms", "worker_losses", "cost_model"});
  SimOptions options;
  if (auto s = node.get("seed")) {
    const auto seed = s->as_integer();
    if (seed < 0) s->fail("must not be negative");
    options.seed = static_cast<uint64_t>(seed);
  }
  if (auto n = node.get("noise_cv")) options.noise_cv = n->as_number_in(0.0, 10.0);
  if (auto w = node.get("window_s")) options.window = w->as_positive();
  if (auto h = node.get("hop_delay_ms")) {
    // A default for edges that set no delay of their own (an explicit `delay_ms: 0`
    // counts as one). parse_app makes one edge per item of `edges`, in order.
    const Time delay = from_ms(h->as_non_negative());
    const auto edges = app_node.get("edges");
    const std::vector<SpecNode> items = edges ? edges->items() : std::vector<SpecNode>{};
    for (std::size_t i = 0; i < app.edges.size() && i < items.size(); ++i) {
      if (!items[i].has("delay_ms")) app.edges[i].delay = delay;
    }
  }
  if (auto cost = node.get("cost_model")) {
    cost->allow_only({"kind", "per_input_token_ms", "per_output_token_ms"});
    const std::string kind = cost->at("kind").as_choice({"profile", "token_linear"});
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
      options.worker_losses.emplace_back(l.at("at_s").as_non_negative(),
                                         static_cast<WorkerId>(worker));
    }
  }
  return options;
}

}  // namespace

RunSpec parse_run_spec(const SpecNode& node) {
  node.allow_only(
      {"app", "profiles", "cluster", "deployment", "workload", "policies", "simulation"});
  RunSpec run{
      std::filesystem::path(node.file()), {}, {}, std::nullopt, {}, {}, {}, node.at("workload")};
  const SpecNode app_node = section(node.at("app"));
  run.app = parse_app(app_node);
  run.profiles = load_profiles(node.at("profiles"));
  if (auto c = node.get("cluster")) run.cluster = parse_cluster(section(*c));
  run.deployment = parse_deployment(section(node.at("deployment")), run.app, run.profiles,
                                    run.cluster ? &*run.cluster : nullptr);
  if (auto p = node.get("policies")) run.policies = parse_policy_config(*p);
  if (auto s = node.get("simulation")) {
    run.sim = parse_sim_options(*s, app_node, run.app, run.deployment.total_workers());
  }
  run.workload.expect_map();
  return run;
}

std::unique_ptr<ArrivalSource> make_run_arrivals(const RunSpec& run) {
  Workload workload = build_workload(run.workload, run.sim.seed);
  if (!workload.finite) {
    run.workload.fail(
        "this workload never ends: give its source or the workload a duration_s or a limit");
  }
  return std::move(workload.source);
}

RunSpec load_run_spec(const std::filesystem::path& file) {
  return parse_run_spec(SpecNode::load_file(file));
}

}  // namespace tessera
