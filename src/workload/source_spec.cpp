#include "workload/source_spec.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "workload/azure_functions.hpp"
#include "workload/azure_llm.hpp"
#include "workload/generic_csv.hpp"
#include "workload/merged_source.hpp"
#include "workload/minute_counts_source.hpp"
#include "workload/onoff_source.hpp"
#include "workload/ramp_source.hpp"
#include "workload/renewal_sources.hpp"
#include "workload/seeding.hpp"
#include "workload/trace_source.hpp"
#include "workload/transforms.hpp"

namespace tessera {
namespace {

uint32_t as_tokens(const SpecNode& node) {
  return static_cast<uint32_t>(node.as_integer_in(0, std::numeric_limits<uint32_t>::max()));
}

// `limit` fields: an integer in [1, limits::kMaxArrivals].
uint64_t as_limit(const SpecNode& node) {
  return static_cast<uint64_t>(node.as_integer_in(1, static_cast<int64_t>(limits::kMaxArrivals)));
}

// The optional fields every kind shares: duration_s and limit end the stream, slo_ms
// (and, where the kind allows them, input_tokens and output_tokens) are set on every
// arrival.
BuiltSource apply_common(const SpecNode& node, BuiltSource built) {
  std::optional<double> duration;
  std::optional<uint64_t> limit;
  if (auto v = node.get("duration_s")) duration = v->as_positive(limits::kMaxSpanS);
  if (auto v = node.get("limit")) limit = as_limit(*v);
  if (duration || limit) {
    built.source = std::make_unique<Bounded>(std::move(built.source), duration, limit);
    built.finite = true;
    built.size = built.size.bounded(
        duration, limit ? std::optional<double>(static_cast<double>(*limit)) : std::nullopt);
  }
  ArrivalOverrides overrides;
  if (auto v = node.get("input_tokens")) overrides.input_tokens = as_tokens(*v);
  if (auto v = node.get("output_tokens")) overrides.output_tokens = as_tokens(*v);
  if (auto v = node.get("slo_ms")) overrides.slo_s = v->as_positive(limits::kMaxMs) * 1e-3;
  if (!overrides.empty()) {
    built.source = std::make_unique<Overridden>(std::move(built.source), overrides);
  }
  return built;
}

std::optional<std::vector<std::size_t>> parse_rows(const std::optional<SpecNode>& node) {
  if (!node) return std::nullopt;
  if (node->is_scalar() && node->as_string() == "all") return std::nullopt;
  std::vector<SpecNode> items;
  if (node->is_sequence()) {
    items = node->items();
    if (items.empty()) node->fail("must list at least one row index (or be 'all')");
  } else {
    items.push_back(*node);
  }
  std::vector<std::size_t> rows;
  std::set<std::size_t> seen;
  for (const auto& item : items) {
    if (item.is_scalar() && item.as_string() == "all") {
      item.fail("'all' cannot be combined with row indices");
    }
    const int64_t v = item.as_integer();
    if (v < 0) item.fail("row indices start at 0, found " + std::to_string(v));
    const auto row = static_cast<std::size_t>(v);
    if (!seen.insert(row).second) item.fail("row " + std::to_string(v) + " is listed twice");
    rows.push_back(row);
  }
  return rows;
}

BuiltSource build_functions_trace(const SpecNode& node, const std::filesystem::path& path,
                                  uint64_t seed) {
  const auto rows_node = node.get("rows");
  const auto rows = parse_rows(rows_node);
  const double seconds_per_minute =
      node.get("seconds_per_minute") ? node.at("seconds_per_minute").as_positive(limits::kMaxSpanS)
                                     : 60.0;
  const WithinMinute within =
      node.get("within_minute") && node.at("within_minute").as_choice({"uniform", "even"}) == "even"
          ? WithinMinute::kEven
          : WithinMinute::kUniform;

  FunctionCounts counts = read_functions_counts(path, rows);
  std::string label = "azure-functions '" + path.string() + "'";
  if (rows) {
    const auto items = rows_node->is_sequence() ? rows_node->items() : std::vector{*rows_node};
    for (std::size_t i = 0; i < rows->size(); ++i) {
      if ((*rows)[i] >= counts.rows_in_file) {
        items[i].fail("row " + std::to_string((*rows)[i]) + " does not exist: " + path.string() +
                      " has " + std::to_string(counts.rows_in_file) + " function rows");
      }
    }
    label += ", rows";
    for (std::size_t i = 0; i < rows->size(); ++i) {
      label += (i == 0 ? " " : ",") + std::to_string((*rows)[i]);
    }
  } else {
    label += ", all " + std::to_string(counts.rows_in_file) + " rows";
  }
  double total = 0;
  double busiest = 0;
  for (const uint64_t c : counts.per_minute) {
    total += static_cast<double>(c);
    busiest = std::max(busiest, static_cast<double>(c));
  }
  BuiltSource built;
  built.size =
      StreamSize::known(total, static_cast<double>(counts.per_minute.size()) * seconds_per_minute,
                        busiest / seconds_per_minute);
  built.source = std::make_unique<MinuteCountsSource>(std::move(counts.per_minute),
                                                      seconds_per_minute, within, seed, label);
  built.finite = true;
  return built;
}

BuiltSource build_trace(const SpecNode& node, uint64_t seed) {
  const std::string format =
      node.get("format") ? node.at("format").as_choice({"generic", "azure-llm", "azure-functions"})
                         : std::string("generic");
  if (format == "azure-functions") {
    node.allow_only({"kind", "format", "path", "rows", "seconds_per_minute", "within_minute",
                     "input_tokens", "output_tokens", "duration_s", "limit", "slo_ms"});
  } else {
    node.allow_only({"kind", "format", "path", "duration_s", "limit", "slo_ms"});
  }
  const std::filesystem::path path = node.at("path").as_file_path(limits::kMaxTraceFileBytes);
  if (format == "azure-functions") return build_functions_trace(node, path, seed);

  BuiltSource built;
  std::vector<Arrival> arrivals =
      format == "azure-llm" ? read_azure_llm_csv(path) : read_generic_csv(path);
  built.size = StreamSize::known(static_cast<double>(arrivals.size()),
                                 arrivals.empty() ? 0.0 : arrivals.back().time);
  built.source =
      std::make_unique<TraceSource>(std::move(arrivals), format + " '" + path.string() + "'");
  built.finite = true;
  return built;
}

BuiltSource build_deterministic(const SpecNode& node) {
  const auto rate = node.get("rate_rps");
  const auto interval = node.get("interval_s");
  if (rate && interval) interval->fail("give either rate_rps or interval_s, not both");
  if (!rate && !interval) node.fail("a deterministic source needs rate_rps or interval_s");
  const double rps = rate ? rate->as_positive(limits::kMaxRateRps)
                          : 1.0 / interval->as_positive(limits::kMaxSpanS);
  if (rps > limits::kMaxRateRps) interval->fail("must be at least 1e-09 (at most 1e9 arrivals/s)");
  return BuiltSource{std::make_unique<DeterministicSource>(rps), false, StreamSize::steady(rps)};
}

BuiltSource build_ramp(const SpecNode& node, uint64_t seed) {
  RampShape shape;
  shape.from_rps = node.at("from_rps").as_non_negative(limits::kMaxRateRps);
  shape.to_rps = node.at("to_rps").as_non_negative(limits::kMaxRateRps);
  shape.ramp_s = node.at("ramp_s").as_non_negative(limits::kMaxSpanS);
  if (auto v = node.get("hold_s")) shape.hold_s = v->as_non_negative(limits::kMaxSpanS);
  if (shape.from_rps == 0 && shape.to_rps == 0) {
    node.fail("from_rps and to_rps are both 0: the ramp would have no arrivals");
  }
  const double ramp_end = shape.hold_s + shape.ramp_s;
  const double ramp_count = shape.expected_count(ramp_end);
  StreamSize size;
  size.rate = std::max(shape.from_rps, shape.to_rps);
  size.time_for = [ramp_end, ramp_count, to = shape.to_rps](double n) {
    if (n <= ramp_count || to == 0) return ramp_end;
    return ramp_end + (n - ramp_count) / to;
  };
  if (shape.to_rps == 0) {
    size.count = ramp_count;
    size.span_s = ramp_end;
  }
  return BuiltSource{std::make_unique<RampSource>(shape, seed), shape.to_rps == 0, size};
}

BuiltSource build_sum(const SpecNode& node, uint64_t seed) {
  const auto items = node.at("streams").items();
  if (items.empty()) node.at("streams").fail("must list at least one stream");
  std::vector<std::unique_ptr<ArrivalSource>> streams;
  bool finite = true;
  std::optional<StreamSize> size;
  std::size_t leaves = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    BuiltSource stream = build_source(items[i], derive_seed(seed, i + 1));
    finite = finite && stream.finite;
    size = size ? size->plus(stream.size) : stream.size;
    leaves += stream.leaves;
    if (leaves > limits::kMaxStreams) {
      items[i].fail("the sum holds more than " + std::to_string(limits::kMaxStreams) +
                    " sources in all");
    }
    streams.push_back(std::move(stream.source));
  }
  BuiltSource out{std::make_unique<MergedSource>(std::move(streams)), finite, *size};
  out.leaves = leaves;
  return out;
}

}  // namespace

