// LLM architectures from config.json, iServe's configuration space, and the safetensors
// reader/writer against hostile files.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

#include "core/error.hpp"
#include "core/spec_node.hpp"
#include "llm_arch/checkpoint_layout.hpp"
#include "llm_arch/deployment_config.hpp"
#include "llm_arch/llm_architecture.hpp"
#include "llm_arch/safetensors.hpp"

namespace tessera {
namespace {

const std::string kModels = std::string(TESSERA_SOURCE_DIR) + "/data/llm/";

LlmArchitecture bundled(const std::string& name) {
  return load_llm_architecture(kModels + name + "/config.json");
}

LlmArchitecture parse(const std::string& json) {
  return parse_llm_architecture(SpecNode::load_string(json, "config.json"));
}

double billions(int64_t params) { return static_cast<double>(params) / 1e9; }

std::string error_of(const std::string& json) {
  try {
    parse(json);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

// The parameter counts of the iServe digest's table (§4.1), from the bundled configs.
TEST(LlmArchitecture, BundledModelsHaveTheirPublishedParameterCounts) {
  EXPECT_NEAR(billions(bundled("llama-2-7b").total_params()), 6.74, 0.005);
  EXPECT_NEAR(billions(bundled("llama-2-13b").total_params()), 13.02, 0.005);
  EXPECT_NEAR(billions(bundled("llama-2-70b").total_params()), 68.98, 0.005);
  EXPECT_NEAR(billions(bundled("gpt-j-6b").total_params()), 6.05, 0.005);
  EXPECT_NEAR(billions(bundled("falcon-7b").total_params()), 6.92, 0.005);
  const LlmArchitecture falcon40 = bundled("falcon-40b");
  EXPECT_EQ(falcon40.kv_heads, 8);
  EXPECT_EQ(falcon40.norms_per_layer, 2);
  EXPECT_NEAR(billions(falcon40.total_params()), 41.30, 0.005);
}

TEST(LlmArchitecture, KvBytesPerTokenFollowTheHeads) {
  // Digest table: KV per token over all layers at FP16.
  const LlmArchitecture llama7 = bundled("llama-2-7b");
  EXPECT_DOUBLE_EQ(llama7.kv_bytes_per_token_per_layer(2) * static_cast<double>(llama7.layers),
                   524288.0);
  const LlmArchitecture llama70 = bundled("llama-2-70b");
  EXPECT_DOUBLE_EQ(llama70.kv_bytes_per_token_per_layer(2) * static_cast<double>(llama70.layers),
                   327680.0);
  const LlmArchitecture falcon7 = bundled("falcon-7b");
  EXPECT_EQ(falcon7.kv_heads, 1);
  EXPECT_DOUBLE_EQ(falcon7.kv_bytes_per_token_per_layer(2) * static_cast<double>(falcon7.layers),
                   8192.0);
}

TEST(LlmArchitecture, WritingAndReadingBackKeepsTheShape) {
  for (const char* name : {"llama-2-7b", "llama-2-70b", "gpt-j-6b", "falcon-7b", "falcon-40b"}) {
    const LlmArchitecture a = bundled(name);
    const LlmArchitecture b = parse(llm_architecture_to_json(a));
    EXPECT_EQ(b.total_params(), a.total_params()) << name;
    EXPECT_EQ(b.kv_heads, a.kv_heads) << name;
    EXPECT_EQ(b.norms_per_layer, a.norms_per_layer) << name;
  }
}

TEST(LlmArchitecture, BadConfigsNameTheFieldAndTheProblem) {
  EXPECT_NE(error_of(R"({"model_type": "bert", "hidden_size": 8})").find("unsupported model_type"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
                         "vocab_size": 10, "intermediate_size": 8})")
                .find("missing num_hidden_layers or n_layer"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 65,
                         "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 8})")
                .find("not a multiple of the 4 attention heads"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
                         "num_attention_heads": 4, "num_key_value_heads": 3, "vocab_size": 10,
                         "intermediate_size": 8})")
                .find("key/value heads"),
            std::string::npos);
  const std::string huge = error_of(R"({"model_type": "llama", "num_hidden_layers": 1e300,
      "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 8})");
  EXPECT_NE(huge.find("num_hidden_layers"), std::string::npos) << huge;
  const std::string negative = error_of(R"({"model_type": "llama", "num_hidden_layers": -2,
      "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 8})");
  EXPECT_NE(negative.find("num_hidden_layers"), std::string::npos) << negative;
}

// iServe: "15 parallelism options" and 180 configurations for Llama-2-70B on 8 GPUs.
// A Llama-3.1-shaped config: rope_theta, llama3 scaling, tied embeddings and the norm's
// epsilon are read, and written back the same.
TEST(LlmArchitecture, ReadsRopeScalingWindowsAndEpsilons) {
  const LlmArchitecture a = parse(R"({"model_type": "llama", "num_hidden_layers": 2,
      "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
      "intermediate_size": 96, "vocab_size": 300, "max_position_embeddings": 131072,
      "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": true,
      "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                       "original_max_position_embeddings": 8192, "rope_type": "llama3"},
      "bos_token_id": 128000, "eos_token_id": [128001, 128008], "torch_dtype": "bfloat16"})");
  EXPECT_EQ(a.family, ModelFamily::kLlama);
  EXPECT_EQ(family_name(a.family), "llama");
  EXPECT_DOUBLE_EQ(a.rope.theta, 500000.0);
  EXPECT_EQ(a.rope.scaling, RopeScaling::kLlama3);
  EXPECT_DOUBLE_EQ(a.rope.factor, 8.0);
  EXPECT_EQ(a.rope.original_max_positions, 8192);
  EXPECT_DOUBLE_EQ(a.norm_eps, 1e-5);
  EXPECT_TRUE(a.tied_embeddings);
  EXPECT_EQ(a.context_length(), 131072);
  const LlmArchitecture back = parse(llm_architecture_to_json(a));
  EXPECT_EQ(back.rope, a.rope);
  EXPECT_DOUBLE_EQ(back.norm_eps, a.norm_eps);

