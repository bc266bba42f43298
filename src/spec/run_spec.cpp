#include "spec/run_spec.hpp"

#include "profile/profile_sources.hpp"
#include "spec/app_spec.hpp"

namespace tessera {
namespace {

// A section that is either a path to its own YAML file or written inline.
SpecNode section(const SpecNode& node) {
  if (node.is_scalar()) return SpecNode::load_file(node.as_path());
  return node;
}

SimOptions parse_sim_options(const SpecNode& node, App& app) {
  node.allow_only({"seed", "noise_cv", "window_s", "hop_delay_ms", "worker_losses"});
  SimOptions options;
  if (auto s = node.get("seed")) {
    const auto seed = s->as_integer();
    if (seed < 0) s->fail("must not be negative");
    options.seed = static_cast<uint64_t>(seed);
  }
  if (auto n = node.get("noise_cv")) options.noise_cv = n->as_number_in(0.0, 10.0);
  if (auto w = node.get("window_s")) options.window = w->as_positive();
  if (auto h = node.get("hop_delay_ms")) {
    // A default for edges that set no delay of their own.
    const Time delay = from_ms(h->as_non_negative());
    for (Edge& e : app.edges) {
      if (e.delay == 0.0) e.delay = delay;
    }
  }
  if (auto losses = node.get("worker_losses")) {
    for (const SpecNode& l : losses->items()) {
      l.allow_only({"at_s", "worker"});
      const auto worker = l.at("worker").as_integer();
      if (worker < 0) l.at("worker").fail("must not be negative");
      options.worker_losses.emplace_back(l.at("at_s").as_non_negative(),
                                         static_cast<WorkerId>(worker));
    }
  }
  return options;
}

}  // namespace

RunSpec parse_run_spec(const SpecNode& node) {
  node.allow_only({"app", "profiles", "cluster", "deployment", "workload", "policies", "simulation"});
  RunSpec run{std::filesystem::path(node.file()), {}, {}, std::nullopt, {}, {}, {},
              node.at("workload")};
  run.app = parse_app(section(node.at("app")));
  run.profiles = load_profiles(node.at("profiles"));
  if (auto c = node.get("cluster")) run.cluster = parse_cluster(section(*c));
  run.deployment = parse_deployment(section(node.at("deployment")), run.app, run.profiles,
                                    run.cluster ? &*run.cluster : nullptr);
  if (auto p = node.get("policies")) run.policies = parse_policy_config(*p);
  if (auto s = node.get("simulation")) {
    run.sim = parse_sim_options(*s, run.app);
  }
  run.workload.expect_map();
  return run;
}

RunSpec load_run_spec(const std::filesystem::path& file) {
  return parse_run_spec(SpecNode::load_file(file));
}

}  // namespace tessera
