#include "llm_torch/decoder.hpp"

#include <torch/torch.h>

#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/error.hpp"
#include "llm_arch/checkpoint_layout.hpp"
#include "llm_arch/safetensors.hpp"

namespace tessera {
namespace {

// Every tensor of a checkpoint folder, found by name across its shards.
class CheckpointReader {
 public:
  explicit CheckpointReader(const std::filesystem::path& dir) {
    for (const auto& file : checkpoint_files(dir)) {
      files_.push_back({file, read_safetensors_index(file)});
    }
  }

  bool has(const std::string& name) const { return locate(name) != nullptr; }

  // The tensor as FP32, checked against `shape`.
  torch::Tensor load(const std::string& name, const std::vector<int64_t>& shape) const {
    const Entry* entry = locate(name);
    if (entry == nullptr) throw SpecError(first_file(), "tensor '" + name + "'", "is missing");
    const TensorInfo& info = *entry->index.find(name);
    if (info.shape != shape) {
      throw SpecError(
          entry->file.string(), "tensor '" + name + "'",
          "has shape " + shape_text(info.shape) + " but the config needs " + shape_text(shape));
    }
    std::vector<char> bytes = read_tensor_bytes(entry->file, entry->index, info);
    torch::ScalarType type;
    switch (info.dtype) {
      case Dtype::kF16:
        type = torch::kHalf;
        break;
      case Dtype::kBF16:
        type = torch::kBFloat16;
        break;
      case Dtype::kF32:
        type = torch::kFloat;
        break;
      case Dtype::kF64:
        type = torch::kDouble;
        break;
      default:
        throw SpecError(
            entry->file.string(), "tensor '" + name + "'",
            "has dtype " + to_string(info.dtype) + " (weights are F16, BF16, F32 or F64)");
    }
    return torch::from_blob(bytes.data(), shape, type).to(torch::kFloat).clone();
  }

 private:
  struct Entry {
    std::filesystem::path file;
    SafetensorsIndex index;
  };
  const Entry* locate(const std::string& name) const {
    for (const Entry& e : files_) {
      if (e.index.find(name) != nullptr) return &e;
    }
    return nullptr;
  }
  std::string first_file() const { return files_.empty() ? "" : files_.front().file.string(); }
  static std::string shape_text(const std::vector<int64_t>& shape) {
    std::string out = "[";
    for (std::size_t i = 0; i < shape.size(); ++i)
      out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "]";
  }
  std::vector<Entry> files_;
};

uint64_t tensor_bytes(const torch::Tensor& t) {
  return t.defined() ? static_cast<uint64_t>(t.numel()) * t.element_size() : 0;
}

// A linear layer y = x W^T + b, its weight held as loaded (FP32 here) or weight-only
// quantised with one scale per output channel: INT8 (w = q s) or INT4 packed two to a
// byte (w = (q - 8) s). Quantised weights are expanded to FP32 at each call — the
// dequantisation cost iServe §3.2 observes — so they save memory, not time, on the CPU.
class Linear {
 public:
  Linear() = default;
  Linear(torch::Tensor weight, torch::Tensor bias, WeightQuant mode) : bias_(std::move(bias)) {
    out_ = weight.size(0);
    in_ = weight.size(1);
    mode_ = mode;
    if (mode == WeightQuant::kFp16 || mode == WeightQuant::kGptq4) {
      mode_ = WeightQuant::kFp16;
      weight_ = weight;
      return;
    }
    const int64_t levels = mode == WeightQuant::kInt8 ? 127 : 7;
    scale_ = weight.abs().amax(1, true).clamp_min(1e-12) / static_cast<double>(levels);
    torch::Tensor q =
        torch::round(weight / scale_).clamp(-levels - (mode == WeightQuant::kInt4 ? 1 : 0), levels);
    if (mode == WeightQuant::kInt8) {
      quantised_ = q.to(torch::kChar);
      return;
    }
    if (in_ % 2 != 0) q = torch::constant_pad_nd(q, {0, 1}, 0);
    q = (q + 8).to(torch::kUInt8);  // 0..15
    using torch::indexing::Slice;
    quantised_ = (q.index({Slice(), Slice(0, torch::indexing::None, 2)}) +
                  q.index({Slice(), Slice(1, torch::indexing::None, 2)}) * 16)
                     .to(torch::kUInt8);
  }

  torch::Tensor weight() const {
    if (mode_ == WeightQuant::kFp16) return weight_;
    if (mode_ == WeightQuant::kInt8) return quantised_.to(torch::kFloat) * scale_;
    const torch::Tensor packed = quantised_.to(torch::kShort);
    const torch::Tensor low = torch::remainder(packed, 16);
    const torch::Tensor high = torch::floor_divide(packed, 16);
    torch::Tensor q = torch::stack({low, high}, -1).reshape({out_, -1});
    using torch::indexing::Slice;
    if (q.size(1) != in_) q = q.index({Slice(), Slice(0, in_)});
    return (q.to(torch::kFloat) - 8.0) * scale_;
  }

  torch::Tensor operator()(const torch::Tensor& x) const {
    torch::Tensor y = torch::matmul(x, weight().t());
    return bias_.defined() ? y + bias_ : y;
  }

  uint64_t bytes() const {
    return tensor_bytes(weight_) + tensor_bytes(quantised_) + tensor_bytes(scale_) +
           tensor_bytes(bias_);
  }

 private:
  WeightQuant mode_ = WeightQuant::kFp16;
  int64_t out_ = 0, in_ = 0;
  torch::Tensor weight_, quantised_, scale_, bias_;
};

struct Norm {
  torch::Tensor weight, bias;
  bool rms = true;
  torch::Tensor operator()(const torch::Tensor& x) const {
    if (rms) return x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-5) * weight;
    return torch::layer_norm(x, {x.size(-1)}, weight, bias, 1e-5);
  }
  uint64_t bytes() const { return tensor_bytes(weight) + tensor_bytes(bias); }
};

struct Layer {
  Norm attn_norm, mlp_norm;  // mlp_norm unused when one norm feeds both (parallel, shared)
  bool shared_norm = false;
  Linear q, k, v, o;  // Falcon: q holds the fused query_key_value
  bool fused_qkv = false;
  Linear gate, up, down;  // gate unused for a plain MLP
};

// One KV cache per layer: [kv_heads, capacity, head_dim], FP32 or INT8 with a scale per
// (head, token).
class KvSequence final : public Decoder::Sequence {
 public:
  KvSequence(int64_t layers, int64_t kv_heads, int64_t capacity, int64_t head_dim, bool int8)
      : capacity_(capacity), int8_(int8) {
    const auto type = int8 ? torch::kChar : torch::kFloat;
    for (int64_t i = 0; i < layers; ++i) {
      k_.push_back(torch::zeros({kv_heads, capacity, head_dim}, type));
      v_.push_back(torch::zeros({kv_heads, capacity, head_dim}, type));
      if (int8) {
        k_scale_.push_back(torch::zeros({kv_heads, capacity, 1}));
        v_scale_.push_back(torch::zeros({kv_heads, capacity, 1}));
      }
    }
  }

  int64_t length() const override { return length_; }
  int64_t capacity() const { return capacity_; }
  uint64_t kv_bytes() const override {
    uint64_t per_token = 0;
    for (std::size_t i = 0; i < k_.size(); ++i) {
      per_token += 2 * tensor_bytes(k_[i]) / static_cast<uint64_t>(capacity_);
      if (int8_) per_token += 2 * tensor_bytes(k_scale_[i]) / static_cast<uint64_t>(capacity_);
    }
    return per_token * static_cast<uint64_t>(length_);
  }

  // Stores k, v ([kv_heads, T, head_dim]) at positions [length, length + T) of `layer` and
  // returns the whole cache of that layer up to the new end.
  std::pair<torch::Tensor, torch::Tensor> append(std::size_t layer, const torch::Tensor& k,
                                                 const torch::Tensor& v) {
    using torch::indexing::Slice;
    const int64_t t = k.size(1), end = length_ + t;
    const auto span = Slice(length_, end);
    const auto upto = Slice(0, end);
    if (!int8_) {
      k_[layer].index_put_({Slice(), span}, k);
      v_[layer].index_put_({Slice(), span}, v);
      return {k_[layer].index({Slice(), upto}), v_[layer].index({Slice(), upto})};
    }
    store_int8(k_[layer], k_scale_[layer], span, k);
    store_int8(v_[layer], v_scale_[layer], span, v);
    return {
        k_[layer].index({Slice(), upto}).to(torch::kFloat) * k_scale_[layer].index({Slice(), upto}),
        v_[layer].index({Slice(), upto}).to(torch::kFloat) *
            v_scale_[layer].index({Slice(), upto})};
  }
  void advance(int64_t tokens) { length_ += tokens; }

 private:
  static void store_int8(torch::Tensor& cache, torch::Tensor& scales,
                         const torch::indexing::Slice& span, const torch::Tensor& x) {
    const torch::Tensor scale = x.abs().amax(-1, true).clamp_min(1e-12) / 127.0;
    cache.index_put_({torch::indexing::Slice(), span},
                     torch::round(x / scale).clamp(-127, 127).to(torch::kChar));
    scales.index_put_({torch::indexing::Slice(), span}, scale);
  }

  int64_t capacity_;
  bool int8_;
  int64_t length_ = 0;
  std::vector<torch::Tensor> k_, v_, k_scale_, v_scale_;
};

class TorchDecoder final : public Decoder {
 public:
  TorchDecoder(const std::filesystem::path& dir, const DecoderOptions& options)
      : options_(options) {
    arch_ = load_llm_architecture(dir / "config.json");
    const CheckpointReader ckpt(dir);
    load_weights(ckpt);
  }

  const LlmArchitecture& architecture() const override { return arch_; }

  uint64_t weight_bytes() const override {
    uint64_t total = tensor_bytes(embedding_) + final_norm_.bytes() + head_.bytes();
    for (const Layer& l : layers_) {
      total += l.attn_norm.bytes() + l.mlp_norm.bytes();
      for (const Linear* lin : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) {
        total += lin->bytes();
      }
    }
    return total;
  }

  std::unique_ptr<Sequence> start(int64_t max_tokens) const override {
    if (max_tokens < 1 || max_tokens > arch_.max_positions) {
      throw std::invalid_argument("a sequence holds 1.." + std::to_string(arch_.max_positions) +
                                  " tokens, not " + std::to_string(max_tokens));
    }
    return std::make_unique<KvSequence>(arch_.layers, arch_.kv_heads, max_tokens, arch_.head_dim(),
                                        options_.kv_cache == KvQuant::kInt8);
  }

  std::vector<float> step(Sequence& sequence, const std::vector<int64_t>& tokens) const override {
    auto& seq = dynamic_cast<KvSequence&>(sequence);
    if (tokens.empty()) throw std::invalid_argument("a step needs at least one token");
    if (seq.length() + static_cast<int64_t>(tokens.size()) > seq.capacity()) {
      throw std::invalid_argument("the sequence is full (" + std::to_string(seq.capacity()) +
                                  " tokens)");
    }
    for (int64_t id : tokens) {
      if (id < 0 || id >= arch_.vocab) {
        throw std::invalid_argument("token id " + std::to_string(id) +
                                    " is outside the vocabulary of " + std::to_string(arch_.vocab));
      }
    }
    torch::NoGradGuard no_grad;
    const auto t = static_cast<int64_t>(tokens.size());
    const torch::Tensor ids = torch::tensor(tokens, torch::kLong);
    torch::Tensor x = embedding_.index_select(0, ids);  // [T, hidden]
    const auto [cos, sin] = rotary(seq.length(), t);
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      const Layer& l = layers_[i];
      const torch::Tensor h = l.attn_norm(x);
      const torch::Tensor attn = attention(l, i, h, cos, sin, seq);
      if (arch_.parallel_residual) {
        x = x + attn + mlp(l, l.shared_norm ? h : l.mlp_norm(x));
      } else {
        x = x + attn;
        x = x + mlp(l, l.mlp_norm(x));
      }
    }
    seq.advance(t);
    const torch::Tensor last = final_norm_(x.index({t - 1}));
    const torch::Tensor logits = head_(last).contiguous();
    return std::vector<float>(logits.data_ptr<float>(), logits.data_ptr<float>() + logits.numel());
  }

 private:
  Linear linear(const CheckpointReader& ckpt, const std::string& name, int64_t out, int64_t in,
                bool bias, WeightQuant mode) const {
    return Linear(ckpt.load(name + ".weight", {out, in}),
                  bias ? ckpt.load(name + ".bias", {out}) : torch::Tensor(), mode);
  }
  Norm norm(const CheckpointReader& ckpt, const std::string& name) const {
    Norm n;
    n.rms = arch_.norm == NormKind::kRmsNorm;
    n.weight = ckpt.load(name + ".weight", {arch_.hidden});
    if (arch_.norm_bias) n.bias = ckpt.load(name + ".bias", {arch_.hidden});
    return n;
  }

  void load_weights(const CheckpointReader& ckpt) {
    const int64_t h = arch_.hidden, kv = arch_.kv_heads * arch_.head_dim(), f = arch_.ffn;
    const WeightQuant wq = options_.weights;
    const std::string family = arch_.family;
    const bool gptj = family == "gptj", falcon = family == "falcon";
    const std::string embed = gptj     ? "transformer.wte.weight"
                              : falcon ? "transformer.word_embeddings.weight"
                                       : "model.embed_tokens.weight";
    embedding_ = ckpt.load(embed, {arch_.vocab, h});
    for (int64_t i = 0; i < arch_.layers; ++i) {
      Layer l;
      const std::string p =
          (gptj || falcon ? "transformer.h." : "model.layers.") + std::to_string(i) + ".";
      if (gptj) {
        l.attn_norm = norm(ckpt, p + "ln_1");
        l.shared_norm = true;
        l.q = linear(ckpt, p + "attn.q_proj", h, h, false, wq);
        l.k = linear(ckpt, p + "attn.k_proj", h, h, false, wq);
        l.v = linear(ckpt, p + "attn.v_proj", h, h, false, wq);
        l.o = linear(ckpt, p + "attn.out_proj", h, h, false, wq);
        l.up = linear(ckpt, p + "mlp.fc_in", f, h, true, wq);
        l.down = linear(ckpt, p + "mlp.fc_out", h, f, true, wq);
      } else if (falcon) {
        if (arch_.norms_per_layer == 1) {
          l.attn_norm = norm(ckpt, p + "input_layernorm");
          l.shared_norm = true;
        } else if (arch_.parallel_residual) {
          l.attn_norm = norm(ckpt, p + "ln_attn");
          l.mlp_norm = norm(ckpt, p + "ln_mlp");
        } else {
          l.attn_norm = norm(ckpt, p + "input_layernorm");
          l.mlp_norm = norm(ckpt, p + "post_attention_layernorm");
        }
        l.fused_qkv = true;
        l.q = linear(ckpt, p + "self_attention.query_key_value", h + 2 * kv, h,
                     arch_.attention_bias, wq);
        l.o = linear(ckpt, p + "self_attention.dense", h, h, arch_.attention_bias, wq);
        l.up = linear(ckpt, p + "mlp.dense_h_to_4h", f, h, arch_.mlp_bias, wq);
        l.down = linear(ckpt, p + "mlp.dense_4h_to_h", h, f, arch_.mlp_bias, wq);
      } else {
        l.attn_norm = norm(ckpt, p + "input_layernorm");
        l.mlp_norm = norm(ckpt, p + "post_attention_layernorm");
        const bool ab = arch_.attention_bias;
        l.q = linear(ckpt, p + "self_attn.q_proj", h, h, ab, wq);
        l.k = linear(ckpt, p + "self_attn.k_proj", kv, h, ab, wq);
        l.v = linear(ckpt, p + "self_attn.v_proj", kv, h, ab, wq);
        l.o = linear(ckpt, p + "self_attn.o_proj", h, h, ab, wq);
        l.gate = linear(ckpt, p + "mlp.gate_proj", f, h, false, wq);
        l.up = linear(ckpt, p + "mlp.up_proj", f, h, false, wq);
        l.down = linear(ckpt, p + "mlp.down_proj", h, f, false, wq);
      }
      layers_.push_back(std::move(l));
    }
    final_norm_ = norm(ckpt, gptj || falcon ? "transformer.ln_f" : "model.norm");
    // The embedding and the LM head stay as loaded (weight-only schemes keep them so).
    const torch::Tensor head_bias =
        arch_.head_bias ? ckpt.load("lm_head.bias", {arch_.vocab}) : torch::Tensor();
    head_ =
        Linear(arch_.tied_embeddings ? embedding_ : ckpt.load("lm_head.weight", {arch_.vocab, h}),
               head_bias, WeightQuant::kFp16);
  }

