// PPipe MILP solve table (docs/benchmarks.md#ppipe-planner, issue 12): solves the paper's
// 24 group x cluster instances (25 high + 75 low GPUs), HC1 at 100,000 GPUs and the 3- and
// 4-GPU-type clusters, and prints one markdown row per instance: GPU types, GPUs, wall and
// CPU seconds of the plan_ppipe call (the NP plan for the batch-build estimate is solved
// before the clock starts), CBC's proven relative gap, what stopped the search, branch-and-
// bound nodes, configurations, the warm start's objective, the surrogate decomposition
// bound and its CPU seconds (- and 0.00: it did not run), the objective min_m x_m / w_m,
// and whether the plan passed the re-check outside the solver. Then the mean and max over
// the 24 paper instances.
// Usage: ppipe_milp_table [regex over instance names]; PPIPE_TIME / PPIPE_NODES override
// the limits; PPIPE_NODECOMP=1 turns the decomposition bound off, PPIPE_DECOMP_ALWAYS=1
// runs it on every multi-DNN instance, PPIPE_DECOMP_TRACE=1 prints its targets;
// PPIPE_DECOMP_SHARE and PPIPE_REPAIR_GAP set the decomposition's share of the time and a
// capped repair's relative gap, PPIPE_NOPOOL=1 turns its column pool's MILP off.
// Single-threaded; not a Google Benchmark (one solve per instance).
#include <ctime>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "plan/ppipe/planner.hpp"
#include "plan/ppipe/spec.hpp"

namespace {

using namespace tessera::plan;
namespace ppipe = tessera::ppipe;

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

PpipeInput paper_instance(const std::string& cluster, const std::string& group, int high, int low) {
  PpipeInput in;
  in.cluster = paper_cluster(cluster, high, low);
  in.dnns = load_ppipe_dnns(std::string(TESSERA_SOURCE_DIR) + "/data/profiles/ppipe",
                            paper_group(group), 5.0, "L4");
  if (const char* t = std::getenv("PPIPE_TIME")) in.options.milp.time_limit_s = std::atof(t);
  if (const char* n = std::getenv("PPIPE_NODES")) in.options.milp.node_limit = std::atol(n);
  if (std::getenv("PPIPE_LOG")) in.options.milp.log = true;
  if (std::getenv("PPIPE_PLAIN")) in.options.tighten_formulation = false;
  if (std::getenv("PPIPE_ALLU")) in.options.binary_per_configuration = true;
  if (const char* r = std::getenv("PPIPE_ROUNDS")) in.options.tighten_rounds = std::atoi(r);
  if (std::getenv("PPIPE_NOINT")) in.options.integer_gpus_per_position = false;
  if (std::getenv("PPIPE_POOLED")) in.options.one_config_per_template = false;
  if (std::getenv("PPIPE_PRIO")) in.options.branch_priorities = true;
  if (const char* w = std::getenv("PPIPE_WARM")) in.options.warm_start_share = std::atof(w);
  if (std::getenv("PPIPE_NODECOMP")) in.options.decomposition_bound = false;
  if (std::getenv("PPIPE_DECOMP_ALWAYS")) in.options.decomposition_always = true;
  if (std::getenv("PPIPE_DECOMP_TRACE")) in.options.decomposition_trace = true;
  if (const char* s = std::getenv("PPIPE_DECOMP_SHARE")) {
    in.options.decomposition_share = std::atof(s);
    in.options.decomposition_share_many_classes = std::atof(s);
  }
  if (std::getenv("PPIPE_NOPOOL")) in.options.decomposition_pool = false;
  if (std::getenv("PPIPE_NO_POOL_PRICING")) in.options.decomposition_pool_pricing = false;
  if (const char* s = std::getenv("PPIPE_REPAIR_GAP"))
    in.options.surrogate_repair_gap = std::atof(s);
  return in;
}

ppipe::GpuClass gpu(const std::string& n, int count, double nic, int mps) {
  ppipe::GpuClass g;
  g.name = n;
  g.count = count;
  g.nic_gbps = nic;
  g.max_mps = mps;
  return g;
}

// HC1's L4 and P4 with T4 (and V100) added, 100 GPUs in all (as bench/plan_bench.cpp).
PpipeInput mixed_instance(const std::string& group, int types) {
  PpipeInput in = paper_instance("HC1", group, 25, 75);
  if (types == 3) {
    in.cluster.classes = {gpu("L4", 25, 32, 4), gpu("P4", 38, 32, 1), gpu("T4", 37, 50, 4)};
  } else {
    in.cluster.classes = {gpu("L4", 13, 32, 4), gpu("V100", 12, 32, 4), gpu("P4", 38, 32, 1),
                          gpu("T4", 37, 50, 4)};
  }
  // PPIPE_SERVERS=1: two GPUs per server for V100 and T4, as scripts/ppipe-results.sh plans.
  if (std::getenv("PPIPE_SERVERS")) {
    for (auto& c : in.cluster.classes) {
      if (c.name == "V100" || c.name == "T4") c.gpus_per_server = 2;
    }
  }
  return in;
}

struct Instance {
  std::string name;
  PpipeInput in;
  bool paper = false;  // one of the 24 group x cluster instances
};

}  // namespace

