#include "plan/ppipe/deploy.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "profile/ppipe_import.hpp"
#include "profile/profile_yaml.hpp"

namespace tessera::plan {

namespace {

void write(const std::filesystem::path& file, const std::string& text) {
  std::ofstream f(file);
  if (!f) throw std::runtime_error("cannot write " + file.string());
  f << text;
  if (!f) throw std::runtime_error("cannot write " + file.string());
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

std::vector<std::filesystem::path> write_ppipe_runs(const std::filesystem::path& dir,
                                                    const ppipe::PpipePlan& plan, const PpipeInput& in,
                                                    double load_factor, double duration_s) {
  std::vector<std::filesystem::path> runs;
  const auto& cl = plan.cluster;
  for (size_t m = 0; m < plan.dnns.size() && m < in.dnns.size(); ++m) {
    const auto& dp = plan.dnns[m];
    const PpipeDnn& dnn = in.dnns[m];
    for (size_t l = 0; l < dp.pipelines.size(); ++l) {
      const auto& p = dp.pipelines[l];
      const auto sub = dir / "sim" / ("dnn" + std::to_string(m) + "-pipeline" + std::to_string(l));
      std::filesystem::create_directories(sub);
      ProfileTable table;
      std::ostringstream app, dep, links;
      app << "  name: " << quoted(dp.dnn + "/pipeline" + std::to_string(l)) << "\n"
          << "  slo_ms: " << dp.slo_ms << "\n  tasks:\n";
      dep << "  workers:\n";
      for (size_t d = 0; d < p.partitions.size(); ++d) {
        const auto& part = p.partitions[d];
        const PpipeBlockProfile* prof = dnn.profile(part.gpu_class, part.mps);
        if (prof == nullptr) {
          throw std::runtime_error("no profile of " + dnn.name + " on " + part.gpu_class +
                                   " at MPS share " + std::to_string(part.mps));
        }
        table.set_curve(ppipe_range_curve(*prof, part.first_block, part.end_block - 1));
        const std::string variant =
            ppipe_range_variant(dnn.name, part.first_block, part.end_block - 1);
        const std::string task = "part" + std::to_string(d);
        app << "    - {name: " << task << ", variants: [" << quoted(variant) << "]}\n";
        const ppipe::GpuClass* g = nullptr;
        for (const auto& c : cl.classes) {
          if (c.name == part.gpu_class) g = &c;
        }
        if (g == nullptr) throw std::runtime_error("unknown GPU class " + part.gpu_class);
        const double gbps = g->nic_gbps * cl.bandwidth_fraction;
        const int per_server = g->gpus_per_server * part.mps;
        for (int first = 0, s = 0; first < part.vgpus; first += per_server, ++s) {
          const std::string server = task + "-server" + std::to_string(s);
          dep << "    - {task: " << task << ", variant: " << quoted(variant)
              << ", segment: " << quoted(ppipe_segment_name(part.gpu_class, part.mps))
              << ", max_batch: " << p.batch
              << ", count: " << std::min(per_server, part.vgpus - first);
          if (d + 1 < p.partitions.size()) {
            dep << ", uplink: " << quoted(server + "/up");
            links << "    - {name: " << quoted(server + "/up") << ", bandwidth_gbps: " << gbps
                  << "}\n";
          }
          if (d > 0) {
            dep << ", downlink: " << quoted(server + "/down");
            links << "    - {name: " << quoted(server + "/down") << ", bandwidth_gbps: " << gbps
                  << "}\n";
          }
          dep << "}\n";
        }
      }
      if (p.partitions.size() > 1) {
        app << "  edges:\n";
        for (size_t d = 1; d < p.partitions.size(); ++d) {
          app << "    - {from: part" << d - 1 << ", to: part" << d
              << ", bytes_per_item: " << std::llround(p.partitions[d].in_bytes_per_sample) << "}\n";
        }
      }
      std::ostringstream prof_yaml;
      write_profile_yaml(table, prof_yaml);
      write(sub / "profiles.yaml", prof_yaml.str());
      std::ostringstream run;
      run << "# Written by `tessera plan` (planner: ppipe): pipeline " << l << " of " << dp.dnn
          << ",\n# Poisson arrivals at " << load_factor << " x its planned " << p.throughput
          << " req/s, tessera's default policies (not PPipe's data plane).\n"
          << "app:\n"
          << app.str() << "deployment:\n";
      if (!links.str().empty()) run << "  links:\n" << links.str();
      run << dep.str() << "profiles:\n  - file: profiles.yaml\n"
          << "workload:\n  source: {kind: poisson, rate_rps: " << load_factor * p.throughput
          << "}\n  duration_s: " << duration_s << "\nsimulation:\n  seed: 1\n";
      write(sub / "run.yaml", run.str());
      runs.push_back(sub / "run.yaml");
    }
  }
  return runs;
}

}  // namespace tessera::plan
