#include "llm_arch/llm_architecture.hpp"

#include <nlohmann/json.hpp>

#include "core/spec_node.hpp"

namespace tessera {
namespace {

// Bounds on a config's dimensions (docs/iserve.md#limits): generous for today's models, small
// enough that products of two of them fit comfortably in 64 bits.
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxHidden = 1 << 17;
constexpr int64_t kMaxFfn = 1 << 20;
constexpr int64_t kMaxVocab = 1 << 22;
constexpr int64_t kMaxPositions = 1 << 24;

// The first of `keys` present and not null, or nullopt.
std::optional<SpecNode> first_of(const SpecNode& config, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    if (auto node = config.get(key); node && !node->is_null()) return node;
  }
  return std::nullopt;
}

int64_t required_dimension(const SpecNode& config, std::initializer_list<const char*> keys,
                           int64_t hi) {
  if (auto node = first_of(config, keys)) return node->as_integer_in(1, hi);
  std::string names;
  for (const char* key : keys) names += std::string(names.empty() ? "" : " or ") + key;
  config.fail("missing " + names);
}

int64_t optional_dimension(const SpecNode& config, std::initializer_list<const char*> keys,
                           int64_t hi, int64_t fallback) {
  if (auto node = first_of(config, keys)) return node->as_integer_in(1, hi);
  return fallback;
}

bool flag(const SpecNode& config, const char* key, bool fallback) {
  if (auto node = config.get(key); node && !node->is_null()) return node->as_bool();
  return fallback;
}

}  // namespace

int64_t LlmArchitecture::attention_params() const {
  const int64_t kv = kv_heads * head_dim();
  int64_t params = 2 * hidden * hidden + 2 * hidden * kv;  // q and o, k and v
  if (attention_bias) params += 2 * hidden + 2 * kv;
  return params;
}

int64_t LlmArchitecture::mlp_params() const {
  int64_t params = (mlp == MlpKind::kGated ? 3 : 2) * hidden * ffn;
  if (mlp_bias) params += (mlp == MlpKind::kGated ? 2 : 1) * ffn + hidden;
  return params;
}

int64_t LlmArchitecture::layer_params() const {
  return attention_params() + mlp_params() + norms_per_layer * final_norm_params();
}

int64_t LlmArchitecture::head_params() const {
  if (tied_embeddings) return head_bias ? vocab : 0;
  return vocab * hidden + (head_bias ? vocab : 0);
}

int64_t LlmArchitecture::total_params() const {
  return layers * layer_params() + embedding_params() + head_params() + final_norm_params();
}

LlmArchitecture parse_llm_architecture(const SpecNode& config) {
  config.expect_map();
  LlmArchitecture a;
  std::string type = config.at("model_type").as_string();
  if (type == "RefinedWeb" || type == "RefinedWebModel") type = "falcon";
  if (type != "llama" && type != "mistral" && type != "gptj" && type != "falcon") {
    config.at("model_type")
        .fail("unsupported model_type '" + type + "' (supported: llama, mistral, gptj, falcon)");
  }
  a.family = type;
  a.name = config.string_or("_name_or_path", "");
  if (a.name.empty()) a.name = std::filesystem::path(config.file()).parent_path().filename();
  a.layers = required_dimension(config, {"num_hidden_layers", "n_layer"}, kMaxLayers);
  a.hidden = required_dimension(config, {"hidden_size", "n_embd"}, kMaxHidden);
  a.heads = required_dimension(config, {"num_attention_heads", "n_head"}, a.hidden);
  if (a.hidden % a.heads != 0) {
    config.fail("hidden size " + std::to_string(a.hidden) + " is not a multiple of the " +
                std::to_string(a.heads) + " attention heads");
  }
  a.vocab = required_dimension(config, {"vocab_size"}, kMaxVocab);
  a.max_positions =
      optional_dimension(config, {"max_position_embeddings", "n_positions"}, kMaxPositions, 2048);
  a.rotary_dim = a.head_dim();

  if (type == "llama" || type == "mistral") {
    a.kv_heads = optional_dimension(config, {"num_key_value_heads"}, a.heads, a.heads);
    a.ffn = required_dimension(config, {"intermediate_size"}, kMaxFfn);
    a.mlp = MlpKind::kGated;
    a.norm = NormKind::kRmsNorm;
    a.attention_bias = flag(config, "attention_bias", false);
    a.tied_embeddings = flag(config, "tie_word_embeddings", false);
  } else if (type == "gptj") {
    a.kv_heads = a.heads;
    a.ffn = optional_dimension(config, {"n_inner", "intermediate_size"}, kMaxFfn, 4 * a.hidden);
    a.rotary_dim = optional_dimension(config, {"rotary_dim"}, a.head_dim(), a.head_dim());
    a.mlp = MlpKind::kPlain;
    a.norm = NormKind::kLayerNorm;
    a.norm_bias = true;
    a.parallel_residual = true;
    a.norms_per_layer = 1;
    a.mlp_bias = true;
    a.head_bias = true;
    a.tied_embeddings = flag(config, "tie_word_embeddings", false);
  } else {  // falcon
    const bool new_arch = flag(config, "new_decoder_architecture", false);
    if (new_arch) {
      a.kv_heads = optional_dimension(config, {"num_kv_heads", "n_head_kv"}, a.heads, a.heads);
    } else {
      a.kv_heads = flag(config, "multi_query", true) ? 1 : a.heads;
    }
    a.ffn = optional_dimension(config, {"ffn_hidden_size"}, kMaxFfn, 4 * a.hidden);
    a.mlp = MlpKind::kPlain;
    a.norm = NormKind::kLayerNorm;
    a.norm_bias = true;
    a.parallel_residual = flag(config, "parallel_attn", true);
    a.norms_per_layer = (new_arch || !a.parallel_residual) ? 2 : 1;
    a.positions = flag(config, "alibi", false) ? PositionKind::kAlibi : PositionKind::kRotary;
    a.attention_bias = a.mlp_bias = flag(config, "bias", false);
    a.tied_embeddings = flag(config, "tie_word_embeddings", true);
  }
  if (a.heads % a.kv_heads != 0) {
    config.fail("the " + std::to_string(a.heads) + " attention heads are not a multiple of the " +
                std::to_string(a.kv_heads) + " key/value heads");
  }
  return a;
}

