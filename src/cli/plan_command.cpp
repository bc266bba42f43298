#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/finite_range.hpp"
#include "control/plan_verification.hpp"
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
#include "policy/policy_set.hpp"
#include "policy/presets.hpp"
#include "profile/profile_yaml.hpp"
#include "spec/run_spec.hpp"
#include "workload/workload_spec.hpp"

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
  double duration_s = 0.0;    // of run.yaml's workload; 0: Poisson 60 s, the spec's workload whole
  bool no_verify = false;
  double target = 0.0;           // overrides the spec's attainment_target when > 0
  double utilisation_cap = 0.0;  // overrides the spec's headroom.utilisation_cap when > 0
  double queue_delay_ms = -1.0;  // overrides the spec's headroom.queue_delay_ms when >= 0
  std::string headroom_model;    // overrides the spec's headroom.model when set
  int verify_rounds = 0;         // overrides the spec's verify_rounds when > 0
  int verify_probes = 6;         // demands tried for the largest verified demand
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

// models.yaml and app.yaml (a copy of the spec's app: the folder is relocatable); run.yaml
// comes from write_run_files (docs/plan.md#serving-the-plan).
void write_models_and_app(const std::filesystem::path& dir, const PlanArgs& args,
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
  std::filesystem::copy_file(spec.app_file, dir / "app.yaml",
                             std::filesystem::copy_options::overwrite_existing);
}

// The plan's deployment, profiles and run spec with `policies` (empty: jigsawserve).
void write_run_files(const std::filesystem::path& dir, const PlanArgs& args,
                     const plan::PlanSpec& spec, const plan::JigsawPlan& plan,
                     const plan::PlanInput& input, const std::string& workload_yaml,
                     const std::string& policies) {
  std::ostringstream dep, prof;
  plan::write_deployment_yaml(dep, plan, input);
  write_file(dir / "deployment.yaml", dep.str());
  write_profile_yaml(plan::plan_profiles(plan, input), prof);
  write_file(dir / "profiles.yaml", prof.str());
  if (spec.app_file.empty()) return;
  plan::RunFileInputs run;
  run.app_file = "app.yaml";
  run.demand_rps = plan.demand_rps;
  run.duration_s = args.duration_s > 0.0 ? args.duration_s : 60.0;
  if (!args.workload_file.empty()) {
    run.workload_file = std::filesystem::absolute(args.workload_file).lexically_normal();
  }
  run.workload_yaml = workload_yaml;
  run.policies_yaml = policies;
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
  // starts from it).
  const plan::PpipePlanner planner;
  std::vector<plan::PpipeResult> results;
  std::optional<ppipe::PpipePlan> np;
  auto need_np = [&] {
    if (!np) np = planner.plan({spec.input, ppipe::PpipeMethod::kNp}).report.plan;
    return &*np;
  };
  for (const ppipe::PpipeMethod m : spec.methods) {
    const ppipe::PpipePlan* known_np = nullptr;
    if (m == ppipe::PpipeMethod::kDartR) known_np = need_np();
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

// The plan's workload at `demand` as a run spec's `workload:` node: the spec's workload
// scaled to it (its files copied into `dir`), else --workload as given, else Poisson arrivals.
SpecNode plan_workload(const PlanArgs& args, const plan::PlanSpec& spec, double demand,
                       const std::filesystem::path& dir) {
  if (!args.workload_file.empty()) return SpecNode::load_file(args.workload_file);
  const std::string text =
      spec.workload_file.empty()
          ? fmt::format("workload:\n  source: {{kind: poisson, rate_rps: {}}}\n  duration_s: {}\n",
                        demand, args.duration_s > 0.0 ? args.duration_s : 60.0)
          : "workload:\n" +
                plan::scaled_workload_yaml(spec.workload_file, demand, dir, args.duration_s);
  return SpecNode::load_string(text, (dir / "run.yaml").string()).at("workload");
}

// The burst-aware demand of the plan's workload at `demand` (docs/plan.md#headroom).
double plan_burst_demand(const PlanArgs& args, const plan::PlanSpec& spec, double demand,
                         const std::filesystem::path& dir) {
  Workload w = build_workload(plan_workload(args, spec, demand, dir), 1);
  return control::burst_aware_demand(*w.source, spec.queue_delay_ms / 1000.0, spec.burst_excess);
}

void print_verification(std::ostream& out, const control::Verification& v, double target,
                        const std::optional<control::VerifiedDemand>& largest) {
  if (v.met) {
    out << fmt::format(
        "  verified attainment {:.4f} (target {}), goodput {:.2f} req/s under {}, {} round{}: ok\n",
        v.attainment, target, v.goodput_rps, v.data_plane.name, v.rounds, v.rounds == 1 ? "" : "s");
    return;
  }
  out << fmt::format("  verified MISSED: attainment {:.4f} < target {} after {} round{} ({})\n",
                     v.attainment, target, v.rounds, v.rounds == 1 ? "" : "s", v.stop);
  if (largest && largest->at.met) {
    out << fmt::format(
        "  the largest demand whose verified plan meets the target: {:.4g} req/s ({} slices, "
        "attainment {:.4f}; tessera plan --demand {:.4g})\n",
        largest->demand_rps, largest->at.plan.evaluation.slices, largest->at.attainment,
        largest->demand_rps);
  } else if (largest) {
    out << fmt::format("  no demand tried ({} probes) met the target\n", largest->probes);
  }
}

nlohmann::json verification_json(const control::Verification& v,
                                 const std::optional<control::VerifiedDemand>& largest,
                                 const std::optional<double>& burst_demand) {
  nlohmann::json j;
  j["met"] = v.met;
  j["attainment"] = v.attainment;
  j["goodput_rps"] = v.goodput_rps;
  j["rounds"] = v.rounds;
  j["stop"] = v.stop;
  j["data_plane"] = v.data_plane.name;
  j["policies"] = v.data_plane.policies.describe();
  j["utilisation_cap"] = v.input.utilisation_cap;
  j["burst_aware_demand_rps"] = burst_demand ? nlohmann::json(*burst_demand) : nlohmann::json();
  nlohmann::json rounds = nlohmann::json::array();
  for (const auto& r : v.history) {
    rounds.push_back({{"demand_rps", r.demand_rps},
                      {"utilisation_cap", r.utilisation_cap},
                      {"status", plan::to_string(r.status)},
                      {"slices", r.slices},
                      {"attainment", r.attainment},
                      {"goodput_rps", r.goodput_rps},
                      {"data_plane", r.data_plane}});
  }
  j["history"] = rounds;
  if (largest && largest->at.met) {
    j["largest_verified_demand_rps"] = largest->demand_rps;
  } else {
    j["largest_verified_demand_rps"] = nullptr;
    j["not_measured"]["largest_verified_demand_rps"] =
        v.met ? "the plan met its target at the demand asked for"
              : "no demand tried met the target";
  }
  return j;
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
  if (args.target > 0.0) spec.attainment_target = args.target;
  if (args.utilisation_cap > 0.0) in.utilisation_cap = {args.utilisation_cap};
  if (args.queue_delay_ms >= 0.0) spec.queue_delay_ms = args.queue_delay_ms;
  if (!args.headroom_model.empty()) spec.mdc = args.headroom_model == "mdc";
  if (spec.mdc && spec.queue_delay_ms <= 0.0) {
    throw CLI::ValidationError("--headroom-model", "mdc needs a queue delay above 0 ms");
  }
  spec.apply_headroom_model();
  // The plan's workload at its demand: the spec's `workload:` scaled to it, else --workload
  // as given, else Poisson arrivals at the demand (docs/plan.md#verification).
  auto workload_at = [&](double demand) {
    return spec.workload_file.empty() || !args.workload_file.empty()
               ? std::string()
               : plan::scaled_workload_yaml(spec.workload_file, demand, dir, args.duration_s);
  };
  const std::string workload_yaml = workload_at(in.demand_rps);
  // The spec's own slack: the verification adds the burst-aware slack per demand
  // (vo.slack_for) and falls back to this one when the headroom does not fit.
  const plan::PlanOptions base_options = spec.options;
  std::optional<double> burst_demand;
  if (spec.queue_delay_ms > 0.0) {
    burst_demand = plan_burst_demand(args, spec, in.demand_rps, dir);
    spec.options.slack = std::max(spec.options.slack, *burst_demand / in.demand_rps - 1.0);
    std::cout << fmt::format(
        "  burst-aware demand {:.4g} req/s (queueing at most {} ms, at most {:.2g} of the "
        "requests turned away): planned with slack {:.4f}\n",
        *burst_demand, spec.queue_delay_ms, spec.burst_excess, spec.options.slack);
  }
  const bool verify = !args.no_verify && !spec.app_file.empty();
  if (!args.no_verify && spec.app_file.empty()) {
    spdlog::warn("{}: an inline app gets no run.yaml, so the plan is not verified",
                 spec.file.string());
  }
  control::VerifyOptions vo;
  vo.target = spec.attainment_target;
  vo.max_rounds = args.verify_rounds > 0 ? args.verify_rounds : spec.verify_rounds;
  if (spec.queue_delay_ms > 0.0) {
    vo.slack_for = [&](double demand) {
      return plan_burst_demand(args, spec, demand, dir) / demand - 1.0;
    };
  }
  // Each round's plan is written as the folder's files and read back: the verification
  // simulates the run spec the user gets, on the workload at the plan's own demand (the
  // largest-verified-demand search plans below the spec's demand).
  const control::RunBuilder make_run = [&](const plan::JigsawPlan& p, const plan::PlanInput& pin) {
    write_models_and_app(dir, args, spec, p);
    write_run_files(dir, args, spec, p, pin,
                    pin.demand_rps == in.demand_rps ? workload_yaml : workload_at(pin.demand_rps),
                    "");
    return load_run_spec(dir / "run.yaml");
  };
  plan::JigsawPlan plan;
  plan::PlanInput planned = in;
  control::Verification v;
  std::optional<control::VerifiedDemand> largest;
  if (verify) {
    v = control::verify_plan(in, base_options, make_run, vo);
    plan = v.plan;
    planned = v.input;
    if (!v.met && args.verify_probes > 0) {
      plan::PlanInput learned = in;
      learned.utilisation_cap = v.input.utilisation_cap;
      largest = control::largest_verified_demand(learned, base_options, make_run, vo, in.demand_rps,
                                                 args.verify_probes);
    }
  } else {
    plan = plan::JigsawServePlanner().plan({in, spec.options}).report;
  }
  plan::print_plan(std::cout, plan, planned);
  describe_profiles(spec);
  const bool model_ok = plan.evaluation.ok() && plan.layout_problems.empty();
  nlohmann::json j = plan::plan_to_json(plan, planned);
  const PolicyConfig policies =
      verify && plan.has_plan() ? v.data_plane.policies : preset_config("jigsawserve");
  if (verify) {
    print_verification(std::cout, v, spec.attainment_target, largest);
    j["verification"] = verification_json(v, largest, burst_demand);
    if (j.contains("check")) {
      j["check"]["model_ok"] = model_ok;
      j["check"]["ok"] = model_ok && v.met;
    }
  } else {
    j["verification"] = nullptr;
    j["not_measured"]["verification"] = "tessera plan --no-verify";
  }
  write_file(dir / "plan.json", j.dump(2) + "\n");
  if (!plan.has_plan()) {
    // No plan at the demand asked for: no run files (the verification's probes wrote some).
    for (const char* f :
         {"deployment.yaml", "profiles.yaml", "models.yaml", "app.yaml", "run.yaml"})
      std::filesystem::remove(dir / f);
    std::cout << "  wrote " << (dir / "plan.json").string() << "\n";
    if (args.report) write_report_and_tell(args.out_dir);
    throw CLI::RuntimeError(3);
  }
  write_models_and_app(dir, args, spec, plan);
  write_run_files(dir, args, spec, plan, planned, workload_yaml, control::policies_yaml(policies));
  std::cout << "  wrote " << dir.string()
            << "/plan.json, deployment.yaml, profiles.yaml, models.yaml"
            << (spec.app_file.empty() ? "" : ", app.yaml, run.yaml (tessera simulate / serve it)")
            << "\n";
  if (args.report) write_report_and_tell(args.out_dir);
  if (!model_ok || (verify && !v.met)) throw CLI::RuntimeError(4);
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
      ->check(finite_range(0.0, 10.0));
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
  cmd->add_option("--duration", args->duration_s,
                  "Seconds of run.yaml's workload (default: 60 s of Poisson arrivals, or all of "
                  "the spec's workload)")
      ->check(finite_range(0.001, 86400.0));
  cmd->add_flag("--no-verify", args->no_verify,
                "Skip the verification by simulation (docs/plan.md#verification)");
  cmd->add_option("--target", args->target,
                  "Override the spec's attainment_target: the SLO attainment the plan promises")
      ->check(finite_range(0.01, 1.0));
  cmd->add_option("--utilisation-cap", args->utilisation_cap,
                  "Override the spec's headroom.utilisation_cap: the fraction of each instance's "
                  "profiled throughput the plan counts on")
      ->check(finite_range(0.05, 1.0));
  cmd->add_option("--verify-rounds", args->verify_rounds,
                  "Override the spec's verify_rounds: plans solved and simulated at most")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--verify-probes", args->verify_probes,
                  "Demands tried for the largest verified demand when the target is missed "
                  "(0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  cmd->add_option("--headroom-model", args->headroom_model,
                  "Override the spec's headroom.model: utilisation_cap, or mdc (also an M/D/c "
                  "utilisation cap per instance kind, docs/plan.md#headroom)")
      ->check(CLI::IsMember({"utilisation_cap", "mdc"}));
  cmd->add_option("--queue-delay-ms", args->queue_delay_ms,
                  "Override the spec's headroom.queue_delay_ms (0: no burst-aware demand)")
      ->check(finite_range(0.0, 3.6e6));
  add_report_flag(*cmd, args->report);
  cmd->callback([args] { run_plan(*args); });
}

}  // namespace tessera::cli
