// check_ppipe_plan (declared in ppipe_planner.hpp): the re-check outside the solver.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "plan/ppipe/planner.hpp"

namespace tessera::plan {

std::vector<std::string> check_ppipe_plan(const ppipe::PpipePlan& plan, const PpipeInput& in,
                                          const std::vector<ConfigRules>& rules) {
  std::vector<std::string> problems;
  const auto& cl = plan.cluster;
  auto near = [](double a, double b) {
    return std::abs(a - b) <= 1e-6 * std::max(1.0, std::abs(b));
  };
  // Physical GPUs per class: whole GPUs per (DNN, class, position) when asked for; the
  // vGPU sum otherwise (DART-r replicates whole-GPU plans, so either holds for it).
  std::vector<double> used(cl.classes.size(), 0.0);
  for (size_t m = 0; m < plan.dnns.size(); ++m) {
    const auto& dp = plan.dnns[m];
    const std::string where = "dnn " + dp.dnn;
    if (m >= in.dnns.size() || in.dnns[m].name != dp.dnn) {
      problems.push_back(where + ": not the input's DNN " + std::to_string(m));
      continue;
    }
    const PpipeDnn& dnn = in.dnns[m];
    const ConfigRules& rule = rules.at(m);
    std::map<std::pair<int, int>, double> position;  // (class, d) -> sum vgpus / mps
    std::set<std::vector<std::string>> templates;
    double total = 0.0;
    for (size_t l = 0; l < dp.pipelines.size(); ++l) {
      const auto& p = dp.pipelines[l];
      const std::string pw = where + " pipeline " + std::to_string(l);
      std::vector<std::string> tmpl;
      double latency = batch_build_ms(rule, p.batch);
      double thr = std::numeric_limits<double>::infinity();
      int expect = 0;
      if (static_cast<int>(p.partitions.size()) > std::max(1, in.options.max_partitions) &&
          plan.method == ppipe::PpipeMethod::kPpipe) {
        problems.push_back(pw + ": more partitions than max_partitions");
      }
      for (size_t d = 0; d < p.partitions.size(); ++d) {
        const auto& part = p.partitions[d];
        const std::string w = pw + " partition " + std::to_string(d);
        const int k = cl.class_index(part.gpu_class);
        if (k < 0) {
          problems.push_back(w + ": unknown GPU class " + part.gpu_class);
          continue;
        }
        tmpl.push_back(part.gpu_class);
        if (part.first_block != expect || part.end_block <= part.first_block ||
            part.end_block > dnn.num_blocks()) {
          problems.push_back(w + ": block range is not contiguous within the model");
          continue;
        }
        expect = part.end_block;
        if (part.mps < 1 || part.mps > cl.classes[k].max_mps) {
          problems.push_back(w + ": MPS level above the class's max_mps");
          continue;
        }
        if ((plan.method != ppipe::PpipeMethod::kPpipe) && part.mps != 1) {
          problems.push_back(w + ": " + ppipe::method_name(plan.method) + " uses whole GPUs only");
        }
        const auto* prof = dnn.profile(part.gpu_class, part.mps);
        const int cap = in.options.max_batch_by_share[std::min(part.mps, 4) - 1];
        if (prof == nullptr || p.batch > prof->max_batch() || p.batch > cap) {
          problems.push_back(w + ": batch " + std::to_string(p.batch) +
                             " is not allowed or not profiled at this vGPU size");
          continue;
        }
        if (part.vgpus < 1) problems.push_back(w + ": no vGPU");
        const double infer =
            std::max(prof->range_latency_us(part.first_block, part.end_block - 1, p.batch), 1.0) /
            1000.0;
        if (!near(infer, part.infer_ms))
          problems.push_back(w + ": infer_ms does not match the profile");
        double x = 1000.0 * p.batch / infer;
        const double gbps = cl.classes[k].nic_gbps * cl.bandwidth_fraction;
        auto cap_of = [&](double bytes) {
          return 1000.0 /
                 (bytes * 8.0 / (gbps * 1e9) * 1e3 * part.mps * cl.classes[k].gpus_per_server);
        };
        const auto* bytes_prof = &dnn.profiles.front();
        for (const auto& pr : dnn.profiles) {
          if (!pr.transfer_bytes.empty()) bytes_prof = &pr;
        }
        double transfer = 0.0;
        if (d > 0) {
          const double bytes =
              static_cast<double>(bytes_prof->transfer_bytes.at(part.first_block - 1));
          const int prev = cl.class_index(p.partitions[d - 1].gpu_class);
          transfer = p.batch * transfer_ms_per_sample(cl, prev < 0 ? k : prev, k, bytes);
          if (bytes > 0) x = std::min(x, cap_of(bytes));
        }
        if (!near(transfer, part.transfer_in_ms))
          problems.push_back(w + ": transfer_in_ms does not match the cut and bandwidth");
        if (d + 1 < p.partitions.size()) {
          const double bytes =
              static_cast<double>(bytes_prof->transfer_bytes.at(part.end_block - 1));
          if (bytes > 0) x = std::min(x, cap_of(bytes));
        }
        latency += infer + transfer;
        if (!near(part.vgpus * x, part.throughput))
          problems.push_back(w + ": throughput is not vgpus x per-vGPU throughput");
        thr = std::min(thr, part.vgpus * x);
        position[{k, static_cast<int>(d)}] += static_cast<double>(part.vgpus) / part.mps;
      }
      if (expect != dnn.num_blocks())
        problems.push_back(pw + ": the partitions do not cover every block");
      if (latency > rule.budget_ms * (1 + 1e-9)) {
        std::ostringstream s;
        s << pw << ": latency " << latency << " ms exceeds the budget " << rule.budget_ms << " ms";
        problems.push_back(s.str());
      }
      if (!near(thr, p.throughput))
        problems.push_back(pw + ": throughput is not the minimum over its partitions");
      total += p.throughput;
      if (plan.method == ppipe::PpipeMethod::kPpipe && in.options.one_config_per_template &&
          !in.options.repo_templates && !templates.insert(tmpl).second) {
        problems.push_back(pw + ": a second configuration of the same template");
      }
    }
    if (!near(total, dp.throughput))
      problems.push_back(where + ": throughput is not the sum over its pipelines");
    for (const auto& [key, gpus] : position) {
      const bool whole =
          plan.method == ppipe::PpipeMethod::kPpipe && in.options.integer_gpus_per_position;
      used[key.first] += whole ? std::ceil(gpus - 1e-9) : gpus;
    }
  }
  for (size_t k = 0; k < cl.classes.size(); ++k) {
    if (used[k] > cl.classes[k].count + 1e-6) {
      std::ostringstream s;
      s << "GPU budget: " << used[k] << " " << cl.classes[k].name << " GPUs used, "
        << cl.classes[k].count << " available";
      problems.push_back(s.str());
    }
  }
  return problems;
}

}  // namespace tessera::plan
