#include "control/data_plane_pick.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "control/demand_predictor.hpp"
#include "metrics/report.hpp"
#include "sim/simulator.hpp"

namespace tessera::control {

nlohmann::json simulate_data_plane(const RunSpec& run, const PolicyConfig& policies) {
  auto arrivals = make_run_arrivals(run);
  Simulator sim(run.app, run.deployment, run.profiles, PolicySet(policies), run.sim);
  sim.run(*arrivals);
  return summarize(sim.metrics(), run.app);
}

OverloadPick pick_under_overload(const RunSpec& at_demand, const RunSpec& overloaded,
                                 const std::vector<DataPlaneChoice>& planes,
                                 double overload_share) {
  if (planes.empty()) throw std::invalid_argument("pick_under_overload: no data planes");
  const double share = std::clamp(overload_share, 0.0, 1.0);
  OverloadPick out;
  for (const DataPlaneChoice& p : planes) {
    DataPlaneScore s;
    s.name = p.name;
    s.summary = simulate_data_plane(at_demand, p.policies);
    s.attainment = s.summary["slo_attainment"].get<double>();
    s.goodput_rps = s.summary["goodput_rps"].get<double>();
    s.overload_attainment =
        simulate_data_plane(overloaded, p.policies)["slo_attainment"].get<double>();
    s.expected = (1.0 - share) * s.attainment + share * s.overload_attainment;
    out.scores.push_back(std::move(s));
  }
  for (std::size_t i = 1; i < out.scores.size(); ++i) {
    const DataPlaneScore& s = out.scores[i];
    const DataPlaneScore& b = out.scores[out.index];
    if (s.expected > b.expected ||
        (s.expected == b.expected &&
         (s.attainment > b.attainment ||
          (s.attainment == b.attainment && s.goodput_rps > b.goodput_rps)))) {
      out.index = i;
    }
  }
  return out;
}

ObservedOverload observed_overload(const std::vector<uint64_t>& counts_per_bin, int history_bins,
                                   double slack, double quantile) {
  DemandPredictor predictor(history_bins);
  std::vector<double> ratios;
  for (std::size_t b = 0; b < counts_per_bin.size(); ++b) {
    const double demand = static_cast<double>(counts_per_bin[b]);
    const double predicted = predictor.predict();
    if (b > 0 && predicted > 0.0) ratios.push_back(demand / predicted);
    predictor.observe(demand);
  }
  ObservedOverload out;
  if (ratios.empty()) return out;
  out.share = static_cast<double>(std::count_if(ratios.begin(), ratios.end(),
                                                [&](double r) { return r > 1.0 + slack; })) /
              static_cast<double>(ratios.size());
  std::sort(ratios.begin(), ratios.end());
  const double q = std::clamp(quantile, 0.0, 1.0);
  const auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(ratios.size())));
  out.factor = std::max(1.0, ratios[std::min(ratios.size() - 1, i == 0 ? 0 : i - 1)]);
  return out;
}

}  // namespace tessera::control
