#pragma once

// The Prometheus text exposition format (0.0.4) as the servers write it: the fixed-bucket
// histogram and its one writer (_bucket with cumulative counts and le="+Inf", _sum,
// _count), label-value escaping and the # HELP / # TYPE lines. Every metrics family of
// the servers (an app's endpoints, the LLM server, the Triton-named statistics) writes its
// histograms through it. Plain functions and a plain value; not thread-safe by themselves
// (the owners lock).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

// A fixed-bucket Prometheus histogram.
struct PromHistogram {
  explicit PromHistogram(std::vector<double> upper_bounds)
      : bounds(std::move(upper_bounds)), counts(bounds.size() + 1, 0) {}
  void add(double v);
  std::vector<double> bounds;
  std::vector<uint64_t> counts;  // per bucket (not cumulative); the last is +Inf
  double sum = 0.0;
  uint64_t count = 0;
};

// A label value escaped as the text format requires (\\, \", \n).
std::string prom_label_escape(const std::string& s);
// The # HELP and # TYPE lines of a family.
void prom_header(std::string& out, std::string_view name, std::string_view type,
                 std::string_view help);
// A histogram's _bucket, _sum and _count lines (`labels` without braces, e.g.
// `model="a",version="1"`).
void render_prom_histogram(std::string& out, const std::string& name, const std::string& labels,
                           const PromHistogram& h);

}  // namespace tessera
