#include "plan/ppipe/deploy.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <tuple>

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

const ppipe::GpuClass& gpu_class(const ppipe::PpipeCluster& cluster, const std::string& name) {
  for (const auto& c : cluster.classes) {
    if (c.name == name) return c;
  }
  throw std::runtime_error("unknown GPU class " + name);
}

// A number as its shortest round-trip text (yaml-cpp would write 17 digits).
std::string number(double x) { return fmt::format("{}", x); }

// One pipeline of a plan as a run spec: a chain of partition tasks, one worker group per
// server of each pool with its NIC's links, Poisson arrivals; its partitions' curves go
// into `profiles`.
std::string pipeline_run_yaml(const ppipe::PpipePlan& plan, std::size_t m, std::size_t l,
                              const PpipeDnn& dnn, double load_factor, double duration_s,
                              ProfileTable& profiles) {
  const ppipe::DnnPlan& dp = plan.dnns[m];
  const ppipe::Pipeline& p = dp.pipelines[l];
  std::vector<std::string> variants;
  for (const auto& part : p.partitions) {
    const PpipeBlockProfile* prof = dnn.profile(part.gpu_class, part.mps);
    if (prof == nullptr) {
      throw std::runtime_error("no profile of " + dnn.name + " on " + part.gpu_class +
                               " at MPS share " + std::to_string(part.mps));
    }
    profiles.set_curve(ppipe_range_curve(*prof, part.first_block, part.end_block - 1));
    variants.push_back(ppipe_range_variant(dnn.name, part.first_block, part.end_block - 1));
  }
  YAML::Emitter e;
  e << YAML::Comment("Written by `tessera plan` (planner: ppipe): pipeline " + std::to_string(l) +
                     " of " + dp.dnn + ",\nPoisson arrivals at " +
                     fmt::format("{:g}", load_factor) + " x its planned " +
                     fmt::format("{:g}", p.throughput) +
                     " req/s, tessera's default policies (not PPipe's data plane).");
  e << YAML::BeginMap;
  e << YAML::Key << "app" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "name" << YAML::Value << dp.dnn + "/pipeline" + std::to_string(l);
  e << YAML::Key << "slo_ms" << YAML::Value << number(dp.slo_ms);
  e << YAML::Key << "tasks" << YAML::Value << YAML::BeginSeq;
  for (std::size_t d = 0; d < variants.size(); ++d) {
    e << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value
      << "part" + std::to_string(d) << YAML::Key << "variants" << YAML::Value << YAML::Flow
      << std::vector<std::string>{variants[d]} << YAML::EndMap;
  }
  e << YAML::EndSeq;
  if (p.partitions.size() > 1) {
    e << YAML::Key << "edges" << YAML::Value << YAML::BeginSeq;
    for (std::size_t d = 1; d < p.partitions.size(); ++d) {
      e << YAML::Flow << YAML::BeginMap << YAML::Key << "from" << YAML::Value
        << "part" + std::to_string(d - 1) << YAML::Key << "to" << YAML::Value
        << "part" + std::to_string(d) << YAML::Key << "bytes_per_item" << YAML::Value
        << static_cast<long long>(std::llround(p.partitions[d].in_bytes_per_sample))
        << YAML::EndMap;
    }
    e << YAML::EndSeq;
  }
  e << YAML::EndMap;
  // The deployment: per partition, one group per server of its pool, with the server's NIC.
  YAML::Node links(YAML::NodeType::Sequence);
  YAML::Node workers(YAML::NodeType::Sequence);
  for (std::size_t d = 0; d < p.partitions.size(); ++d) {
    const auto& part = p.partitions[d];
    const ppipe::GpuClass& g = gpu_class(plan.cluster, part.gpu_class);
    const double gbps = g.nic_gbps * plan.cluster.bandwidth_fraction;
    const int per_server = g.gpus_per_server * part.mps;
    const std::string task = "part" + std::to_string(d);
    for (int first = 0, s = 0; first < part.vgpus; first += per_server, ++s) {
      const std::string server = task + "-server" + std::to_string(s);
      YAML::Node w;
      w["task"] = task;
      w["variant"] = variants[d];
      w["segment"] = ppipe_segment_name(part.gpu_class, part.mps);
      w["max_batch"] = p.batch;
      w["count"] = std::min(per_server, part.vgpus - first);
      for (const auto& [key, link, used] :
           {std::tuple{"uplink", server + "/up", d + 1 < p.partitions.size()},
            std::tuple{"downlink", server + "/down", d > 0}}) {
        if (!used) continue;
        w[key] = link;
        YAML::Node spec;
        spec["name"] = link;
        spec["bandwidth_gbps"] = number(gbps);
        spec.SetStyle(YAML::EmitterStyle::Flow);
        links.push_back(spec);
      }
      w.SetStyle(YAML::EmitterStyle::Flow);
      workers.push_back(w);
    }
  }
  e << YAML::Key << "deployment" << YAML::Value << YAML::BeginMap;
  if (links.size() > 0) e << YAML::Key << "links" << YAML::Value << links;
  e << YAML::Key << "workers" << YAML::Value << workers << YAML::EndMap;
  e << YAML::Key << "profiles" << YAML::Value << YAML::BeginSeq << YAML::Flow << YAML::BeginMap
    << YAML::Key << "file" << YAML::Value << "profiles.yaml" << YAML::EndMap << YAML::EndSeq;
  e << YAML::Key << "workload" << YAML::Value << YAML::BeginMap << YAML::Key << "source"
    << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "kind" << YAML::Value
    << "poisson" << YAML::Key << "rate_rps" << YAML::Value << number(load_factor * p.throughput)
    << YAML::EndMap << YAML::Key << "duration_s" << YAML::Value << number(duration_s)
    << YAML::EndMap;
  e << YAML::Key << "simulation" << YAML::Value << YAML::BeginMap << YAML::Key << "seed"
    << YAML::Value << 1 << YAML::EndMap;
  e << YAML::EndMap;
  if (!e.good()) throw std::runtime_error("cannot write run.yaml: " + e.GetLastError());
  return std::string(e.c_str()) + "\n";
}

}  // namespace

std::vector<std::filesystem::path> write_ppipe_runs(const std::filesystem::path& dir,
                                                    const ppipe::PpipePlan& plan,
                                                    const PpipeInput& in, double load_factor,
                                                    double duration_s) {
  std::vector<std::filesystem::path> runs;
  for (std::size_t m = 0; m < plan.dnns.size() && m < in.dnns.size(); ++m) {
    for (std::size_t l = 0; l < plan.dnns[m].pipelines.size(); ++l) {
      const auto sub = dir / "sim" / ("dnn" + std::to_string(m) + "-pipeline" + std::to_string(l));
      std::filesystem::create_directories(sub);
      ProfileTable table;
      const std::string run =
          pipeline_run_yaml(plan, m, l, in.dnns[m], load_factor, duration_s, table);
      std::ostringstream prof_yaml;
      write_profile_yaml(table, prof_yaml);
      write(sub / "profiles.yaml", prof_yaml.str());
      write(sub / "run.yaml", run);
      runs.push_back(sub / "run.yaml");
    }
  }
  return runs;
}

}  // namespace tessera::plan
