// The engine's logits against an independent reference: tests/llm_reference.py, a numpy
// implementation written from Hugging Face transformers' definitions of each family and
// RoPE type, run on the same random checkpoint (weights with a large spread, so attention is
// sharp and positions matter). Every family and RoPE variant, a prefill in chunks, decode
// steps, and two sequences batched in one step. Skipped when python3 with numpy is missing.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "llm_arch/checkpoint_layout.hpp"
#include "llm_torch/decoder.hpp"

namespace tessera {
namespace {

const std::string kModels = std::string(TESSERA_SOURCE_DIR) + "/data/llm/";
const std::string kReference = std::string(TESSERA_SOURCE_DIR) + "/tests/llm_reference.py";

// Debian's python3 (where python3-numpy installs) first, then the one on PATH; empty when
// neither imports numpy.
const std::string& python() {
  static const std::string found = [] {
    for (const char* candidate : {"/usr/bin/python3", "python3"}) {
      const std::string cmd = std::string(candidate) + " -c 'import numpy' >/dev/null 2>&1";
      if (std::system(cmd.c_str()) == 0) return std::string(candidate);
    }
    return std::string();
  }();
  return found;
}

bool have_numpy() { return !python().empty(); }

using Schedule = std::vector<std::vector<int64_t>>;

// The reference's logits after each chunk.
std::vector<std::vector<float>> reference(const std::filesystem::path& dir, const Schedule& s) {
  const std::filesystem::path out = dir / "reference.json";
  const std::string cmd = python() + " '" + kReference + "' '" + dir.string() + "' '" +
                          nlohmann::json(s).dump() + "' > '" + out.string() + "'";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("the reference failed: " + cmd);
  std::ifstream in(out);
  return nlohmann::json::parse(in).get<std::vector<std::vector<float>>>();
}

LlmArchitecture tiny(const std::string& model) {
  LlmArchitecture a = load_llm_architecture(kModels + model + "/config.json");
  a.layers = 2;
  a.hidden = 64;
  a.heads = 4;
  a.kv_heads = std::min<int64_t>(a.kv_heads, 4);
  a.ffn = 96;
  a.vocab = 101;
  a.max_positions = 64;
  a.rotary_dim = std::min<int64_t>(a.rotary_dim, 16);
  return a;
}

std::filesystem::path write(const LlmArchitecture& a, const std::string& tag,
                            Dtype dtype = Dtype::kF32) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tessera_reference_" + std::to_string(::getpid()) + "_" + tag);
  std::filesystem::remove_all(dir);
  write_random_checkpoint(a, dir, dtype, 5, 0.35f);
  return dir;
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, static_cast<double>(std::abs(x)));
  return m;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    m = std::max(m, static_cast<double>(std::abs(a[i] - b[i])));
  }
  return m;
}

// Prompt 0..n-1 scrambled into the vocabulary.
std::vector<int64_t> tokens(int64_t n, int64_t salt) {
  std::vector<int64_t> t;
  for (int64_t i = 0; i < n; ++i) t.push_back((i * 37 + salt * 11 + 3) % 101);
  return t;
}

struct Case {
  std::string name, model;
  std::function<void(LlmArchitecture&)> edit;
  int64_t prompt = 13;
  Dtype dtype = Dtype::kF32;
};

class ReferenceLogits : public ::testing::TestWithParam<Case> {};

