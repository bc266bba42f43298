#include "workload/workload_spec.hpp"

#include <optional>
#include <string>
#include <utility>

#include "workload/rate_scale.hpp"
#include "workload/seeding.hpp"
#include "workload/source_spec.hpp"
#include "workload/stream_summary.hpp"
#include "workload/transforms.hpp"

namespace tessera {
namespace {

constexpr uint64_t kSourceSalt = 1;
constexpr uint64_t kRateScaleSalt = 2;

// The time_scale that gives the source the target mean rate. The source is built a second
// time with the same seed and read to its end, so this works for any finite source in
// constant memory.
double scale_for_target_rate(const SpecNode& source_node, const SpecNode& target_node, bool finite,
                             uint64_t source_seed) {
  const double target = target_node.as_positive();
  if (!finite) {
    target_node.fail(
        "needs a finite source to measure its rate: give the source a duration_s or limit");
  }
  BuiltSource probe = build_source(source_node, source_seed);
  const StreamSummary summary = summarize(*probe.source);
  const double rate = summary.mean_rate();
  if (!(rate > 0)) {
    target_node.fail("the source has " + std::to_string(summary.count) +
                     " arrivals over no time, so it has no mean rate to rescale");
  }
  return rate / target;
}

}  // namespace

Workload build_workload(const SpecNode& workload, uint64_t seed) {
  workload.allow_only({"source", "time_scale", "target_rate_rps", "rate_scale", "start_s",
                       "duration_s", "limit", "slo_ms"});
  const SpecNode source_node = workload.at("source");
  const uint64_t source_seed = derive_seed(seed, kSourceSalt);
  BuiltSource built = build_source(source_node, source_seed);

  const auto time_scale = workload.get("time_scale");
  const auto target_rate = workload.get("target_rate_rps");
  if (time_scale && target_rate) {
    target_rate->fail("give either time_scale or target_rate_rps, not both");
  }
  double factor = 1.0;
  if (time_scale) factor = time_scale->as_positive();
  if (target_rate) {
    factor = scale_for_target_rate(source_node, *target_rate, built.finite, source_seed);
  }
  if (factor != 1.0) built.source = std::make_unique<TimeScaled>(std::move(built.source), factor);

  if (auto v = workload.get("rate_scale")) {
    const double r = v->as_positive();
    if (r != 1.0) {
      built.source = std::make_unique<RateScaled>(std::move(built.source), r,
                                                  derive_seed(seed, kRateScaleSalt));
    }
  }

  const double start = workload.get("start_s") ? workload.at("start_s").as_non_negative() : 0.0;
  std::optional<double> duration;
  if (auto v = workload.get("duration_s")) duration = v->as_positive();
  std::optional<uint64_t> limit;
  if (auto v = workload.get("limit")) {
    const int64_t n = v->as_integer();
    if (n < 1) v->fail("must be at least 1, found " + std::to_string(n));
    limit = static_cast<uint64_t>(n);
  }
  if (duration || limit) built.finite = true;
  if (start > 0) {
    // The window's end bounds the stream; the limit still needs its own bound.
    built.source = std::make_unique<Windowed>(std::move(built.source), start, duration);
    duration.reset();
  }
  if (duration || limit) {
    built.source = std::make_unique<Bounded>(std::move(built.source), duration, limit);
  }

  if (auto v = workload.get("slo_ms")) {
    ArrivalOverrides overrides;
    overrides.slo_s = v->as_positive() * 1e-3;
    built.source = std::make_unique<Overridden>(std::move(built.source), overrides);
  }
  return Workload{std::move(built.source), built.finite};
}

std::unique_ptr<ArrivalSource> make_arrival_source(const SpecNode& workload, uint64_t seed) {
  return build_workload(workload, seed).source;
}

}  // namespace tessera
