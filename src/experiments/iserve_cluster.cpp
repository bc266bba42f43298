#include "experiments/iserve_cluster.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/spec_node.hpp"
#include "experiments/iserve_cluster_run.hpp"
#include "iserve/analytic_model.hpp"
#include "workload/azure_llm.hpp"

namespace tessera::iserve {

// ---------------------------------------------------------------- spec

namespace {

std::filesystem::path model_config(const SpecNode& node) {
  std::filesystem::path p = node.resolve(node.as_string());
  if (std::filesystem::is_directory(p)) p /= "config.json";
  return p;
}

}  // namespace

ClusterSpec load_cluster_spec(const std::filesystem::path& file) {
  const SpecNode root = SpecNode::load_file(file);
  root.expect_map();
  root.allow_only({"gpu", "gpus", "trace", "rate_scale", "duration_s", "max_prompt_tokens",
                   "deploy_interval_s", "seed", "slo_scales", "alpaserve_slo_scale", "theta",
                   "models", "systems", "prompt_tokens", "kv_tokens"});
  ClusterSpec s;
  try {
    s.gpu = gpu_spec(root.string_or("gpu", "a6000"));
  } catch (const std::invalid_argument& e) {
    throw SpecError(root.file(), "gpu", e.what());
  }
  s.gpus = static_cast<int>(root.integer_in_or("gpus", 1, 64, 8));
  s.trace = read_azure_llm_csv(root.at("trace").as_file_path(256u << 20));
  if (auto n = root.get("rate_scale")) s.rate_scale = n->as_number_in(0.0, 1.0);
  if (auto n = root.get("duration_s")) s.duration_s = n->as_positive(7 * 86400.0);
  s.max_prompt_tokens = static_cast<int>(root.integer_in_or("max_prompt_tokens", 1, 1 << 20, 1024));
  if (auto n = root.get("deploy_interval_s")) s.deploy_interval_s = n->as_non_negative(86400.0);
  s.seed = static_cast<uint64_t>(root.integer_in_or("seed", 0, int64_t{1} << 62, 1));
  if (auto n = root.get("slo_scales")) {
    s.slo_scales.clear();
    for (const SpecNode& x : n->items()) s.slo_scales.push_back(x.as_positive(1000.0));
    if (s.slo_scales.empty() || s.slo_scales.size() > 16) {
      throw SpecError(n->file(), n->path(), "expected 1 to 16 SLO scales");
    }
  }
  if (auto n = root.get("alpaserve_slo_scale")) s.alpaserve_slo_scale = n->as_positive(1000.0);
  if (auto n = root.get("theta")) s.theta = n->as_number_in(0.0, 1.0);
  AnalyticOptions options;
  options.prompt_tokens = static_cast<int>(root.integer_in_or("prompt_tokens", 1, 1 << 20, 512));
  options.kv_tokens = static_cast<int>(root.integer_in_or("kv_tokens", 1, 1 << 24, 2048));
  options.decode_context = options.prompt_tokens + 50;
  std::map<std::string, int> seen;
  const std::vector<SpecNode> models = root.at("models").items();
  if (models.empty() || models.size() > 64) {
    throw SpecError(root.file(), "models", "expected 1 to 64 models");
  }
  for (const SpecNode& m : models) {
    ClusterModel cm;
    cm.arch = load_llm_architecture(model_config(m));
    const std::string stem = std::filesystem::path(m.as_string()).filename().string();
    cm.label = stem + "#" + std::to_string(++seen[stem]);
    cm.entries = analytic_config_map(cm.arch, s.gpus, s.gpu, options).entries;
    s.models.push_back(std::move(cm));
  }
  const std::vector<SpecNode> systems = root.at("systems").items();
  if (systems.empty() || systems.size() > 32) {
    throw SpecError(root.file(), "systems", "expected 1 to 32 systems");
  }
  for (const SpecNode& n : systems) {
    n.expect_map();
    n.allow_only(
        {"name", "kind", "intent", "placement", "skip_models", "slo_s", "budget_gbs", "theta"});
    SystemSpec sys;
    const std::string kind = n.at("kind").as_choice({"iserve", "max-pp", "max-tp", "alpaserve"});
    sys.kind = kind == "iserve"   ? SystemKind::kIServe
               : kind == "max-pp" ? SystemKind::kMaxPp
               : kind == "max-tp" ? SystemKind::kMaxTp
                                  : SystemKind::kAlpaServe;
    sys.name = n.string_or("name", kind);
    if (auto i = n.get("intent")) {
      sys.intent.kind = intent_kind_from_string(
          i->as_choice({"latency", "cost", "memory", "gpu-hours", "latency-slo", "cost-slo"}));
    }
    if (auto v = n.get("slo_s")) sys.intent.target = v->as_positive(86400.0);
    if (auto v = n.get("budget_gbs")) sys.intent.target = v->as_positive(1e12);
    if (auto p = n.get("placement")) {
      sys.placement =
          placement_policy_from_string(p->as_choice({"least-loaded", "packing", "hybrid"}));
    }
    sys.skip_models = n.bool_or("skip_models", true);
    if (auto v = n.get("theta")) sys.theta = v->as_number_in(0.0, 1.0);
    s.systems.push_back(std::move(sys));
  }
  return s;
}

// ---------------------------------------------------------------- simulation

namespace {

// The workload every system sees: thinned, cut to the duration, assigned to models.
std::vector<Query> make_queries(const ClusterSpec& spec) {
  std::mt19937_64 rng(spec.seed);
  std::vector<Query> out;
  const int n_models = static_cast<int>(spec.models.size());
  for (const Arrival& t : spec.trace) {
    if (t.time >= spec.duration_s) break;
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    const uint64_t pick = rng();
    if (u >= spec.rate_scale) continue;
    int deployed = spec.deploy_interval_s <= 0
                       ? n_models
                       : std::min(n_models, 1 + static_cast<int>(t.time / spec.deploy_interval_s));
    out.push_back({t.time, std::max(1, static_cast<int>(t.output_tokens)),
                   static_cast<int>(pick % deployed)});
  }
  return out;
}

Endpoint endpoint_of(const DeploymentChoice& d, int tp) {
  Endpoint ep;
  ep.entry = d.entry;
  ep.gpus = d.placement.gpus;
  ep.layers = d.placement.layers_per_stage;
  ep.tp = tp;
  return ep;
}

// The FP16 configuration with TP = 1 and the most stages (max-PP) or PP = 1 and the largest
// TP (max-TP) the model supports.
int extreme_entry(const ClusterModel& m, bool max_pp) {
  int best = -1;
  for (size_t i = 0; i < m.entries.size(); ++i) {
    const ConfigMapEntry& e = m.entries[i];
    if (!plain_fp16(e)) continue;
    const Parallelism& p = e.config.parallelism;
    if (max_pp ? p.tp != 1 : p.pp != 1) continue;
    const int degree = max_pp ? p.pp : p.tp;
    if (best < 0 || degree > (max_pp ? m.entries[best].config.parallelism.pp
                                     : m.entries[best].config.parallelism.tp)) {
      best = static_cast<int>(i);
    }
  }
  return best;
}

// ---------------------------------------------------------------- AlpaServe-like planner

// The models (in spec order) AlpaServe tries leaving out: each try replays the trace.
constexpr int kMaxDropTrials = 16;

struct AlpaServePlan {
  std::vector<std::vector<Endpoint>> endpoints;  // per model
  int placed = 0;
};

// Groups of g GPUs; each model at its fastest FP16 configuration of g GPUs; models by
// descending query count, each to the group with the most free memory that holds it;
// then replicas (DP) of the busiest models while memory lasts. `drop` models are left out.
AlpaServePlan alpaserve_plan(const ClusterSpec& spec, const std::vector<int64_t>& counts, int g,
                             const std::vector<bool>& drop) {
  const int n_models = static_cast<int>(spec.models.size());
  const int groups = spec.gpus / g;
  std::vector<double> free(groups, spec.gpu.memory_bytes);  // per GPU of the group
  std::vector<int> entry(n_models, -1);
  for (int m = 0; m < n_models; ++m) {
    const ClusterModel& cm = spec.models[m];
    for (size_t i = 0; i < cm.entries.size(); ++i) {
      const ConfigMapEntry& e = cm.entries[i];
      if (e.gpus() != g || !plain_fp16(e)) continue;
      if (entry[m] < 0 || e.latency_s(100) < cm.entries[entry[m]].latency_s(100)) {
        entry[m] = static_cast<int>(i);
      }
    }
  }
  std::vector<int> order(n_models);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return counts[a] > counts[b]; });
  AlpaServePlan plan;
  plan.endpoints.assign(n_models, {});
  std::vector<std::set<int>> in_group(n_models);
  auto try_place = [&](int m) {
    if (entry[m] < 0 || drop[m]) return false;
    const ConfigMapEntry& e = spec.models[m].entries[entry[m]];
    const double need = e.memory_bytes / g;
    int best = -1;
    for (int j = 0; j < groups; ++j) {
      if (in_group[m].count(j) || free[j] < need) continue;
      if (best < 0 || free[j] > free[best]) best = j;
    }
    if (best < 0) return false;
    free[best] -= need;
    in_group[m].insert(best);
    Endpoint ep;
    ep.entry = entry[m];
    ep.tp = e.config.parallelism.tp;
    for (int r = 0; r < g; ++r) ep.gpus.push_back(best * g + r);
    const int pp = e.config.parallelism.pp;
    for (int s = 0; s < pp; ++s) {
      ep.layers.push_back(static_cast<int>(e.layers / pp + (s < e.layers % pp ? 1 : 0)));
    }
    plan.endpoints[m].push_back(ep);
    return true;
  };
  for (int m : order) plan.placed += try_place(m) ? 1 : 0;
  for (bool added = true; added;) {
    added = false;
    for (int m : order) {
      if (!plan.endpoints[m].empty() && try_place(m)) added = true;
    }
  }
  return plan;
}

