// The PPipe planner (src/plan/ppipe/): the A.2 MILP against exhaustive enumeration on tiny
// instances, infeasible inputs naming the binding constraint, NP and DART-r sanity on the
// paper's data, plan.json round trip and validation, the plan spec, and pre-partitioning.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>

#include "core/error.hpp"
#include "core/spec_node.hpp"
#include "dataplane/ppipe/plan_json.hpp"
#include "dataplane/ppipe/setup.hpp"
#include "plan/planner.hpp"
#include "plan/ppipe/deploy.hpp"
#include "plan/ppipe/planner.hpp"
#include "plan/ppipe/spec.hpp"
#include "profile/ppipe_prepartition.hpp"
#include "spec/run_spec.hpp"

namespace {

using namespace tessera;
using namespace tessera::plan;

const std::filesystem::path kPpipeData =
    std::filesystem::path(TESSERA_SOURCE_DIR) / "data" / "profiles" / "ppipe";

ppipe::GpuClass gpu(const std::string& name, int count, int mps, double nic = 10.0) {
  ppipe::GpuClass g;
  g.name = name;
  g.count = count;
  g.max_mps = mps;
  g.nic_gbps = nic;
  return g;
}

// A random 3-block model on a fast class A (shares 1, 2) and a slow class B (share 1),
// batch sizes 1..2; latencies grow sub-linearly with batch and super-linearly with sharing.
PpipeDnn tiny_dnn(unsigned seed, const std::string& name = "tiny") {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> lat(2000.0, 9000.0), ratio(1.5, 5.0);
  PpipeDnn d;
  d.name = name;
  d.slo_ms = 60.0;
  std::vector<double> a(3), r(3);
  for (int b = 0; b < 3; ++b) {
    a[b] = lat(rng);
    r[b] = ratio(rng);
  }
  auto make = [&](const std::string& g, int share, double factor) {
    PpipeBlockProfile p;
    p.model = name;
    p.gpu = g;
    p.mps_share = share;
    for (int b = 0; b < 3; ++b) {
      const double one = a[b] * factor * (g == "B" ? r[b] : 1.0);
      p.block_latency_us.push_back({one, one * 1.6});
    }
    p.transfer_bytes = {200'000, 50'000};
    return p;
  };
  d.profiles = {make("A", 1, 1.0), make("A", 2, 1.7), make("B", 1, 1.0)};
  return d;
}

PpipeInput tiny_input(unsigned seed, int count_a, int count_b) {
  PpipeInput in;
  in.cluster.classes = {gpu("A", count_a, 2), gpu("B", count_b, 1)};
  in.dnns = {tiny_dnn(seed)};
  in.options.batch_build_estimate = false;
  in.options.milp.relative_gap = 1e-9;
  in.options.milp.absolute_gap = 1e-9;
  return in;
}

// Exhaustive search over the paper's plan space for one DNN: per template at most one
// configuration (every configuration, not only the undominated ones), every vGPU count,
// whole physical GPUs per (class, position) within each class's count.
double brute_force(const PpipeInput& in) {
  const auto templates = enumerate_templates(2, in.options.max_partitions);
  ConfigRules rules;
  rules.budget_ms = in.dnns[0].slo_ms * (1.0 - in.options.slo_margin);
  rules.prune_dominated = false;
  const auto configs = enumerate_configs(in.cluster, in.dnns[0], templates, in.options, rules);
  std::map<int, std::vector<const PipeConfig*>> by_t;
  for (const auto& c : configs) by_t[c.tmpl].push_back(&c);
  std::vector<std::vector<const PipeConfig*>> groups;
  for (auto& [t, cs] : by_t) groups.push_back(cs);
  // Usage in 1/12 GPU units per (class, position) (12 = lcm of the shares).
  std::map<std::pair<int, int>, int> usage;
  auto fits = [&] {
    std::vector<int> gpus(2, 0);
    for (const auto& [key, units] : usage) gpus[key.first] += (units + 11) / 12;
    return gpus[0] <= in.cluster.classes[0].count && gpus[1] <= in.cluster.classes[1].count;
  };
  double best = 0.0;
  std::function<void(size_t, double)> go = [&](size_t gi, double value) {
    if (gi == groups.size()) {
      best = std::max(best, value);
      return;
    }
    go(gi + 1, value);  // this template unused
    for (const PipeConfig* c : groups[gi]) {
      std::vector<int> g(c->parts.size(), 1);
      std::function<void(size_t)> counts = [&](size_t d) {
        if (d == c->parts.size()) {
          double thr = 1e300;
          for (size_t i = 0; i < g.size(); ++i) thr = std::min(thr, g[i] * c->parts[i].x_vgpu);
          go(gi + 1, value + thr);
          return;
        }
        const auto& p = c->parts[d];
        for (int n = 1;; ++n) {
          usage[{p.cls, static_cast<int>(d)}] += 12 / p.mps;
          if (!fits()) {
            usage[{p.cls, static_cast<int>(d)}] -= n * (12 / p.mps);
            return;
          }
          g[d] = n;
          counts(d + 1);
        }
      };
      counts(0);
    }
  };
  go(0, 0.0);
  return best;
}

TEST(PpipeMilp, MatchesExhaustiveEnumerationOnTinyInstances) {
  int partitioned = 0, shared = 0;
  for (unsigned seed = 1; seed <= 6; ++seed) {
    const PpipeInput in = tiny_input(seed, 1 + seed % 2, 2 + seed % 2);
    const PpipeResult r = plan_ppipe(in);
    ASSERT_TRUE(r.ok()) << r.problems.front();
    ASSERT_EQ(r.plan.solve.status, PlanStatus::kOptimal);
    const double exact = brute_force(in);
    EXPECT_NEAR(r.plan.dnns[0].throughput, exact, 1e-6 * exact) << "seed " << seed;
    EXPECT_NEAR(r.plan.solve.objective, exact, 1e-6 * exact) << "seed " << seed;
    EXPECT_GT(exact, 0.0);
    for (const auto& p : r.plan.dnns[0].pipelines) {
      partitioned += p.partitions.size() > 1 ? 1 : 0;
      for (const auto& part : p.partitions) shared += part.mps > 1 ? 1 : 0;
    }
  }
  // The instances exercise cuts and MPS, not only whole-model pipelines.
  EXPECT_GT(partitioned, 0);
  EXPECT_GT(shared, 0);
}

// The tightened formulation (LP-optimum caps on every configuration's throughput and vGPU
// counts, g <= gmax u, a whole GPU per used position) keeps the optimum: on one DNN the
// tightened and the plain model both reach the exhaustive optimum; on two DNNs sharing the
// GPUs (max min_m x_m / w_m), where each DNN's cap w_m z_LP is well below what one
// configuration could reach on the whole cluster, both reach the same objective.
TEST(PpipeMilp, TightenedFormulationKeepsTheOptimum) {
  for (unsigned seed = 1; seed <= 6; ++seed) {
    PpipeInput in = tiny_input(seed, 2 + seed % 2, 3);
    const double exact = brute_force(in);
    in.options.tighten_formulation = true;
    const PpipeResult tight = plan_ppipe(in);
    in.options.tighten_formulation = false;
    const PpipeResult plain = plan_ppipe(in);
    ASSERT_TRUE(tight.ok()) << tight.problems.front();
    ASSERT_TRUE(plain.ok()) << plain.problems.front();
    EXPECT_NEAR(tight.plan.solve.objective, exact, 1e-6 * exact) << "seed " << seed;
    EXPECT_NEAR(plain.plan.solve.objective, exact, 1e-6 * exact) << "seed " << seed;
  }
  for (unsigned seed = 1; seed <= 4; ++seed) {
    PpipeInput in = tiny_input(seed, 3, 4);
    in.dnns.push_back(tiny_dnn(seed + 100, "other"));
    in.dnns[0].weight = 0.4;
    in.dnns[1].weight = 0.6;
    in.options.tighten_formulation = true;
    const PpipeResult tight = plan_ppipe(in);
    in.options.tighten_formulation = false;
    const PpipeResult plain = plan_ppipe(in);
    ASSERT_TRUE(tight.ok()) << tight.problems.front();
    ASSERT_TRUE(plain.ok()) << plain.problems.front();
    EXPECT_GT(plain.plan.solve.objective, 0.0);
    EXPECT_NEAR(tight.plan.solve.objective, plain.plan.solve.objective,
                1e-6 * plain.plan.solve.objective)
        << "seed " << seed;
  }
}

// The warm start (the MILP restricted to the LP relaxation's configurations, CBC's first
// incumbent) and the branching priorities change how CBC searches, not the model: with
// both on and both off the objective is the exhaustive optimum (one DNN) or the same (two
// DNNs), and the warm start's plan never beats the final one.
TEST(PpipeMilp, WarmStartAndBranchPrioritiesKeepTheOptimum) {
  int warm = 0;
  for (unsigned seed = 1; seed <= 4; ++seed) {
    PpipeInput in = tiny_input(seed, 2 + seed % 2, 3);
    const double exact = brute_force(in);
    in.options.warm_start_share = 0.2;
    in.options.branch_priorities = true;
    const PpipeResult with = plan_ppipe(in);
    in.options.warm_start_share = 0.0;
    in.options.branch_priorities = false;
    const PpipeResult without = plan_ppipe(in);
    ASSERT_TRUE(with.ok()) << with.problems.front();
    ASSERT_TRUE(without.ok()) << without.problems.front();
    EXPECT_NEAR(with.plan.solve.objective, exact, 1e-6 * exact) << "seed " << seed;
    EXPECT_NEAR(without.plan.solve.objective, exact, 1e-6 * exact) << "seed " << seed;
    EXPECT_EQ(without.plan.solve.warm_start, 0.0);
    EXPECT_LE(with.plan.solve.warm_start, with.plan.solve.objective * (1 + 1e-9));
    warm += with.plan.solve.warm_start > 0.0 ? 1 : 0;
  }
  for (unsigned seed = 1; seed <= 3; ++seed) {
    PpipeInput in = tiny_input(seed, 3, 4);
    in.dnns.push_back(tiny_dnn(seed + 100, "other"));
    in.dnns[0].weight = 0.4;
    in.dnns[1].weight = 0.6;
    in.options.warm_start_share = 0.2;
    in.options.branch_priorities = true;
    const PpipeResult with = plan_ppipe(in);
    in.options.warm_start_share = 0.0;
    in.options.branch_priorities = false;
    const PpipeResult without = plan_ppipe(in);
    ASSERT_TRUE(with.ok()) << with.problems.front();
    ASSERT_TRUE(without.ok()) << without.problems.front();
    EXPECT_NEAR(with.plan.solve.objective, without.plan.solve.objective,
                1e-6 * without.plan.solve.objective)
        << "seed " << seed;
    warm += with.plan.solve.warm_start > 0.0 ? 1 : 0;
  }
  EXPECT_GT(warm, 0);  // the warm start found a plan on some instances
}

// The surrogate decomposition bound (per-DNN min-cost MILPs at fixed targets, the bound
// capping z) is the same model solved differently: forced on for two and three tiny DNNs,
// the objective is the monolithic MILP's, the bound it proves holds, and the plan passes
// the re-check.
TEST(PpipeMilp, DecompositionBoundAgreesWithTheMonolithicMilp) {
  for (unsigned seed = 1; seed <= 3; ++seed) {
    PpipeInput in = tiny_input(seed, 3, 4);
    in.dnns.push_back(tiny_dnn(seed + 100, "other"));
    if (seed == 3) in.dnns.push_back(tiny_dnn(seed + 200, "third"));
    for (size_t m = 0; m < in.dnns.size(); ++m)
      in.dnns[m].weight = 0.3 + 0.2 * static_cast<double>(m);
    in.options.decomposition_bound = false;
    const PpipeResult mono = plan_ppipe(in);
    in.options.decomposition_bound = true;
    in.options.decomposition_always = true;
    const PpipeResult dec = plan_ppipe(in);
    ASSERT_TRUE(mono.ok()) << mono.problems.front();
    ASSERT_TRUE(dec.ok()) << dec.problems.front();
    const double opt = mono.plan.solve.objective;
    EXPECT_NEAR(dec.plan.solve.objective, opt, 1e-6 * opt) << "seed " << seed;
    EXPECT_GT(dec.plan.solve.decomposition_calls, 0) << "seed " << seed;
    EXPECT_GE(dec.plan.solve.decomposition_bound, opt * (1 - 1e-6)) << "seed " << seed;
    EXPECT_EQ(mono.plan.solve.decomposition_calls, 0);
  }
}

// A tiny instance of two or three DNNs with CBC cut to its root (a weak incumbent) and the
// decomposition always on.
PpipeInput decomposition_input(unsigned seed) {
  PpipeInput in = tiny_input(seed, 3, 4);
  in.dnns.push_back(tiny_dnn(seed + 100, "other"));
  if (seed % 2 == 0) in.dnns.push_back(tiny_dnn(seed + 200, "third"));
  in.options.warm_start_share = 0.0;
  in.options.milp.node_limit = 1;
  in.options.decomposition_always = true;
  return in;
}

// The decomposition's primal side: with CBC cut to its root (a weak incumbent), the
// per-DNN plans combined by the decomposition (or by its column pool's MILP) become the
// plan where they are better, and that plan passes the outside re-check like every plan.
TEST(PpipeMilp, DecompositionPlanReplacesAWeakIncumbentAndPassesTheRecheck) {
  int replaced = 0;
  for (unsigned seed = 1; seed <= 6; ++seed) {
    const PpipeResult r = plan_ppipe(decomposition_input(seed));
    ASSERT_TRUE(r.ok()) << "seed " << seed << ": " << r.problems.front();
    const auto& s = r.plan.solve;
    EXPECT_GE(s.objective, s.decomposition_plan - 1e-9) << "seed " << seed;
    const bool pooled = s.detail.find("column pool") != std::string::npos;
    if (pooled) {
      // The column pool's plan beat the combined one (and CBC's), so it is at least as good.
      ++replaced;
      EXPECT_GT(s.objective, s.decomposition_plan) << "seed " << seed;
    }
    if (s.detail.find("combined per-DNN plans") != std::string::npos || pooled) {
      if (!pooled) {
        ++replaced;
        EXPECT_NEAR(s.objective, s.decomposition_plan, 1e-9) << "seed " << seed;
      }
      double z = 1e300;
      for (const auto& d : r.plan.dnns) z = std::min(z, d.throughput / d.weight);
      EXPECT_NEAR(z, s.objective, 1e-6 * s.objective) << "seed " << seed;
    }
  }
  EXPECT_GT(replaced, 0);
}

// The same instance with a gap rule its first target cannot meet, so the bisection goes on
// and the column pool runs.
PpipeInput pool_input(unsigned seed) {
  PpipeInput in = decomposition_input(seed);
  in.options.milp.relative_gap = 1e-6;
  return in;
}

// `on`'s plan is never below the combined per-DNN plans, serves what it claims and is within
// its own bound; both runs' bounds are valid for the same model, so neither objective exceeds
// the other's bound.
void expect_valid_against(const PpipeResult& on, const PpipeResult& off, unsigned seed) {
  ASSERT_TRUE(on.ok()) << "seed " << seed << ": " << on.problems.front();
  ASSERT_TRUE(off.ok()) << "seed " << seed << ": " << off.problems.front();
  const auto& s = on.plan.solve;
  EXPECT_GE(s.objective, s.decomposition_plan - 1e-9) << "seed " << seed;
  EXPECT_GE(s.bound, s.objective * (1 - 1e-9)) << "seed " << seed;
  double z = 1e300;
  for (const auto& d : on.plan.dnns) z = std::min(z, d.throughput / d.weight);
  EXPECT_GE(z, s.objective * (1 - 1e-6)) << "seed " << seed;
  EXPECT_LE(s.objective, off.plan.solve.bound * (1 + 1e-6)) << "seed " << seed;
  EXPECT_LE(off.plan.solve.objective, s.bound * (1 + 1e-6)) << "seed " << seed;
}

// The column pool's MILP (the full model restricted to the configurations the per-DNN plans
// used): its plan passes the outside re-check, is never below the combined per-DNN plans,
// serves what it claims, and each run's bound (with and without the pool) holds against the
// other's plan.
TEST(PpipeMilp, ColumnPoolPlansPassTheRecheckAndNeverLoseToTheirStart) {
  int pooled = 0;
  for (unsigned seed = 1; seed <= 6; ++seed) {
    PpipeInput in = pool_input(seed);
    in.options.decomposition_pool = false;
    const PpipeResult off = plan_ppipe(in);
    in.options.decomposition_pool = true;
    const PpipeResult on = plan_ppipe(in);
    expect_valid_against(on, off, seed);
    if (on.plan.solve.detail.find("column pool") != std::string::npos) ++pooled;
  }
  EXPECT_GT(pooled, 0);  // the pool's plan was the output somewhere (seed 1..6: once)
}

// Price-and-branch in the column pool (PpipeOptions::decomposition_pool_pricing): per-DNN
// plans priced by the pool LP's budget duals join the pool. Its plans pass the outside
// re-check and serve what they claim, the bounds with and without it each hold against the
// other's plan, and the pricing asks per-DNN MILPs of its own.
TEST(PpipeMilp, PoolPricingPlansPassTheRecheckAndKeepTheBoundsValid) {
  int priced = 0;
  for (unsigned seed = 1; seed <= 6; ++seed) {
    PpipeInput in = pool_input(seed);
    in.options.decomposition_many_classes = 2;  // the pricing runs on two classes too
    in.options.decomposition_pool_pricing = false;
    const PpipeResult off = plan_ppipe(in);
    in.options.decomposition_pool_pricing = true;
    const PpipeResult on = plan_ppipe(in);
    expect_valid_against(on, off, seed);
    if (on.plan.solve.decomposition_calls > off.plan.solve.decomposition_calls) ++priced;
  }
  EXPECT_GT(priced, 0);  // the pricing asked per-DNN MILPs on some instances
}

TEST(PpipeMilp, TemplatesAreThePapersDistinctPipelines) {
  EXPECT_EQ(enumerate_templates(2, 3).size(), 14u);  // §4: 2 + 4 + 8
  EXPECT_EQ(enumerate_templates(2, 2).size(), 6u);
  EXPECT_EQ(enumerate_templates(4, 2).size(), 20u);
  EXPECT_EQ(enumerate_repo_templates(2, 2).size(), 4u);  // the repo's |K|^2
}

TEST(PpipeMilp, RepoTemplatesVariantPlansAndPassesTheRecheck) {
  PpipeInput in = tiny_input(2, 2, 3);
  in.options.repo_templates = true;
  const PpipeResult r = plan_ppipe(in);
  ASSERT_TRUE(r.ok()) << r.problems.front();
  EXPECT_EQ(r.plan.solve.templates, 4);
  EXPECT_GT(r.plan.dnns[0].throughput, 0.0);
  EXPECT_LE(r.plan.dnns[0].pipelines.size(), 4u);
}

TEST(PpipeMilp, ThreePartitionsMatchExhaustiveEnumeration) {
  PpipeInput in = tiny_input(7, 1, 2);
  in.options.max_partitions = 3;
  const PpipeResult r = plan_ppipe(in);
  ASSERT_TRUE(r.ok()) << r.problems.front();
  const double exact = brute_force(in);
  EXPECT_NEAR(r.plan.dnns[0].throughput, exact, 1e-6 * exact);
}

TEST(PpipeMilp, PooledVariantIsAtLeastThePapersAndMpsHelpsOrTies) {
  PpipeInput in = tiny_input(3, 2, 3);
  const double paper = plan_ppipe(in).plan.dnns[0].throughput;
  in.options.one_config_per_template = false;
  const PpipeResult pooled = plan_ppipe(in);
  EXPECT_GE(pooled.plan.dnns[0].throughput, paper - 1e-6);
  EXPECT_TRUE(pooled.ok());
}

TEST(PpipeMilp, InfeasibleLatencyNamesTheBindingConstraint) {
  PpipeInput in = tiny_input(1, 2, 2);
  in.dnns[0].slo_ms = 1.0;
  const PpipeResult r = plan_ppipe(in);
  EXPECT_EQ(r.plan.solve.status, PlanStatus::kInfeasible);
  EXPECT_NE(r.plan.solve.detail.find("latency"), std::string::npos) << r.plan.solve.detail;
  EXPECT_NE(r.plan.solve.detail.find("0.6 ms"), std::string::npos) << r.plan.solve.detail;
  EXPECT_TRUE(r.plan.dnns[0].pipelines.empty());
}

TEST(PpipeMilp, NoGpusNamesTheBudget) {
  PpipeInput in = tiny_input(1, 0, 0);
  const PpipeResult r = plan_ppipe(in);
  EXPECT_EQ(r.plan.solve.status, PlanStatus::kInfeasible);
  EXPECT_NE(r.plan.solve.detail.find("GPU budget"), std::string::npos) << r.plan.solve.detail;
}

TEST(PpipeMilp, RecheckCatchesATamperedPlan) {
  const PpipeInput in = tiny_input(2, 2, 3);
  PpipeResult r = plan_ppipe(in);
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r.plan.dnns[0].pipelines.empty());
  auto tampered = r.plan;
  tampered.dnns[0].pipelines[0].partitions[0].vgpus += 100;
  const auto problems = check_ppipe_plan(tampered, in, r.rules);
  ASSERT_FALSE(problems.empty());
  bool budget = false;
  for (const auto& p : problems) budget = budget || p.find("GPU budget") != std::string::npos;
  EXPECT_TRUE(budget);
}