  // Mistral v0.1's window; an older "type" key; dynamic NTK runs past the trained length.
  const LlmArchitecture m = parse(R"({"model_type": "mistral", "num_hidden_layers": 2,
      "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 300,
      "max_position_embeddings": 32768, "sliding_window": 4096, "rope_theta": 10000.0})");
  EXPECT_EQ(m.family, ModelFamily::kMistral);
  EXPECT_EQ(m.sliding_window, 4096);
  EXPECT_DOUBLE_EQ(m.norm_eps, 1e-6);  // transformers' default for Llama and Mistral
  const LlmArchitecture d = parse(R"({"model_type": "llama", "num_hidden_layers": 2,
      "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 300,
      "max_position_embeddings": 2048, "rope_scaling": {"type": "dynamic", "factor": 2.0}})");
  EXPECT_EQ(d.rope.scaling, RopeScaling::kDynamic);
  EXPECT_EQ(d.context_length(), 4096);
  const LlmArchitecture y = parse(R"({"model_type": "llama", "num_hidden_layers": 2,
      "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 300,
      "max_position_embeddings": 32768, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
      "original_max_position_embeddings": 8192}})");
  EXPECT_EQ(y.rope.scaling, RopeScaling::kYarn);
  EXPECT_NEAR(y.rope.attention_factor, 0.1 * std::log(4.0) + 1.0, 1e-12);
}

// Whatever would change the output and is not implemented is an error naming the field.
TEST(LlmArchitecture, FieldsTheEngineDoesNotImplementAreErrors) {
  const std::string llama = R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 300, )";
  EXPECT_NE(error_of(llama + R"("quantization_config": {"bits": 4}})").find("quantization_config"),
            std::string::npos);
  EXPECT_NE(error_of(llama + R"("rope_scaling": {"rope_type": "longrope", "factor": 2.0}})")
                .find("longrope"),
            std::string::npos);
  EXPECT_NE(error_of(llama + R"("rope_scaling": {"rope_type": "yarn", "factor": 2.0,
                                "mscale": 0.7}})")
                .find("mscale"),
            std::string::npos);
  EXPECT_NE(error_of(llama + R"("hidden_act": "gelu"})").find("hidden_act"), std::string::npos);
  EXPECT_NE(error_of(llama + R"("head_dim": 32})").find("head_dim"), std::string::npos);
  EXPECT_NE(error_of(llama + R"("mlp_bias": true})").find("mlp_bias"), std::string::npos);
  EXPECT_NE(error_of(llama + R"("sliding_window": 16})").find("sliding_window"),
            std::string::npos);  // Llama has none
  EXPECT_NE(error_of(R"({"model_type": "gptj", "n_layer": 2, "n_embd": 64, "n_head": 4,
                         "vocab_size": 300, "rope_theta": 5e5})")
                .find("rope_theta"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "falcon", "num_hidden_layers": 2, "hidden_size": 64,
                         "num_attention_heads": 4, "vocab_size": 300,
                         "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
                         "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192}})")
                .find("rope_scaling"),
            std::string::npos);
  // Inert fields (metadata, token ids, dropout) are fine.
  EXPECT_EQ(error_of(llama + R"("attention_dropout": 0.1, "use_cache": true,
                                "transformers_version": "4.44.0"})"),
            "");
}

