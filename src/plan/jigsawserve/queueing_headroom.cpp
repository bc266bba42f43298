#include "plan/jigsawserve/queueing_headroom.hpp"

#include <algorithm>
#include <cmath>

namespace tessera::plan {

double erlang_c(int servers, double rho) {
  if (servers < 1 || rho <= 0.0) return 0.0;
  if (rho >= 1.0) return 1.0;
  // sum_{k<c} a^k / k! and a^c / c!, term by term (a = c rho), as ratios to stay finite.
  const double a = servers * rho;
  double term = 1.0, sum = 0.0;
  for (int k = 0; k < servers; ++k) {
    sum += term;
    term *= a / (k + 1);
  }
  const double last = term / (1.0 - rho);
  return last / (sum + last);
}

double mdc_wait_tail(int servers, double rho, double service_s, double wait_s) {
  if (rho >= 1.0) return 1.0;
  if (rho <= 0.0 || service_s <= 0.0) return 0.0;
  const double c = std::max(servers, 1);
  return erlang_c(servers, rho) * std::exp(-2.0 * c * (1.0 - rho) * wait_s / service_s);
}

double mdc_utilisation_cap(int servers, double service_s, double wait_s, double epsilon,
                           double floor) {
  if (mdc_wait_tail(servers, floor, service_s, wait_s) > epsilon) return floor;
  double lo = floor, hi = 1.0;
  while (hi - lo > 1e-6) {
    const double mid = 0.5 * (lo + hi);
    (mdc_wait_tail(servers, mid, service_s, wait_s) <= epsilon ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace tessera::plan