TEST(PpipeDeploy, EveryPipelineBecomesARunTheSimulatorLoads) {
  const auto dir = std::filesystem::temp_directory_path() / "tessera_ppipe_deploy_test";
  std::filesystem::remove_all(dir);
  int partitioned = 0;
  for (unsigned seed = 1; seed <= 6; ++seed) {
    const PpipeInput in = tiny_input(seed, 1 + seed % 2, 2 + seed % 2);
    const PpipeResult r = plan_ppipe(in);
    ASSERT_TRUE(r.ok());
    const auto sub = dir / std::to_string(seed);
    const auto runs = write_ppipe_runs(sub, r.plan, in, 0.5, 5.0);
    ASSERT_EQ(runs.size(), r.plan.dnns[0].pipelines.size());
    for (size_t l = 0; l < runs.size(); ++l) {
      const auto& p = r.plan.dnns[0].pipelines[l];
      const RunSpec spec = load_run_spec(runs[l]);
      EXPECT_EQ(spec.app.tasks.size(), p.partitions.size());
      int vgpus = 0;
      for (const auto& part : p.partitions) vgpus += part.vgpus;
      EXPECT_EQ(spec.deployment.total_workers(), vgpus);
      if (p.partitions.size() > 1) {
        ++partitioned;
        EXPECT_FALSE(spec.deployment.links.empty());
        EXPECT_GT(spec.app.edges.front().bytes_per_item, 0.0);
      }
    }
  }
  EXPECT_GT(partitioned, 0);
  std::filesystem::remove_all(dir);
}

