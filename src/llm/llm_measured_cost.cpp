#include "llm/llm_measured_cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace tessera {
namespace {

// "field[i]: problem" for the first bad entry of an increasing grid, or "".
std::string grid_problem(const std::string& field, const std::vector<double>& xs, double min,
                         bool above_min) {
  if (xs.empty()) return field + ": needs at least one point";
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double x = xs[i];
    if (!std::isfinite(x)) return fmt::format("{}[{}]: not a finite number", field, i);
    if (above_min ? !(x > min) : !(x >= min)) {
      return fmt::format("{}[{}]: must be {} {}, found {}", field, i,
                         above_min ? "greater than" : "at least", min, x);
    }
    if (i > 0 && !(x > xs[i - 1])) {
      return fmt::format("{}[{}]: the grid must be increasing, found {} after {}", field, i, x,
                         xs[i - 1]);
    }
  }
  return "";
}

std::string values_problem(const std::string& field, const std::vector<double>& ys,
                           std::size_t expected, const std::string& grid) {
  if (ys.size() != expected) {
    return fmt::format("{}: {} values for the {} points of {}", field, ys.size(), expected, grid);
  }
  for (std::size_t i = 0; i < ys.size(); ++i) {
    if (!std::isfinite(ys[i])) return fmt::format("{}[{}]: not a finite number", field, i);
    if (ys[i] < 0) return fmt::format("{}[{}]: must not be negative, found {}", field, i, ys[i]);
  }
  return "";
}

// Piecewise-linear through (xs, ys); below xs[0] linear from (0, 0) when `from_origin`,
// else the first segment's line; beyond the last point the last segment's line (one point:
// in proportion from the origin, or constant). Clamped at 0.
double interpolate(const std::vector<double>& xs, const std::vector<double>& ys, double x,
                   bool from_origin) {
  const std::size_t n = xs.size();
  if (n == 1) {
    return std::max(0.0, from_origin && xs[0] > 0 ? ys[0] * x / xs[0] : ys[0]);
  }
  if (x <= xs[0]) {
    if (from_origin && xs[0] > 0) return std::max(0.0, ys[0] * x / xs[0]);
    const double slope = (ys[1] - ys[0]) / (xs[1] - xs[0]);
    return std::max(0.0, ys[0] + slope * (x - xs[0]));
  }
  std::size_t i = static_cast<std::size_t>(std::upper_bound(xs.begin(), xs.end(), x) - xs.begin());
  i = std::min(i, n - 1);  // segment [i - 1, i]; beyond the last point, the last segment
  const double slope = (ys[i] - ys[i - 1]) / (xs[i] - xs[i - 1]);
  return std::max(0.0, ys[i - 1] + slope * (x - xs[i - 1]));
}

}  // namespace

std::string MeasuredStepCosts::problem() const {
  if (auto p = grid_problem("prefill.tokens", prefill_tokens, 0.0, true); !p.empty()) return p;
  if (auto p = values_problem("prefill.ms", prefill_ms, prefill_tokens.size(), "prefill.tokens");
      !p.empty()) {
    return p;
  }
  if (fit == PrefillFit::kQuadratic && prefill_tokens.size() < 3) {
    return "prefill.tokens: the quadratic fit needs at least 3 points";
  }
  if (auto p = grid_problem("decode.batch", decode_batch, 1.0, false); !p.empty()) return p;
  if (auto p = grid_problem("decode.context", decode_context, 0.0, false); !p.empty()) return p;
  if (decode_ms.size() != decode_batch.size()) {
    return fmt::format("decode.ms: {} rows for the {} points of decode.batch", decode_ms.size(),
                       decode_batch.size());
  }
  for (std::size_t i = 0; i < decode_ms.size(); ++i) {
    if (auto p = values_problem(fmt::format("decode.ms[{}]", i), decode_ms[i],
                                decode_context.size(), "decode.context");
        !p.empty()) {
      return p;
    }
  }
  if (!std::isfinite(step_overhead_ms) || step_overhead_ms < 0) {
    return fmt::format("step_overhead_ms: must be a finite number >= 0, found {}",
                       step_overhead_ms);
  }
  return "";
}

