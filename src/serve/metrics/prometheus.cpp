#include "serve/metrics/prometheus.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tessera {

void PromHistogram::add(double v) {
  const auto it = std::lower_bound(bounds.begin(), bounds.end(), v);
  counts[static_cast<std::size_t>(it - bounds.begin())]++;
  sum += v;
  ++count;
}

std::string prom_label_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void prom_header(std::string& out, std::string_view name, std::string_view type,
                 std::string_view help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void render_prom_histogram(std::string& out, const std::string& name, const std::string& labels,
                           const PromHistogram& h) {
  uint64_t cumulative = 0;
  for (std::size_t i = 0; i < h.bounds.size(); ++i) {
    cumulative += h.counts[i];
    out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, h.bounds[i], cumulative);
  }
  cumulative += h.counts.back();
  out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels, cumulative);
  out += fmt::format("{}_sum{{{}}} {}\n", name, labels, h.sum);
  out += fmt::format("{}_count{{{}}} {}\n", name, labels, h.count);
}

}  // namespace tessera