// The planner counts whole GPUs per (DNN, class, position) as the sum of 1/v: seven 1/2
// vGPUs, six 1/3 and seven 1/2 more at one position need 3.5 + 2 + 3.5 = 9 GPUs. Placed
// pipeline by pipeline, a 1/3 vGPU took the half the first pipeline left and the 9 GPUs ran
// out (PPipe's plan for EncNet on HC1 with 12 L4 + 4 P4); first-fit decreasing places them.
TEST(PpipeDeploy, MixedVgpuSizesAtOnePositionFitTheGpusThePlannerCounted) {
  ppipe::PpipePlan plan;
  plan.cluster.classes = {gpu("L4", 9, 4)};
  ppipe::DnnPlan d;
  d.dnn = "m";
  for (const auto& [mps, n] : std::vector<std::pair<int, int>>{{2, 7}, {3, 6}, {2, 7}}) {
    ppipe::Pipeline p;
    ppipe::Partition part;
    part.gpu_class = "L4";
    part.mps = mps;
    part.vgpus = n;
    p.partitions.push_back(part);
    d.pipelines.push_back(p);
  }
  plan.dnns.push_back(d);
  const reservation::VgpuPlacement placed = reservation::place_plan(plan);
  std::set<int> gpus;
  for (const auto& s : placed.servers) gpus.insert(s.gpus.begin(), s.gpus.end());
  EXPECT_EQ(gpus.size(), 9u);
  ASSERT_EQ(placed.server_of[0].size(), 3u);
  EXPECT_EQ(placed.server_of[0][1][0].size(), 6u);
  plan.cluster.classes[0].count = 8;
  EXPECT_THROW(reservation::place_plan(plan), std::invalid_argument);
}

