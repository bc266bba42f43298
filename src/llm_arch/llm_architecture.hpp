#pragma once

// The shape of a decoder-only LLM, read from a Hugging Face `config.json` (Llama, Mistral,
// GPT-J, Falcon; iServe §4.1 and docs/iserve.md), and the sizes that follow from it:
// parameters per layer and in total, weight bytes, KV-cache bytes per token. Read in full:
// the rotary settings (`rope_theta`, `rope_scaling`: linear, dynamic NTK, llama3, YaRN, as
// Hugging Face transformers defines them), the sliding window, tied embeddings and the
// norms' epsilon; a field the engine does not implement (an unknown key, a RoPE type, a
// value it cannot run) is a SpecError naming the field (docs/llm-serve.md#checkpoints).
// Plain values, safe to share between threads once built.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace tessera {

class SpecNode;

enum class ModelFamily : uint8_t { kLlama, kMistral, kGptj, kFalcon };
// The family's `model_type` ("llama", "mistral", "gptj", "falcon").
std::string_view family_name(ModelFamily family);

enum class NormKind { kRmsNorm, kLayerNorm };
enum class PositionKind { kRotary, kLearned, kAlibi };
enum class MlpKind { kGated, kPlain };  // gated: gate/up/down (SwiGLU); plain: up/down

// How rotary angles are scaled (`rope_scaling.rope_type`, or its older name `type`).
enum class RopeScaling : uint8_t { kNone, kLinear, kDynamic, kLlama3, kYarn };
std::string_view rope_scaling_name(RopeScaling scaling);  // "default", "linear", ...

// The rotary embedding: inverse frequencies theta^(-2i/d), changed by the scaling type
// (transformers' modeling_rope_utils): linear divides them by `factor`; dynamic NTK raises
// the base for a sequence of n > max_positions tokens to theta (factor n / max_positions -
// (factor - 1))^(d / (d - 2)); llama3 divides the low frequencies by `factor` and blends
// the middle band (low_freq_factor, high_freq_factor, original_max_positions); YaRN blends
// interpolated and extrapolated frequencies over the ramp beta_fast..beta_slow and scales
// cos and sin by attention_factor (0.1 ln(factor) + 1 unless given).
struct RopeSettings {
  double theta = 10000.0;  // rope_theta
  RopeScaling scaling = RopeScaling::kNone;
  double factor = 1.0;
  double low_freq_factor = 1.0;        // llama3
  double high_freq_factor = 4.0;       // llama3
  int64_t original_max_positions = 0;  // llama3 (required), YaRN (optional; 0: none)
  double attention_factor = 1.0;       // YaRN's scale of cos and sin
  double beta_fast = 32.0;             // YaRN
  double beta_slow = 1.0;              // YaRN
  bool operator==(const RopeSettings&) const = default;
};

struct LlmArchitecture {
  std::string name;  // the config's `_name_or_path`, or the file's stem
  ModelFamily family = ModelFamily::kLlama;
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
  RopeSettings rope;               // with positions == kRotary
  double norm_eps = 1e-5;          // rms_norm_eps or layer_norm_epsilon
  int64_t sliding_window = 0;      // a query sees the last `sliding_window` keys; 0: all

  // The longest sequence the engine runs: max_positions, or max_positions x factor for
  // dynamic NTK scaling (which exists to run past the trained length).
  int64_t context_length() const;

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