// Each model's endpoints in an AlpaServe plan.
std::vector<int> replicas(const AlpaServePlan& plan) {
  std::vector<int> out;
  for (const auto& eps : plan.endpoints) out.push_back(static_cast<int>(eps.size()));
  return out;
}

}  // namespace

std::vector<SystemOutcome> run_cluster(const ClusterSpec& spec) {
  const std::vector<Query> queries = make_queries(spec);
  std::vector<SystemOutcome> outcomes;
  for (const SystemSpec& sys : spec.systems) {
    Decide decide;
    std::vector<int> slots(spec.models.size(), 1);  // iServe, max-PP, max-TP: one endpoint
    switch (sys.kind) {
      case SystemKind::kIServe:
        decide = [&](int m, std::vector<GpuState>& gpus, double now) -> std::vector<Endpoint> {
          const ClusterModel& cm = spec.models[m];
          const auto d = IServePlanner()
                             .plan({cm.label, cm.entries, sys.intent, gpus, sys.placement,
                                    sys.theta >= 0 ? sys.theta : spec.theta, now, spec.gpu.name})
                             .report;
          if (!d) return {};
          const int tp = cm.entries[d->entry].config.parallelism.tp;
          apply_deployment(gpus, *d, tp);
          return {endpoint_of(*d, tp)};
        };
        break;
      case SystemKind::kMaxPp:
      case SystemKind::kMaxTp: {
        const bool max_pp = sys.kind == SystemKind::kMaxPp;
        decide = [&spec, max_pp](int m, std::vector<GpuState>& gpus,
                                 double now) -> std::vector<Endpoint> {
          const ClusterModel& cm = spec.models[m];
          const int i = extreme_entry(cm, max_pp);
          if (i < 0) return {};
          const ConfigMapEntry& e = cm.entries[i];
          const int tp = e.config.parallelism.tp;
          const double block =
              e.memory_bytes / (static_cast<double>(tp) * static_cast<double>(e.layers));
          StagePlacement p = place(gpus, tp, e.config.parallelism.pp, static_cast<int>(e.layers),
                                   block, PlacementPolicy::kLeastLoaded, 0.0, now);
          if (p.gpus.empty()) return {};
          DeploymentChoice d{i, std::move(p), 0};
          apply_deployment(gpus, d, tp);
          return {endpoint_of(d, tp)};
        };
        break;
      }
      case SystemKind::kAlpaServe: {
        // Given the whole trace: the query count of every model, and a replay per plan.
        std::vector<int64_t> counts(spec.models.size(), 0);
        for (const Query& q : queries) ++counts[q.model];
        ClusterSpec judge = spec;
        judge.slo_scales = {spec.alpaserve_slo_scale};
        auto score = [&](const AlpaServePlan& plan) {
          return simulate_on_engine(
                     judge, queries, sys.name,
                     [&plan](int m, std::vector<GpuState>&, double) { return plan.endpoints[m]; },
                     replicas(plan))
              .slo_attainment[0];
        };
        AlpaServePlan best;
        double best_score = -1;
        int best_placed = -1;
        const int n_models = static_cast<int>(spec.models.size());
        for (int g = 1; g <= spec.gpus; g *= 2) {
          if (spec.gpus % g) continue;
          std::vector<bool> drop(n_models, false);
          AlpaServePlan plan = alpaserve_plan(spec, counts, g, drop);
          double s = score(plan);
          if (sys.skip_models) {  // leave a model out when that raises attainment
            for (int m = 0; m < n_models && m < kMaxDropTrials; ++m) {
              if (plan.endpoints[m].empty()) continue;
              std::vector<bool> d2 = drop;
              d2[m] = true;
              AlpaServePlan p2 = alpaserve_plan(spec, counts, g, d2);
              const double s2 = score(p2);
              if (s2 > s) {
                drop = d2;
                plan = std::move(p2);
                s = s2;
              }
            }
          }
          const bool better = sys.skip_models ? s > best_score
                                              : (plan.placed > best_placed ||
                                                 (plan.placed == best_placed && s > best_score));
          if (better) {
            best = std::move(plan);
            best_score = s;
            best_placed = best.placed;
          }
        }
        decide = [best](int m, std::vector<GpuState>&, double) { return best.endpoints[m]; };
        slots = replicas(best);
        break;
      }
    }
    outcomes.push_back(simulate_on_engine(spec, queries, sys.name, decide, slots));
  }
  return outcomes;
}

std::string cluster_report_markdown(const ClusterSpec& spec,
                                    const std::vector<SystemOutcome>& outcomes) {
  std::ostringstream o;
  char buf[512];
  o << "| system | model | configuration | replicas | GPUs (stages) | layers per stage |\n"
       "|---|---|---|---|---|---|\n";
  for (const SystemOutcome& s : outcomes) {
    for (const ModelOutcome& m : s.models) {
      o << "| " << s.name << " | " << m.label << " | " << m.config << " | " << m.replicas << " | "
        << (m.gpus.empty() ? "-" : m.gpus) << " | " << (m.layers.empty() ? "-" : m.layers)
        << " |\n";
    }
  }
  o << "\n| system | models deployed | GPUs used | memory (GB) | queries | served | p50 (s) | "
       "p95 (s) | p99 (s) | cost (GB·s per query) | GPU-hours | queries/s per GPU";
  for (double k : spec.slo_scales) {
    std::snprintf(buf, sizeof(buf), " | SLO %.1fx", k);
    o << buf;
  }
  o << " |\n|---|---|---|---|---|---|---|---|---|---|---|---";
  for (size_t k = 0; k < spec.slo_scales.size(); ++k) o << "|---";
  o << "|\n";
  for (const SystemOutcome& s : outcomes) {
    std::snprintf(
        buf, sizeof(buf),
        "| %s | %d/%zu | %d | %.1f | %lld | %lld | %.2f | %.2f | %.2f | %.0f | %.2f | %.4f",
        s.name.c_str(), s.models_deployed, s.models.size(), s.gpus_used, s.memory_gb,
        static_cast<long long>(s.queries), static_cast<long long>(s.served), s.p50_s, s.p95_s,
        s.p99_s, s.mean_cost_gbs, s.gpu_hours, s.throughput_per_gpu);
    o << buf;
    for (double a : s.slo_attainment) {
      std::snprintf(buf, sizeof(buf), " | %.1f %%", 100.0 * a);
      o << buf;
    }
    o << " |\n";
  }
  return o.str();
}

}  // namespace tessera::iserve
