#include "policy/pard/batch_wait.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tessera {

Time batch_wait_quantile(std::span<const Time> cycles, double lambda, int samples,
                         std::mt19937_64& rng, std::vector<Time>& scratch) {
  if (cycles.empty() || samples <= 0) return 0.0;
  if (lambda <= 0.0) return 0.0;
  if (lambda >= 1.0) return std::accumulate(cycles.begin(), cycles.end(), 0.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  scratch.resize(static_cast<std::size_t>(samples));
  for (Time& sum : scratch) {
    sum = 0.0;
    for (Time d : cycles) sum += d * unit(rng);
  }
  const auto k = static_cast<std::size_t>(std::min<double>(
      static_cast<double>(samples) - 1.0, std::floor(lambda * static_cast<double>(samples))));
  std::nth_element(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(k),
                   scratch.end());
  return scratch[k];
}

}  // namespace tessera