TEST(PpipeBaselines, NpUsesWholeGpusAndOnePartitionAndNeverBeatsPpipe) {
  PpipeInput in = tiny_input(4, 2, 3);
  const PpipeResult np = plan_np(in);
  ASSERT_TRUE(np.ok()) << np.problems.front();
  for (const auto& p : np.plan.dnns[0].pipelines) {
    EXPECT_EQ(p.partitions.size(), 1u);
    EXPECT_EQ(p.partitions[0].mps, 1);
  }
  // PPipe's space holds NP's (no batch-build estimate here).
  EXPECT_GE(plan_ppipe(in).plan.dnns[0].throughput, np.plan.dnns[0].throughput - 1e-6);
}

PpipeInput paper_g1(const std::string& cluster) {
  PpipeInput in;
  in.cluster = paper_cluster(cluster);
  in.dnns = load_ppipe_dnns(kPpipeData, paper_group("G1"), 5.0, "L4");
  return in;
}

// The repo's reference plans (digest §6.7, G1 at 100 GPUs, 40 % margin), planned on the
// paper's inputs (whole-model SLOs, 6 Gbit/s effective) with the batch-build estimate in
// every method's latency rule: NP and DART-r land within 1 % of the reference, and PPipe's
// objective min_m x_m / w_m too (the reference's [515, 567, 635] at weights 0.30, 0.33,
// 0.37: 1716-1718).
TEST(PpipeBaselines, NpAndDartRMatchThePapersReferenceOnHc1) {
  const PpipeInput in = paper_g1("HC1");
  const PpipeResult np = plan_np(in);
  ASSERT_TRUE(np.ok()) << np.problems.front();
  const double ref_np[3] = {277, 279, 338};
  for (int m = 0; m < 3; ++m) {
    EXPECT_NEAR(np.plan.dnns[m].throughput, ref_np[m], 0.01 * ref_np[m]) << m;
  }
  const PpipeResult dart = plan_dart_r(in, &np.plan);
  ASSERT_TRUE(dart.ok()) << dart.problems.front();
  const double ref_dart[3] = {367, 352, 388};
  for (int m = 0; m < 3; ++m) {
    EXPECT_NEAR(dart.plan.dnns[m].throughput, ref_dart[m], 0.01 * ref_dart[m]) << m;
    for (const auto& p : dart.plan.dnns[m].pipelines) {
      EXPECT_LE(p.partitions.size(), 2u);
      for (const auto& part : p.partitions) EXPECT_EQ(part.mps, 1);
    }
  }
  const PpipeResult pp = plan_ppipe(in);
  ASSERT_TRUE(pp.ok()) << pp.problems.front();
  EXPECT_NEAR(pp.plan.solve.objective, 1717.0, 0.01 * 1717.0);
}

// The paper's latency rule (the authors' MILP and NP): inference + transfers + the
// batch-build estimate 1.3 (b - 1) / x_NP fit SLO x (1 - margin), x_NP being NP's
// throughput planned without the estimate. NP's and DART-r's plans pass it on every
// cluster; NP planned without the estimate (as before) breaks it.
TEST(PpipeBaselines, NpAndDartRPlansPassTheirOwnLatencyRule) {
  for (const char* cluster : {"HC1", "HC2", "HC3", "HC4"}) {
    const PpipeInput in = paper_g1(cluster);
    const std::vector<double> x_np = np_estimate_throughputs(in);
    const PpipeResult np = plan_np(in);
    const PpipeResult dart = plan_dart_r(in, &np.plan);
    for (const PpipeResult* r : {&np, &dart}) {
      ASSERT_TRUE(r->ok()) << cluster << ": " << r->problems.front();
      for (size_t m = 0; m < in.dnns.size(); ++m) {
        EXPECT_TRUE(r->rules[m].batch_build);
        EXPECT_DOUBLE_EQ(r->rules[m].np_throughput, x_np[m]);
        const double budget = in.dnns[m].slo_ms * (1.0 - in.options.slo_margin);
        for (const auto& p : r->plan.dnns[m].pipelines) {
          double latency = p.batch > 1 ? 1.3 * (p.batch - 1) / x_np[m] * 1000.0 : 0.0;
          for (const auto& part : p.partitions) latency += part.infer_ms + part.transfer_in_ms;
          EXPECT_LE(latency, budget * (1 + 1e-9)) << cluster << " " << in.dnns[m].name;
        }
      }
    }
  }
  PpipeInput old = paper_g1("HC2");
  old.options.batch_build_estimate = false;
  const PpipeResult without = plan_np(old);
  ASSERT_TRUE(without.ok());
  const PpipeInput in = paper_g1("HC2");
  EXPECT_FALSE(check_ppipe_plan(without.plan, in, plan_np(in).rules).empty());
}

