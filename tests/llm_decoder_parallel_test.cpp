// Tensor and pipeline parallelism in the libtorch decoder (src/llm_torch): TP = 2/4 and
// PP = 2/3 (even and uneven splits) give the TP = 1, PP = 1 logits for a llama-like (GQA)
// and a falcon-like (MQA) random model, each shard holds about 1/TP of the layer weights,
// and parallelism a model cannot run is refused.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "llm_arch/checkpoint_layout.hpp"
#include "llm_torch/decoder.hpp"

namespace tessera {
namespace {

const std::string kModels = std::string(TESSERA_SOURCE_DIR) + "/data/llm/";

LlmArchitecture tiny(const std::string& model, int64_t layers, int64_t heads, int64_t kv_heads) {
  LlmArchitecture a = load_llm_architecture(kModels + model + "/config.json");
  a.layers = layers;
  a.hidden = 8 * heads;
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.ffn = 52;  // 4 does not divide it evenly into 8-aligned pieces: uneven MLP slices
  a.vocab = 61;
  a.rotary_dim = std::min<int64_t>(a.rotary_dim, 8);
  return a;
}

std::filesystem::path checkpoint(const LlmArchitecture& a, const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tessera_parallel_test_" + std::to_string(::getpid()) + "_" + tag);
  std::filesystem::remove_all(dir);
  write_random_checkpoint(a, dir, Dtype::kF32, 5);
  return dir;
}

// Logits after a 6-token prefill and 3 decode steps, concatenated.
std::vector<float> run(const Decoder& d) {
  const auto seq = d.start(16);
  std::vector<float> all = d.step(*seq, {3, 14, 15, 9, 26, 5});
  for (int64_t id : {35, 8, 57}) {
    const std::vector<float> next = d.step(*seq, {id});
    all.insert(all.end(), next.begin(), next.end());
  }
  return all;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(a[i] - b[i])));
  }
  return worst;
}

struct Case {
  const char* model;
  int64_t heads, kv_heads;
};

class Parallel : public ::testing::TestWithParam<Case> {};

TEST_P(Parallel, TensorAndPipelineParallelGiveTheSameLogits) {
  const Case c = GetParam();
  const auto dir = checkpoint(tiny(c.model, 6, c.heads, c.kv_heads), c.model);
  const std::vector<float> reference = run(*Decoder::load(dir));
  ASSERT_EQ(reference.size(), 4u * 61u);
  // The logits are large enough for a 1e-4 agreement to mean something.
  double largest = 0;
  for (float v : reference) largest = std::max(largest, static_cast<double>(std::abs(v)));
  EXPECT_GT(largest, 0.1);
  struct Split {
    int tp, pp;
    std::vector<int64_t> stages;
  };
  for (const Split& s : std::vector<Split>{{2, 1, {}},
                                           {4, 1, {}},
                                           {1, 2, {}},
                                           {1, 3, {}},
                                           {1, 3, {3, 2, 1}},
                                           {2, 2, {}},
                                           {2, 3, {1, 4, 1}}}) {
    DecoderOptions o;
    o.tp = s.tp;
    o.pp = s.pp;
    o.stage_layers = s.stages;
    const auto d = Decoder::load(dir, o);
    EXPECT_LT(max_abs_diff(run(*d), reference), 1e-4)
        << c.model << " TP " << s.tp << " PP " << s.pp;
    EXPECT_EQ(d->stage_layers().size(), static_cast<std::size_t>(s.pp));
  }
  std::filesystem::remove_all(dir);
}

TEST_P(Parallel, EachShardHoldsAboutItsShareOfTheLayerWeights) {
  const Case c = GetParam();
  auto a = tiny(c.model, 4, c.heads, c.kv_heads);
  a.vocab = 256;
  const auto dir = checkpoint(a, std::string(c.model) + "_mem");
  const auto whole = Decoder::load(dir);
  for (int tp : {2, 4}) {
    DecoderOptions o;
    o.tp = tp;
    const auto d = Decoder::load(dir, o);
    const std::vector<uint64_t> shards = d->shard_weight_bytes();
    ASSERT_EQ(shards.size(), static_cast<std::size_t>(tp));
    // Rank 0 also holds the embedding, the head and the norms; compare the others.
    const double embed_and_head = static_cast<double>(shards[0] - shards[1]);
    const double layers = static_cast<double>(whole->weight_bytes()) - embed_and_head;
    for (int r = 1; r < tp; ++r) {
      // Replicated KV heads (MQA) make a shard slightly more than 1/TP.
      EXPECT_NEAR(static_cast<double>(shards[static_cast<std::size_t>(r)]) / layers, 1.0 / tp,
                  0.25 / tp)
          << c.model << " TP " << tp << " rank " << r;
    }
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Families, Parallel,
                         ::testing::Values(Case{"llama-2-70b", 8, 4},  // grouped-query
                                           Case{"falcon-7b", 8, 1}),   // multi-query
                         [](const ::testing::TestParamInfo<Case>& p) {
                           return std::string(p.param.model).substr(0, 5);
                         });

TEST(ParallelRefusals, ModelsThatCannotSplitAreRefused) {
  const auto dir = checkpoint(tiny("llama-2-70b", 2, 6, 2), "refuse");
  DecoderOptions o;
  o.tp = 4;  // 6 heads
  EXPECT_THROW(Decoder::load(dir, o), std::invalid_argument);
  o.tp = 1;
  o.pp = 3;  // 2 layers
  EXPECT_THROW(Decoder::load(dir, o), std::invalid_argument);
  o.pp = 2;
  o.stage_layers = {2, 1};
  EXPECT_THROW(Decoder::load(dir, o), std::invalid_argument);
  o.stage_layers = {-1, 3};
  EXPECT_THROW(Decoder::load(dir, o), std::invalid_argument);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessera
