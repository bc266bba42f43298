#include "sampling/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace tessera {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double clean(float x) { return std::isfinite(x) ? static_cast<double>(x) : kNegInf; }

// log(sum(exp(v))) over the finite values.
double log_sum_exp(const std::vector<double>& v) {
  double m = kNegInf;
  for (double x : v) m = std::max(m, x);
  if (m == kNegInf) return kNegInf;
  double s = 0.0;
  for (double x : v) {
    if (x != kNegInf) s += std::exp(x - m);
  }
  return m + std::log(s);
}

}  // namespace

std::string SamplingParams::problem() const {
  if (!(temperature >= 0.0 && temperature <= 2.0)) return "temperature: must be in [0, 2]";
  if (!(top_p > 0.0 && top_p <= 1.0)) return "top_p: must be in (0, 1]";
  if (top_k < 0) return "top_k: must be 0 (no limit) or positive";
  if (!(presence_penalty >= -2.0 && presence_penalty <= 2.0)) {
    return "presence_penalty: must be in [-2, 2]";
  }
  if (!(frequency_penalty >= -2.0 && frequency_penalty <= 2.0)) {
    return "frequency_penalty: must be in [-2, 2]";
  }
  if (top_logprobs < 0 || top_logprobs > 20) return "top_logprobs: must be in [0, 20]";
  return "";
}

Sampler::Sampler(SamplingParams params) : params_(std::move(params)) {
  const std::string p = params_.problem();
  if (!p.empty()) throw std::invalid_argument(p);
  if (params_.seed) {
    rng_.seed(*params_.seed);
  } else {
    std::random_device device;
    rng_.seed((static_cast<uint64_t>(device()) << 32) ^ device());
  }
}

double Sampler::uniform() {
  // 53 random bits: the same doubles from the same seed on every platform.
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

SampledToken Sampler::sample(std::span<const float> logits) {
  const std::size_t n = logits.size();
  std::vector<double> raw(n);
  for (std::size_t i = 0; i < n; ++i) raw[i] = clean(logits[i]);
  const double raw_norm = log_sum_exp(raw);
  if (raw_norm == kNegInf) throw std::invalid_argument("the model gave no finite logit");

  // 1. Penalties on what this request generated.
  std::vector<double> x = raw;
  if (params_.presence_penalty != 0.0 || params_.frequency_penalty != 0.0) {
    for (const auto& [id, count] : counts_) {
      if (id < 0 || static_cast<std::size_t>(id) >= n ||
          x[static_cast<std::size_t>(id)] == kNegInf) {
        continue;
      }
      x[static_cast<std::size_t>(id)] -= static_cast<double>(count) * params_.frequency_penalty +
                                         (count > 0 ? params_.presence_penalty : 0.0);
    }
  }

  // 2. The choice.
  int64_t chosen = 0;
  if (params_.temperature == 0.0) {
    chosen = std::max_element(x.begin(), x.end()) - x.begin();  // first of the largest
  } else {
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return x[static_cast<std::size_t>(a)] > x[static_cast<std::size_t>(b)];
    });
    std::size_t keep = n;
    while (keep > 0 && x[static_cast<std::size_t>(order[keep - 1])] == kNegInf) --keep;
    if (params_.top_k > 0) keep = std::min(keep, static_cast<std::size_t>(params_.top_k));
    std::vector<double> p(keep);
    const double top = x[static_cast<std::size_t>(order[0])] / params_.temperature;
    double total = 0.0;
    for (std::size_t i = 0; i < keep; ++i) {
      p[i] = std::exp(x[static_cast<std::size_t>(order[i])] / params_.temperature - top);
      total += p[i];
    }
    if (params_.top_p < 1.0) {
      double cumulative = 0.0;
      std::size_t k = 0;
      while (k < keep) {
        cumulative += p[k] / total;
        ++k;
        if (cumulative >= params_.top_p) break;
      }
      keep = k;
      total = 0.0;
      for (std::size_t i = 0; i < keep; ++i) total += p[i];
    }
    const double u = uniform() * total;
    double acc = 0.0;
    chosen = order[keep - 1];
    for (std::size_t i = 0; i < keep; ++i) {
      acc += p[i];
      if (u < acc) {
        chosen = order[i];
        break;
      }
    }
  }
  ++counts_[chosen];

  // 3. Log-probabilities under the model's distribution.
  SampledToken out;
  out.id = chosen;
  out.logprob = raw[static_cast<std::size_t>(chosen)] - raw_norm;
  if (params_.top_logprobs > 0) {
    const std::size_t k = std::min(n, static_cast<std::size_t>(params_.top_logprobs));
    std::vector<int64_t> ids(n);
    std::iota(ids.begin(), ids.end(), int64_t{0});
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(),
                      [&](int64_t a, int64_t b) {
                        const double xa = raw[static_cast<std::size_t>(a)];
                        const double xb = raw[static_cast<std::size_t>(b)];
                        return xa != xb ? xa > xb : a < b;
                      });
    for (std::size_t i = 0; i < k; ++i) {
      out.top.emplace_back(ids[i], raw[static_cast<std::size_t>(ids[i])] - raw_norm);
    }
  }
  // 4. Stop tokens.
  out.stop = !params_.ignore_eos &&
             std::find(params_.stop_token_ids.begin(), params_.stop_token_ids.end(), chosen) !=
                 params_.stop_token_ids.end();
  return out;
}

}  // namespace tessera