// §6.5 of the paper: FCN on HC3-S (4 V100 + 12 P4), SLO 33.3 ms. The paper's plan: one
// V100 running the whole model at batch 2 (12.3 ms, 162 req/s), and 12 P4 -> 6 half-V100
// vGPUs at batch 1 (1082 and 1050 req/s), 1212 req/s in all.
TEST(PpipeMilp, ReproducesThePapersFcnOnHc3SmallPlan) {
  PpipeInput in;
  in.cluster = paper_cluster("HC3", 4, 12);
  in.dnns = load_ppipe_dnns(kPpipeData, {{"fcn-d6_r101-d16_4xb2-40k_cityscapes-512x1024", 1.0}});
  in.dnns[0].slo_ms = 33.3;
  const PpipeResult r = plan_ppipe(in);
  ASSERT_TRUE(r.ok()) << r.problems.front();
  const auto& d = r.plan.dnns[0];
  EXPECT_NEAR(d.throughput, 1212.0, 2.0);
  ASSERT_EQ(d.pipelines.size(), 2u);
  const auto& whole = d.pipelines[0].partitions.size() == 1 ? d.pipelines[0] : d.pipelines[1];
  const auto& split = d.pipelines[0].partitions.size() == 1 ? d.pipelines[1] : d.pipelines[0];
  EXPECT_EQ(whole.batch, 2);
  EXPECT_EQ(whole.partitions[0].gpu_class, "V100");
  EXPECT_EQ(whole.partitions[0].vgpus, 1);
  EXPECT_NEAR(whole.partitions[0].infer_ms, 12.3, 0.05);
  ASSERT_EQ(split.partitions.size(), 2u);
  EXPECT_EQ(split.batch, 1);
  EXPECT_EQ(split.partitions[0].gpu_class, "P4");
  EXPECT_EQ(split.partitions[0].vgpus, 12);
  EXPECT_EQ(split.partitions[1].gpu_class, "V100");
  EXPECT_EQ(split.partitions[1].mps, 2);
  EXPECT_EQ(split.partitions[1].vgpus, 6);
  EXPECT_NEAR(split.partitions[0].throughput, 1082.0, 2.0);
  EXPECT_NEAR(split.throughput, 1050.0, 2.0);
  // Behind the seam: the same plan as report, and the engine's deployment of the DNN as
  // PPipe's data planes run it: one instance per vGPU of every partition.
  const PlanResult<PpipeResult> seam = PpipePlanner().plan({in, ppipe::PpipeMethod::kPpipe});
  EXPECT_EQ(seam.status, r.plan.solve.status);
  EXPECT_NEAR(seam.report.plan.dnns[0].throughput, d.throughput, 1e-9);
  ASSERT_EQ(seam.deployments.size(), 1u);
  EXPECT_EQ(seam.deployments[0].name, d.dnn);
  int vgpus = 0;
  for (const auto& p : d.pipelines) {
    for (const auto& part : p.partitions) vgpus += part.vgpus;
  }
  EXPECT_EQ(seam.deployments[0].deployment.total_workers(), vgpus);
}

