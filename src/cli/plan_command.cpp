#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "core/input_file.hpp"
#include "core/spec_node.hpp"
#include "dataplane/ppipe/plan_json.hpp"
#include "plan/jigsawserve/plan_report.hpp"
#include "plan/jigsawserve/plan_spec.hpp"
#include "plan/jigsawserve/planner.hpp"
#include "plan/jigsawserve/serving_files.hpp"
#include "plan/ppipe/deploy.hpp"
#include "plan/ppipe/planner.hpp"
#include "plan/ppipe/report.hpp"
#include "plan/ppipe/spec.hpp"
#include "profile/profile_yaml.hpp"

namespace tessera::cli {
namespace {

struct PlanArgs {
  std::string spec_file;
  std::string out_dir = "out/plan";
  std::vector<std::string> spaces;
  double demand = 0.0;
  int slices = 0;
  double time_limit = 0.0;
  long node_limit = -1;
  double slack = -1.0;
  bool max_demand = false;
  bool solver_log = false;
  bool report = false;
  std::string models_file;    // the user's models file: real models for some variants
  std::string workload_file;  // a workload section for run.yaml instead of Poisson arrivals
  double duration_s = 60.0;   // of run.yaml's Poisson workload
};

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path.string());
  f << text;
}

void describe_profiles(const plan::PlanSpec& spec) {
  int measured = 0, derived = 0;
  for (const auto& [key, curve] : spec.input.profiles.curves()) {
    (curve.origin == ProfileOrigin::kMeasured ? measured : derived) += 1;
  }
  std::cout << "  profiles: " << measured << " measured (variant, segment) curves, " << derived
            << " derived from the whole-GPU segment '" << spec.whole_gpu_segment
            << "' (MIG latency exponent " << spec.scaling.mig_latency_exponent << ", MPS exponent "
            << spec.scaling.mps_exponent << ": " << spec.mps_fit_text << ")\n";
}

// run.yaml and models.yaml: the directory is then simulated and served as is
// (docs/plan.md#serving-the-plan).
void write_serving_files(const std::filesystem::path& dir, const PlanArgs& args,
                         const plan::PlanSpec& spec, const plan::JigsawPlan& plan) {
  std::vector<std::string> variants;
  for (const auto& g : plan::to_deployment(plan, spec.input).groups) {
    for (int v : g.variants) {
      const std::string& name = spec.input.app.tasks[g.task].variants[static_cast<size_t>(v)].name;
      if (std::find(variants.begin(), variants.end(), name) == variants.end())
        variants.push_back(name);
    }
  }
  std::optional<SpecNode> user_models;
  if (!args.models_file.empty()) user_models = SpecNode::load_file(args.models_file);
  write_file(dir / "models.yaml", plan::models_file_yaml(variants, user_models));
  if (spec.app_file.empty()) return;  // an inline app cannot be referenced
  plan::RunFileInputs run;
  run.app_file = std::filesystem::absolute(spec.app_file).lexically_normal();
  run.demand_rps = plan.demand_rps;
  run.duration_s = args.duration_s;
  if (!args.workload_file.empty()) {
    run.workload_file = std::filesystem::absolute(args.workload_file).lexically_normal();
  }
  write_file(dir / "run.yaml", plan::run_file_yaml(run));
}

