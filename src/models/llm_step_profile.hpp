#pragma once

// Measures a checkpoint's step costs on this machine for the simulator
// (docs/llm-serve.md#calibration): the live server runs every request of a step on its own
// Sequence (serve/runtime/llm_step.cpp), so a step costs about
//   prefill_base x prompts prefilled + per_prefill_token x prompt tokens
//   + per_decode x requests decoding.
// Prefill is timed at several prompt lengths and fitted by least squares; a decode step
// is timed on a sequence holding `context` tokens. The medians of `repeats` runs are used.
// Single-threaded; runs the decoder (seconds).

#include <cstdint>
#include <utility>
#include <vector>

namespace tessera {

class Decoder;

struct StepProfile {
  double prefill_base_s = 0.0;       // intercept of the prefill fit
  double per_prefill_token_s = 0.0;  // slope of the prefill fit
  double per_decode_s = 0.0;         // one decode step of one request at `context`
  std::vector<std::pair<int64_t, double>> prefill_points;  // (tokens, s)
  int64_t context = 0;
};

StepProfile measure_step_profile(const Decoder& decoder, const std::vector<int64_t>& lengths,
                                 int64_t context, int repeats);

// The tables of the simulator's llm_measured cost model (docs/llm-serve.md#measured-step-
// costs): one request's prefill at every `grid` length and at the `held_out` lengths (kept
// apart to judge how well each fit predicts lengths it has not seen), and a decode
// iteration of b requests (one batched step over b sequences, as the runtime runs them) at a
// context of each grid length, for every b of `batches`, on the sequence the grid's prefill left.
// Medians of `repeats` runs, in seconds.
struct StepCostTables {
  std::vector<std::pair<int64_t, double>> prefill;   // (tokens, s), the grid
  std::vector<std::pair<int64_t, double>> held_out;  // (tokens, s)
  std::vector<int> batches;
  std::vector<int64_t> contexts;            // the grid lengths
  std::vector<std::vector<double>> decode;  // [batch][context], s
};

StepCostTables measure_step_costs(const Decoder& decoder, const std::vector<int64_t>& grid,
                                  const std::vector<int64_t>& held_out,
                                  const std::vector<int>& batches, int repeats);

}  // namespace tessera
