#include "workload/workload_spec.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
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

std::string approx(double v) {
  std::ostringstream out;
  out.precision(3);
  out << v;
  return out.str();
}

// A finite stream must stay within the documented work limits.
void check_size(const SpecNode& node, const StreamSize& size, double skipped,
                const std::string& what) {
  const double work = size.count + skipped;
  if (!(work <= limits::kMaxArrivals)) {
    node.fail(what + " would make about " + approx(work) + " arrivals" +
              (skipped > 0 ? " (counting those before start_s)" : "") + ", more than the " +
              approx(limits::kMaxArrivals) +
              " allowed: shorten duration_s, lower the rate or set a limit");
  }
  if (!(size.span_s <= limits::kMaxSpanS)) {
    node.fail(what + "'s arrivals would span about " + approx(size.span_s) + " s, more than the " +
              approx(limits::kMaxSpanS) + " s allowed");
  }
}

// The time_scale that gives the source the target mean rate. The source is built a second
// time with the same seed and read to its end, so this works for any finite source in
// constant memory.
double scale_for_target_rate(const SpecNode& source_node, const SpecNode& target_node, bool finite,
                             const StreamSize& size, uint64_t source_seed) {
  const double target = target_node.as_positive(limits::kMaxRateRps);
  if (!finite) {
    target_node.fail(
        "needs a finite source to measure its rate: give the source a duration_s or limit");
  }
  // The source is read to its end below: it must be of a size that can be read.
  check_size(source_node, size, 0, "the source");
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
  workload.allow_only({"source", "shared_prefix", "time_scale", "target_rate_rps", "rate_scale",
                       "start_s", "duration_s", "limit", "slo_ms"});
  const SpecNode source_node = workload.at("source");
  const uint64_t source_seed = derive_seed(seed, kSourceSalt);
  BuiltSource built = build_source(source_node, source_seed);

  const auto time_scale = workload.get("time_scale");
  const auto target_rate = workload.get("target_rate_rps");
  if (time_scale && target_rate) {
    target_rate->fail("give either time_scale or target_rate_rps, not both");
  }
  double factor = 1.0;
  if (time_scale) factor = time_scale->as_number_in(1e-9, 1e9);
  if (target_rate) {
    factor =
        scale_for_target_rate(source_node, *target_rate, built.finite, built.size, source_seed);
    if (!(factor >= 1e-9 && factor <= 1e9)) {
      target_rate->fail("would scale the source's times by " + approx(factor) +
                        " (at most 1e9 and at least 1e-9)");
    }
  }
  if (factor != 1.0) {
    built.source = std::make_unique<TimeScaled>(std::move(built.source), factor);
    built.size = built.size.time_scaled(factor);
  }

  if (auto v = workload.get("rate_scale")) {
    const double r = v->as_positive(1e6);
    if (r != 1.0) {
      built.source = std::make_unique<RateScaled>(std::move(built.source), r,
                                                  derive_seed(seed, kRateScaleSalt));
      built.size = built.size.rate_scaled(r);
    }
  }

  const double start =
      workload.get("start_s") ? workload.at("start_s").as_non_negative(limits::kMaxSpanS) : 0.0;
  std::optional<double> duration;
  if (auto v = workload.get("duration_s")) duration = v->as_positive(limits::kMaxSpanS);
  std::optional<uint64_t> limit;
  if (auto v = workload.get("limit")) {
    limit = static_cast<uint64_t>(v->as_integer_in(1, static_cast<int64_t>(limits::kMaxArrivals)));
  }
  if (duration || limit) built.finite = true;
  // Arrivals before start_s are generated and skipped: they are work too.
  // (A trace's rate is unknown; skipping part of one costs nothing beyond reading it.)
  const double skipped = start > 0 && std::isfinite(built.size.rate)
                             ? std::min(built.size.count, built.size.rate * start)
                             : 0.0;
  built.size = built.size.bounded(
      duration ? std::optional<double>(start + *duration) : std::nullopt, std::nullopt);
  if (start > 0) {
    built.size.span_s = std::max(0.0, built.size.span_s - start);
    built.size.count = std::max(0.0, built.size.count - skipped);
  }
  if (limit) built.size = built.size.bounded(std::nullopt, static_cast<double>(*limit));
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
    overrides.slo_s = v->as_positive(limits::kMaxMs) * 1e-3;
    built.source = std::make_unique<Overridden>(std::move(built.source), overrides);
  }
  if (auto v = workload.get("shared_prefix")) {
    v->allow_only({"tokens", "groups"});
    const auto tokens = static_cast<uint32_t>(v->at("tokens").as_integer_in(1, 1 << 24));
    const auto groups =
        v->get("groups") ? static_cast<uint32_t>(v->at("groups").as_integer_in(1, 1 << 20)) : 1u;
    built.source = std::make_unique<SharedPrefix>(std::move(built.source), tokens, groups);
  }
  if (built.finite) check_size(workload, built.size, skipped, "this workload");
  return Workload{std::move(built.source), built.finite, built.size};
}

std::unique_ptr<ArrivalSource> make_arrival_source(const SpecNode& workload, uint64_t seed) {
  return build_workload(workload, seed).source;
}

}  // namespace tessera