// `planner: ppipe` (docs/plan.md#ppipe-planner): PPipe's MILP and its baselines; plan.json
// for PPipe, plan-np.json and plan-dart-r.json for the baselines.
void run_ppipe_plan(const PlanArgs& args) {
  plan::PpipeSpec spec = plan::load_ppipe_plan_spec(args.spec_file);
  if (args.time_limit > 0.0) spec.input.options.milp.time_limit_s = args.time_limit;
  spec.input.options.milp.log = args.solver_log;
  const std::filesystem::path dir(args.out_dir);
  std::filesystem::create_directories(dir);
  std::cout << "tessera plan (ppipe): cluster " << spec.cluster_name << ", DNNs " << spec.group_name
            << ", SLO margin " << spec.input.options.slo_margin << ", up to "
            << spec.input.options.max_partitions << " partitions\n";
  // Each method behind the planner seam; NP's plan is planned once and shared (DART-r
  // starts from it; PPipe's batch-build estimate uses it when the spec asks).
  const plan::PpipePlanner planner;
  std::vector<plan::PpipeResult> results;
  std::optional<ppipe::PpipePlan> np;
  auto need_np = [&] {
    if (!np) np = planner.plan({spec.input, ppipe::PpipeMethod::kNp}).report.plan;
    return &*np;
  };
  for (const ppipe::PpipeMethod m : spec.methods) {
    const ppipe::PpipePlan* known_np = nullptr;
    if (m == ppipe::PpipeMethod::kDartR ||
        (m == ppipe::PpipeMethod::kPpipe && spec.input.options.batch_build_estimate)) {
      known_np = need_np();
    }
    results.push_back(
        planner.plan({spec.input, m, m == ppipe::PpipeMethod::kNp ? nullptr : known_np}).report);
    if (m == ppipe::PpipeMethod::kNp) np = results.back().plan;
  }
  bool ok = true, feasible = true;
  std::vector<const ppipe::PpipePlan*> plans;
  std::vector<std::string> written;
  for (const auto& r : results) {
    plan::print_ppipe_plan(std::cout, r);
    const bool main_plan = r.plan.method == ppipe::PpipeMethod::kPpipe;
    const std::string method = ppipe::method_name(r.plan.method);
    const std::string name = main_plan ? "plan.json" : "plan-" + method + ".json";
    ppipe::write_plan_file(dir / name, r.plan);
    written.push_back(name);
    if (r.ok() && plan::has_plan(r.plan.solve.status)) {
      const auto sim_dir = main_plan ? dir : dir / method;
      const auto runs = plan::write_ppipe_runs(sim_dir, r.plan, spec.input);
      if (!runs.empty()) {
        written.push_back(std::filesystem::relative(sim_dir / "sim", dir).string() + "/ (" +
                          std::to_string(runs.size()) + " run.yaml, one per pipeline)");
      }
    }
    plans.push_back(&r.plan);
    ok = ok && r.ok();
    feasible = feasible && plan::has_plan(r.plan.solve.status);
  }
  plan::print_ppipe_comparison(std::cout, plans);
  std::cout << "  wrote";
  for (const auto& w : written) std::cout << " " << (dir / w).string();
  std::cout << "\n";
  if (!feasible) throw CLI::RuntimeError(3);
  if (!ok) throw CLI::RuntimeError(4);
}

void run_jigsawserve_plan(const PlanArgs& args);

// `tessera plan` runs the planner the spec declares (`planner:`, docs/plan.md#the-planner-field).
void run_plan(const PlanArgs& args) {
  bool inferred = false;
  plan::PlannerKind kind;
  {
    LoadBudget budget;
    kind = plan::declared_planner(SpecNode::load_file(args.spec_file), &inferred);
  }
  if (inferred) {
    spdlog::warn("{} declares no planner: planning with jigsawserve (write `planner: jigsawserve`)",
                 args.spec_file);
  }
  switch (kind) {
    case plan::PlannerKind::kJigsawServe:
      run_jigsawserve_plan(args);
      return;
    case plan::PlannerKind::kPpipe:
      run_ppipe_plan(args);
      return;
    case plan::PlannerKind::kIServe:
      throw SpecError(args.spec_file, "planner",
                      "iServe plans from a model's configuration map: use `tessera llm deploy` "
                      "(or `tessera llm simulate-cluster` for a cluster of models)");
  }
}