LlmArchitecture load_llm_architecture(const std::filesystem::path& config_json) {
  return parse_llm_architecture(SpecNode::load_file(config_json));
}

std::string llm_architecture_to_json(const LlmArchitecture& a) {
  nlohmann::ordered_json j;
  j["_name_or_path"] = a.name;
  j["model_type"] = a.family;
  if (a.family == "gptj") {
    j["architectures"] = {"GPTJForCausalLM"};
    j["n_layer"] = a.layers;
    j["n_embd"] = a.hidden;
    j["n_head"] = a.heads;
    j["n_inner"] = a.ffn;
    j["rotary_dim"] = a.rotary_dim;
    j["n_positions"] = a.max_positions;
    j["vocab_size"] = a.vocab;
    j["activation_function"] = "gelu_new";
    j["layer_norm_epsilon"] = 1e-5;
    j["tie_word_embeddings"] = a.tied_embeddings;
  } else if (a.family == "falcon") {
    const bool new_arch = a.norms_per_layer == 2 && a.parallel_residual;
    j["architectures"] = {"FalconForCausalLM"};
    j["num_hidden_layers"] = a.layers;
    j["hidden_size"] = a.hidden;
    j["num_attention_heads"] = a.heads;
    j["new_decoder_architecture"] = new_arch;
    if (new_arch) j["num_kv_heads"] = a.kv_heads;
    j["multi_query"] = a.kv_heads == 1;
    j["parallel_attn"] = a.parallel_residual;
    j["alibi"] = a.positions == PositionKind::kAlibi;
    j["bias"] = a.mlp_bias;
    j["ffn_hidden_size"] = a.ffn;
    j["vocab_size"] = a.vocab;
    j["max_position_embeddings"] = a.max_positions;
    j["layer_norm_epsilon"] = 1e-5;
    j["tie_word_embeddings"] = a.tied_embeddings;
  } else {
    j["architectures"] = {"LlamaForCausalLM"};
    j["num_hidden_layers"] = a.layers;
    j["hidden_size"] = a.hidden;
    j["num_attention_heads"] = a.heads;
    j["num_key_value_heads"] = a.kv_heads;
    j["intermediate_size"] = a.ffn;
    j["vocab_size"] = a.vocab;
    j["max_position_embeddings"] = a.max_positions;
    j["hidden_act"] = "silu";
    j["rms_norm_eps"] = 1e-5;
    j["attention_bias"] = a.attention_bias;
    j["tie_word_embeddings"] = a.tied_embeddings;
  }
  return j.dump(2) + "\n";
}

}  // namespace tessera