std::vector<double> fit_quadratic(const std::vector<double>& tokens,
                                  const std::vector<double>& ms) {
  // Normal equations of the weighted least squares in x = n / scale (conditioning).
  const double scale = tokens.empty() ? 1.0 : std::max(1.0, tokens.back());
  std::array<std::array<double, 4>, 3> m{};  // [A | b]
  for (std::size_t k = 0; k < tokens.size() && k < ms.size(); ++k) {
    const double x = tokens[k] / scale;
    const double w = ms[k] > 0 ? 1.0 / (ms[k] * ms[k]) : 1.0;
    const std::array<double, 3> f{1.0, x, x * x};
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) m[i][j] += w * f[i] * f[j];
      m[i][3] += w * f[i] * ms[k];
    }
  }
  // Gaussian elimination with partial pivoting.
  for (int c = 0; c < 3; ++c) {
    int pivot = c;
    for (int r = c + 1; r < 3; ++r) {
      if (std::abs(m[r][c]) > std::abs(m[pivot][c])) pivot = r;
    }
    std::swap(m[c], m[pivot]);
    if (std::abs(m[c][c]) < 1e-300) return {0.0, 0.0, 0.0};
    for (int r = 0; r < 3; ++r) {
      if (r == c) continue;
      const double f = m[r][c] / m[c][c];
      for (int j = c; j < 4; ++j) m[r][j] -= f * m[c][j];
    }
  }
  return {m[0][3] / m[0][0], m[1][3] / m[1][1] / scale, m[2][3] / m[2][2] / (scale * scale)};
}

LlmMeasuredCostModel::LlmMeasuredCostModel(MeasuredStepCosts costs) : costs_(std::move(costs)) {
  if (auto p = costs_.problem(); !p.empty()) throw std::invalid_argument(p);
  if (costs_.fit == PrefillFit::kQuadratic) {
    quadratic_ = fit_quadratic(costs_.prefill_tokens, costs_.prefill_ms);
    const double b = quadratic_[1];
    const double c = quadratic_[2];
    vertex_ = c != 0.0 ? std::max(0.0, -b / (2.0 * c)) : 0.0;
  }
}

double LlmMeasuredCostModel::prefill_ms(double tokens) const {
  if (tokens <= 0) return 0.0;
  if (costs_.fit == PrefillFit::kTable) {
    return interpolate(costs_.prefill_tokens, costs_.prefill_ms, tokens, true);
  }
  const double a = quadratic_[0];
  const double b = quadratic_[1];
  const double c = quadratic_[2];
  double n = tokens;
  if (c > 0) {
    n = std::max(n, vertex_);  // held at its minimum below the vertex
  } else if (c < 0) {
    n = std::min(n, vertex_);  // held at its maximum beyond the vertex
  } else if (b < 0) {
    n = 0.0;
  }
  return std::max(0.0, a + b * n + c * n * n);
}

Time LlmMeasuredCostModel::prefill(uint64_t from, uint64_t tokens) const {
  if (tokens == 0) return 0.0;
  const auto end = static_cast<double>(from + tokens);
  const double ms = from == 0 ? prefill_ms(end) : prefill_ms(end) - prefill_ms(double(from));
  return std::max(0.0, ms) * 1e-3;
}

double LlmMeasuredCostModel::decode_ms_at(std::size_t batch_index, double context) const {
  return interpolate(costs_.decode_context, costs_.decode_ms[batch_index], context, false);
}

Time LlmMeasuredCostModel::decode(uint64_t batch, double context) const {
  if (batch == 0) return 0.0;
  const auto& bs = costs_.decode_batch;
  const auto b = static_cast<double>(batch);
  double ms = 0.0;
  if (b <= bs.front()) {
    ms = decode_ms_at(0, context) * b / bs.front();
  } else if (b >= bs.back()) {
    ms = decode_ms_at(bs.size() - 1, context) * b / bs.back();
  } else {
    const auto i = static_cast<std::size_t>(std::upper_bound(bs.begin(), bs.end(), b) - bs.begin());
    const double lo = decode_ms_at(i - 1, context);
    const double hi = decode_ms_at(i, context);
    ms = lo + (hi - lo) * (b - bs[i - 1]) / (bs[i] - bs[i - 1]);
  }
  return std::max(0.0, ms) * 1e-3;
}

Time LlmMeasuredCostModel::step_time(const Worker& /*worker*/, const StepContents& step) const {
  Time t = costs_.step_overhead_ms * 1e-3;
  if (!step.parts.empty()) {
    uint64_t decoders = 0;
    uint64_t context = 0;
    for (const StepPart& p : step.parts) {
      t += prefill(p.prefill_from, p.prefill);
      if (p.decode) {
        ++decoders;
        context += p.context;
      }
    }
    if (decoders > 0) {
      t += decode(decoders, static_cast<double>(context) / static_cast<double>(decoders));
    }
    return t;
  }
  t += prefill(0, step.tokens_in);
  if (step.tokens_out > 0) {
    const uint64_t decode_context =
        step.context_tokens > step.tokens_in ? step.context_tokens - step.tokens_in : 0;
    t += decode(step.tokens_out,
                static_cast<double>(decode_context) / static_cast<double>(step.tokens_out));
  }
  return t;
}

}  // namespace tessera
