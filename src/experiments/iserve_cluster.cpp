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
#include "iserve/analytic_model.hpp"

namespace tessera::iserve {

// ---------------------------------------------------------------- trace

std::vector<TraceQuery> load_azure_llm_trace(const std::filesystem::path& file) {
  const std::string name = file.string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    throw SpecError(name, "", "not a regular file");
  }
  if (std::filesystem::file_size(file, ec) > (256u << 20)) {
    throw SpecError(name, "", "larger than 256 MiB");
  }
  std::ifstream in(file);
  std::string line;
  if (!std::getline(in, line) || line.rfind("TIMESTAMP,ContextTokens,GeneratedTokens", 0) != 0) {
    throw SpecError(name, "line 1", "expected the header TIMESTAMP,ContextTokens,GeneratedTokens");
  }
  std::vector<TraceQuery> out;
  double first = -1, prev = -1, day = 0;
  for (int n = 2; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::string where = "line " + std::to_string(n);
    int hh = 0, mm = 0;
    double ss = 0;
    long long prompt = 0, output = 0;
    char rest[2];
    // "2023-11-16 18:17:03.9799600,4808,10": the time of day is all the trace needs.
    const size_t space = line.find(' ');
    if (space == std::string::npos ||
        std::sscanf(line.c_str() + space + 1, "%2d:%2d:%lf,%lld,%lld%1s", &hh, &mm, &ss, &prompt,
                    &output, rest) != 5 ||
        hh < 0 || hh > 23 || mm < 0 || mm > 59 || !(ss >= 0 && ss < 61) || prompt < 0 ||
        output < 0 || prompt > 10'000'000 || output > 10'000'000) {
      throw SpecError(
          name, where,
          "expected DATE HH:MM:SS.frac,context tokens,generated tokens: " + printable(line));
    }
    double t = hh * 3600.0 + mm * 60.0 + ss + day;
    if (prev >= 0 && t + 43200.0 < prev) {  // past midnight
      day += 86400.0;
      t += 86400.0;
    }
    if (first < 0) first = t;
    prev = t;
    out.push_back({t - first, static_cast<int>(prompt), static_cast<int>(output)});
    if (out.size() > 10'000'000) throw SpecError(name, where, "more than 10 million rows");
  }
  std::stable_sort(out.begin(), out.end(), [](const TraceQuery& a, const TraceQuery& b) {
    return a.arrival_s < b.arrival_s;
  });
  return out;
}

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
  s.trace = load_azure_llm_trace(root.at("trace").as_file_path(256u << 20));
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

struct Query {
  double arrival = 0;
  int output = 0;
  int model = 0;
};

struct Endpoint {
  int entry = -1;
  std::vector<int> gpus;
  std::vector<int> layers;  // per stage
  int tp = 1;
};

// The workload every system sees: thinned, cut to the duration, assigned to models.
std::vector<Query> make_queries(const ClusterSpec& spec) {
  std::mt19937_64 rng(spec.seed);
  std::vector<Query> out;
  const int n_models = static_cast<int>(spec.models.size());
  for (const TraceQuery& t : spec.trace) {
    if (t.arrival_s >= spec.duration_s) break;
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    const uint64_t pick = rng();
    if (u >= spec.rate_scale) continue;
    int deployed =
        spec.deploy_interval_s <= 0
            ? n_models
            : std::min(n_models, 1 + static_cast<int>(t.arrival_s / spec.deploy_interval_s));
    out.push_back({t.arrival_s, std::max(1, t.output_tokens), static_cast<int>(pick % deployed)});
  }
  return out;
}

// The SLO base of a model: its fastest FP16 configuration on the fewest GPUs that holds it.
int base_entry(const ClusterModel& m, const GpuSpec& gpu) {
  int best = -1;
  for (size_t i = 0; i < m.entries.size(); ++i) {
    const ConfigMapEntry& e = m.entries[i];
    if (e.config.weights != WeightQuant::kFp16 || e.config.kv_cache != KvQuant::kFp16 ||
        e.config.pruning != Pruning::kNone) {
      continue;
    }
    if (e.memory_bytes / e.gpus() > gpu.memory_bytes) continue;
    if (best < 0 || e.gpus() < m.entries[best].gpus() ||
        (e.gpus() == m.entries[best].gpus() && e.latency_s(100) < m.entries[best].latency_s(100))) {
      best = static_cast<int>(i);
    }
  }
  if (best < 0) {  // nothing fits a GPU: the fewest-GPU FP16 configuration
    for (size_t i = 0; i < m.entries.size(); ++i) {
      const ConfigMapEntry& e = m.entries[i];
      if (e.config.weights == WeightQuant::kFp16 && e.config.pruning == Pruning::kNone &&
          e.config.kv_cache == KvQuant::kFp16 && (best < 0 || e.gpus() < m.entries[best].gpus())) {
        best = static_cast<int>(i);
      }
    }
  }
  return best;
}

// Decides a model's endpoints when it is deployed (at `now`, given the GPUs' state).
using Decide =
    std::function<std::vector<Endpoint>(int model, std::vector<GpuState>& gpus, double now)>;

