#include "plan/ppipe/problem.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>

namespace tessera::plan {

int PpipeDnn::num_blocks() const { return profiles.empty() ? 0 : profiles.front().num_blocks(); }

const PpipeBlockProfile* PpipeDnn::profile(const std::string& gpu, int share) const {
  for (const auto& p : profiles) {
    if (p.gpu == gpu && p.mps_share == share) return &p;
  }
  return nullptr;
}

double PpipeDnn::bs1_ms(const std::string& gpu) const {
  if (const auto it = whole_model_bs1_ms.find(gpu); it != whole_model_bs1_ms.end()) {
    return it->second;
  }
  const auto* p = profile(gpu, 1);
  if (p == nullptr || p->max_batch() < 1) return -1.0;
  return p->range_latency_us(0, p->num_blocks() - 1, 1) / 1000.0;
}

double PpipeDnn::fastest_bs1_ms(std::string* gpu) const {
  double best = std::numeric_limits<double>::infinity();
  for (const auto& p : profiles) {
    if (p.mps_share != 1) continue;
    const double ms = bs1_ms(p.gpu);
    if (ms > 0.0 && ms < best) {
      best = ms;
      if (gpu != nullptr) *gpu = p.gpu;
    }
  }
  return best;
}

std::vector<std::vector<int>> enumerate_templates(int num_classes, int max_partitions) {
  std::vector<std::vector<int>> out;
  std::vector<std::vector<int>> level = {{}};
  for (int d = 1; d <= max_partitions; ++d) {
    std::vector<std::vector<int>> next;
    for (const auto& t : level) {
      for (int k = 0; k < num_classes; ++k) {
        auto u = t;
        u.push_back(k);
        next.push_back(u);
      }
    }
    out.insert(out.end(), next.begin(), next.end());
    level = std::move(next);
  }
  return out;
}

std::vector<std::vector<int>> enumerate_repo_templates(int num_classes, int max_partitions) {
  std::vector<std::vector<int>> out;
  for (auto& t : enumerate_templates(num_classes, max_partitions)) {
    if (static_cast<int>(t.size()) == max_partitions) out.push_back(std::move(t));
  }
  return out;
}

double batch_build_ms(const ConfigRules& rules, int batch) {
  if (!rules.batch_build || batch <= 1) return 0.0;
  if (rules.np_throughput <= 0.0) return std::numeric_limits<double>::infinity();
  return 1.3 * (batch - 1) / rules.np_throughput * 1000.0;
}

namespace {

double effective_gbps(const ppipe::PpipeCluster& c, int cls) {
  return c.classes.at(cls).nic_gbps * c.bandwidth_fraction;
}

double ms_per_sample_at(double gbps, double bytes) { return bytes * 8.0 / (gbps * 1e9) * 1e3; }

// Per-vGPU NIC cap (req/s) of a partition that moves `bytes` per sample through its
// server's NIC, shared by gpus_per_server x mps vGPUs (the repo's 1e6 / (trans v s)).
double nic_cap(const ppipe::PpipeCluster& c, int cls, int mps, double bytes) {
  if (bytes <= 0.0) return std::numeric_limits<double>::infinity();
  const double t = ms_per_sample_at(effective_gbps(c, cls), bytes);
  return 1000.0 / (t * mps * c.classes.at(cls).gpus_per_server);
}

}  // namespace

double transfer_ms_per_sample(const ppipe::PpipeCluster& cluster, int from_cls, int to_cls,
                              double bytes) {
  const double gbps = std::min(effective_gbps(cluster, from_cls), effective_gbps(cluster, to_cls));
  return ms_per_sample_at(gbps, bytes);
}

namespace {

// Calls f once per set of parts-1 strictly increasing cut points in [1, blocks-1]; the cut
// vector holds 0, the cuts, then blocks.
void for_each_cut(int blocks, int parts, std::vector<int>& cuts, int from,
                  const std::function<void()>& f) {
  if (static_cast<int>(cuts.size()) == parts) {
    cuts.push_back(blocks);
    f();
    cuts.pop_back();
    return;
  }
  const int remaining = parts - static_cast<int>(cuts.size());  // cuts still to place
  for (int j = from; j <= blocks - remaining; ++j) {
    cuts.push_back(j);
    for_each_cut(blocks, parts, cuts, j + 1, f);
    cuts.pop_back();
  }
}

bool dominates(const PipeConfig& a, const PipeConfig& b) {
  for (size_t d = 0; d < a.parts.size(); ++d) {
    const auto& pa = a.parts[d];
    const auto& pb = b.parts[d];
    if (pa.mps % pb.mps != 0) return false;
    if (pa.mps * pa.x_vgpu < pb.mps * pb.x_vgpu * (1.0 - 1e-12)) return false;
  }
  return true;
}

double strength(const PipeConfig& c) {
  double s = 0.0;
  for (const auto& p : c.parts) s += p.mps * p.x_vgpu;
  return s;
}

}  // namespace

std::vector<PipeConfig> enumerate_configs(const ppipe::PpipeCluster& cluster, const PpipeDnn& dnn,
                                          const std::vector<std::vector<int>>& templates,
                                          const PpipeOptions& options, const ConfigRules& rules,
                                          std::string* why_none) {
  std::vector<PipeConfig> out;
  const int blocks = dnn.num_blocks();
  const PpipeBlockProfile* bytes_from = nullptr;
  for (const auto& p : dnn.profiles) {
    if (!p.transfer_bytes.empty()) bytes_from = &p;
  }
  double best_latency = std::numeric_limits<double>::infinity();
  std::string best_what;
  bool any_profile = false;

  for (size_t t = 0; t < templates.size(); ++t) {
    const auto& tm = templates[t];
    const int parts = static_cast<int>(tm.size());
    if (parts > blocks) continue;
    if (parts > 1 && bytes_from == nullptr) continue;  // no cut sizes: cannot partition
    // The vGPU sizes allowed at each position.
    std::vector<std::vector<std::pair<int, const PpipeBlockProfile*>>> shares(parts);
    bool ok = true;
    for (int d = 0; d < parts; ++d) {
      const auto& cls = cluster.classes[tm[d]];
      const int top = rules.allow_mps ? cls.max_mps : 1;
      for (int v = 1; v <= top; ++v) {
        if (const auto* p = dnn.profile(cls.name, v)) shares[d].push_back({v, p});
      }
      ok = ok && !shares[d].empty();
    }
    if (!ok) continue;
    any_profile = true;

    std::vector<PipeConfig> found;
    std::vector<int> cuts = {0};
    std::vector<int> pick(parts, 0);
    for_each_cut(blocks, parts, cuts, 1, [&] {
      // Every combination of vGPU sizes.
      std::fill(pick.begin(), pick.end(), 0);
      while (true) {
        int max_b = std::numeric_limits<int>::max();
        for (int d = 0; d < parts; ++d) {
          const auto& [v, p] = shares[d][pick[d]];
          const int cap = options.max_batch_by_share[std::min(v, 4) - 1];
          max_b = std::min({max_b, cap, p->max_batch()});
        }
        for (int b = 1; b <= max_b; ++b) {
          PipeConfig c;
          c.tmpl = static_cast<int>(t);
          c.batch = b;
          double latency = batch_build_ms(rules, b);
          for (int d = 0; d < parts; ++d) {
            const auto& [v, p] = shares[d][pick[d]];
            PartConfig pc;
            pc.first = cuts[d];
            pc.end = cuts[d + 1];
            pc.cls = tm[d];
            pc.mps = v;
            pc.infer_ms = std::max(p->range_latency_us(pc.first, pc.end - 1, b), 1.0) / 1000.0;
            double x = 1000.0 * b / pc.infer_ms;
            if (d > 0) {
              pc.in_bytes = static_cast<double>(bytes_from->transfer_bytes[pc.first - 1]);
              pc.transfer_in_ms =
                  b * transfer_ms_per_sample(cluster, tm[d - 1], tm[d], pc.in_bytes);
              x = std::min(x, nic_cap(cluster, tm[d], v, pc.in_bytes));
            }
            if (d + 1 < parts) {
              const double out_bytes = static_cast<double>(bytes_from->transfer_bytes[pc.end - 1]);
              x = std::min(x, nic_cap(cluster, tm[d], v, out_bytes));
            }
            pc.x_vgpu = x;
            latency += pc.infer_ms + pc.transfer_in_ms;
            c.parts.push_back(pc);
          }
          c.latency_ms = latency;
          if (latency > rules.budget_ms) {
            if (latency < best_latency) {
              best_latency = latency;
              std::ostringstream w;
              for (int d = 0; d < parts; ++d) {
                w << (d ? " -> " : "") << cluster.classes[tm[d]].name;
                if (c.parts[d].mps > 1) w << "/mps" << c.parts[d].mps;
              }
              w << ", batch " << b;
              best_what = w.str();
            }
            continue;
          }
          found.push_back(std::move(c));
        }
        int d = parts - 1;
        while (d >= 0 && ++pick[d] == static_cast<int>(shares[d].size())) pick[d--] = 0;
        if (d < 0) break;
      }
    });

    if (rules.prune_dominated) {
      std::stable_sort(found.begin(), found.end(), [](const PipeConfig& a, const PipeConfig& b) {
        return strength(a) > strength(b);
      });
      std::vector<PipeConfig> kept;
      for (auto& c : found) {
        bool dominated = false;
        for (const auto& k : kept) {
          if (dominates(k, c)) {
            dominated = true;
            break;
          }
        }
        if (!dominated) kept.push_back(std::move(c));
      }
      found = std::move(kept);
    }
    out.insert(out.end(), std::make_move_iterator(found.begin()),
               std::make_move_iterator(found.end()));
  }

  if (out.empty() && why_none != nullptr) {
    std::ostringstream w;
    if (!any_profile) {
      w << "no block profile of " << dnn.name << " on any GPU class of the cluster";
    } else {
      w << "latency: no pipeline of " << dnn.name << " fits the budget of " << rules.budget_ms
        << " ms (SLO x (1 - margin), batch-build estimate included); the fastest (" << best_what
        << ") needs " << best_latency << " ms";
    }
    *why_none = w.str();
  }
  return out;
}

}  // namespace tessera::plan