BuiltSource build_source(const SpecNode& node, uint64_t seed) {
  node.expect_map();
  const std::string kind = node.at("kind").as_choice(
      {"trace", "poisson", "gamma", "onoff", "deterministic", "ramp", "sum"});
  BuiltSource built;
  if (kind == "trace") {
    built = build_trace(node, seed);  // checks its own fields, which depend on the format
  } else if (kind == "poisson") {
    node.allow_only(
        {"kind", "rate_rps", "duration_s", "limit", "input_tokens", "output_tokens", "slo_ms"});
    const double rate = node.at("rate_rps").as_positive(limits::kMaxRateRps);
    built.source = std::make_unique<PoissonSource>(rate, seed);
    built.size = StreamSize::steady(rate);
  } else if (kind == "gamma") {
    node.allow_only({"kind", "rate_rps", "cv2", "duration_s", "limit", "input_tokens",
                     "output_tokens", "slo_ms"});
    const double rate = node.at("rate_rps").as_positive(limits::kMaxRateRps);
    const double cv2 = node.at("cv2").as_positive(1e4);
    if (cv2 < 1e-6)
      node.at("cv2").fail("must be at least 1e-06, found " + node.at("cv2").as_string());
    built.source = std::make_unique<GammaSource>(rate, cv2, seed);
    built.size = StreamSize::steady(rate);
  } else if (kind == "onoff") {
    node.allow_only({"kind", "rate_rps", "cv", "burst_s", "peak_x", "duration_s", "limit",
                     "input_tokens", "output_tokens", "slo_ms"});
    const double rate = node.at("rate_rps").as_positive(limits::kMaxRateRps);
    const double cv = node.at("cv").as_number_in(0.01, 100.0);
    const double burst = node.at("burst_s").as_number_in(1e-3, limits::kMaxSpanS);
    std::optional<double> peak;
    if (auto p = node.get("peak_x")) peak = p->as_number_in(1.0, 1e4);
    OnOffFit fit;
    try {
      fit = fit_on_off(rate, cv, burst, peak);
    } catch (const std::invalid_argument& e) {
      node.at("peak_x").fail(e.what());
    }
    built.source = std::make_unique<OnOffSource>(fit, cv, seed);
    built.size = StreamSize::steady(rate);
  } else if (kind == "deterministic") {
    node.allow_only({"kind", "rate_rps", "interval_s", "duration_s", "limit", "input_tokens",
                     "output_tokens", "slo_ms"});
    built = build_deterministic(node);
  } else if (kind == "ramp") {
    node.allow_only({"kind", "from_rps", "to_rps", "ramp_s", "hold_s", "duration_s", "limit",
                     "input_tokens", "output_tokens", "slo_ms"});
    built = build_ramp(node, seed);
  } else {
    node.allow_only({"kind", "streams", "duration_s", "limit", "slo_ms"});
    built = build_sum(node, seed);
  }
  return apply_common(node, std::move(built));
}

}  // namespace tessera