SystemOutcome simulate(const ClusterSpec& spec, const std::vector<Query>& queries,
                       const std::string& name, const Decide& decide) {
  std::vector<GpuState> gpus(spec.gpus);
  for (GpuState& g : gpus) g.memory_bytes = spec.gpu.memory_bytes;
  std::vector<double> gpu_free(spec.gpus, 0.0);
  const int n_models = static_cast<int>(spec.models.size());
  std::vector<std::vector<Endpoint>> endpoints(n_models);
  std::vector<int> base(n_models);
  for (int m = 0; m < n_models; ++m) base[m] = base_entry(spec.models[m], spec.gpu);

  SystemOutcome out;
  out.name = name;
  out.slo_attainment.assign(spec.slo_scales.size(), 0.0);
  std::vector<double> latencies;
  std::vector<int64_t> met(spec.slo_scales.size(), 0);
  double cost_sum = 0, gpu_seconds = 0;
  int next_model = 0;
  auto deploy_until = [&](double t) {
    while (next_model < n_models && next_model * spec.deploy_interval_s <= t) {
      const double now = next_model * spec.deploy_interval_s;
      endpoints[next_model] = decide(next_model, gpus, now);
      ++next_model;
    }
  };
  for (const Query& q : queries) {
    deploy_until(q.arrival);
    ++out.queries;
    const ClusterModel& model = spec.models[q.model];
    const std::vector<Endpoint>& eps = endpoints[q.model];
    if (eps.empty()) continue;
    // The replica that can start first.
    const Endpoint* best = nullptr;
    double best_start = 0;
    for (const Endpoint& ep : eps) {
      double start = q.arrival;
      for (int g : ep.gpus) start = std::max(start, gpu_free[g]);
      if (!best || start < best_start) {
        best = &ep;
        best_start = start;
      }
    }
    const ConfigMapEntry& e = model.entries[best->entry];
    const double service = e.latency_s(q.output);
    const double end = best_start + service;
    for (int g : best->gpus) {
      gpu_free[g] = end;
      gpus[g].load.add_busy(best_start, end);
    }
    const double latency = end - q.arrival;
    latencies.push_back(latency);
    ++out.served;
    cost_sum += e.memory_bytes / 1e9 * latency;
    gpu_seconds += service * static_cast<double>(best->gpus.size());
    if (base[q.model] >= 0) {
      const double slo_base = model.entries[base[q.model]].latency_s(q.output);
      for (size_t k = 0; k < spec.slo_scales.size(); ++k) {
        if (latency <= spec.slo_scales[k] * slo_base) ++met[k];
      }
    }
  }
  deploy_until(1e300);
  std::set<int> used;
  for (int m = 0; m < n_models; ++m) {
    ModelOutcome mo;
    mo.label = spec.models[m].label;
    mo.replicas = static_cast<int>(endpoints[m].size());
    mo.config =
        endpoints[m].empty() ? "-" : spec.models[m].entries[endpoints[m][0].entry].config.name();
    for (const Endpoint& ep : endpoints[m]) {
      out.memory_gb += spec.models[m].entries[ep.entry].memory_bytes / 1e9;
      for (int g : ep.gpus) used.insert(g);
    }
    if (!endpoints[m].empty()) {
      ++out.models_deployed;
      const Endpoint& ep = endpoints[m][0];
      std::ostringstream g, l;
      for (size_t s = 0; s < ep.layers.size(); ++s) {
        if (s) {
          g << "|";
          l << "/";
        }
        l << ep.layers[s];
        for (int r = 0; r < ep.tp; ++r) g << (r ? "," : "") << ep.gpus[s * ep.tp + r];
      }
      mo.gpus = g.str();
      mo.layers = l.str();
    }
    out.models.push_back(mo);
  }
  out.gpus_used = static_cast<int>(used.size());
  if (!latencies.empty()) {
    std::sort(latencies.begin(), latencies.end());
    auto pct = [&](double p) {
      const size_t i =
          static_cast<size_t>(std::ceil(p * static_cast<double>(latencies.size()))) - 1;
      return latencies[std::min(i, latencies.size() - 1)];
    };
    out.p50_s = pct(0.50);
    out.p95_s = pct(0.95);
    out.p99_s = pct(0.99);
    out.mean_cost_gbs = cost_sum / static_cast<double>(latencies.size());
  }
  out.gpu_hours = gpu_seconds / 3600.0;
  const double span = queries.empty() ? 1.0 : std::max(1.0, queries.back().arrival);
  out.throughput_per_gpu =
      out.gpus_used ? static_cast<double>(out.served) / span / out.gpus_used : 0.0;
  for (size_t k = 0; k < met.size(); ++k) {
    out.slo_attainment[k] =
        out.queries ? static_cast<double>(met[k]) / static_cast<double>(out.queries) : 0.0;
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
    if (e.config.weights != WeightQuant::kFp16 || e.config.kv_cache != KvQuant::kFp16 ||
        e.config.pruning != Pruning::kNone) {
      continue;
    }
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
      if (e.gpus() != g || e.config.weights != WeightQuant::kFp16 ||
          e.config.kv_cache != KvQuant::kFp16 || e.config.pruning != Pruning::kNone) {
        continue;
      }
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

}  // namespace

std::vector<SystemOutcome> run_cluster(const ClusterSpec& spec) {
  const std::vector<Query> queries = make_queries(spec);
  std::vector<SystemOutcome> outcomes;
  for (const SystemSpec& sys : spec.systems) {
    Decide decide;
    switch (sys.kind) {
      case SystemKind::kIServe:
        decide = [&](int m, std::vector<GpuState>& gpus, double now) -> std::vector<Endpoint> {
          const ClusterModel& cm = spec.models[m];
          const auto d = choose_deployment(cm.entries, sys.intent, gpus, sys.placement,
                                           sys.theta >= 0 ? sys.theta : spec.theta, now);
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
          return simulate(
                     judge, queries, sys.name,
                     [&plan](int m, std::vector<GpuState>&, double) { return plan.endpoints[m]; })
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
        break;
      }
    }
    outcomes.push_back(simulate(spec, queries, sys.name, decide));
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
