// The libtorch decoder (src/llm_torch) on random-weight checkpoints of each family:
// cached decoding agrees with a fresh prefill, quantisation really shrinks memory and
// stays close, and bad checkpoints or inputs are refused with a clear error.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "llm_arch/checkpoint_layout.hpp"
#include "llm_torch/decoder.hpp"

namespace tessera {
namespace {

const std::string kModels = std::string(TESSERA_SOURCE_DIR) + "/data/llm/";

// A small model of a bundled family's structure (GQA, MQA, parallel residual, ...).
LlmArchitecture tiny(const std::string& model, int64_t heads, int64_t kv_heads) {
  LlmArchitecture a = load_llm_architecture(kModels + model + "/config.json");
  a.layers = 2;
  a.hidden = 16 * heads;
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.ffn = 48;
  a.vocab = 97;
  a.rotary_dim = std::min<int64_t>(a.rotary_dim, 8);
  return a;
}

std::filesystem::path checkpoint(const LlmArchitecture& a, const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tessera_decoder_test_" + std::to_string(::getpid()) + "_" + tag);
  std::filesystem::remove_all(dir);
  write_random_checkpoint(a, dir, Dtype::kF16, 11);
  return dir;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(a[i] - b[i])));
  }
  return worst;
}

double max_abs(const std::vector<float>& a) {
  double worst = 0;
  for (float x : a) worst = std::max(worst, static_cast<double>(std::abs(x)));
  return worst;
}

const std::vector<int64_t> kPrompt{3, 14, 15, 92, 65, 35, 89, 79, 32, 38};

struct Family {
  const char* model;
  int64_t heads, kv_heads;
};

class DecoderFamilies : public ::testing::TestWithParam<Family> {};

TEST_P(DecoderFamilies, CachedDecodingMatchesAFreshPrefill) {
  const Family f = GetParam();
  const auto dir = checkpoint(tiny(f.model, f.heads, f.kv_heads), f.model);
  const auto decoder = Decoder::load(dir);
  const auto whole = decoder->start(32);
  const std::vector<float> expected = decoder->step(*whole, kPrompt);
  ASSERT_EQ(expected.size(), 97u);
  EXPECT_EQ(whole->length(), 10);

  const auto cached = decoder->start(32);
  decoder->step(*cached, std::vector<int64_t>(kPrompt.begin(), kPrompt.begin() + 6));
  std::vector<float> got;
  for (std::size_t i = 6; i < kPrompt.size(); ++i) got = decoder->step(*cached, {kPrompt[i]});
  EXPECT_LT(max_abs_diff(got, expected), 1e-4 * std::max(1.0, max_abs(expected))) << f.model;
  EXPECT_GT(max_abs(expected), 0.0);
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Families, DecoderFamilies,
                         ::testing::Values(Family{"llama-2-70b", 4, 2}, Family{"llama-2-7b", 4, 4},
                                           Family{"gpt-j-6b", 4, 4}, Family{"falcon-7b", 4, 1},
                                           Family{"falcon-40b", 4, 2}),
                         [](const auto& param_info) {
                           std::string name = param_info.param.model;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

TEST(Decoder, QuantisedWeightsAndCachesAreSmallerAndClose) {
  const LlmArchitecture a = tiny("llama-2-70b", 4, 2);
  const auto dir = checkpoint(a, "quant");
  const auto fp = Decoder::load(dir);
  const auto int8 = Decoder::load(dir, {WeightQuant::kInt8, KvQuant::kFp16, 1, 1, {}});
  const auto int4 = Decoder::load(dir, {WeightQuant::kInt4, KvQuant::kFp16, 1, 1, {}});
  const auto kv8 = Decoder::load(dir, {WeightQuant::kFp16, KvQuant::kInt8, 1, 1, {}});
  // Layer weights shrink ~4x (FP32 -> INT8) and ~8x (-> INT4) plus scales; the embedding and
  // the LM head stay as loaded.
  EXPECT_LT(int8->weight_bytes(), fp->weight_bytes());
  EXPECT_LT(int4->weight_bytes(), int8->weight_bytes());
  const auto logits = [&](const Decoder& d) {
    const auto s = d.start(16);
    return d.step(*s, kPrompt);
  };
  const std::vector<float> reference = logits(*fp);
  const double scale = max_abs(reference);
  EXPECT_LT(max_abs_diff(logits(*int8), reference), 0.05 * scale);
  EXPECT_LT(max_abs_diff(logits(*int4), reference), 0.5 * scale);
  EXPECT_GT(max_abs_diff(logits(*int4), reference), 0.0);  // it really quantised
  // INT8 KV: a cached decode step reads the quantised keys and values.
  const auto s = kv8->start(16);
  kv8->step(*s, std::vector<int64_t>(kPrompt.begin(), kPrompt.end() - 1));
  const std::vector<float> last = kv8->step(*s, {kPrompt.back()});
  EXPECT_LT(max_abs_diff(last, reference), 0.05 * scale);
  const auto s32 = fp->start(16);
  fp->step(*s32, kPrompt);
  EXPECT_LT(s->kv_bytes() * 3, s32->kv_bytes());  // 1 byte + a scale per head vs 4 bytes
  std::filesystem::remove_all(dir);
}

TEST(Decoder, BadCheckpointsAndInputsAreRefused) {
  const LlmArchitecture a = tiny("llama-2-7b", 4, 4);
  const auto dir = checkpoint(a, "bad");
  const auto decoder = Decoder::load(dir);
  const auto s = decoder->start(4);
  EXPECT_THROW(decoder->step(*s, {97}), std::invalid_argument);
  EXPECT_THROW(decoder->step(*s, {-1}), std::invalid_argument);
  EXPECT_THROW(decoder->step(*s, {1, 2, 3, 4, 5}), std::invalid_argument);
  EXPECT_THROW(decoder->start(0), std::invalid_argument);
  // A config that disagrees with the tensors names the tensor and both shapes.
  LlmArchitecture wider = a;
  wider.ffn = 64;
  std::ofstream(dir / "config.json") << llm_architecture_to_json(wider);
  try {
    Decoder::load(dir);
    ADD_FAILURE() << "loaded a checkpoint whose shapes disagree with its config";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "mlp.gate_proj.weight': has shape [48, 64] but the config needs [64, 64]"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessera
