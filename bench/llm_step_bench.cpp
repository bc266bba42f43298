// LLM engine steps (docs/benchmarks.md#llm-engine-batched-steps): decode tokens/s of the
// libtorch decoder at 1, 4, 16, 64 concurrent requests, one batched forward pass per step
// (Decoder::step_batch) against the per-request loop the runtime ran before (one
// Decoder::step per request), interleaved round by round on the same checkpoint; and the
// weight bytes held per parameter and the cost of BF16 weights (expanded at each matmul)
// against FP32 ones. Not a Google Benchmark: it prints tables.
//
//   build/bench/llm_step_bench [--rounds 7] [--steps 32] [--context 128]

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "llm_arch/checkpoint_layout.hpp"
#include "llm_torch/decoder.hpp"

namespace tessera {
namespace {

using Clock = std::chrono::steady_clock;

// examples/llm-serve's tiny Llama: 2 layers, hidden 64, 4 heads, 2 KV heads, 260 tokens.
LlmArchitecture tiny_llama(int64_t positions) {
  LlmArchitecture a;
  a.name = "tiny-llama";
  a.family = ModelFamily::kLlama;
  a.layers = 2;
  a.hidden = 64;
  a.heads = 4;
  a.kv_heads = 2;
  a.ffn = 172;
  a.vocab = 260;
  a.max_positions = positions;
  a.rotary_dim = a.head_dim();
  return a;
}

std::filesystem::path write(const LlmArchitecture& a, Dtype dtype, const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tessera_step_bench_" + std::to_string(::getpid()) + "_" + tag);
  std::filesystem::remove_all(dir);
  write_random_checkpoint(a, dir, dtype, 3);
  return dir;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// `requests` sequences prefilled with `context` tokens each.
std::vector<std::unique_ptr<Decoder::Sequence>> prefilled(const Decoder& d, int requests,
                                                          int64_t context, int64_t room) {
  std::vector<std::unique_ptr<Decoder::Sequence>> seqs;
  std::vector<int64_t> prompt(static_cast<std::size_t>(context));
  for (int64_t i = 0; i < context; ++i) prompt[static_cast<std::size_t>(i)] = (i * 7 + 3) % 256;
  for (int r = 0; r < requests; ++r) {
    seqs.push_back(d.start(context + room));
    d.step(*seqs.back(), prompt);
  }
  return seqs;
}

// Seconds for `steps` decode steps of every sequence: batched or one request at a time.
double decode(const Decoder& d, std::vector<std::unique_ptr<Decoder::Sequence>>& seqs, int steps,
              bool batched) {
  const auto t0 = Clock::now();
  for (int s = 0; s < steps; ++s) {
    const int64_t token = (s * 13 + 5) % 256;
    if (batched) {
      std::vector<Decoder::StepInput> in;
      for (auto& q : seqs) in.push_back({q.get(), {token}, true});
      d.step_batch(in);
    } else {
      for (auto& q : seqs) d.step(*q, {token});
    }
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  using namespace tessera;
  int rounds = 7, steps = 32;
  int64_t context = 128;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--context")) context = std::atoll(argv[i + 1]);
  }
  const LlmArchitecture arch = tiny_llama(4096);
  const auto f32 = write(arch, Dtype::kF32, "f32");
  const auto bf16 = write(arch, Dtype::kBF16, "bf16");
  const auto d32 = Decoder::load(f32);
  const auto d16 = Decoder::load(bf16);

  std::printf(
      "decode steps of the tiny Llama (2 layers, hidden 64), context %lld, %d steps, "
      "median of %d interleaved rounds\n\n",
      static_cast<long long>(context), steps, rounds);
  std::printf(
      "| concurrent requests | per-request loop (tokens/s) | one batched pass (tokens/s) "
      "| speed-up | batched step (ms) |\n| ---: | ---: | ---: | ---: | ---: |\n");
  for (int requests : {1, 4, 16, 64}) {
    std::vector<double> loop_s, batch_s;
    for (int r = 0; r < rounds; ++r) {
      for (bool batched : {false, true}) {  // interleaved: the same machine state for both
        auto seqs = prefilled(*d32, requests, context, steps);
        (batched ? batch_s : loop_s).push_back(decode(*d32, seqs, steps, batched));
      }
    }
    const double tokens = static_cast<double>(requests) * steps;
    const double loop = median(loop_s), batch = median(batch_s);
    std::printf("| %d | %.0f | %.0f | %.2fx | %.3f |\n", requests, tokens / loop, tokens / batch,
                loop / batch, 1e3 * batch / steps);
  }

  std::printf("\nweights held (the same random model written as F32 and as BF16)\n\n");
  std::printf(
      "| checkpoint | held as | bytes | bytes per parameter | batched step at 16 "
      "requests (ms) |\n| --- | --- | ---: | ---: | ---: |\n");
  std::vector<double> t32, t16;
  for (int r = 0; r < rounds; ++r) {
    for (const Decoder* d : {d32.get(), d16.get()}) {
      auto seqs = prefilled(*d, 16, context, steps);
      (d == d32.get() ? t32 : t16).push_back(decode(*d, seqs, steps, true));
    }
  }
  for (const auto& [name, d, t] :
       {std::tuple{"F32", d32.get(), median(t32)}, std::tuple{"BF16", d16.get(), median(t16)}}) {
    std::printf("| %s | %s | %llu | %.3f | %.3f |\n", name, d->weight_dtype().c_str(),
                static_cast<unsigned long long>(d->weight_bytes()), d->bytes_per_parameter(),
                1e3 * t / steps);
  }
  std::filesystem::remove_all(f32);
  std::filesystem::remove_all(bf16);
  return 0;
}