  // cos and sin of the rotary angles for positions [start, start + t): [t, 1, rotary_dim],
  // laid out for the family's rotation (halves, or interleaved pairs for GPT-J).
  std::pair<torch::Tensor, torch::Tensor> rotary(int64_t start, int64_t t) const {
    const int64_t rd = arch_.rotary_dim;
    const torch::Tensor inv_freq =
        torch::pow(10000.0, -torch::arange(0, rd, 2, torch::kFloat) / static_cast<double>(rd));
    const torch::Tensor pos = torch::arange(start, start + t, torch::kFloat);
    torch::Tensor freqs = torch::outer(pos, inv_freq);  // [t, rd/2]
    freqs =
        arch_.family == "gptj" ? freqs.repeat_interleave(2, -1) : torch::cat({freqs, freqs}, -1);
    return {freqs.cos().unsqueeze(1), freqs.sin().unsqueeze(1)};
  }

  torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos,
                       const torch::Tensor& sin) const {
    using torch::indexing::Slice;
    const int64_t rd = arch_.rotary_dim;
    const torch::Tensor part = x.index({"...", Slice(0, rd)});
    torch::Tensor turned;
    if (arch_.family == "gptj") {  // pairs (2i, 2i+1)
      const torch::Tensor even = part.index({"...", Slice(0, torch::indexing::None, 2)});
      const torch::Tensor odd = part.index({"...", Slice(1, torch::indexing::None, 2)});
      turned = torch::stack({-odd, even}, -1).flatten(-2);
    } else {  // halves
      turned = torch::cat(
          {-part.index({"...", Slice(rd / 2, rd)}), part.index({"...", Slice(0, rd / 2)})}, -1);
    }
    const torch::Tensor rotated = part * cos + turned * sin;
    if (rd == x.size(-1)) return rotated;
    return torch::cat({rotated, x.index({"...", Slice(rd, torch::indexing::None)})}, -1);
  }

  torch::Tensor attention(const Layer& l, std::size_t index, const torch::Tensor& h,
                          const torch::Tensor& cos, const torch::Tensor& sin,
                          KvSequence& seq) const {
    using torch::indexing::Slice;
    const int64_t t = h.size(0), hd = arch_.head_dim(), heads = arch_.heads, kvh = arch_.kv_heads;
    torch::Tensor q, k, v;
    if (l.fused_qkv) {
      const torch::Tensor qkv = l.q(h);
      if (arch_.norms_per_layer == 2 && arch_.parallel_residual) {  // grouped: per KV head
        const torch::Tensor g = qkv.view({t, kvh, heads / kvh + 2, hd});
        q = g.index({Slice(), Slice(), Slice(0, heads / kvh)}).reshape({t, heads, hd});
        k = g.index({Slice(), Slice(), heads / kvh});
        v = g.index({Slice(), Slice(), heads / kvh + 1});
      } else if (kvh == heads) {  // Falcon without multi-query: (q, k, v) per head
        const torch::Tensor g = qkv.view({t, heads, 3, hd});
        q = g.index({Slice(), Slice(), 0});
        k = g.index({Slice(), Slice(), 1});
        v = g.index({Slice(), Slice(), 2});
      } else {  // multi-query: the queries, then one key and one value head
        q = qkv.index({Slice(), Slice(0, heads * hd)}).view({t, heads, hd});
        k = qkv.index({Slice(), Slice(heads * hd, (heads + kvh) * hd)}).view({t, kvh, hd});
        v = qkv.index({Slice(), Slice((heads + kvh) * hd, torch::indexing::None)})
                .view({t, kvh, hd});
      }
    } else {
      q = l.q(h).view({t, heads, hd});
      k = l.k(h).view({t, kvh, hd});
      v = l.v(h).view({t, kvh, hd});
    }
    if (arch_.positions == PositionKind::kRotary) {
      q = rotate(q, cos, sin);
      k = rotate(k, cos, sin);
    }
    auto [keys, values] = seq.append(index, k.transpose(0, 1), v.transpose(0, 1));
    if (kvh != heads) {
      keys = keys.repeat_interleave(heads / kvh, 0);
      values = values.repeat_interleave(heads / kvh, 0);
    }
    const int64_t total = keys.size(1), start = total - t;
    torch::Tensor scores = torch::matmul(q.transpose(0, 1), keys.transpose(1, 2)) /
                           std::sqrt(static_cast<double>(hd));  // [heads, t, total]
    if (t > 1) {
      const torch::Tensor future = torch::ones({t, total}, torch::kBool).triu(start + 1);
      scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
    }
    const torch::Tensor out = torch::matmul(torch::softmax(scores, -1), values);  // [heads, t, hd]
    return l.o(out.transpose(0, 1).reshape({t, heads * hd}));
  }

  torch::Tensor mlp(const Layer& l, const torch::Tensor& x) const {
    if (arch_.mlp == MlpKind::kGated) return l.down(torch::silu(l.gate(x)) * l.up(x));
    const torch::Tensor up = l.up(x);
    return l.down(arch_.family == "gptj" ? torch::gelu(up, "tanh") : torch::gelu(up));
  }

  DecoderOptions options_;
  LlmArchitecture arch_;
  torch::Tensor embedding_;
  std::vector<Layer> layers_;
  Norm final_norm_;
  Linear head_;
};

}  // namespace

std::unique_ptr<Decoder> Decoder::load(const std::filesystem::path& dir,
                                       const DecoderOptions& options) {
  return std::make_unique<TorchDecoder>(dir, options);
}

std::vector<int64_t> Decoder::generate(const std::vector<int64_t>& prompt,
                                       int64_t new_tokens) const {
  const auto seq = start(static_cast<int64_t>(prompt.size()) + new_tokens);
  std::vector<int64_t> out;
  std::vector<float> logits = step(*seq, prompt);
  for (int64_t i = 0; i < new_tokens; ++i) {
    const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
    out.push_back(best);
    if (i + 1 < new_tokens) logits = step(*seq, {best});
  }
  return out;
}

}  // namespace tessera
