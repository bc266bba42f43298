#include "dataplane/ppipe/setup.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace tessera::reservation {

std::string VgpuPlacement::server_name(int s) const {
  const Server& srv = servers[static_cast<std::size_t>(s)];
  return srv.gpu_class + "-s" + std::to_string(srv.index);
}

VgpuPlacement place_plan(const ppipe::PpipePlan& plan) {
  VgpuPlacement out;
  struct ClassState {
    const ppipe::GpuClass* spec = nullptr;
    int next_gpu = 0;
    // (DNN, position, mps) -> (gpu, vGPUs used on it): the GPU a vGPU size of one DNN's
    // partition position is filling (per position, as the planner counts whole GPUs).
    std::map<std::tuple<std::size_t, std::size_t, int>, std::pair<int, int>> open;
    std::map<int, int> server_of_index;  // server index in class -> VgpuPlacement server
    std::vector<int> free_units;         // per opened GPU, in twelfths of a GPU
    std::vector<std::pair<std::size_t, std::size_t>> owner;  // per opened GPU: (DNN, position)
  };
  constexpr int kUnits = 12;  // a 1/v vGPU (v = 1..4) takes 12 / v twelfths
  std::map<std::string, ClassState> classes;
  for (const ppipe::GpuClass& c : plan.cluster.classes) classes[c.name].spec = &c;
  auto server_for = [&](ClassState& cs, int gpu) {
    const int per = std::max(1, cs.spec->gpus_per_server);
    const int index = gpu / per;
    auto it = cs.server_of_index.find(index);
    if (it == cs.server_of_index.end()) {
      VgpuPlacement::Server s;
      s.gpu_class = cs.spec->name;
      s.index = index;
      s.bandwidth = cs.spec->nic_gbps * plan.cluster.bandwidth_fraction * 1e9 / 8.0;
      out.servers.push_back(s);
      it = cs.server_of_index.emplace(index, static_cast<int>(out.servers.size() - 1)).first;
    }
    auto& gpus = out.servers[static_cast<std::size_t>(it->second)].gpus;
    if (std::find(gpus.begin(), gpus.end(), gpu) == gpus.end()) gpus.push_back(gpu);
    return it->second;
  };
  // Every partition's slot first; then the vGPUs placed one (DNN, position) at a time, the
  // larger vGPUs first (first-fit decreasing), as the planner counts whole GPUs per (DNN,
  // class, position) as the sum of 1/v: placed pipeline by pipeline, a 1/3 vGPU could take
  // the half a 1/2 vGPU left and strand a sixth, and a plan that fits ran out of GPUs.
  struct Slot {
    std::size_t dnn, pipe, part;
    int mps;
  };
  std::vector<Slot> order;
  for (std::size_t di = 0; di < plan.dnns.size(); ++di) {
    auto& per_dnn = out.server_of.emplace_back();
    const auto& pipes = plan.dnns[di].pipelines;
    for (std::size_t pi = 0; pi < pipes.size(); ++pi) {
      per_dnn.emplace_back(pipes[pi].partitions.size());
      for (std::size_t k = 0; k < pipes[pi].partitions.size(); ++k) {
        order.push_back({di, pi, k, std::max(1, pipes[pi].partitions[k].mps)});
      }
    }
  }
  std::stable_sort(order.begin(), order.end(), [](const Slot& a, const Slot& b) {
    return std::tie(a.dnn, a.part, a.mps) < std::tie(b.dnn, b.part, b.mps);
  });
  for (const Slot& slot : order) {
    const std::size_t di = slot.dnn, k = slot.part;
    const ppipe::DnnPlan& d = plan.dnns[di];
    const ppipe::Partition& part = d.pipelines[slot.pipe].partitions[k];
    const std::pair<std::size_t, std::size_t> key{di, k};
    auto& per_part = out.server_of[di][slot.pipe][k];
    auto cit = classes.find(part.gpu_class);
    if (cit == classes.end() || cit->second.spec == nullptr) {
      throw std::invalid_argument("plan for '" + d.dnn + "' uses GPU class '" + part.gpu_class +
                                  "', which the cluster does not have");
    }
    ClassState& cs = cit->second;
    const int mps = std::max(1, part.mps);
    for (int v = 0; v < part.vgpus; ++v) {
      const int units = kUnits / std::min(mps, 4);
      auto& [gpu, used] = cs.open.try_emplace({key.first, key.second, mps}, -1, mps).first->second;
      // First fit among the GPUs with room, `want` deciding which may take it.
      auto first_fit = [&](auto want) {
        for (std::size_t g = 0; g < cs.free_units.size(); ++g) {
          if (cs.free_units[g] >= units && want(g)) return static_cast<int>(g);
        }
        return -1;
      };
      int at = -1;
      if (used < mps && cs.free_units[static_cast<std::size_t>(gpu)] >= units) {
        at = gpu;  // the open GPU of this vGPU size
        ++used;
      } else if ((at = first_fit([&](std::size_t g) { return cs.owner[g] == key; })) >= 0) {
        // A GPU of the same DNN and partition position with room left: the planner counts
        // whole GPUs per (DNN, class, position) as the sum of 1/v over its vGPUs, so a 1/2
        // and two 1/4 vGPUs there fill one GPU.
      } else if (cs.next_gpu < cs.spec->count) {
        gpu = cs.next_gpu++;
        cs.free_units.push_back(kUnits);
        cs.owner.push_back(key);
        used = 1;
        at = gpu;
      } else if ((at = first_fit([](std::size_t) { return true; })) < 0) {
        throw std::invalid_argument("plan uses more than the " + std::to_string(cs.spec->count) +
                                    " " + cs.spec->name + " GPUs of the cluster");
      }
      cs.free_units[static_cast<std::size_t>(at)] -= units;
      per_part.push_back(server_for(cs, at));
    }
  }
  return out;
}

