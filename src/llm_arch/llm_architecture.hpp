#pragma once

// The shape of a decoder-only LLM, read from a Hugging Face `config.json` (Llama, GPT-J,
// Falcon and compatible families; iServe §4.1 and docs/iserve.md), and the sizes that follow
// from it: parameters per layer and in total, weight bytes, KV-cache bytes per token.
// Plain values, safe to share between threads once built.

#include <cstdint>
#include <filesystem>
#include <string>

namespace tessera {

class SpecNode;

enum class NormKind { kRmsNorm, kLayerNorm };
enum class PositionKind { kRotary, kLearned, kAlibi };
enum class MlpKind { kGated, kPlain };  // gated: gate/up/down (SwiGLU); plain: up/down

struct LlmArchitecture {
  std::string name;    // the config's `_name_or_path`, or the file's stem
  std::string family;  // model_type: llama, gptj, falcon, ...
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;  // == heads (MHA), 1 (MQA) or a divisor of heads (GQA)
  int64_t ffn = 0;
  int64_t vocab = 0;
  int64_t max_positions = 0;
  MlpKind mlp = MlpKind::kGated;
  NormKind norm = NormKind::kRmsNorm;
  PositionKind positions = PositionKind::kRotary;
  int64_t rotary_dim = 0;          // rotated dimensions per head (== head_dim unless partial)
  bool parallel_residual = false;  // attention and MLP read the same input (GPT-J, Falcon)
  int64_t norms_per_layer = 2;     // 1 for GPT-J and Falcon-7B's shared pre-norm
  bool norm_bias = false;          // LayerNorm with a bias
  bool attention_bias = false;     // biases on the q, k, v and o projections
  bool mlp_bias = false;           // biases on the MLP projections (GPT-J)
  bool head_bias = false;          // a bias on the LM head (GPT-J)
  bool tied_embeddings = false;    // the LM head reuses the embedding matrix

  int64_t head_dim() const { return hidden / heads; }
  // Parameters of one decoder layer, of the embedding, of the LM head (0 when tied), and of
  // the final norm.
  int64_t layer_params() const;
  int64_t attention_params() const;
  int64_t mlp_params() const;
  int64_t embedding_params() const { return vocab * hidden; }
  int64_t head_params() const;
  int64_t final_norm_params() const { return norm_bias ? 2 * hidden : hidden; }
  int64_t total_params() const;
  // Bytes of K and V for one token in one layer at `bytes_per_element`.
  double kv_bytes_per_token_per_layer(double bytes_per_element) const {
    return 2.0 * static_cast<double>(kv_heads * head_dim()) * bytes_per_element;
  }
};

// Reads a Hugging Face config.json. Missing or inconsistent dimensions (heads not dividing
// the hidden size, KV heads not dividing heads, sizes past the documented bounds) are
// SpecErrors naming the file and the field.
LlmArchitecture load_llm_architecture(const std::filesystem::path& config_json);
LlmArchitecture parse_llm_architecture(const SpecNode& config);

// The architecture as a Hugging Face config.json (the fields this reader understands, in
// the family's own names), e.g. to write a fingerprint's or a random checkpoint's config.
std::string llm_architecture_to_json(const LlmArchitecture& arch);

}  // namespace tessera
