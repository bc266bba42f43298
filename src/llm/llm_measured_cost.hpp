#pragma once

// LlmMeasuredCostModel: the time of one LLM step from tables measured on the machine that
// serves it (`tessera llm step-profile`; docs/llm-serve.md#measured-step-costs). It is the
// simulator's model of the live server's LLM steps (serve/runtime/llm_step.cpp), which run
// every request of a step on its own decoder Sequence in one batched forward pass, and a
// step costs
//
//   t = step_overhead + sum over the step's prefilling requests of prefill(from, n)
//                     + decode(b, mean context of the b decoding requests)
//
//   prefill(0, n)    = P(n): one request's prefill of an n-token prompt from an empty cache;
//   prefill(p, n)    = P(p + n) - P(p): a chunk (or a recompute's tail) after p cached tokens
//                      (the marginal cost of the longer prompt, attention's growth included);
//   decode(b, c)     = D(b, c): a decode iteration of b requests holding c tokens each.
//
// P is either the measured table interpolated piecewise-linearly (`table`: exact on the
// grid points; below the first point linear from (0, 0), beyond the last the last
// segment's slope) or the quadratic a + b n + c n^2 fitted to the table by least squares on
// the relative error (`quadratic`: attention's quadratic term; made non-decreasing by
// holding its minimum below the vertex). D is the measured (batch x context) table
// interpolated bilinearly, extended the same way along context and in proportion to the
// batch beyond the largest one. Every value is clamped at 0, and non-decreasing tables
// give non-decreasing costs.
//
// When StepContents::parts is empty (the scheduler's predictions), the sums are used: the
// prompt tokens as one request's prefill and the decoded tokens as the batch.
//
// Immutable after construction; may be shared by engines and threads.

#include <string>
#include <vector>

#include "engine/cost_model.hpp"

namespace tessera {

enum class PrefillFit : uint8_t { kTable, kQuadratic };

// The measured tables, in milliseconds (as the run spec writes them).
struct MeasuredStepCosts {
  PrefillFit fit = PrefillFit::kTable;
  std::vector<double> prefill_tokens;  // increasing, > 0
  std::vector<double> prefill_ms;      // one per prefill_tokens, >= 0
  std::vector<double> decode_batch;    // increasing, >= 1
  std::vector<double> decode_context;  // increasing, >= 0
  // decode_ms[i][j]: a decode iteration of decode_batch[i] requests at decode_context[j].
  std::vector<std::vector<double>> decode_ms;
  double step_overhead_ms = 0.0;  // >= 0

  // The first problem, as "field: what is wrong" (field names as in the run spec:
  // prefill.tokens, prefill.ms, decode.batch, decode.context, decode.ms,
  // step_overhead_ms), or "" when the tables are usable.
  std::string problem() const;
};

// The quadratic a + b n + c n^2 through (tokens, ms) by least squares on the relative
// error (each residual divided by the measured value); {a, b, c}. Needs 3 points or more.
std::vector<double> fit_quadratic(const std::vector<double>& tokens, const std::vector<double>& ms);

class LlmMeasuredCostModel final : public CostModel {
 public:
  // std::invalid_argument carrying costs.problem() when the tables are unusable.
  explicit LlmMeasuredCostModel(MeasuredStepCosts costs);
  Time step_time(const Worker& worker, const StepContents& step) const override;

  // The parts, in seconds.
  Time prefill(uint64_t from, uint64_t tokens) const;
  Time decode(uint64_t batch, double context) const;
  // P(n) in ms, as fitted.
  double prefill_ms(double tokens) const;

  const MeasuredStepCosts& costs() const { return costs_; }
  const std::vector<double>& quadratic() const { return quadratic_; }

 private:
  double decode_ms_at(std::size_t batch_index, double context) const;

  MeasuredStepCosts costs_;
  std::vector<double> quadratic_;  // {a, b, c} of the quadratic fit
  double vertex_ = 0.0;            // tokens below which the quadratic is held at its minimum
};

}  // namespace tessera