TEST(PpipeBaselines, DartRNeedsTwoClasses) {
  PpipeInput in = tiny_input(1, 1, 1);
  in.cluster.classes.push_back(gpu("C", 1, 1));
  EXPECT_THROW(plan_dart_r(in), std::invalid_argument);
}

TEST(PpipePlanJson, RoundTripsAndNamesTheBadField) {
  const PpipeResult r = plan_ppipe(tiny_input(5, 2, 3));
  ASSERT_TRUE(r.ok());
  const auto j = ppipe::to_json(r.plan);
  const ppipe::PpipePlan back = ppipe::plan_from_json(j, "plan.json");
  EXPECT_EQ(ppipe::to_json(back), j);

  auto bad = j;
  bad["dnns"][0]["pipelines"][0]["partitions"][0]["vgpus"] = 0;
  try {
    ppipe::plan_from_json(bad, "plan.json");
    FAIL() << "vgpus 0 accepted";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.field(), "dnns[0].pipelines[0].partitions[0].vgpus");
    EXPECT_NE(std::string(e.what()).find("plan.json"), std::string::npos);
  }
  bad = j;
  bad["dnns"][0]["pipelines"][0]["partitions"][0]["gpu_class"] = "H100";
  EXPECT_THROW(ppipe::plan_from_json(bad, "plan.json"), SpecError);
  bad = j;
  bad["cluster"].erase("classes");
  try {
    ppipe::plan_from_json(bad, "plan.json");
    FAIL() << "missing classes accepted";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.field(), "cluster.classes");
  }
}

// The paper's §7.1 inputs where it publishes them: SLO = 5 x the whole model's latency on
// the L4 at batch 1 (measured as one TensorRT engine) gives its 23.4-165.6 ms range and
// FCN's 6.66 ms -> 33.3 ms (§7.5); effective bandwidth = 1/5 of nominal gives FCN's 1.4 ms
// transfer of its 1,048,576-byte cut on HC3-S (§7.5), the 0.50 ms of EfficientNet-B8's last
// cut in the authors' L4-P4 plan and, at 10 Gbit/s on HC2 (§7.4), 5.1 ms for a batch of 2
// at its 3,161,088-byte cut.
TEST(PpipeSpec, SlosAndBandwidthsAreDerivedAsThePapers) {
  std::vector<std::pair<std::string, double>> all;
  for (const char* g : {"G1", "G2", "G3", "G4", "G5", "G6"}) {
    for (const auto& m : paper_group(g)) all.push_back(m);
  }
  const auto dnns = load_ppipe_dnns(kPpipeData, all, 5.0, "L4");
  ASSERT_EQ(dnns.size(), 18u);
  std::map<std::string, double> slo;
  double lo = 1e9, hi = 0.0;
  for (const auto& d : dnns) {
    slo[d.name] = d.slo_ms;
    lo = std::min(lo, d.slo_ms);
    hi = std::max(hi, d.slo_ms);
  }
  EXPECT_NEAR(lo, 23.4, 0.05);
  EXPECT_NEAR(hi, 165.6, 0.05);
  EXPECT_NEAR(slo["fcn-d6_r101-d16_4xb2-40k_cityscapes-512x1024"], 33.3, 0.05);
  EXPECT_NEAR(slo["fcn-d6_r101-d16_4xb2-40k_cityscapes-512x1024"] / 5.0, 6.66, 0.005);
  EXPECT_NEAR(slo["rtmdet_x_8xb32-300e_coco"], 117.7, 0.05);
  // The authors' EfficientNet-B8 plan: 165,577 us before its 40 % margin.
  EXPECT_NEAR(slo["efficientnet-b8_3rdparty_8xb32-aa-advprop_in1k"], 165.577, 0.001);
  // Without the whole-model measurement the block sums stand in (RTMDet's are 34 % above).
  for (const auto& d : dnns) {
    if (d.name != "rtmdet_x_8xb32-300e_coco") continue;
    PpipeDnn blocks = d;
    blocks.whole_model_bs1_ms.clear();
    EXPECT_GT(blocks.bs1_ms("L4"), 1.3 * d.bs1_ms("L4"));
  }

  const auto hc3 = paper_cluster("HC3", 4, 12);
  EXPECT_NEAR(transfer_ms_per_sample(hc3, 1, 0, 1048576), 1.4, 0.005);
  const auto hc1 = paper_cluster("HC1");
  EXPECT_NEAR(transfer_ms_per_sample(hc1, 1, 0, 373968), 0.50, 0.005);
  const auto hc2 = paper_cluster("HC2");
  EXPECT_NEAR(2 * transfer_ms_per_sample(hc2, 0, 1, 3161088), 5.1, 0.05);
  for (const char* c : {"HC1", "HC3"}) {
    for (const auto& k : paper_cluster(c).classes) {
      EXPECT_DOUBLE_EQ(k.nic_gbps * paper_cluster(c).bandwidth_fraction, 6.0) << c;
    }
  }
  for (const char* c : {"HC2", "HC4"}) {
    for (const auto& k : paper_cluster(c).classes) {
      EXPECT_DOUBLE_EQ(k.nic_gbps * paper_cluster(c).bandwidth_fraction, 10.0) << c;
    }
  }
}

