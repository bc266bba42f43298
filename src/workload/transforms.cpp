#include "workload/transforms.hpp"

#include <algorithm>
#include <utility>

#include "workload/number_text.hpp"

namespace tessera {

TimeScaled::TimeScaled(std::unique_ptr<ArrivalSource> inner, double factor)
    : inner_(std::move(inner)), factor_(factor) {}

bool TimeScaled::next(Arrival& out) {
  if (!inner_->next(out)) return false;
  out.time *= factor_;
  return true;
}

std::string TimeScaled::describe() const {
  return inner_->describe() + " | time_scale(" + number_text(factor_) + ")";
}

Bounded::Bounded(std::unique_ptr<ArrivalSource> inner, std::optional<double> duration_s,
                 std::optional<uint64_t> limit)
    : inner_(std::move(inner)), duration_(duration_s), limit_(limit) {}

bool Bounded::next(Arrival& out) {
  if (done_ || (limit_ && count_ >= *limit_)) return false;
  Arrival a;
  if (!inner_->next(a) || (duration_ && a.time >= *duration_)) {
    done_ = true;
    return false;
  }
  ++count_;
  out = a;
  return true;
}

std::string Bounded::describe() const {
  std::string out = inner_->describe() + " | bounded(";
  if (duration_) out += number_text(*duration_) + " s";
  if (duration_ && limit_) out += ", ";
  if (limit_) out += std::to_string(*limit_) + " arrivals";
  return out + ")";
}

Windowed::Windowed(std::unique_ptr<ArrivalSource> inner, double start_s,
                   std::optional<double> duration_s)
    : inner_(std::move(inner)), start_(start_s), duration_(duration_s) {}

bool Windowed::next(Arrival& out) {
  if (done_) return false;
  Arrival a;
  do {
    if (!inner_->next(a)) {
      done_ = true;
      return false;
    }
  } while (a.time < start_);
  if (duration_ && a.time >= start_ + *duration_) {
    done_ = true;
    return false;
  }
  out = a;
  out.time -= start_;
  return true;
}

std::string Windowed::describe() const {
  std::string out = inner_->describe() + " | window(from " + number_text(start_) + " s";
  if (duration_) out += " for " + number_text(*duration_) + " s";
  return out + ")";
}

Overridden::Overridden(std::unique_ptr<ArrivalSource> inner, ArrivalOverrides overrides)
    : inner_(std::move(inner)), overrides_(overrides) {}

bool Overridden::next(Arrival& out) {
  if (!inner_->next(out)) return false;
  if (overrides_.input_tokens) out.input_tokens = *overrides_.input_tokens;
  if (overrides_.output_tokens) out.output_tokens = *overrides_.output_tokens;
  if (overrides_.slo_s) out.slo_s = *overrides_.slo_s;
  return true;
}

std::string Overridden::describe() const {
  std::string out = inner_->describe() + " | set(";
  std::string sep;
  if (overrides_.input_tokens) {
    out += "input_tokens=" + std::to_string(*overrides_.input_tokens);
    sep = ", ";
  }
  if (overrides_.output_tokens) {
    out += sep + "output_tokens=" + std::to_string(*overrides_.output_tokens);
    sep = ", ";
  }
  if (overrides_.slo_s) out += sep + "slo=" + number_text(*overrides_.slo_s * 1e3) + " ms";
  return out + ")";
}

SharedPrefix::SharedPrefix(std::unique_ptr<ArrivalSource> inner, uint32_t tokens, uint32_t groups)
    : inner_(std::move(inner)), tokens_(tokens), groups_(groups == 0 ? 1 : groups) {}

bool SharedPrefix::next(Arrival& out) {
  if (!inner_->next(out)) return false;
  out.shared_prefix_tokens = std::min(tokens_, out.input_tokens);
  out.prefix_group = static_cast<uint32_t>(count_++ % groups_);
  return true;
}

std::string SharedPrefix::describe() const {
  return inner_->describe() + " | shared_prefix(tokens=" + std::to_string(tokens_) +
         ", groups=" + std::to_string(groups_) + ")";
}

}  // namespace tessera
