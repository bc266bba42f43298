#include "plan/ppipe/report.hpp"

#include <cmath>
#include <iomanip>
#include <map>

namespace tessera::plan {

std::vector<int> ppipe_gpus_used(const ppipe::PpipePlan& plan) {
  std::vector<int> used(plan.cluster.classes.size(), 0);
  for (const auto& d : plan.dnns) {
    std::map<std::pair<size_t, size_t>, double> position;
    for (const auto& p : d.pipelines) {
      for (size_t i = 0; i < p.partitions.size(); ++i) {
        const auto& part = p.partitions[i];
        for (size_t k = 0; k < plan.cluster.classes.size(); ++k) {
          if (plan.cluster.classes[k].name == part.gpu_class) {
            position[{k, i}] += static_cast<double>(part.vgpus) / part.mps;
          }
        }
      }
    }
    for (const auto& [key, gpus] : position) {
      used[key.first] += static_cast<int>(std::ceil(gpus - 1e-9));
    }
  }
  return used;
}

void print_ppipe_plan(std::ostream& out, const PpipeResult& result) {
  const auto& plan = result.plan;
  const auto& s = plan.solve;
  out << std::fixed;
  out << "PPipe planner, method " << ppipe::method_name(plan.method) << ": "
      << ppipe::status_text(s) << " in " << std::setprecision(2) << s.seconds << " s, proven gap "
      << std::setprecision(2) << 100.0 * s.gap << " %, " << s.templates << " templates, "
      << s.configurations << " configurations";
  if (!s.detail.empty()) out << "\n  " << s.detail;
  out << "\n  objective " << (plan.dnns.size() > 1 ? "min_m x_m / w_m" : "req/s") << " = "
      << std::setprecision(1) << s.objective << " (bound " << s.bound << ")\n";
  for (size_t m = 0; m < plan.dnns.size(); ++m) {
    const auto& d = plan.dnns[m];
    out << "  " << d.dnn << ": weight " << std::setprecision(2) << d.weight << ", SLO " << d.slo_ms
        << " ms, budget " << (m < result.rules.size() ? result.rules[m].budget_ms : 0.0) << " ms, "
        << std::setprecision(1) << d.throughput << " req/s\n";
    for (size_t l = 0; l < d.pipelines.size(); ++l) {
      const auto& p = d.pipelines[l];
      out << "    pipeline " << l << ": batch " << p.batch << ", latency " << std::setprecision(2)
          << p.latency_ms << " ms, " << std::setprecision(1) << p.throughput << " req/s\n";
      for (const auto& part : p.partitions) {
        std::string cls = part.gpu_class + (part.mps > 1 ? "/mps" + std::to_string(part.mps) : "");
        out << "      blocks [" << part.first_block << "," << part.end_block << ")  " << std::left
            << std::setw(9) << cls << std::right << " x" << std::setw(5) << part.vgpus << "  infer "
            << std::setw(7) << std::setprecision(2) << part.infer_ms << " ms  transfer in "
            << std::setw(6) << part.transfer_in_ms << " ms  " << std::setw(8)
            << std::setprecision(1) << part.throughput << " req/s\n";
      }
    }
  }
  const auto used = ppipe_gpus_used(plan);
  out << "  GPUs used:";
  for (size_t k = 0; k < used.size(); ++k) {
    out << " " << plan.cluster.classes[k].name << " " << used[k] << "/"
        << plan.cluster.classes[k].count;
  }
  out << "\n";
  if (result.ok()) {
    out << "  re-check outside the solver: every constraint holds\n";
  } else {
    out << "  re-check outside the solver found " << result.problems.size() << " problem(s):\n";
    for (const auto& p : result.problems) out << "    " << p << "\n";
  }
  out << std::defaultfloat;
}

void print_ppipe_comparison(std::ostream& out, const std::vector<const ppipe::PpipePlan*>& plans) {
  if (plans.empty()) return;
  out << std::fixed << std::setprecision(1) << "  planned req/s per DNN:";
  for (const auto* p : plans) out << "  " << std::setw(9) << ppipe::method_name(p->method);
  out << "\n";
  for (size_t m = 0; m < plans.front()->dnns.size(); ++m) {
    out << "    " << std::left << std::setw(48) << plans.front()->dnns[m].dnn << std::right;
    for (const auto* p : plans) {
      out << "  " << std::setw(9) << (m < p->dnns.size() ? p->dnns[m].throughput : 0.0);
    }
    out << "\n";
  }
  out << std::defaultfloat;
}

}  // namespace tessera::plan
