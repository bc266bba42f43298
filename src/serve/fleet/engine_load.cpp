#include "serve/fleet/engine_load.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/error.hpp"

namespace tessera {

namespace {

// The metric name of a sample line and the rest after its labels; false if the labels do
// not close (a quote or brace left open).
bool split_sample(std::string_view line, std::string_view& name, std::string_view& rest) {
  std::size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ' && line[i] != '\t') ++i;
  name = line.substr(0, i);
  if (i < line.size() && line[i] == '{') {
    bool quoted = false;
    for (++i; i < line.size(); ++i) {
      const char c = line[i];
      if (quoted && c == '\\') {
        ++i;  // an escaped character inside a label value
      } else if (c == '"') {
        quoted = !quoted;
      } else if (!quoted && c == '}') {
        break;
      }
    }
    if (i >= line.size()) return false;
    ++i;
  }
  rest = line.substr(i);
  return true;
}

// The sample's value: the first field of `rest` (a timestamp may follow).
bool parse_value(std::string_view rest, double& value) {
  std::size_t b = rest.find_first_not_of(" \t");
  if (b == std::string_view::npos) return false;
  rest.remove_prefix(b);
  const std::size_t e = rest.find_first_of(" \t");
  const std::string_view field = rest.substr(0, e);
  if (field == "NaN" || field == "+Inf" || field == "-Inf") return false;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  return ec == std::errc() && end == field.data() + field.size() && std::isfinite(value) &&
         value >= 0;
}

}  // namespace

std::optional<EngineLoad> parse_engine_load(std::string_view text, std::string& why) {
  EngineLoad load;
  bool saw_waiting = false;
  std::size_t line_no = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    std::string_view name, rest;
    const bool labels_closed = split_sample(line, name, rest);
    double* sum = nullptr;
    bool is_kv = false;
    if (name == "vllm:num_requests_running") {
      sum = &load.running;
    } else if (name == "vllm:num_requests_waiting") {
      sum = &load.waiting;
      saw_waiting = true;
    } else if (name == "vllm:kv_cache_usage_perc" || name == "vllm:gpu_cache_usage_perc") {
      is_kv = true;
    } else {
      continue;
    }
    double value = 0;
    if (!labels_closed || !parse_value(rest, value)) {
      why = fmt::format("metrics line {}: '{}' is not a sample with a finite value >= 0", line_no,
                        printable(line, 120));
      return std::nullopt;
    }
    if (is_kv) {
      load.kv_usage = std::max(load.kv_usage, std::min(value, 1.0));
    } else {
      *sum += value;
    }
  }
  if (!saw_waiting) {
    why = "the metrics have no vllm:num_requests_waiting (not a vLLM-compatible engine?)";
    return std::nullopt;
  }
  return load;
}

}  // namespace tessera
