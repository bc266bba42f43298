#include "workload/renewal_sources.hpp"

#include "workload/number_text.hpp"

namespace tessera {

PoissonSource::PoissonSource(double rate_rps, uint64_t seed)
    : rate_(rate_rps), rng_(seed), gap_(rate_rps) {}

bool PoissonSource::next(Arrival& out) {
  time_ += gap_(rng_);
  out = Arrival{};
  out.time = time_;
  return true;
}

std::string PoissonSource::describe() const { return "poisson(rate=" + number_text(rate_) + "/s)"; }

GammaSource::GammaSource(double rate_rps, double cv2, uint64_t seed)
    : rate_(rate_rps), cv2_(cv2), rng_(seed), gap_(1.0 / cv2, cv2 / rate_rps) {}

bool GammaSource::next(Arrival& out) {
  time_ += gap_(rng_);
  out = Arrival{};
  out.time = time_;
  return true;
}

std::string GammaSource::describe() const {
  return "gamma(rate=" + number_text(rate_) + "/s, cv2=" + number_text(cv2_) + ")";
}

DeterministicSource::DeterministicSource(double rate_rps) : rate_(rate_rps) {}

bool DeterministicSource::next(Arrival& out) {
  out = Arrival{};
  // Dividing the index (rather than summing gaps) keeps the times free of drift.
  out.time = static_cast<double>(index_++) / rate_;
  return true;
}

std::string DeterministicSource::describe() const {
  return "deterministic(rate=" + number_text(rate_) + "/s)";
}

}  // namespace tessera