// Within 1e-4 of the logits' scale; and the case's setting matters: the same checkpoint
// without it (default RoPE, no window) gives logits further away than that.
TEST_P(ReferenceLogits, MatchTheReferenceChunkedDecodedAndBatched) {
  if (!have_numpy()) GTEST_SKIP() << "python3 with numpy is not installed";
  const Case c = GetParam();
  LlmArchitecture a = tiny(c.model);
  c.edit(a);
  const auto dir = write(a, c.name, c.dtype);
  // Sequence A: a prefill in two chunks, then decode steps; B: one prefill, then decodes.
  const std::vector<int64_t> pa = tokens(c.prompt, 1), pb = tokens(c.prompt - 4, 2);
  const int64_t cut = c.prompt / 2;
  const Schedule sa{{pa.begin(), pa.begin() + cut}, {pa.begin() + cut, pa.end()}, {7}, {42}, {5}};
  const Schedule sb{pb, {9}, {1}, {77}};
  const auto ra = reference(dir, sa), rb = reference(dir, sb);

  const auto decoder = Decoder::load(dir);
  const double tolerance = 1e-4 * std::max(1.0, max_abs(ra.back()));
  // A alone, chunk by chunk.
  {
    const auto seq = decoder->start(64);
    for (std::size_t i = 0; i < sa.size(); ++i) {
      EXPECT_LT(max_diff(decoder->step(*seq, sa[i]), ra[i]), tolerance) << "A chunk " << i;
    }
  }
  // A and B batched: A's first chunk alone, then each step holds one chunk of each.
  {
    const auto qa = decoder->start(64), qb = decoder->start(64);
    decoder->step(*qa, sa[0]);
    for (std::size_t i = 1; i < sa.size(); ++i) {
      const auto out = decoder->step_batch({{qa.get(), sa[i], true}, {qb.get(), sb[i - 1], true}});
      EXPECT_LT(max_diff(out[0], ra[i]), tolerance) << "batched A chunk " << i;
      EXPECT_LT(max_diff(out[1], rb[i - 1]), tolerance) << "batched B chunk " << i - 1;
    }
  }
  // The setting is visible: the reference without it differs.
  LlmArchitecture plain = a;
  plain.rope = RopeSettings{};
  plain.sliding_window = 0;
  if (!(plain.rope == a.rope) || plain.sliding_window != a.sliding_window) {
    const auto plain_dir = write(plain, c.name + "_plain");
    const auto rp = reference(plain_dir, sa);
    EXPECT_GT(max_diff(rp.back(), ra.back()), 100 * tolerance) << "the setting does not matter";
    std::filesystem::remove_all(plain_dir);
  }
  std::filesystem::remove_all(dir);
}

RopeSettings rope(RopeScaling s, double factor) {
  RopeSettings r;
  r.scaling = s;
  r.factor = factor;
  return r;
}

INSTANTIATE_TEST_SUITE_P(
    FamiliesAndRope, ReferenceLogits,
    ::testing::Values(
        Case{"llama_gqa", "llama-2-70b", [](LlmArchitecture& a) { a.kv_heads = 2; }},
        Case{"llama_theta", "llama-2-7b", [](LlmArchitecture& a) { a.rope.theta = 500000.0; }},
        Case{"llama_tied_eps", "llama-2-7b",
             [](LlmArchitecture& a) {
               a.tied_embeddings = true;
               a.norm_eps = 1e-2;
             }},
        Case{"llama_linear", "llama-2-7b",
             [](LlmArchitecture& a) { a.rope = rope(RopeScaling::kLinear, 4.0); }},
        // Past the trained 16 positions, so the base grows with the sequence.
        Case{"llama_dynamic", "llama-2-7b",
             [](LlmArchitecture& a) {
               a.max_positions = 16;
               a.rope = rope(RopeScaling::kDynamic, 4.0);
             },
             21},
        Case{"llama3", "llama-2-7b",
             [](LlmArchitecture& a) {
               a.rope = rope(RopeScaling::kLlama3, 8.0);
               a.rope.theta = 500000.0;
               a.rope.low_freq_factor = 1.0;
               a.rope.high_freq_factor = 4.0;
               a.rope.original_max_positions = 16;
               a.kv_heads = 2;
             }},
        Case{"yarn", "llama-2-7b",
             [](LlmArchitecture& a) {
               a.rope = rope(RopeScaling::kYarn, 4.0);
               a.rope.attention_factor = 0.1 * std::log(4.0) + 1.0;
             }},
        Case{"mistral_window", "llama-2-7b",
             [](LlmArchitecture& a) {
               a.family = ModelFamily::kMistral;
               a.sliding_window = 4;
               a.kv_heads = 2;
             }},
        Case{"llama_bf16", "llama-2-7b", [](LlmArchitecture&) {}, 13, Dtype::kBF16},
        Case{"llama_f16", "llama-2-7b", [](LlmArchitecture&) {}, 13, Dtype::kF16},
        Case{"gptj_partial", "gpt-j-6b", [](LlmArchitecture& a) { a.rotary_dim = 8; }},
        Case{"falcon_mqa", "falcon-7b", [](LlmArchitecture&) {}},
        Case{"falcon_new", "falcon-40b", [](LlmArchitecture& a) { a.kv_heads = 2; }},
        Case{"falcon_sequential", "falcon-7b",
             [](LlmArchitecture& a) {
               a.parallel_residual = false;
               a.norms_per_layer = 2;
               a.kv_heads = a.heads;
             }},
        Case{"falcon_linear", "falcon-7b",
             [](LlmArchitecture& a) { a.rope = rope(RopeScaling::kLinear, 2.0); }}),
    [](const ::testing::TestParamInfo<Case>& param) { return param.param.name; });

}  // namespace
}  // namespace tessera