int main(int argc, char** argv) {
  const std::regex filter(argc > 1 ? argv[1] : ".*");
  std::vector<Instance> all;
  for (const std::string c : {"HC1", "HC2", "HC3", "HC4"}) {
    for (const std::string g : {"G1", "G2", "G3", "G4", "G5", "G6"}) {
      all.push_back({c + "/" + g, paper_instance(c, g, 25, 75), true});
    }
  }
  for (const std::string g : {"G1", "G2", "G3", "G4", "G5", "G6"}) {
    all.push_back({"HC1_100k/" + g, paper_instance("HC1", g, 25'000, 75'000), false});
  }
  for (int types : {3, 4}) {
    for (const std::string g : {"G1", "G4"}) {
      all.push_back({"types" + std::to_string(types) + "/" + g, mixed_instance(g, types), false});
    }
  }

  std::printf(
      "| instance | types | GPUs | wall s | CPU s | proven gap | stopped by | nodes | configs | "
      "warm start | decomp. bound | decomp. CPU s | objective | re-check "
      "|\n|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|\n");
  double sum_cpu = 0.0, max_cpu = 0.0, sum_wall = 0.0, max_wall = 0.0, max_gap = 0.0;
  int n_paper = 0;
  for (const auto& inst : all) {
    if (!std::regex_search(inst.name, filter)) continue;
    const ppipe::PpipePlan np = plan_np(inst.in).plan;
    const double c0 = cpu_seconds();
    const auto w0 = std::chrono::steady_clock::now();
    const PpipeResult r = plan_ppipe(inst.in, &np);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    const double cpu = cpu_seconds() - c0;
    int gpus = 0;
    for (const auto& k : inst.in.cluster.classes) gpus += k.count;
    const auto& s = r.plan.solve;
    const std::string stopped =
        s.status == PlanStatus::kOptimal ? "gap <= 1 %" : ppipe::status_text(s);
    char decomp[32] = "-";
    if (s.decomposition_bound > 0.0)
      std::snprintf(decomp, sizeof decomp, "%.1f", s.decomposition_bound);
    std::printf(
        "| %s | %zu | %d | %.2f | %.2f | %.2f %% | %s | %ld | %d | %.1f | %s | %.2f | %.1f | %s "
        "|\n",
        inst.name.c_str(), inst.in.cluster.classes.size(), gpus, wall, cpu, 100.0 * s.gap,
        stopped.c_str(), s.nodes, s.configurations, s.warm_start, decomp, s.decomposition_seconds,
        s.objective, r.ok() ? "ok" : r.problems.front().c_str());
    if (std::getenv("PPIPE_SHOW")) {
      for (const auto& d : r.plan.dnns) {
        std::printf("  %s: %.1f req/s\n", d.dnn.c_str(), d.throughput);
        for (const auto& p : d.pipelines) {
          std::printf("    batch %d, %.1f req/s:", p.batch, p.throughput);
          for (const auto& q : p.partitions) {
            std::printf(" [%d,%d) %s/%d x%d (%.1f/vGPU)", q.first_block, q.end_block,
                        q.gpu_class.c_str(), q.mps, q.vgpus, q.throughput / q.vgpus);
          }
          std::printf("\n");
        }
      }
    }
    std::fflush(stdout);
    if (inst.paper) {
      ++n_paper;
      sum_cpu += cpu;
      sum_wall += wall;
      max_cpu = std::max(max_cpu, cpu);
      max_wall = std::max(max_wall, wall);
      max_gap = std::max(max_gap, s.gap);
    }
  }
  if (n_paper > 0) {
    std::printf(
        "\n%d paper instances: mean %.2f s wall / %.2f s CPU, max %.2f s wall / %.2f s CPU, "
        "max proven gap %.2f %%\n",
        n_paper, sum_wall / n_paper, sum_cpu / n_paper, max_wall, max_cpu, 100.0 * max_gap);
  }
  return 0;
}
