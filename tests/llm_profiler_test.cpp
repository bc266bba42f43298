// iServe's profiler on the libtorch decoder (src/llm_torch/fingerprint_profiler): the
// fingerprints of a tiny random model are profiled at the points the method needs, and
// the estimator's memory for the full model (linear extrapolation + the 3×3 solve) agrees
// with the full model measured under the same configurations (to 10 %: on a model this
// small the PP term of the memory model is coarse), INT8 at TP > 1 included; the peak
// memory of INT8 at TP 2 and 4 is the same from run to run; latencies are positive and
// measured on both clocks; measure_alongside times fingerprints beside the full model.

#include "llm_torch/fingerprint_profiler.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "llm_arch/checkpoint_layout.hpp"

namespace tessera {
namespace {

// A tiny model of a bundled architecture's shape (hidden 64, vocabulary 300).
LlmArchitecture tiny(const std::string& model, int64_t layers, int64_t heads, int64_t kv_heads,
                     int64_t ffn) {
  LlmArchitecture a = load_llm_architecture(std::string(TESSERA_SOURCE_DIR) + "/data/llm/" + model +
                                            "/config.json");
  a.layers = layers;
  a.hidden = 64;
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.ffn = ffn;
  a.vocab = 300;
  return a;
}

// An empty folder of this test process's own.
std::filesystem::path scratch(const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tessera_profiler_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(FingerprintProfiler, MemoryEstimatesMatchTheFullModel) {
  const LlmArchitecture a = tiny("llama-2-70b", 6, 8, 2, 160);
  const auto dir = scratch("test");
  write_random_checkpoint(a, dir / "ckpt", Dtype::kF16, 3);

  CompressionProfile fp16;
  CompressionProfile int8;
  int8.weights = WeightQuant::kInt8;
  int8.kv_cache = KvQuant::kInt8;
  MeasureOptions how;
  how.prompt_tokens = 8;
  how.output_lengths = {1, 6};
  how.repeats = 1;
  const FingerprintProfile profile =
      profile_fingerprints(dir / "ckpt", dir / "work", {fp16, int8}, {1, 2}, how);
  ASSERT_EQ(profile.compressions.size(), 2u);
  EXPECT_EQ(profile.compressions[0].memory.size(), 6u);   // 2 fingerprints × 3 points
  EXPECT_EQ(profile.compressions[0].latency.size(), 8u);  // 2 fingerprints × 2 TP × 2 lengths
  std::set<std::tuple<int64_t, int, int64_t>> timed;      // the fingerprints are timed in turn
  for (const FingerprintLatency& l : profile.compressions[0].latency) {
    EXPECT_GT(l.seconds, 0.0);
    EXPECT_GT(l.cpu_seconds, 0.0);
    EXPECT_TRUE(timed.insert({l.fingerprint_layers, l.tp, l.output_length}).second)
        << l.fingerprint_layers << " layers, TP " << l.tp << ", " << l.output_length << " tokens";
  }
  EXPECT_EQ(timed.size(), 8u);  // each (depth, TP, length) exactly once, both depths present

  const ConfigMap map = estimate_config_map(a, profile, 4);
  for (const CompressionProfile& c : profile.compressions) {
    for (const Parallelism p :
         {Parallelism{1, 1}, Parallelism{1, 3}, Parallelism{2, 1}, Parallelism{2, 2}}) {
      const ConfigMapEntry* est = nullptr;
      for (const ConfigMapEntry& e : map.entries) {
        if (e.config.parallelism.tp == p.tp && e.config.parallelism.pp == p.pp &&
            e.config.weights == c.weights && e.config.kv_cache == c.kv_cache) {
          est = &e;
        }
      }
      ASSERT_NE(est, nullptr);
      const Measurement full = measure_checkpoint(
          dir / "ckpt", {c.weights, c.kv_cache, p.tp, p.pp, {}}, how, true, false);
      EXPECT_NEAR(est->memory_bytes / full.peak_bytes, 1.0, 0.10)
          << est->config.name() << ": " << est->memory_bytes << " vs " << full.peak_bytes;
    }
  }
  std::filesystem::remove_all(dir);
}

// INT8 weights at TP 2: each shard thread expands its INT8 weights to FP32 while it runs;
// the meter charges each rank's buffers to the rank's own account, so the peak is the
// same however the shards' threads interleave, to the byte.
TEST(FingerprintProfiler, Int8TensorParallelPeakMemoryIsRepeatable) {
  const LlmArchitecture a = tiny("llama-2-7b", 3, 4, 4, 160);
  const auto dir = scratch("repeat");
  write_random_checkpoint(a, dir, Dtype::kF16, 5);
  MeasureOptions how;
  how.prompt_tokens = 8;
  how.output_lengths = {6};
  how.repeats = 1;
  for (const int tp : {2, 4}) {
    const DecoderOptions o{WeightQuant::kInt8, KvQuant::kInt8, tp, 1, {}};
    const Measurement first = measure_checkpoint(dir, o, how, true, false);
    EXPECT_GT(first.peak_bytes, 0.0);
    for (int run = 0; run < 4; ++run) {
      EXPECT_EQ(measure_checkpoint(dir, o, how, true, false).peak_bytes, first.peak_bytes)
          << "TP " << tp << ", run " << run;
    }
  }
  std::filesystem::remove_all(dir);
}

// Every family's kernels run under the counting allocator (GELU asks libtorch for raw
// buffers, which need the allocation's context to be its data).
TEST(FingerprintProfiler, MeasuresEveryFamilyUnderTheMemoryMeter) {
  // Falcon-7B's multi-query attention keeps its one KV head; GPT-J's 4 of 4.
  for (const auto& [model, kv_heads] : {std::pair{"falcon-7b", 1}, std::pair{"gpt-j-6b", 4}}) {
    LlmArchitecture a = tiny(model, 2, 4, kv_heads, 128);
    a.rotary_dim = std::min<int64_t>(a.rotary_dim, 16);
    const auto dir = scratch("family");
    write_random_checkpoint(a, dir, Dtype::kF16, 3);
    MeasureOptions how;
    how.prompt_tokens = 4;
    how.output_lengths = {1, 3};
    how.repeats = 1;
    const Measurement m =
        measure_checkpoint(dir, {WeightQuant::kInt4, KvQuant::kInt8, 2, 2, {}}, how);
    EXPECT_GT(m.peak_bytes, 0.0) << model;
    ASSERT_EQ(m.seconds.size(), 2u);
    EXPECT_GT(m.cpu_seconds[1], 0.0) << model;
    std::filesystem::remove_all(dir);
  }
}

// measure_alongside (validation's paired timing): one measurement per checkpoint, the first
// metered as measure_checkpoint meters it (the others are loaded after its peak is read),
// every checkpoint timed at every length, the others at PP 1 with the first's TP.
TEST(FingerprintProfiler, MeasuresFingerprintsAlongsideTheFullModel) {
  const LlmArchitecture a = tiny("llama-2-7b", 3, 4, 4, 160);
  const auto dir = scratch("alongside");
  write_random_checkpoint(a, dir / "ckpt", Dtype::kF16, 5);
  write_fingerprint(dir / "ckpt", 1, dir / "fp1");
  write_fingerprint(dir / "ckpt", 2, dir / "fp2");
  MeasureOptions how;
  how.prompt_tokens = 8;
  how.output_lengths = {1, 4};
  how.repeats = 2;
  const DecoderOptions o{WeightQuant::kInt8, KvQuant::kInt8, 2, 2, {}};
  const std::vector<Measurement> all =
      measure_alongside(dir / "ckpt", o, {dir / "fp1", dir / "fp2"}, how);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].peak_bytes, measure_checkpoint(dir / "ckpt", o, how, true, false).peak_bytes);
  EXPECT_EQ(all[1].peak_bytes, 0.0);  // not metered
  for (std::size_t d = 0; d < all.size(); ++d) {
    ASSERT_EQ(all[d].seconds.size(), 2u) << d;
    ASSERT_EQ(all[d].cpu_seconds.size(), 2u) << d;
    for (int i = 0; i < 2; ++i) {
      EXPECT_GT(all[d].seconds[i], 0.0) << d;
      EXPECT_GT(all[d].cpu_seconds[i], 0.0) << d;
    }
  }
  // A checkpoint that cannot run the first's TP is refused before anything is timed.
  LlmArchitecture odd = a;
  odd.heads = 3;
  odd.kv_heads = 3;
  odd.hidden = 48;
  write_random_checkpoint(odd, dir / "odd", Dtype::kF16, 5);
  EXPECT_THROW(measure_alongside(dir / "ckpt", o, {dir / "odd"}, how), std::invalid_argument);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessera
