#include "plan/jigsawserve/tie_break.hpp"

#include <stdexcept>

namespace tessera::plan {

std::int64_t tie_break_weight(int rank) {
  // splitmix64 of the rank: fixed, platform-independent.
  std::uint64_t z = static_cast<std::uint64_t>(rank) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return 4096 + static_cast<std::int64_t>(z % 4096);
}

MilpModel tie_break_model(const MilpModel& primary, const std::vector<int>& count_var,
                          double primary_objective, double tolerance) {
  if (!primary.maximize()) throw std::invalid_argument("tie_break_model: expects a maximisation");
  MilpModel m = primary;
  std::vector<LinTerm> objective;
  for (int j = 0; j < m.num_vars(); ++j) {
    const double c = m.vars()[static_cast<size_t>(j)].obj;
    if (c != 0.0) objective.push_back({j, c});
    m.set_objective(j, 0.0);
  }
  m.add_row("tie_break_primary", std::move(objective), primary_objective - tolerance,
            MilpModel::kInf);
  for (size_t i = 0; i < count_var.size(); ++i) {
    m.set_objective(count_var[i], static_cast<double>(tie_break_weight(static_cast<int>(i))));
  }
  m.set_maximize(false);
  return m;
}

}  // namespace tessera::plan