void run_jigsawserve_plan(const PlanArgs& args) {
  plan::PlanSpec spec = plan::load_plan_spec(args.spec_file);
  auto& in = spec.input;
  if (args.demand > 0.0) in.demand_rps = args.demand;
  if (args.slices > 0) in.slices = args.slices;
  if (args.time_limit > 0.0) spec.options.milp.time_limit_s = args.time_limit;
  if (args.node_limit >= 0) spec.options.milp.node_limit = args.node_limit;
  if (args.slack >= 0.0) spec.options.slack = args.slack;
  spec.options.milp.log = args.solver_log;
  std::vector<plan::SearchSpace> spaces;
  for (const auto& s : args.spaces) spaces.push_back(plan::parse_search_space(s));
  const std::filesystem::path dir(args.out_dir);
  std::filesystem::create_directories(dir);

  if (args.max_demand) {
    if (spaces.empty()) spaces = plan::all_search_spaces();
    std::vector<plan::MaxDemand> rows;
    for (const auto& space : spaces) {
      plan::PlanOptions o = spec.options;
      o.space = space;
      spdlog::info("max demand: {}", space.name());
      double known = 0.0;  // a smaller space's max demand is serviceable here too
      for (const auto& r : rows) {
        if (plan::is_subspace(r.space, space) && r.plan.has_plan() && r.plan.evaluation.ok()) {
          known = std::max(known, r.max_demand_rps);
        }
      }
      rows.push_back(plan::max_serviceable_demand(in, o, known));
    }
    std::cout << "tessera plan --max-demand: " << in.app.name << ", " << in.slices
              << " slices, latency SLO " << in.latency_slo_ms << " ms, accuracy SLO "
              << in.accuracy_slo << "\n";
    describe_profiles(spec);
    plan::print_max_demand(std::cout, rows, in.slices);
    write_file(dir / "max_demand.json", plan::max_demand_to_json(rows, in).dump(2) + "\n");
    std::cout << "  wrote " << (dir / "max_demand.json").string() << "\n";
    if (args.report) write_report_and_tell(args.out_dir);
    return;
  }

  if (spaces.size() > 1)
    throw CLI::ValidationError("--space", "give one space without --max-demand");
  if (!spaces.empty()) spec.options.space = spaces.front();
  if (in.demand_rps <= 0.0) {
    throw SpecError(spec.file.string(), "demand_rps", "needed (or --demand) unless --max-demand");
  }
  const plan::JigsawPlan plan = plan::JigsawServePlanner().plan({spec.input, spec.options}).report;
  plan::print_plan(std::cout, plan, in);
  describe_profiles(spec);
  write_file(dir / "plan.json", plan::plan_to_json(plan, in).dump(2) + "\n");
  if (!plan.has_plan()) {
    std::cout << "  wrote " << (dir / "plan.json").string() << "\n";
    if (args.report) write_report_and_tell(args.out_dir);
    throw CLI::RuntimeError(3);
  }
  std::ostringstream dep, prof;
  plan::write_deployment_yaml(dep, plan, in);
  write_file(dir / "deployment.yaml", dep.str());
  write_profile_yaml(plan::plan_profiles(plan, in), prof);
  write_file(dir / "profiles.yaml", prof.str());
  write_serving_files(dir, args, spec, plan);
  std::cout << "  wrote " << dir.string()
            << "/plan.json, deployment.yaml, profiles.yaml, models.yaml"
            << (spec.app_file.empty() ? "" : ", run.yaml (tessera simulate / serve it)") << "\n";
  if (args.report) write_report_and_tell(args.out_dir);
  if (!plan.evaluation.ok() || !plan.layout_problems.empty()) throw CLI::RuntimeError(4);
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "Planners (CBC): JigsawServe (variants x MIG/MPS segments x budgets), or PPipe's pooled "
      "pipelines with its NP and DART-r baselines when the spec says planner: ppipe");
  cmd->add_option("spec", args->spec_file, "Plan spec (YAML): app, profiles, SLOs, demand")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out,-o", args->out_dir, "Output directory")->capture_default_str();
  cmd->add_option("--space", args->spaces,
                  "Search space: Unopt, A, S, T, A+S, A+T, S+T, A+S+T (repeatable with "
                  "--max-demand)");
  cmd->add_option("--demand", args->demand, "Override the spec's demand_rps");
  cmd->add_option("--slices", args->slices, "Override the spec's slices");
  cmd->add_option("--time-limit", args->time_limit,
                  "CBC time limit per solve, CPU seconds (a backstop)");
  cmd->add_option("--node-limit", args->node_limit,
                  "CBC node limit per solve (0: none), overriding the spec's node_limit")
      ->check(CLI::Range(0L, 1'000'000'000L));
  cmd->add_option("--slack", args->slack,
                  "Override the spec's slack: the plan serves the demand x (1 + slack)")
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_flag("--max-demand", args->max_demand,
                "Largest demand each search space can serve (the paper's Fig. 3)");
  cmd->add_flag("--solver-log", args->solver_log, "Show CBC's log");
  cmd->add_option("--models,-m", args->models_file,
                  "Models file: variants it lists are served by its models; the others by "
                  "profile-timed emulations (models.yaml)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--workload,-w", args->workload_file,
                  "Workload file (a run spec's workload section, e.g. a trace) for run.yaml, "
                  "instead of Poisson arrivals at the demand")
      ->check(CLI::ExistingFile);
  cmd->add_option("--duration", args->duration_s, "Seconds of run.yaml's Poisson workload")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 86400.0));
  add_report_flag(*cmd, args->report);
  cmd->callback([args] { run_plan(*args); });
}

}  // namespace tessera::cli