TEST(PpipeSpec, AMalformedWholeModelLatencyFileNamesTheLine) {
  const auto dir = std::filesystem::temp_directory_path() / "tessera_ppipe_whole_model";
  std::filesystem::create_directories(dir / "models");
  {
    std::ofstream f(dir / "models" / "whole-model-latency.csv");
    f << "model,gpu,samples,mean_compute_ms\nm,L4,3,6.5\nm,P4,3,fast\n";
  }
  try {
    load_whole_model_latency(dir, "m");
    FAIL() << "no error";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(load_whole_model_latency(dir, "other").empty());
  std::filesystem::remove_all(dir);
}

TEST(PpipeSpec, ParsesTheExampleAndNamesBadFields) {
  const auto spec = load_ppipe_plan_spec(std::filesystem::path(TESSERA_SOURCE_DIR) /
                                         "examples/plan/ppipe_hc1_g1.yaml");
  ASSERT_EQ(spec.input.dnns.size(), 3u);
  EXPECT_EQ(spec.cluster_name, "HC1");
  EXPECT_EQ(spec.input.cluster.classes[1].name, "P4");
  // SLO = 5 x the L4 bs-1 block sum (FCN-like sanity: EfficientNet-B8 ~ 165 ms in the paper).
  EXPECT_NEAR(spec.input.dnns[0].slo_ms, 165.6, 0.05 * 165.6);

  const std::string base = "planner: ppipe\nprofiles: " + kPpipeData.string() + "\n";
  auto parse = [&](const std::string& rest) {
    return parse_ppipe_plan_spec(SpecNode::load_string(base + rest, "spec.yaml"));
  };
  try {
    parse(
        "cluster: {classes: [{name: L4, count: 2, nic_gbps: 32, max_mps: 4}, {name: P4, "
        "count: 3, nic_gbps: 32, max_mps: 2}]}\ndnns: [{model: googlenet-v3-pytorch}]\n");
    FAIL() << "P4 at MPS 2 accepted";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.field(), "cluster.classes[1]");
    EXPECT_NE(std::string(e.what()).find("MPS share 2"), std::string::npos);
  }
  EXPECT_THROW(parse("cluster: HC9\ngroup: G1\n"), SpecError);
  EXPECT_THROW(parse("cluster: HC1\ngroup: G1\nmax_partitions: 4\n"), SpecError);
  EXPECT_THROW(parse("cluster: HC1\ndnns: [{model: no-such-model}]\n"), SpecError);
  EXPECT_THROW(parse("cluster: HC1\n"), SpecError);  // neither group nor dnns
  // The surrogate decomposition bound: on by default, a boolean key turns it off.
  EXPECT_TRUE(parse("cluster: HC1\ngroup: G1\n").input.options.decomposition_bound);
  EXPECT_FALSE(parse("cluster: HC1\ngroup: G1\ndecomposition_bound: false\n")
                   .input.options.decomposition_bound);
  try {
    parse("cluster: HC1\ngroup: G1\ndecomposition_bound: 3\n");
    FAIL() << "decomposition_bound: 3 accepted";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.field(), "decomposition_bound");
  }
}

TEST(PpipePrepartition, GreedyEqualRuntimeBlocks) {
  const std::vector<double> layers = {1, 1, 1, 1, 4, 1, 1, 1, 1};  // total 12
  EXPECT_EQ(greedy_equal_runtime_blocks(layers, 3), (std::vector<int>{0, 4, 5, 9}));
  EXPECT_EQ(greedy_equal_runtime_blocks(layers, 1), (std::vector<int>{0, 9}));
  // Every block keeps at least one layer, even when the first layers are heavy.
  EXPECT_EQ(greedy_equal_runtime_blocks({10, 10, 0.1, 0.1}, 4), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_THROW(greedy_equal_runtime_blocks({1, 2}, 3), std::invalid_argument);
  EXPECT_THROW(greedy_equal_runtime_blocks({1, -2}, 1), std::invalid_argument);

  const auto p = group_layers("m", "L4", 1, {{1, 2}, {3, 4}, {5, 6}}, {10, 20, 30}, {0, 2, 3});
  ASSERT_EQ(p.num_blocks(), 2);
  EXPECT_DOUBLE_EQ(p.block_latency_us[0][1], 6.0);
  EXPECT_DOUBLE_EQ(p.block_latency_us[1][0], 5.0);
  EXPECT_EQ(p.transfer_bytes, (std::vector<int64_t>{20}));
}

}  // namespace
