#include "models/llm_calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

#include "llm/llm_measured_cost.hpp"
#include "llm_torch/decoder.hpp"
#include "llm_torch/host_memory.hpp"
#include "models/llm_step_profile.hpp"

namespace tessera {
namespace {

std::string join_ms(const std::vector<double>& v) {
  std::string out;
  for (double x : v) out += fmt::format("{}{:.4f}", out.empty() ? "" : ", ", x);
  return out;
}

// The (tokens, s) points as the cost model's table (ms).
void to_table(const std::vector<std::pair<int64_t, double>>& points, MeasuredStepCosts& c) {
  c.prefill_tokens.clear();
  c.prefill_ms.clear();
  for (const auto& [n, t] : points) {
    c.prefill_tokens.push_back(static_cast<double>(n));
    c.prefill_ms.push_back(t * 1e3);
  }
}

}  // namespace

void write_step_profiles(const StepProfileOptions& o, std::ostream& report) {
  host_memory::hold_freed_host_memory();  // as the server and the profiler time requests
  DecoderOptions how;
  how.device = o.device;
  auto decoder = Decoder::load(o.checkpoint, how);
  const int64_t positions = decoder->architecture().max_positions;
  std::vector<int> batches;
  for (int b : {1, 2, 4, 8, 16, 32, 64, 128, 256}) {
    if (b <= o.max_batch) batches.push_back(b);
  }
  if (batches.back() != o.max_batch) batches.push_back(o.max_batch);
  int64_t decode_calls = 0;
  for (int b : batches) decode_calls += static_cast<int64_t>(b) * o.repeats;
  // Room for the decode steps timed after each grid prefill.
  const int64_t longest = positions > 0 ? positions - decode_calls - 2 : int64_t{1} << 20;
  const int64_t cap = o.max_tokens > 0 ? std::min<int64_t>(o.max_tokens, longest) : longest;
  std::vector<int64_t> grid;
  std::vector<int64_t> held_out;
  for (int64_t n : {16, 64, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768}) {
    const int64_t m = std::min(n, cap);
    if (m >= 1 && (grid.empty() || m > grid.back())) grid.push_back(m);
  }
  for (int64_t n : {32, 128, 384, 768, 1536, 3072, 6144, 12288, 24576}) {
    if (n < cap) held_out.push_back(n);
  }
  const StepCostTables t = measure_step_costs(*decoder, grid, held_out, batches, o.repeats);

  // The old token-linear summary: least squares t = a + b n over the grid, and one
  // request's decode at --context (interpolated in the table).
  StepProfile p;
  p.prefill_points = t.prefill;
  p.context = o.context;
  {
    double sn = 0, st = 0, snn = 0, snt = 0;
    const auto k = static_cast<double>(t.prefill.size());
    for (const auto& [n, s] : t.prefill) {
      const auto x = static_cast<double>(n);
      sn += x;
      st += s;
      snn += x * x;
      snt += x * s;
    }
    const double denom = k * snn - sn * sn;
    p.per_prefill_token_s = denom > 0 ? std::max(0.0, (k * snt - sn * st) / denom) : 0.0;
    p.prefill_base_s = std::max(0.0, (st - p.per_prefill_token_s * sn) / std::max(1.0, k));
  }
  MeasuredStepCosts costs;
  to_table(t.prefill, costs);
  for (int b : t.batches) costs.decode_batch.push_back(b);
  for (int64_t c : t.contexts) costs.decode_context.push_back(static_cast<double>(c));
  for (const auto& row : t.decode) {
    costs.decode_ms.emplace_back();
    for (double s : row) costs.decode_ms.back().push_back(s * 1e3);
  }
  p.per_decode_s = LlmMeasuredCostModel(costs).decode(1, static_cast<double>(o.context));

  report << "prefill (tokens -> ms):";
  for (const auto& [n, s] : p.prefill_points) report << fmt::format(" {}:{:.3f}", n, s * 1e3);
  report << fmt::format(
      "\nfit: prefill = {:.4f} ms + {:.6f} ms/token; decode at context {} = {:.4f} ms per "
      "request\n",
      p.prefill_base_s * 1e3, p.per_prefill_token_s * 1e3, p.context, p.per_decode_s * 1e3);

  // Which prefill form predicts the held-out lengths better: the error in time summed over
  // them, sum |predicted - measured| / sum measured (what a simulated run's prefill time
  // would be off by), and the largest error of one length.
  MeasuredStepCosts quad = costs;
  quad.fit = PrefillFit::kQuadratic;
  const LlmMeasuredCostModel table_model(costs);
  const LlmMeasuredCostModel quad_model(quad);
  double measured = 0, table_err = 0, quad_err = 0, table_max = 0, quad_max = 0;
  report << "held-out prefill (tokens: measured / table / quadratic ms):";
  for (const auto& [n, s] : t.held_out) {
    const double ms = s * 1e3;
    const double a = table_model.prefill_ms(static_cast<double>(n));
    const double q = quad_model.prefill_ms(static_cast<double>(n));
    report << fmt::format(" {}:{:.3f}/{:.3f}/{:.3f}", n, ms, a, q);
    measured += ms;
    table_err += std::abs(a - ms);
    quad_err += std::abs(q - ms);
    if (ms > 0) {
      table_max = std::max(table_max, std::abs(a - ms) / ms);
      quad_max = std::max(quad_max, std::abs(q - ms) / ms);
    }
  }
  const double table_rel = measured > 0 ? table_err / measured : 0.0;
  const double quad_rel = measured > 0 ? quad_err / measured : 0.0;
  const bool use_quad = !t.held_out.empty() && quad_rel < table_rel;
  const auto& qc = quad_model.quadratic();
  report << fmt::format(
      "\nquadratic: prefill = {:.6g} + {:.6g} n + {:.6g} n^2 ms\n"
      "fit error on held-out prompts (sum |predicted - measured| / sum measured; worst one): "
      "table {:.2f} % ({:.1f} %), quadratic {:.2f} % ({:.1f} %); chosen: {}\n",
      qc[0], qc[1], qc[2], 100 * table_rel, 100 * table_max, 100 * quad_rel, 100 * quad_max,
      use_quad ? "quadratic" : "table");
  report << "decode (batch x context -> ms):";
  for (std::size_t i = 0; i < t.batches.size(); ++i) {
    report << fmt::format(" b{}:[{}]", t.batches[i], join_ms(costs.decode_ms[i]));
  }
  report << fmt::format(" contexts [{}]\n", join_ms(costs.decode_context));

  // The profile for the token_linear model: profile(batch) + per_input_token x prefill
  // tokens + per_output_token x decoded tokens. profile(batch) = batch x the decode cost
  // (the live server steps each request on its own); a prefill's own intercept is left out
  // (see docs/llm-serve.md#calibration).
  std::ofstream out(o.out);
  if (!out) throw std::runtime_error("cannot write " + o.out);
  out << fmt::format(
      "# tessera llm step-profile {} (context {}): measured on this machine.\n"
      "# prefill = {:.4f} ms + {:.6f} ms/token; decode = {:.4f} ms per request.\n"
      "# simulation: cost_model: {{kind: token_linear, per_input_token_ms: {:.6f}, "
      "per_output_token_ms: 0}}\n"
      "profiles:\n  - variant: {}\n    segment: {}\n    origin: measured\n"
      "    source: \"tessera llm step-profile\"\n    latency_ms: {{",
      o.checkpoint, p.context, p.prefill_base_s * 1e3, p.per_prefill_token_s * 1e3,
      p.per_decode_s * 1e3, p.per_prefill_token_s * 1e3, o.variant, o.segment);
  for (int b = 1; b <= o.max_batch; ++b) {
    out << fmt::format("{}{}: {:.4f}", b == 1 ? "" : ", ", b, b * p.per_decode_s * 1e3);
  }
  out << "}\n";
  report << fmt::format("wrote {} (per_input_token_ms: {:.6f})\n", o.out,
                        p.per_prefill_token_s * 1e3);

  if (!o.cost_model_out.empty()) {
    // The llm_measured model: the chosen form, over every measured prefill length (the
    // held-out ones too, now that they have judged the forms).
    auto all = t.prefill;
    all.insert(all.end(), t.held_out.begin(), t.held_out.end());
    std::sort(all.begin(), all.end());
    to_table(all, costs);
    costs.fit = use_quad ? PrefillFit::kQuadratic : PrefillFit::kTable;
    std::string tokens_list, ms_list, rows;
    for (std::size_t i = 0; i < costs.prefill_tokens.size(); ++i) {
      tokens_list += fmt::format("{}{}", i ? ", " : "", costs.prefill_tokens[i]);
    }
    ms_list = join_ms(costs.prefill_ms);
    for (std::size_t i = 0; i < costs.decode_ms.size(); ++i) {
      rows += fmt::format("{}[{}]", i ? ", " : "", join_ms(costs.decode_ms[i]));
    }
    std::string batch_list, context_list;
    for (std::size_t i = 0; i < costs.decode_batch.size(); ++i) {
      batch_list += fmt::format("{}{}", i ? ", " : "", costs.decode_batch[i]);
    }
    for (std::size_t i = 0; i < costs.decode_context.size(); ++i) {
      context_list += fmt::format("{}{}", i ? ", " : "", costs.decode_context[i]);
    }
    std::ofstream cm(o.cost_model_out);
    if (!cm) throw std::runtime_error("cannot write " + o.cost_model_out);
    cm << fmt::format(
        "{{kind: llm_measured, prefill_fit: {}, prefill: {{tokens: [{}], ms: [{}]}}, decode: "
        "{{batch: [{}], context: [{}], ms: [{}]}}}}\n",
        use_quad ? "quadratic" : "table", tokens_list, ms_list, batch_list, context_list, rows);
    report << fmt::format("wrote {} (llm_measured, prefill_fit: {})\n", o.cost_model_out,
                          use_quad ? "quadratic" : "table");
  }
}

}  // namespace tessera