namespace {

const PpipeBlockProfile& find_profile(const std::vector<PpipeBlockProfile>& blocks,
                                      const std::string& model, const std::string& gpu, int mps) {
  for (const PpipeBlockProfile& p : blocks) {
    if (p.gpu == gpu && p.mps_share == mps) return p;
  }
  throw std::invalid_argument("no block profile of '" + model + "' on " + gpu + " at MPS share " +
                              std::to_string(mps));
}

}  // namespace

PpipeSetup build_setup(const ppipe::PpipePlan& plan, std::size_t dnn,
                       const std::vector<PpipeBlockProfile>& blocks, const SetupOptions& options) {
  if (dnn >= plan.dnns.size())
    throw std::invalid_argument("plan has no DNN " + std::to_string(dnn));
  const ppipe::DnnPlan& d = plan.dnns[dnn];
  if (d.pipelines.empty()) throw std::invalid_argument("plan for '" + d.dnn + "' has no pipeline");
  const VgpuPlacement placement = place_plan(plan);
  PpipeSetup s;
  s.app.name = d.dnn;
  s.app.slo = from_ms(d.slo_ms);

  // Links: every server this DNN uses, in first-use order.
  std::map<int, std::size_t> link_of_server;  // server -> index of its uplink in links
  auto links_for = [&](int server) {
    auto it = link_of_server.find(server);
    if (it != link_of_server.end()) return it->second;
    const std::string name = placement.server_name(server);
    const double bw = placement.servers[static_cast<std::size_t>(server)].bandwidth;
    if (!(bw > 0)) throw std::invalid_argument("server " + name + " has no NIC bandwidth");
    s.deployment.links.push_back(LinkSpec{name + "/up", bw, options.link_latency});
    s.deployment.links.push_back(LinkSpec{name + "/down", bw, options.link_latency});
    return link_of_server.emplace(server, s.deployment.links.size() - 2).first->second;
  };

  for (std::size_t pi = 0; pi < d.pipelines.size(); ++pi) {
    const ppipe::Pipeline& pipe = d.pipelines[pi];
    if (pipe.partitions.empty() || pipe.partitions.size() > 4) {
      throw std::invalid_argument("pipeline " + std::to_string(pi) + " of '" + d.dnn +
                                  "' needs 1 to 4 partitions");
    }
    PpipeSetup::PipelineTasks pt;
    pt.batch = std::max(1, pipe.batch);
    pt.throughput = pipe.throughput;
    for (std::size_t k = 0; k < pipe.partitions.size(); ++k) {
      const ppipe::Partition& part = pipe.partitions[k];
      const int mps = std::max(1, part.mps);
      const PpipeBlockProfile& prof = find_profile(blocks, d.dnn, part.gpu_class, mps);
      if (part.first_block < 0 || part.end_block <= part.first_block ||
          part.end_block > prof.num_blocks()) {
        throw std::invalid_argument("pipeline " + std::to_string(pi) + " of '" + d.dnn +
                                    "' has a bad block range");
      }
      ProfileCurve curve = ppipe_range_curve(prof, part.first_block, part.end_block - 1);
      const std::string variant = curve.variant;
      const std::string segment = curve.segment;
      if (!s.profiles.has(variant, segment)) s.profiles.set_curve(std::move(curve));

      Task task;
      task.name = d.dnn + "/p" + std::to_string(pi) + "." + std::to_string(k);
      task.variants.push_back(Variant{variant, 1.0, 1.0});
      const auto id = static_cast<TaskId>(s.app.tasks.size());
      s.app.tasks.push_back(task);
      double in_bytes = 0.0;
      if (k > 0) {
        in_bytes = part.in_bytes_per_sample;
        const auto cut = static_cast<std::size_t>(part.first_block - 1);
        if (in_bytes <= 0 && cut < prof.transfer_bytes.size()) {
          in_bytes = static_cast<double>(prof.transfer_bytes[cut]);
        }
        Edge e;
        e.from = pt.tasks.back();
        e.to = id;
        e.bytes_per_item = options.link_edges ? in_bytes : 0.0;
        s.app.edges.push_back(e);
      }
      pt.tasks.push_back(id);
      pt.in_bytes.push_back(in_bytes);
      pt.planned_step.push_back(s.profiles.latency(variant, segment, pt.batch));

      // One worker group per server the partition's vGPUs sit on.
      const auto& servers = placement.server_of[dnn][pi][k];
      std::map<int, int> per_server;
      std::vector<int> order;
      for (int srv : servers) {
        if (per_server[srv]++ == 0) order.push_back(srv);
      }
      for (int srv : order) {
        const std::size_t l = links_for(srv);
        WorkerGroup g;
        g.task = id;
        g.variants = {0};
        g.segment = segment;
        g.max_batch = pt.batch;
        g.count = per_server[srv];
        g.uplink = s.deployment.links[l].name;
        g.downlink = s.deployment.links[l + 1].name;
        s.deployment.groups.push_back(g);
      }
    }
    s.pipelines.push_back(std::move(pt));
  }
  s.app.finalize();
  s.app.roots = {s.pipelines.front().tasks.front()};
  return s;
}

}  // namespace tessera::reservation