TEST(DeploymentConfigs, Llama70BOnEightGpusHas180) {
  const LlmArchitecture arch = bundled("llama-2-70b");
  EXPECT_EQ(parallelism_options(arch, 8).size(), 15u);
  const auto configs = enumerate_deployment_configs(arch, 8);
  EXPECT_EQ(configs.size(), 180u);
  std::set<std::string> names;
  for (const auto& c : configs) {
    names.insert(c.name());
    EXPECT_LE(c.parallelism.gpus(), 8);
    if (c.pruning != Pruning::kNone) {
      EXPECT_EQ(c.weights, WeightQuant::kFp16);  // pruning is never combined with quantisation
      EXPECT_EQ(c.kv_cache, KvQuant::kFp16);
    }
  }
  EXPECT_EQ(names.size(), 180u);
  EXPECT_TRUE(names.count("tp2-pp4-int8-kv8"));
  EXPECT_TRUE(names.count("tp8-pp1-wanda2:4"));
}

TEST(DeploymentConfigs, TheSupportMaskAndTheHeadsLimitTheSpace) {
  // Falcon-7B's 71 heads admit no TP above 1: 8 pipeline options only.
  const LlmArchitecture falcon7 = bundled("falcon-7b");
  EXPECT_EQ(parallelism_options(falcon7, 8).size(), 8u);
  EXPECT_NE(parallelism_problem(falcon7, {2, 1}).find("71 attention heads"), std::string::npos);
  SupportMask fp16_only;
  fp16_only.weights = {WeightQuant::kFp16};
  fp16_only.kv_caches = {KvQuant::kFp16};
  fp16_only.prunings.clear();
  EXPECT_EQ(enumerate_deployment_configs(bundled("llama-2-70b"), 8, fp16_only).size(), 15u);
  EXPECT_THROW(weight_quant_from_string("int3"), std::invalid_argument);
}

// --- safetensors ---

std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("tessera_llm_test_" + std::to_string(::getpid()) + "_" + name);
}

void write_raw(const std::filesystem::path& file, const std::string& header, std::size_t data_bytes,
               uint64_t declared = UINT64_MAX) {
  std::ofstream out(file, std::ios::binary);
  uint64_t len = declared == UINT64_MAX ? header.size() : declared;
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((len >> (8 * i)) & 0xff));
  out << header << std::string(data_bytes, '\0');
}

std::string index_error(const std::filesystem::path& file) {
  try {
    read_safetensors_index(file);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, WrittenCheckpointsReadBackByteForByte) {
  const auto file = temp_file("ok.safetensors");
  std::vector<TensorToWrite> tensors{{"embed.weight", Dtype::kF16, {5, 3}},
                                     {"norm.weight", Dtype::kF32, {3}},
                                     {"scalar", Dtype::kI64, {}}};
  write_safetensors(file, tensors, {{"format", "pt"}},
                    [](std::size_t index, uint64_t offset, std::span<char> out) {
                      for (std::size_t i = 0; i < out.size(); ++i) {
                        out[i] = static_cast<char>(index * 37 + offset + i);
                      }
                    });
  const SafetensorsIndex index = read_safetensors_index(file);
  ASSERT_EQ(index.tensors.size(), 3u);
  EXPECT_EQ(index.metadata.at("format"), "pt");
  EXPECT_EQ(index.data_offset % 8, 0u);
  const TensorInfo* norm = index.find("norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->bytes(), 12u);
  const std::vector<char> bytes = read_tensor_bytes(file, index, *norm);
  for (std::size_t i = 0; i < bytes.size(); ++i) EXPECT_EQ(bytes[i], static_cast<char>(37 + i));
  EXPECT_EQ(index.find("scalar")->elements(), 1u);
  std::filesystem::remove(file);
}

TEST(Safetensors, HostileHeadersAreRefusedWithTheTensorNamed) {
  const auto file = temp_file("bad.safetensors");
  const auto expect_error = [&](const std::string& header, std::size_t data,
                                const std::string& what, uint64_t declared = UINT64_MAX) {
    write_raw(file, header, data, declared);
    const std::string error = index_error(file);
    EXPECT_NE(error.find(what), std::string::npos) << header << " -> " << error;
  };
  expect_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8, "", 1ull << 40);
  expect_error("", 0, "declares 1099511627776 bytes", 1ull << 40);
  expect_error("{", 0, "not valid JSON");
  expect_error("[1,2]", 0, "must be a JSON object");
  expect_error(R"({"a":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", 8,
               "tensor 'a'.dtype: unsupported dtype");
  expect_error(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8,
               "holds 8 bytes but dtype F32 and shape need 12");
  expect_error(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8,
               "shape[0]: must be a non-negative integer");
  expect_error(
      R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}})", 8,
      "too many elements");
  expect_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8,
               "end is before begin");
  expect_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},
                   "b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
               12, "overlaps");
  expect_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12, "hole");
  expect_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4,
               "tensors need 8 bytes but the file holds 4");
  expect_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 9,
               "1 bytes after the last tensor");
  expect_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},
                   "a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
               8, "'a' appears twice");
  expect_error(R"({"a":{"dtype":"F32","dtype":"F16","shape":[2],"data_offsets":[0,8]}})", 8,
               "'dtype' appears twice");
  expect_error(R"({"__metadata__":{"k":1}})", 0, "__metadata__.k: must be a string");
  expect_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", 8,
               "tensor 'a'.x: unknown field");
  expect_error("{\"\xff\":1}", 0, "not valid JSON");
  expect_error(std::string(100000, '['), 0, "");
  std::filesystem::remove(file);
  // Short files and special files.
  std::ofstream(file, std::ios::binary) << "abc";
  EXPECT_NE(index_error(file).find("shorter than the 8-byte"), std::string::npos);
  std::filesystem::remove(file);
  EXPECT_FALSE(index_error("/dev/zero").empty());
}

// --- checkpoints and fingerprints ---

TEST(CheckpointLayout, HoldsExactlyTheParametersOfEveryFamily) {
  for (const char* name : {"llama-2-7b", "llama-2-70b", "gpt-j-6b", "falcon-7b", "falcon-40b"}) {
    const LlmArchitecture arch = bundled(name);
    uint64_t elements = 0;
    std::set<std::string> names;
    for (const TensorToWrite& t : checkpoint_layout(arch, Dtype::kF16)) {
      uint64_t n = 1;
      for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
      elements += n;
      names.insert(t.name);
    }
    EXPECT_EQ(elements, static_cast<uint64_t>(arch.total_params())) << name;
    EXPECT_EQ(names.size(), checkpoint_layout(arch, Dtype::kF16).size()) << name;
  }
  EXPECT_EQ(layer_of_tensor("model.layers.17.mlp.up_proj.weight"), 17);
  EXPECT_EQ(layer_of_tensor("transformer.h.3.ln_1.bias"), 3);
  EXPECT_EQ(layer_of_tensor("model.embed_tokens.weight"), -1);
  EXPECT_EQ(layer_of_tensor("lm_head.weight"), -1);
}

TEST(CheckpointLayout, HalfPrecisionRoundsToNearestEven) {
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(1e6f), 0x7c00);
  EXPECT_EQ(float_to_half_bits(5.960464477539063e-08f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_half_bits(1.0f + 1.0f / 2048.0f), 0x3c00);  // a tie goes to even
  EXPECT_EQ(float_to_bfloat16_bits(1.0f), 0x3f80);
}

TEST(Fingerprint, KeepsTheFirstLayersByteForByteAndRewritesTheConfig) {
  LlmArchitecture tiny = bundled("llama-2-70b");  // GQA, like the real one, but small
  tiny.layers = 4;
  tiny.hidden = 64;
  tiny.heads = 8;
  tiny.kv_heads = 2;
  tiny.ffn = 96;
  tiny.vocab = 50;
  const auto dir = temp_file("ckpt");
  const auto fp_dir = temp_file("fp");
  write_random_checkpoint(tiny, dir, Dtype::kF16, 7);
  const SafetensorsIndex full = read_safetensors_index(dir / "model.safetensors");
  EXPECT_EQ(full.tensors.size(), checkpoint_layout(tiny, Dtype::kF16).size());

  const LlmArchitecture fp = write_fingerprint(dir, 2, fp_dir);
  EXPECT_EQ(fp.layers, 2);
  EXPECT_EQ(load_llm_architecture(fp_dir / "config.json").layers, 2);
  const SafetensorsIndex cut = read_safetensors_index(fp_dir / "model.safetensors");
  uint64_t elements = 0;
  for (const TensorInfo& t : cut.tensors) {
    EXPECT_LT(layer_of_tensor(t.name), 2) << t.name;
    elements += t.elements();
    const TensorInfo* original = full.find(t.name);
    ASSERT_NE(original, nullptr) << t.name;
    EXPECT_EQ(read_tensor_bytes(fp_dir / "model.safetensors", cut, t),
              read_tensor_bytes(dir / "model.safetensors", full, *original))
        << t.name;
  }
  EXPECT_EQ(elements, static_cast<uint64_t>(fp.total_params()));
  EXPECT_NE(cut.find("lm_head.weight"), nullptr);
  EXPECT_NE(cut.find("model.norm.weight"), nullptr);
  EXPECT_THROW(write_fingerprint(dir, 5, fp_dir), SpecError);

  // The same seed writes the same bytes; norm weights are 1.
  const auto again = temp_file("ckpt2");
  write_random_checkpoint(tiny, again, Dtype::kF16, 7);
  const TensorInfo* q = full.find("model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(read_tensor_bytes(again / "model.safetensors", full, *q),
            read_tensor_bytes(dir / "model.safetensors", full, *q));
  const std::vector<char> norm =
      read_tensor_bytes(dir / "model.safetensors", full, *full.find("model.norm.weight"));
  EXPECT_EQ(static_cast<unsigned char>(norm[0]), 0x00);
  EXPECT_EQ(static_cast<unsigned char>(norm[1]), 0x3c);
  for (const auto& d : {dir, fp_dir, again}) std::filesystem::remove_all(d);
}

// A large tensor is filled in slices on threads; the bytes are the one-thread bytes.
TEST(RandomCheckpoint, ThreadsWriteTheSameBytes) {
  LlmArchitecture small = bundled("llama-2-7b");
  small.layers = 1;
  small.hidden = 64;
  small.heads = 4;
  small.kv_heads = 4;
  small.ffn = 96;
  small.vocab = 20000;  // 1.28 M elements per embedding: sliced
  const auto one = temp_file("ckpt-1");
  const auto many = temp_file("ckpt-5");
  write_random_checkpoint(small, one, Dtype::kBF16, 11, 0.02f, 1);
  write_random_checkpoint(small, many, Dtype::kBF16, 11, 0.02f, 5);
  const SafetensorsIndex index = read_safetensors_index(one / "model.safetensors");
  for (const TensorInfo& t : index.tensors) {
    EXPECT_EQ(read_tensor_bytes(many / "model.safetensors", index, t),
              read_tensor_bytes(one / "model.safetensors", index, t))
        << t.name;
  }
  const std::vector<char> embed =
      read_tensor_bytes(one / "model.safetensors", index, *index.find("model.embed_tokens.weight"));
  // Slices are not copies of one another: the last element differs from the first.
  EXPECT_NE(std::vector<char>(embed.begin(), embed.begin() + 64),
            std::vector<char>(embed.end() - 64, embed.end()));
  for (const auto& d : {one, many}) std::filesystem::remove_all(d);
}

}  // namespace
}  // namespace tessera
