#include "llm_arch/llm_architecture.hpp"

#include <cmath>
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

namespace {

// Keys of a config.json that do not change what inference computes: metadata, token ids
// (the tokenizer's business), training-only settings (dropout, initialisation, tensor
// parallel pretraining slices, gradient checkpointing) and the generic PretrainedConfig
// switches. Everything else must be a field the family's reader understands.
constexpr std::string_view kInertKeys[] = {"_name_or_path",
                                           "architectures",
                                           "model_type",
                                           "torch_dtype",
                                           "dtype",
                                           "transformers_version",
                                           "auto_map",
                                           "bos_token_id",
                                           "eos_token_id",
                                           "pad_token_id",
                                           "sep_token_id",
                                           "decoder_start_token_id",
                                           "use_cache",
                                           "initializer_range",
                                           "attention_dropout",
                                           "hidden_dropout",
                                           "resid_pdrop",
                                           "embd_pdrop",
                                           "attn_pdrop",
                                           "pretraining_tp",
                                           "gradient_checkpointing",
                                           "return_dict",
                                           "output_attentions",
                                           "output_hidden_states",
                                           "torchscript",
                                           "tie_encoder_decoder",
                                           "is_decoder",
                                           "is_encoder_decoder",
                                           "add_cross_attention",
                                           "tokenizer_class",
                                           "prefix",
                                           "task_specific_params",
                                           "problem_type",
                                           "id2label",
                                           "label2id",
                                           "finetuning_task",
                                           "max_length",
                                           "scale_attn_weights",
                                           "summary_type",
                                           "summary_use_proj",
                                           "summary_activation",
                                           "summary_proj_to_labels",
                                           "summary_first_dropout",
                                           "use_bfloat16",
                                           "model_max_length",
                                           "_attn_implementation",
                                           "pruned_heads",
                                           "chunk_size_feed_forward",
                                           "cross_attention_hidden_size",
                                           "tf_legacy_loss",
                                           "use_sliding_window_attention_mask"};

bool is_inert(std::string_view key) {
  for (std::string_view k : kInertKeys) {
    if (k == key) return true;
  }
  return false;
}

// Every key of `config` must be inert or in `understood`; otherwise a SpecError naming it.
void refuse_unknown_fields(const SpecNode& config,
                           std::initializer_list<std::string_view> understood) {
  for (const auto& [key, node] : config.entries()) {
    if (is_inert(key)) continue;
    bool known = false;
    for (std::string_view k : understood) known = known || k == key;
    if (!known) {
      node.fail("is not a field tessera's engine implements for model_type '" +
                config.at("model_type").as_string() +
                "' (it would change the model's output; docs/llm-serve.md#checkpoints)");
    }
  }
}

// A field that must hold one value (e.g. hidden_act: silu) when present.
void require_value(const SpecNode& config, const char* key,
                   std::initializer_list<std::string_view> ok) {
  auto node = config.get(key);
  if (!node || node->is_null()) return;
  const std::string v = node->as_string();
  for (std::string_view o : ok) {
    if (v == o) return;
  }
  std::string list;
  for (std::string_view o : ok) list += std::string(list.empty() ? "" : ", ") + std::string(o);
  node->fail("'" + v + "' is not implemented (tessera runs: " + list + ")");
}

void require_false(const SpecNode& config, const char* key, const std::string& what) {
  if (flag(config, key, false)) config.at(key).fail("true is not implemented (" + what + ")");
}

RopeSettings parse_rope(const SpecNode& config, int64_t max_positions) {
  RopeSettings r;
  if (auto theta = config.get("rope_theta"); theta && !theta->is_null()) {
    r.theta = theta->as_number_in(1.0 + 1e-9, 1e12);
  }
  auto scaling = config.get("rope_scaling");
  if (!scaling || scaling->is_null()) return r;
  scaling->expect_map();
  std::optional<SpecNode> type_node = scaling->get("rope_type");
  if (!type_node || type_node->is_null()) type_node = scaling->get("type");
  if (!type_node || type_node->is_null()) scaling->fail("missing rope_type (or type)");
  const std::string type = type_node->as_string();
  const auto factor = [&] { return scaling->at("factor").as_number_in(1.0, 1e6); };
  if (type == "default") {
    scaling->allow_only({"rope_type", "type"});
  } else if (type == "linear") {
    scaling->allow_only({"rope_type", "type", "factor"});
    r.scaling = RopeScaling::kLinear;
    r.factor = factor();
  } else if (type == "dynamic") {
    scaling->allow_only({"rope_type", "type", "factor", "original_max_position_embeddings"});
    r.scaling = RopeScaling::kDynamic;
    r.factor = factor();
    if (auto o = scaling->get("original_max_position_embeddings"); o && !o->is_null()) {
      if (o->as_integer() != max_positions) {
        o->fail("differs from max_position_embeddings (" + std::to_string(max_positions) +
                "): dynamic NTK scaling from another trained length is not implemented");
      }
    }
  } else if (type == "llama3") {
    scaling->allow_only({"rope_type", "type", "factor", "low_freq_factor", "high_freq_factor",
                         "original_max_position_embeddings"});
    r.scaling = RopeScaling::kLlama3;
    r.factor = factor();
    r.low_freq_factor = scaling->at("low_freq_factor").as_positive(1e6);
    r.high_freq_factor = scaling->at("high_freq_factor").as_positive(1e6);
    if (r.high_freq_factor <= r.low_freq_factor) {
      scaling->at("high_freq_factor").fail("must be greater than low_freq_factor");
    }
    r.original_max_positions =
        scaling->at("original_max_position_embeddings").as_integer_in(1, kMaxPositions);
  } else if (type == "yarn") {
    scaling->allow_only({"rope_type", "type", "factor", "attention_factor", "beta_fast",
                         "beta_slow", "original_max_position_embeddings"});
    r.scaling = RopeScaling::kYarn;
    r.factor = factor();
    if (auto o = scaling->get("original_max_position_embeddings"); o && !o->is_null()) {
      // As transformers reads it: the trained length, and the factor the ratio of the
      // declared length to it.
      r.original_max_positions = o->as_integer_in(1, max_positions);
      r.factor = static_cast<double>(max_positions) / static_cast<double>(r.original_max_positions);
    }
    r.attention_factor = 0.1 * std::log(r.factor) + 1.0;
    if (auto a = scaling->get("attention_factor"); a && !a->is_null()) {
      r.attention_factor = a->as_positive(1e3);
    }
    if (auto b = scaling->get("beta_fast"); b && !b->is_null()) r.beta_fast = b->as_positive(1e6);
    if (auto b = scaling->get("beta_slow"); b && !b->is_null()) r.beta_slow = b->as_positive(1e6);
    if (r.beta_fast < r.beta_slow) scaling->at("beta_fast").fail("must be at least beta_slow");
  } else {
    type_node->fail("rope type '" + type +
                    "' is not implemented (tessera runs: default, linear, dynamic, llama3, yarn)");
  }
  return r;
}

// The norm's epsilon, or the family's default in transformers (`fallback`).
double norm_epsilon(const SpecNode& config, const char* key, double fallback) {
  if (auto node = config.get(key); node && !node->is_null()) return node->as_number_in(1e-12, 1.0);
  return fallback;
}

}  // namespace

