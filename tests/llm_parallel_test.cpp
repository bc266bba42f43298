// TP × PP LLM instances (src/llm/llm_parallel.hpp, docs/llm.md#tp--pp-instances): the step
// time of a parallel instance against the hand-computed model, PP's steady-state throughput
// capacity on the engine, and KV capacity from the GPUs' memory.

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "llm/llm_parallel.hpp"
#include "llm_harness.hpp"

namespace tessera {
namespace {

using testing::llm_arrival;
using testing::LlmHarness;

// Llama-2-7B in fp16 on an A100-40GB-like GPU.
LlmModel llama7b() { return LlmModel{}; }
LlmGpu gpu() {
  LlmGpu g;
  g.memory_bytes = 40e9;
  g.bandwidth = 1555e9;
  g.flops = 312e12;
  g.mfu = 0.5;
  g.mbu = 0.8;
  g.step_overhead = 0.002;
  return g;
}
LlmParallelism par(uint32_t tp, uint32_t pp) {
  LlmParallelism p;
  p.tp = tp;
  p.pp = pp;
  return p;
}
StepContents decode_step(int batch, uint64_t context_each) {
  StepContents s;
  s.batch = batch;
  s.tokens_out = static_cast<uint64_t>(batch);
  s.context_tokens = static_cast<uint64_t>(batch) * context_each;
  return s;
}

TEST(LlmParallel, OneGpuIsTheAnalyticModel) {
  const LlmParallelCostModel one(llama7b(), gpu(), par(1, 1));
  const LlmAnalyticCostModel analytic(llama7b(), gpu());
  Worker w;
  for (const StepContents& s : {decode_step(1, 500), decode_step(64, 1500)}) {
    EXPECT_DOUBLE_EQ(one.step_time(w, s), analytic.step_time(w, s));
  }
  EXPECT_EQ(kv_blocks_for(llama7b(), gpu(), par(1, 1), 16), kv_blocks_for(llama7b(), gpu(), 16));
}

TEST(LlmParallel, TpSplitsWeightsAndKvAndAddsAllReduces) {
  Worker w;
  const double bw = 1555e9 * 0.8;
  const double weights = 6.74e9 * 2.0;
  const double kv_token = 2.0 * 32 * 32 * 128 * 2.0;
  const StepContents s = decode_step(8, 1000);
  const LlmParallelCostModel tp1(llama7b(), gpu(), par(1, 1));
  LlmParallelism p2 = par(2, 1);
  const LlmParallelCostModel tp2_free(llama7b(), gpu(), p2);
  // Each rank reads half the weights and half the KV heads.
  EXPECT_NEAR(tp1.step_time(w, s), 0.002 + (weights + kv_token * 8000) / bw, 1e-12);
  EXPECT_NEAR(tp2_free.step_time(w, s), 0.002 + (weights / 2 + kv_token / 2 * 8000) / bw, 1e-12);
  // With a link: 32 layers x 2 all-reduces of 8 tokens x 4096 x 2 bytes.
  p2.tp_link = LlmLink{10e-6, 100e9};
  const LlmParallelCostModel tp2(llama7b(), gpu(), p2);
  const double all_reduce = 10e-6 + 2.0 * 1 / 2 * (8 * 4096 * 2.0) / 100e9;
  EXPECT_NEAR(tp2.step_time(w, s) - tp2_free.step_time(w, s), 64 * all_reduce, 1e-12);
  EXPECT_LT(tp2.step_time(w, s), tp1.step_time(w, s));
  // More TP ranks than KV heads replicate a head on each: 8 KV heads, TP 16 -> 1 per rank.
  LlmModel gqa = llama7b();
  gqa.kv_heads = 8;
  EXPECT_EQ(llm_rank_model(gqa, 16).kv_heads, 1u);
  EXPECT_DOUBLE_EQ(llm_kv_bytes_per_token(gqa, 16), 2.0 * 32 * 1 * 16 * 128 * 2.0);
  EXPECT_DOUBLE_EQ(llm_kv_bytes_per_token(gqa, 4), gqa.kv_bytes_per_token());
}

TEST(LlmParallel, PpTwoRunsTwiceTheBatchInTheSameIteration) {
  Worker w;
  LlmParallelism p2 = par(1, 2);
  p2.pp_link = LlmLink{20e-6, 50e9};
  const LlmParallelCostModel pp1(llama7b(), gpu(), par(1, 1));
  const LlmParallelCostModel pp2(llama7b(), gpu(), p2);
  const double transfer_64 = 20e-6 + 64 * 4096 * 2.0 / 50e9;
  // Two micro-batches of 64 pipelined: one iteration costs what 64 cost on one GPU, plus the
  // transfer.
  EXPECT_NEAR(pp2.step_time(w, decode_step(128, 1000)),
              pp1.step_time(w, decode_step(64, 1000)) + transfer_64, 1e-12);
  // A lone request crosses both stages one after the other: PP = 1's time plus the transfer.
  const double transfer_1 = 20e-6 + 4096 * 2.0 / 50e9;
  EXPECT_NEAR(pp2.step_time(w, decode_step(1, 1000)),
              pp1.step_time(w, decode_step(1, 1000)) + transfer_1, 1e-12);
}

TEST(LlmParallel, KvCapacityFollowsMemory) {
  // (GPUs x 36 GB - reserve - 13.48 GB of weights) / (0.5 MiB x 16).
  const double block = 2.0 * 32 * 32 * 128 * 2.0 * 16;
  EXPECT_EQ(kv_blocks_for(llama7b(), gpu(), par(1, 2), 16),
            static_cast<uint32_t>((72e9 - 13.48e9) / block));
  EXPECT_EQ(kv_blocks_for(llama7b(), gpu(), par(2, 2), 16),
            static_cast<uint32_t>((144e9 - 13.48e9) / block));
  LlmParallelism reserved = par(2, 1);
  reserved.reserved_bytes_per_gpu = 3e9;
  EXPECT_EQ(kv_blocks_for(llama7b(), gpu(), reserved, 16),
            static_cast<uint32_t>((72e9 - 6e9 - 13.48e9) / block));
  LlmModel kv8 = llama7b();
  kv8.kv_bytes = 1.0;
  EXPECT_EQ(kv_blocks_for(kv8, gpu(), par(1, 2), 16),
            static_cast<uint32_t>((72e9 - 13.48e9) / (block / 2)));
  // Llama-2-70B in fp16 does not fit one GPU but fits four.
  LlmModel big = llama7b();
  big.params = 69e9;
  EXPECT_EQ(kv_blocks_for(big, gpu(), par(1, 1), 16), 0u);
  EXPECT_GT(kv_blocks_for(big, gpu(), par(2, 2), 16), 0u);
}

// On the engine: 256 requests decoding long outputs at once; PP = 2 with twice the batch
// limit produces tokens twice as fast as PP = 1 (the steady state of the model).
double decode_tokens_per_second(uint32_t pp, uint32_t max_seqs) {
  LlmSchedulerConfig c;
  c.policy = LlmPolicy::kContinuous;
  c.max_seqs = max_seqs;
  c.token_budget = 1 << 20;
  c.block_tokens = 16;
  c.kv_blocks = 100000;
  LlmHarness h(c, std::make_shared<LlmParallelCostModel>(llama7b(), gpu(), par(1, pp)));
  std::vector<Arrival> arrivals;
  for (int i = 0; i < 256; ++i) arrivals.push_back(llm_arrival(0.0, 16, 200));
  h.run(arrivals);
  EXPECT_EQ(h.records.size(), 256u);
  uint64_t tokens = 0;
  double busy = 0;
  for (const auto& s : h.steps) {
    if (s.prefill_tokens > 0) continue;
    tokens += s.decode_tokens;
    busy += s.duration;
  }
  return static_cast<double>(tokens) / busy;
}

TEST(LlmParallel, PpTwoDoublesDecodeThroughputOnTheEngine) {
  const double one = decode_tokens_per_second(1, 64);
  const double two = decode_tokens_per_second(2, 128);
  EXPECT_NEAR(two / one, 2.0, 0.02);  // within 1 %
}

}  // namespace
}  // namespace tessera
