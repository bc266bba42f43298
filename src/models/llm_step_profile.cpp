#include "models/llm_step_profile.hpp"

#include <algorithm>
#include <chrono>
#include <memory>

#include "llm_torch/decoder.hpp"

namespace tessera {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::vector<int64_t> tokens(int64_t n, int64_t vocab) {
  std::vector<int64_t> t(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[static_cast<std::size_t>(i)] = (i * 37 + 11) % vocab;
  return t;
}

}  // namespace

StepProfile measure_step_profile(const Decoder& decoder, const std::vector<int64_t>& lengths,
                                 int64_t context, int repeats) {
  const int64_t vocab = decoder.architecture().vocab;
  StepProfile p;
  p.context = context;
  repeats = std::max(1, repeats);
  {  // warm-up
    auto seq = decoder.start(64);
    decoder.step(*seq, tokens(32, vocab));
  }
  for (int64_t n : lengths) {
    std::vector<double> times;
    const auto prompt = tokens(n, vocab);
    for (int r = 0; r < repeats; ++r) {
      auto seq = decoder.start(n + 1);
      const auto t0 = std::chrono::steady_clock::now();
      decoder.step(*seq, prompt);
      times.push_back(seconds_since(t0));
    }
    p.prefill_points.emplace_back(n, median(times));
  }
  // Least squares t = a + b n.
  double sn = 0, st = 0, snn = 0, snt = 0;
  const auto k = static_cast<double>(p.prefill_points.size());
  for (const auto& [n, t] : p.prefill_points) {
    sn += static_cast<double>(n);
    st += t;
    snn += static_cast<double>(n) * static_cast<double>(n);
    snt += static_cast<double>(n) * t;
  }
  const double denom = k * snn - sn * sn;
  p.per_prefill_token_s = denom > 0 ? std::max(0.0, (k * snt - sn * st) / denom) : 0.0;
  p.prefill_base_s = std::max(0.0, (st - p.per_prefill_token_s * sn) / std::max(1.0, k));
  // Decode at `context`.
  auto seq = decoder.start(context + 8 * repeats + 8);
  decoder.step(*seq, tokens(context, vocab));
  std::vector<double> times;
  for (int r = 0; r < 8 * repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    decoder.step(*seq, {static_cast<int64_t>(r % vocab)});
    times.push_back(seconds_since(t0));
  }
  p.per_decode_s = median(times);
  return p;
}

namespace {

// One prefill of `n` tokens, timed `repeats` times; the median, and the last sequence
// (with room for `room` more tokens).
double time_prefill(const Decoder& decoder, int64_t n, int repeats, int64_t room,
                    std::unique_ptr<Decoder::Sequence>* keep) {
  const auto prompt = tokens(n, decoder.architecture().vocab);
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    auto seq = decoder.start(n + room + 1);
    const auto t0 = std::chrono::steady_clock::now();
    decoder.step(*seq, prompt);
    times.push_back(seconds_since(t0));
    if (keep != nullptr && r + 1 == repeats) *keep = std::move(seq);
  }
  return median(times);
}

}  // namespace

StepCostTables measure_step_costs(const Decoder& decoder, const std::vector<int64_t>& grid,
                                  const std::vector<int64_t>& held_out,
                                  const std::vector<int>& batches, int repeats) {
  const int64_t vocab = decoder.architecture().vocab;
  repeats = std::max(1, repeats);
  StepCostTables t;
  t.batches = batches;
  {  // warm-up
    auto seq = decoder.start(64);
    decoder.step(*seq, tokens(32, vocab));
  }
  t.decode.assign(batches.size(), {});
  for (int64_t n : grid) {
    std::unique_ptr<Decoder::Sequence> seq;
    t.prefill.emplace_back(n, time_prefill(decoder, n, repeats, 0, &seq));
    t.contexts.push_back(n);
    // Decode iterations of b requests at context n: one batched step over b copies of
    // the prefilled sequence, as the runtime runs them (each grows by one token a step).
    int64_t next = 0;
    for (std::size_t i = 0; i < batches.size(); ++i) {
      std::vector<std::unique_ptr<Decoder::Sequence>> copies;
      for (int k = 0; k < batches[i]; ++k) copies.push_back(decoder.fork(*seq, n + repeats));
      std::vector<double> times;
      for (int r = 0; r < repeats; ++r) {
        std::vector<Decoder::StepInput> inputs;
        for (auto& c : copies) inputs.push_back({c.get(), {next++ % vocab}, true});
        const auto t0 = std::chrono::steady_clock::now();
        decoder.step_batch(inputs);
        times.push_back(seconds_since(t0));
      }
      t.decode[i].push_back(median(times));
    }
  }
  for (int64_t n : held_out) {
    t.held_out.emplace_back(n, time_prefill(decoder, n, repeats, 0, nullptr));
  }
  return t;
}

}  // namespace tessera