std::string_view family_name(ModelFamily family) {
  switch (family) {
    case ModelFamily::kLlama:
      return "llama";
    case ModelFamily::kMistral:
      return "mistral";
    case ModelFamily::kGptj:
      return "gptj";
    case ModelFamily::kFalcon:
      return "falcon";
  }
  return "?";
}

std::string_view rope_scaling_name(RopeScaling scaling) {
  switch (scaling) {
    case RopeScaling::kNone:
      return "default";
    case RopeScaling::kLinear:
      return "linear";
    case RopeScaling::kDynamic:
      return "dynamic";
    case RopeScaling::kLlama3:
      return "llama3";
    case RopeScaling::kYarn:
      return "yarn";
  }
  return "?";
}

int64_t LlmArchitecture::context_length() const {
  if (positions == PositionKind::kRotary && rope.scaling == RopeScaling::kDynamic) {
    return std::min<int64_t>(
        kMaxPositions, static_cast<int64_t>(static_cast<double>(max_positions) * rope.factor));
  }
  return max_positions;
}

LlmArchitecture parse_llm_architecture(const SpecNode& config) {
  config.expect_map();
  LlmArchitecture a;
  const std::string type = config.at("model_type").as_string();
  if (type == "llama") {
    a.family = ModelFamily::kLlama;
  } else if (type == "mistral") {
    a.family = ModelFamily::kMistral;
  } else if (type == "gptj") {
    a.family = ModelFamily::kGptj;
  } else if (type == "falcon" || type == "RefinedWeb" || type == "RefinedWebModel") {
    a.family = ModelFamily::kFalcon;
  } else {
    config.at("model_type")
        .fail("unsupported model_type '" + type + "' (supported: llama, mistral, gptj, falcon)");
  }
  a.name = config.string_or("_name_or_path", "");
  if (a.name.empty()) a.name = std::filesystem::path(config.file()).parent_path().filename();
  a.layers = required_dimension(config, {"num_hidden_layers", "n_layer"}, kMaxLayers);
  a.hidden = required_dimension(config, {"hidden_size", "n_embd", "n_embed"}, kMaxHidden);
  a.heads = required_dimension(config, {"num_attention_heads", "n_head"}, a.hidden);
  if (a.hidden % a.heads != 0) {
    config.fail("hidden size " + std::to_string(a.hidden) + " is not a multiple of the " +
                std::to_string(a.heads) + " attention heads");
  }
  a.vocab = required_dimension(config, {"vocab_size"}, kMaxVocab);
  a.max_positions =
      optional_dimension(config, {"max_position_embeddings", "n_positions"}, kMaxPositions, 2048);
  a.rotary_dim = a.head_dim();
  if (auto hd = config.get("head_dim"); hd && !hd->is_null() && hd->as_integer() != a.head_dim()) {
    hd->fail("a head size other than hidden_size / num_attention_heads (" +
             std::to_string(a.head_dim()) + ") is not implemented");
  }

  if (a.family == ModelFamily::kLlama || a.family == ModelFamily::kMistral) {
    refuse_unknown_fields(
        config, {"num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads",
                 "intermediate_size", "vocab_size", "max_position_embeddings", "rms_norm_eps",
                 "hidden_act", "rope_theta", "rope_scaling", "attention_bias", "mlp_bias",
                 "tie_word_embeddings", "head_dim", "sliding_window"});
    require_value(config, "hidden_act", {"silu"});
    require_false(config, "mlp_bias", "biases on the MLP projections of a Llama");
    a.kv_heads = optional_dimension(config, {"num_key_value_heads"}, a.heads, a.heads);
    a.ffn = required_dimension(config, {"intermediate_size"}, kMaxFfn);
    a.mlp = MlpKind::kGated;
    a.norm = NormKind::kRmsNorm;
    a.norm_eps = norm_epsilon(config, "rms_norm_eps", 1e-6);
    a.attention_bias = flag(config, "attention_bias", false);
    a.tied_embeddings = flag(config, "tie_word_embeddings", false);
    a.rope = parse_rope(config, a.max_positions);
    if (auto w = config.get("sliding_window"); w && !w->is_null()) {
      if (a.family != ModelFamily::kMistral) {
        w->fail("a sliding window is implemented for model_type 'mistral' only");
      }
      a.sliding_window = w->as_integer_in(1, kMaxPositions);
      if (a.sliding_window >= a.context_length()) a.sliding_window = 0;  // sees everything
    }
  } else if (a.family == ModelFamily::kGptj) {
    refuse_unknown_fields(config, {"n_layer", "n_embd", "n_head", "n_inner", "n_positions",
                                   "rotary_dim", "vocab_size", "activation_function",
                                   "layer_norm_epsilon", "tie_word_embeddings", "n_ctx", "rotary"});
    require_value(config, "activation_function", {"gelu_new"});
    if (auto rotary = config.get("rotary"); rotary && !rotary->is_null() && !rotary->as_bool()) {
      rotary->fail("false (no position embedding) is not implemented");
    }
    a.kv_heads = a.heads;
    a.ffn = optional_dimension(config, {"n_inner", "intermediate_size"}, kMaxFfn, 4 * a.hidden);
    a.rotary_dim = optional_dimension(config, {"rotary_dim"}, a.head_dim(), a.head_dim());
    if (a.rotary_dim % 2 != 0) config.at("rotary_dim").fail("must be even");
    a.mlp = MlpKind::kPlain;
    a.norm = NormKind::kLayerNorm;
    a.norm_eps = norm_epsilon(config, "layer_norm_epsilon", 1e-5);
    a.norm_bias = true;
    a.parallel_residual = true;
    a.norms_per_layer = 1;
    a.mlp_bias = true;
    a.head_bias = true;
    a.tied_embeddings = flag(config, "tie_word_embeddings", false);
  } else {  // falcon
    refuse_unknown_fields(config, {"num_hidden_layers",
                                   "n_layer",
                                   "hidden_size",
                                   "n_embed",
                                   "num_attention_heads",
                                   "n_head",
                                   "num_kv_heads",
                                   "n_head_kv",
                                   "multi_query",
                                   "new_decoder_architecture",
                                   "parallel_attn",
                                   "alibi",
                                   "bias",
                                   "vocab_size",
                                   "layer_norm_epsilon",
                                   "rope_theta",
                                   "rope_scaling",
                                   "max_position_embeddings",
                                   "ffn_hidden_size",
                                   "activation",
                                   "num_ln_in_parallel_attn",
                                   "tie_word_embeddings",
                                   "apply_residual_connection_post_layernorm",
                                   "head_dim"});
    require_value(config, "activation", {"gelu"});
    require_false(config, "apply_residual_connection_post_layernorm",
                  "the residual taken after the layer norm");
    const bool new_arch = flag(config, "new_decoder_architecture", false);
    if (new_arch) {
      a.kv_heads = optional_dimension(config, {"num_kv_heads", "n_head_kv"}, a.heads, a.heads);
    } else {
      a.kv_heads = flag(config, "multi_query", true) ? 1 : a.heads;
    }
    a.ffn = optional_dimension(config, {"ffn_hidden_size"}, kMaxFfn, 4 * a.hidden);
    a.mlp = MlpKind::kPlain;
    a.norm = NormKind::kLayerNorm;
    a.norm_eps = norm_epsilon(config, "layer_norm_epsilon", 1e-5);
    a.norm_bias = true;
    a.parallel_residual = flag(config, "parallel_attn", true);
    a.norms_per_layer = (new_arch || !a.parallel_residual) ? 2 : 1;
    if (auto n = config.get("num_ln_in_parallel_attn"); n && !n->is_null()) {
      const int64_t expected = new_arch ? 2 : 1;
      if (n->as_integer() != expected) {
        n->fail("is implemented only as " + std::to_string(expected) +
                " (the norms the decoder architecture implies)");
      }
    }
    a.positions = flag(config, "alibi", false) ? PositionKind::kAlibi : PositionKind::kRotary;
    a.attention_bias = a.mlp_bias = flag(config, "bias", false);
    a.tied_embeddings = flag(config, "tie_word_embeddings", true);
    a.rope = parse_rope(config, a.max_positions);
    if (a.rope.scaling == RopeScaling::kLlama3 || a.rope.scaling == RopeScaling::kYarn) {
      config.at("rope_scaling").fail("Falcon models take linear or dynamic scaling only");
    }
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

namespace {

void rope_to_json(const RopeSettings& r, nlohmann::ordered_json& j) {
  j["rope_theta"] = r.theta;
  if (r.scaling == RopeScaling::kNone) return;
  nlohmann::ordered_json s;
  s["rope_type"] = std::string(rope_scaling_name(r.scaling));
  s["factor"] = r.factor;
  if (r.scaling == RopeScaling::kLlama3) {
    s["low_freq_factor"] = r.low_freq_factor;
    s["high_freq_factor"] = r.high_freq_factor;
    s["original_max_position_embeddings"] = r.original_max_positions;
  } else if (r.scaling == RopeScaling::kYarn) {
    s["attention_factor"] = r.attention_factor;
    s["beta_fast"] = r.beta_fast;
    s["beta_slow"] = r.beta_slow;
    if (r.original_max_positions > 0) {
      s["original_max_position_embeddings"] = r.original_max_positions;
    }
  }
  j["rope_scaling"] = s;
}

}  // namespace

std::string llm_architecture_to_json(const LlmArchitecture& a) {
  nlohmann::ordered_json j;
  j["_name_or_path"] = a.name;
  j["model_type"] = std::string(family_name(a.family));
  if (a.family == ModelFamily::kGptj) {
    j["architectures"] = {"GPTJForCausalLM"};
    j["n_layer"] = a.layers;
    j["n_embd"] = a.hidden;
    j["n_head"] = a.heads;
    j["n_inner"] = a.ffn;
    j["rotary_dim"] = a.rotary_dim;
    j["n_positions"] = a.max_positions;
    j["vocab_size"] = a.vocab;
    j["activation_function"] = "gelu_new";
    j["layer_norm_epsilon"] = a.norm_eps;
    j["tie_word_embeddings"] = a.tied_embeddings;
  } else if (a.family == ModelFamily::kFalcon) {
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
    j["layer_norm_epsilon"] = a.norm_eps;
    j["tie_word_embeddings"] = a.tied_embeddings;
    rope_to_json(a.rope, j);
  } else {
    j["architectures"] = {a.family == ModelFamily::kMistral ? "MistralForCausalLM"
                                                            : "LlamaForCausalLM"};
    j["num_hidden_layers"] = a.layers;
    j["hidden_size"] = a.hidden;
    j["num_attention_heads"] = a.heads;
    j["num_key_value_heads"] = a.kv_heads;
    j["intermediate_size"] = a.ffn;
    j["vocab_size"] = a.vocab;
    j["max_position_embeddings"] = a.max_positions;
    j["hidden_act"] = "silu";
    j["rms_norm_eps"] = a.norm_eps;
    j["attention_bias"] = a.attention_bias;
    j["tie_word_embeddings"] = a.tied_embeddings;
    rope_to_json(a.rope, j);
    if (a.family == ModelFamily::kMistral) {
      j["sliding_window"] = a.sliding_window > 0 ? nlohmann::ordered_json(a.sliding_window)
                                                 : nlohmann::ordered_json();
    }
  }
  return j.dump(2) + "\n";
}

}  // namespace tessera
