#include "llm_torch/decoder.hpp"

#include <torch/cuda.h>
#include <torch/torch.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "llm_arch/checkpoint_layout.hpp"
#include "llm_arch/safetensors.hpp"
#include "llm_torch/memory_meter.hpp"
#include "llm_torch/shard_pool.hpp"

namespace tessera {
namespace {

// Every tensor of a checkpoint folder, found by name across its shards.
class CheckpointReader {
 public:
  // Tensors are returned on `device`.
  CheckpointReader(const std::filesystem::path& dir, c10::Device device) : device_(device) {
    for (const auto& file : checkpoint_files(dir)) {
      files_.push_back({file, read_safetensors_index(file)});
    }
  }

  bool has(const std::string& name) const { return locate(name) != nullptr; }

  // The tensor in the checkpoint's dtype (F64 becomes F32), checked against `shape`.
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
    torch::Tensor t = torch::from_blob(bytes.data(), shape, type);
    t = type == torch::kDouble ? t.to(torch::kFloat) : t.clone();
    return t.to(device_);
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
  c10::Device device_;
};

uint64_t tensor_bytes(const torch::Tensor& t) {
  return t.defined() ? static_cast<uint64_t>(t.numel()) * t.element_size() : 0;
}

// A linear layer y = x W^T + b (FP32 arithmetic), its weight held in the checkpoint's dtype
// or weight-only quantised with one scale per output channel: INT8 (w = q s) or INT4
// packed two to a byte (w = (q - 8) s). An FP32 weight is multiplied directly; BF16, FP16
// and quantised weights are expanded to FP32 at each call — the dequantisation cost iServe
// §3.2 observes — so they save memory, not time, on the CPU. The expansion goes tile by
// tile (kTileBytes of FP32 rows at a time) into one small buffer, as a GPU's weight-only
// kernel expands in registers: a call never holds the whole FP32 weight, so its time and
// peak memory do not depend on how the allocator serves a layer-sized block (large blocks
// are fresh pages from the kernel at every call).
class Linear {
 public:
  Linear() = default;
  Linear(torch::Tensor weight, torch::Tensor bias, WeightQuant mode)
      : bias_(bias.defined() ? bias.to(torch::kFloat) : bias) {
    out_ = weight.size(0);
    in_ = weight.size(1);
    mode_ = mode;
    if (mode == WeightQuant::kFp16 || mode == WeightQuant::kGptq4) {
      mode_ = WeightQuant::kFp16;
      weight_ = weight;
      return;
    }
    const torch::Tensor w = weight.to(torch::kFloat);
    const int64_t levels = mode == WeightQuant::kInt8 ? 127 : 7;
    scale_ = w.abs().amax(1, true).clamp_min(1e-12) / static_cast<double>(levels);
    torch::Tensor q =
        torch::round(w / scale_).clamp(-levels - (mode == WeightQuant::kInt4 ? 1 : 0), levels);
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

  torch::Tensor operator()(const torch::Tensor& x) const {
    if (mode_ == WeightQuant::kFp16 && weight_.scalar_type() == torch::kFloat) {
      torch::Tensor y = torch::matmul(x, weight_.t());
      return bias_.defined() ? y + bias_ : y;
    }
    // y^T = w x^T tile by tile (rows of w are contiguous, and so are rows of y^T), then
    // (quantised) each output channel times its scale.
    std::vector<int64_t> shape = x.sizes().vec();
    const torch::Tensor x2 = x.reshape({-1, in_});
    const torch::Tensor xt = x2.t();
    const int64_t tile = std::clamp<int64_t>(kTileBytes / (4 * in_), 1, out_);
    torch::Tensor buffer = torch::empty({tile, in_}, x.options().dtype(torch::kFloat));
    torch::Tensor yt = torch::empty({out_, x2.size(0)}, x.options().dtype(torch::kFloat));
    for (int64_t first = 0; first < out_; first += tile) {
      const int64_t rows = std::min(tile, out_ - first);
      torch::Tensor w = buffer.narrow(0, 0, rows);
      expand_rows(first, rows, w);
      torch::Tensor out = yt.narrow(0, first, rows);
      torch::mm_out(out, w, xt);
    }
    torch::Tensor y = scale_.defined() ? (yt * scale_).t() : yt.t();  // scale_: [out, 1]
    if (bias_.defined()) y = y + bias_;
    shape.back() = out_;
    return y.reshape(shape);
  }

  uint64_t bytes() const {
    return tensor_bytes(weight_) + tensor_bytes(quantised_) + tensor_bytes(scale_) +
           tensor_bytes(bias_);
  }
  // The dtype the weight is held in: "f32", "bf16", "f16", "int8" or "int4".
  std::string held() const {
    if (mode_ == WeightQuant::kInt8) return "int8";
    if (mode_ == WeightQuant::kInt4) return "int4";
    switch (weight_.scalar_type()) {
      case torch::kBFloat16:
        return "bf16";
      case torch::kHalf:
        return "f16";
      default:
        return "f32";
    }
  }

 private:
  static constexpr int64_t kTileBytes = 256 * 1024;  // FP32 rows expanded at a time

  // Rows [first, first + rows) of the weight as FP32 (quantised: levels, without the
  // scale), into `into` (rows × in_).
  void expand_rows(int64_t first, int64_t rows, torch::Tensor& into) const {
    if (mode_ == WeightQuant::kFp16) {
      into.copy_(weight_.narrow(0, first, rows));
      return;
    }
    const torch::Tensor q = quantised_.narrow(0, first, rows);
    if (mode_ == WeightQuant::kInt8) {
      into.copy_(q);
      return;
    }
    const torch::Tensor packed = q.to(torch::kShort);
    torch::Tensor levels =
        torch::stack({torch::remainder(packed, 16), torch::floor_divide(packed, 16)}, -1)
            .reshape({rows, -1});
    if (levels.size(1) != in_) levels = levels.narrow(1, 0, in_);
    into.copy_(levels);
    into.sub_(8.0);
  }

  WeightQuant mode_ = WeightQuant::kFp16;
  int64_t out_ = 0, in_ = 0;
  torch::Tensor weight_, quantised_, scale_, bias_;
};

// RMSNorm or LayerNorm with the config's epsilon; its weights are held as FP32.
struct Norm {
  torch::Tensor weight, bias;
  bool rms = true;
  double eps = 1e-5;
  torch::Tensor operator()(const torch::Tensor& x) const {
    if (rms) return x * torch::rsqrt(x.pow(2).mean(-1, true) + eps) * weight;
    return torch::layer_norm(x, {x.size(-1)}, weight, bias, eps);
  }
  uint64_t bytes() const { return tensor_bytes(weight) + tensor_bytes(bias); }
};

// One tensor-parallel shard of a layer: whole query heads [first_head, first_head +
// heads) with the KV heads they use, a column slice of q/k/v and gate/up, the matching
// row slice of o and down (whose biases only rank 0 adds).
struct Shard {
  Linear q, k, v, o;
  Linear gate, up, down;  // gate unused for a plain MLP
  int64_t heads = 0, kv_heads = 0;
};

struct Layer {
  Norm attn_norm, mlp_norm;  // mlp_norm unused when one norm feeds both (parallel, shared)
  bool shared_norm = false;
  std::vector<Shard> shards;  // one per TP rank
};

// One KV cache per (layer, TP rank) slot: [kv_heads of the slot, capacity, head_dim], FP32
// or INT8 with a scale per (head, token). Slots are written by different threads at once;
// each slot by one.
class KvSequence final : public Decoder::Sequence {
 public:
  KvSequence(const std::vector<int64_t>& slot_kv_heads, int64_t capacity, int64_t head_dim,
             bool int8, c10::Device device)
      : capacity_(capacity), int8_(int8) {
    const auto options =
        torch::TensorOptions().dtype(int8 ? torch::kChar : torch::kFloat).device(device);
    const auto scales = torch::TensorOptions().dtype(torch::kFloat).device(device);
    for (int64_t kv_heads : slot_kv_heads) {
      k_.push_back(torch::zeros({kv_heads, capacity, head_dim}, options));
      v_.push_back(torch::zeros({kv_heads, capacity, head_dim}, options));
      if (int8) {
        k_scale_.push_back(torch::zeros({kv_heads, capacity, 1}, scales));
        v_scale_.push_back(torch::zeros({kv_heads, capacity, 1}, scales));
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

  // Stores k, v ([kv_heads, T, head_dim]) at positions [length, length + T) of `slot` and
  // returns the whole cache of that slot up to the new end (FP32).
  std::pair<torch::Tensor, torch::Tensor> append(std::size_t slot, const torch::Tensor& k,
                                                 const torch::Tensor& v) {
    const int64_t t = k.size(1), end = length_ + t;
    if (!int8_) {
      k_[slot].narrow(1, length_, t).copy_(k);
      v_[slot].narrow(1, length_, t).copy_(v);
      return {k_[slot].narrow(1, 0, end), v_[slot].narrow(1, 0, end)};
    }
    store_int8(k_[slot].narrow(1, length_, t), k_scale_[slot].narrow(1, length_, t), k);
    store_int8(v_[slot].narrow(1, length_, t), v_scale_[slot].narrow(1, length_, t), v);
    return {k_[slot].narrow(1, 0, end).to(torch::kFloat) * k_scale_[slot].narrow(1, 0, end),
            v_[slot].narrow(1, 0, end).to(torch::kFloat) * v_scale_[slot].narrow(1, 0, end)};
  }
  void advance(int64_t tokens) { length_ += tokens; }
  // This cache's first `tokens` (<= length()) copied into `into` (a fresh sequence with
  // room for them).
  void copy_to(KvSequence& into, int64_t tokens) const {
    const auto copy = [&](const std::vector<torch::Tensor>& from, std::vector<torch::Tensor>& to) {
      for (std::size_t i = 0; i < from.size(); ++i) {
        to[i].narrow(1, 0, tokens).copy_(from[i].narrow(1, 0, tokens));
      }
    };
    copy(k_, into.k_);
    copy(v_, into.v_);
    copy(k_scale_, into.k_scale_);
    copy(v_scale_, into.v_scale_);
    into.length_ = tokens;
  }

 private:
  static void store_int8(torch::Tensor cache, torch::Tensor scales, const torch::Tensor& x) {
    const torch::Tensor scale = x.abs().amax(-1, true).clamp_min(1e-12) / 127.0;
    cache.copy_(torch::round(x / scale).clamp(-127, 127));
    scales.copy_(scale);
  }

  int64_t capacity_;
  bool int8_;
  int64_t length_ = 0;
  std::vector<torch::Tensor> k_, v_, k_scale_, v_scale_;
};

// A blocking hand-off queue between pipeline stages.
template <typename T>
class HandOff {
 public:
  void push(T item) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      items_.push_back(std::move(item));
    }
    ready_.notify_one();
  }
  T pop() {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [this] { return !items_.empty(); });
    T item = std::move(items_.front());
    items_.pop_front();
    return item;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<T> items_;
};

// One forward pass over several sequences (packed: no padding): rows [offset, offset +
// count) of the activations are `seq`'s new tokens, at positions [start, start + count).
struct BatchRow {
  KvSequence* seq = nullptr;
  int64_t offset = 0, count = 0, start = 0;
};
struct StepBatch {
  std::vector<BatchRow> rows;
  torch::Tensor cos, sin;  // [tokens, 1, rotary_dim]: each token's rotary angles
  torch::Tensor last;      // the rows whose logits are wanted (each one's last token)
};

// What travels between stages: the activations and the step's context.
struct StageJob {
  bool stop = false;
  torch::Tensor x;  // [tokens, hidden]; after the last stage, the logits
  const StepBatch* batch = nullptr;
};

// Rows [start, start + count) of a [out, in] weight (or of a bias), copied.
torch::Tensor rows(const torch::Tensor& w, int64_t start, int64_t count) {
  if (!w.defined()) return w;
  return w.narrow(0, start, count).contiguous();
}
torch::Tensor cols(const torch::Tensor& w, int64_t start, int64_t count) {
  return w.narrow(1, start, count).contiguous();
}

class TorchDecoder final : public Decoder {
 public:
  TorchDecoder(const std::filesystem::path& dir, const DecoderOptions& options)
      : options_(options) {
    const int ordinal = Decoder::check_device(options_.device);
    if (ordinal >= 0) device_ = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(ordinal));
    arch_ = load_llm_architecture(dir / "config.json");
    if (arch_.positions == PositionKind::kAlibi) {
      throw SpecError((dir / "config.json").string(), "alibi",
                      "true (ALiBi positions) is not implemented by tessera's engine");
    }
    inv_freq_ = rope_inverse_frequencies(arch_.max_positions);
    inv_freq_tensor_ = host_floats(inv_freq_);
    plan_parallelism();
    if (options_.tp > 1 || options_.pp > 1) at::set_num_threads(1);
    const CheckpointReader ckpt(dir, device_);
    load_weights(ckpt);
    for (int s = 0; s < options_.pp; ++s)
      pools_.push_back(std::make_unique<ShardPool>(options_.tp));
    if (options_.pp > 1) {
      queues_ = std::vector<HandOff<StageJob>>(static_cast<std::size_t>(options_.pp) + 1);
      for (int s = 0; s < options_.pp; ++s)
        stage_threads_.emplace_back([this, s] { stage_loop(s); });
    }
  }

  ~TorchDecoder() override {
    for (int s = 0; s < static_cast<int>(stage_threads_.size()); ++s) {
      queues_[static_cast<std::size_t>(s)].push(StageJob{true, {}, nullptr});
    }
    for (std::thread& t : stage_threads_) t.join();
  }

  const LlmArchitecture& architecture() const override { return arch_; }

  uint64_t weight_bytes() const override {
    uint64_t total = 0;
    for (uint64_t b : shard_weight_bytes()) total += b;
    return total;
  }

  std::vector<uint64_t> shard_weight_bytes() const override {
    const auto tp = static_cast<std::size_t>(options_.tp);
    std::vector<uint64_t> out(static_cast<std::size_t>(options_.pp) * tp, 0);
    out.front() += tensor_bytes(embedding_);
    out[out.size() - tp] +=
        final_norm_.bytes() + (arch_.tied_embeddings ? tensor_bytes(head_bias_) : head_.bytes());
    for (std::size_t s = 0; s < stage_first_.size(); ++s) {
      for (int64_t i = stage_first_[s]; i < stage_first_[s] + stage_layers_[s]; ++i) {
        const Layer& l = layers_[static_cast<std::size_t>(i)];
        for (std::size_t r = 0; r < tp; ++r) {
          const Shard& sh = l.shards[r];
          uint64_t b = 0;
          for (const Linear* lin : {&sh.q, &sh.k, &sh.v, &sh.o, &sh.gate, &sh.up, &sh.down}) {
            b += lin->bytes();
          }
          if (r == 0) b += l.attn_norm.bytes() + l.mlp_norm.bytes();
          out[s * tp + r] += b;
        }
      }
    }
    return out;
  }

  std::vector<int64_t> stage_layers() const override { return stage_layers_; }

  std::unique_ptr<Sequence> start(int64_t max_tokens) const override {
    const int64_t context = arch_.context_length();
    if (max_tokens < 1 || max_tokens > context) {
      throw std::invalid_argument("a sequence holds 1.." + std::to_string(context) +
                                  " tokens, not " + std::to_string(max_tokens));
    }
    std::vector<int64_t> slots;
    for (const Layer& l : layers_) {
      for (const Shard& sh : l.shards) slots.push_back(sh.kv_heads);
    }
    return std::make_unique<KvSequence>(slots, max_tokens, arch_.head_dim(),
                                        options_.kv_cache == KvQuant::kInt8, device_);
  }

  std::unique_ptr<Sequence> fork_prefix(const Sequence& from, int64_t tokens,
                                        int64_t max_tokens) const override {
    const auto& source = dynamic_cast<const KvSequence&>(from);
    if (tokens < 1 || tokens > source.length()) {
      throw std::invalid_argument("a fork copies 1.." + std::to_string(source.length()) +
                                  " tokens of its source, not " + std::to_string(tokens));
    }
    if (max_tokens < tokens) {
      throw std::invalid_argument("a fork holds at least the " + std::to_string(tokens) +
                                  " tokens it copies");
    }
    auto seq = start(max_tokens);
    std::lock_guard<std::mutex> lock(step_mutex_);
    c10::InferenceMode inference;
    source.copy_to(dynamic_cast<KvSequence&>(*seq), tokens);
    return seq;
  }

  std::vector<std::vector<float>> step_batch(const std::vector<StepInput>& inputs) const override {
    StepBatch batch;
    std::vector<int64_t> ids;
    std::vector<int64_t> last;
    for (const StepInput& in : inputs) {
      if (in.sequence == nullptr) throw std::invalid_argument("a step input has no sequence");
      auto& seq = dynamic_cast<KvSequence&>(*in.sequence);
      const auto count = static_cast<int64_t>(in.tokens.size());
      if (count == 0) throw std::invalid_argument("a step needs at least one token");
      if (seq.length() + count > seq.capacity()) {
        throw std::invalid_argument("the sequence is full (" + std::to_string(seq.capacity()) +
                                    " tokens)");
      }
      for (const BatchRow& r : batch.rows) {
        if (r.seq == &seq) throw std::invalid_argument("a sequence appears twice in one step");
      }
      for (int64_t id : in.tokens) {
        if (id < 0 || id >= arch_.vocab) {
          throw std::invalid_argument("token id " + std::to_string(id) +
                                      " is outside the vocabulary of " +
                                      std::to_string(arch_.vocab));
        }
      }
      const auto offset = static_cast<int64_t>(ids.size());
      batch.rows.push_back({&seq, offset, count, seq.length()});
      if (in.logits) last.push_back(offset + count - 1);
      ids.insert(ids.end(), in.tokens.begin(), in.tokens.end());
    }
    std::vector<std::vector<float>> out(inputs.size());
    if (inputs.empty()) return out;
    std::lock_guard<std::mutex> lock(step_mutex_);
    c10::InferenceMode inference;
    if (arch_.positions == PositionKind::kRotary) std::tie(batch.cos, batch.sin) = rotary(batch);
    batch.last = torch::tensor(last, torch::kLong).to(device_);
    const torch::Tensor id_tensor = torch::tensor(ids, torch::kLong).to(device_);
    torch::Tensor x = embedding_.index_select(0, id_tensor).to(torch::kFloat);  // [N, hidden]
    torch::Tensor logits;
    if (options_.pp == 1) {
      logits = head(run_stage(0, x, batch), batch);
    } else {
      queues_[0].push(StageJob{false, x, &batch});
      logits = queues_.back().pop().x;
    }
    for (const BatchRow& r : batch.rows) r.seq->advance(r.count);
    logits = logits.to(torch::kCPU).contiguous();  // from the device: a blocking copy
    const float* data = logits.data_ptr<float>();
    const auto vocab = static_cast<std::size_t>(arch_.vocab);
    std::size_t next = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].logits) continue;
      out[i].assign(data + next * vocab, data + (next + 1) * vocab);
      ++next;
    }
    return out;
  }

  std::string weight_dtype() const override {
    if (!layers_.empty()) return layers_.front().shards.front().q.held();
    return head_.held();
  }

 private:
  void plan_parallelism() {
    const int tp = options_.tp, pp = options_.pp;
    if (tp < 1 || pp < 1) throw std::invalid_argument("TP and PP must be at least 1");
    const std::string problem = parallelism_problem(arch_, Parallelism{tp, 1});
    if (!problem.empty()) throw std::invalid_argument(arch_.name + ": " + problem);
    if (options_.stage_layers.empty()) {
      if (pp > arch_.layers) {
        throw std::invalid_argument("PP " + std::to_string(pp) + " exceeds the " +
                                    std::to_string(arch_.layers) + " layers");
      }
      for (int s = 0; s < pp; ++s)
        stage_layers_.push_back(arch_.layers / pp + (s < arch_.layers % pp));
    } else {
      stage_layers_ = options_.stage_layers;
      int64_t sum = 0;
      for (int64_t n : stage_layers_) {
        if (n < 0)
          throw std::invalid_argument("a pipeline stage cannot hold a negative layer count");
        sum += n;
      }
      if (static_cast<int>(stage_layers_.size()) != pp || sum != arch_.layers) {
        throw std::invalid_argument("the stage split must give " + std::to_string(pp) +
                                    " stages holding " + std::to_string(arch_.layers) +
                                    " layers in all");
      }
    }
    int64_t first = 0;
    for (int64_t n : stage_layers_) {
      stage_first_.push_back(first);
      first += n;
    }
  }

  Norm norm(const CheckpointReader& ckpt, const std::string& name) const {
    Norm n;
    n.rms = arch_.norm == NormKind::kRmsNorm;
    n.eps = arch_.norm_eps;
    n.weight = ckpt.load(name + ".weight", {arch_.hidden}).to(torch::kFloat);
    if (arch_.norm_bias) n.bias = ckpt.load(name + ".bias", {arch_.hidden}).to(torch::kFloat);
    return n;
  }

  // A layer's full (unsharded) weights, as the checkpoint holds them; Falcon's fused
  // query_key_value is split here into q, k, v with the query heads in the order the fused layout
  // implies.
  struct FullLayer {
    torch::Tensor q, k, v, o, gate, up, down;
    torch::Tensor qb, kb, vb, ob, upb, downb;
  };

  FullLayer read_layer(const CheckpointReader& ckpt, const std::string& p, Layer& l) const {
    const int64_t h = arch_.hidden, hd = arch_.head_dim(), heads = arch_.heads,
                  kvh = arch_.kv_heads, kv = kvh * hd, f = arch_.ffn;
    const auto w = [&](const std::string& name, int64_t out, int64_t in) {
      return ckpt.load(name + ".weight", {out, in});
    };
    const auto b = [&](const std::string& name, int64_t out, bool present) {
      return present ? ckpt.load(name + ".bias", {out}) : torch::Tensor();
    };
    FullLayer fl;
    if (arch_.family == ModelFamily::kGptj) {
      l.attn_norm = norm(ckpt, p + "ln_1");
      l.shared_norm = true;
      fl.q = w(p + "attn.q_proj", h, h);
      fl.k = w(p + "attn.k_proj", h, h);
      fl.v = w(p + "attn.v_proj", h, h);
      fl.o = w(p + "attn.out_proj", h, h);
      fl.up = w(p + "mlp.fc_in", f, h);
      fl.upb = b(p + "mlp.fc_in", f, true);
      fl.down = w(p + "mlp.fc_out", h, f);
      fl.downb = b(p + "mlp.fc_out", h, true);
    } else if (arch_.family == ModelFamily::kFalcon) {
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
      const bool ab = arch_.attention_bias;
      const torch::Tensor qkv = w(p + "self_attention.query_key_value", h + 2 * kv, h);
      const torch::Tensor qkvb = b(p + "self_attention.query_key_value", h + 2 * kv, ab);
      split_fused(qkv, qkvb, fl);
      fl.o = w(p + "self_attention.dense", h, h);
      fl.ob = b(p + "self_attention.dense", h, ab);
      fl.up = w(p + "mlp.dense_h_to_4h", f, h);
      fl.upb = b(p + "mlp.dense_h_to_4h", f, arch_.mlp_bias);
      fl.down = w(p + "mlp.dense_4h_to_h", h, f);
      fl.downb = b(p + "mlp.dense_4h_to_h", h, arch_.mlp_bias);
    } else {
      l.attn_norm = norm(ckpt, p + "input_layernorm");
      l.mlp_norm = norm(ckpt, p + "post_attention_layernorm");
      const bool ab = arch_.attention_bias;
      fl.q = w(p + "self_attn.q_proj", h, h);
      fl.qb = b(p + "self_attn.q_proj", h, ab);
      fl.k = w(p + "self_attn.k_proj", kv, h);
      fl.kb = b(p + "self_attn.k_proj", kv, ab);
      fl.v = w(p + "self_attn.v_proj", kv, h);
      fl.vb = b(p + "self_attn.v_proj", kv, ab);
      fl.o = w(p + "self_attn.o_proj", h, h);
      fl.ob = b(p + "self_attn.o_proj", h, ab);
      fl.gate = w(p + "mlp.gate_proj", f, h);
      fl.up = w(p + "mlp.up_proj", f, h);
      fl.down = w(p + "mlp.down_proj", h, f);
    }
    (void)heads;
    return fl;
  }

  void split_fused(const torch::Tensor& qkv, const torch::Tensor& bias, FullLayer& fl) const {
    using torch::indexing::Slice;
    const int64_t h = arch_.hidden, hd = arch_.head_dim(), heads = arch_.heads,
                  kvh = arch_.kv_heads;
    const auto split = [&](const torch::Tensor& t, torch::Tensor& q, torch::Tensor& k,
                           torch::Tensor& v) {
      if (!t.defined()) return;
      const int64_t in = t.dim() == 2 ? t.size(1) : 1;
      const torch::Tensor m = t.reshape({-1, in});
      if (arch_.norms_per_layer == 2 && arch_.parallel_residual) {  // grouped per KV head
        const int64_t g = heads / kvh;
        const torch::Tensor v4 = m.view({kvh, g + 2, hd, in});
        q = v4.index({Slice(), Slice(0, g)}).reshape({heads * hd, in});
        k = v4.index({Slice(), g}).reshape({kvh * hd, in});
        v = v4.index({Slice(), g + 1}).reshape({kvh * hd, in});
      } else if (kvh == heads) {  // (q, k, v) per head
        const torch::Tensor v4 = m.view({heads, 3, hd, in});
        q = v4.index({Slice(), 0}).reshape({heads * hd, in});
        k = v4.index({Slice(), 1}).reshape({heads * hd, in});
        v = v4.index({Slice(), 2}).reshape({heads * hd, in});
      } else {  // multi-query: the queries, then the key and value heads
        q = m.narrow(0, 0, heads * hd);
        k = m.narrow(0, heads * hd, kvh * hd);
        v = m.narrow(0, (heads + kvh) * hd, kvh * hd);
      }
      if (t.dim() == 1) {
        q = q.reshape({-1});
        k = k.reshape({-1});
        v = v.reshape({-1});
      }
      q = q.contiguous();
      k = k.contiguous();
      v = v.contiguous();
    };
    split(qkv, fl.q, fl.k, fl.v);
    split(bias, fl.qb, fl.kb, fl.vb);
    (void)h;
  }

  // Rank r's shard of a full layer.
  Shard make_shard(const FullLayer& fl, int r) const {
    const int tp = options_.tp;
    const int64_t hd = arch_.head_dim(), heads = arch_.heads, kvh = arch_.kv_heads,
                  group = heads / kvh, f = arch_.ffn;
    const WeightQuant wq = options_.weights;
    Shard sh;
    sh.heads = heads / tp;
    const int64_t first_head = r * sh.heads;
    const int64_t first_kv = first_head / group;
    const int64_t last_kv = (first_head + sh.heads - 1) / group;
    sh.kv_heads = last_kv - first_kv + 1;
    sh.q = Linear(rows(fl.q, first_head * hd, sh.heads * hd),
                  rows(fl.qb, first_head * hd, sh.heads * hd), wq);
    sh.k = Linear(rows(fl.k, first_kv * hd, sh.kv_heads * hd),
                  rows(fl.kb, first_kv * hd, sh.kv_heads * hd), wq);
    sh.v = Linear(rows(fl.v, first_kv * hd, sh.kv_heads * hd),
                  rows(fl.vb, first_kv * hd, sh.kv_heads * hd), wq);
    sh.o = Linear(cols(fl.o, first_head * hd, sh.heads * hd), r == 0 ? fl.ob : torch::Tensor(), wq);
    const int64_t f0 = f * r / tp, f1 = f * (r + 1) / tp;
    if (fl.gate.defined()) sh.gate = Linear(rows(fl.gate, f0, f1 - f0), torch::Tensor(), wq);
    sh.up = Linear(rows(fl.up, f0, f1 - f0), rows(fl.upb, f0, f1 - f0), wq);
    sh.down = Linear(cols(fl.down, f0, f1 - f0), r == 0 ? fl.downb : torch::Tensor(), wq);
    return sh;
  }

  void load_weights(const CheckpointReader& ckpt) {
    const int64_t h = arch_.hidden;
    const bool gptj = arch_.family == ModelFamily::kGptj;
    const bool falcon = arch_.family == ModelFamily::kFalcon;
    const std::string embed = gptj     ? "transformer.wte.weight"
                              : falcon ? "transformer.word_embeddings.weight"
                                       : "model.embed_tokens.weight";
    embedding_ = ckpt.load(embed, {arch_.vocab, h});
    for (int64_t i = 0; i < arch_.layers; ++i) {
      Layer l;
      const std::string p =
          (gptj || falcon ? "transformer.h." : "model.layers.") + std::to_string(i) + ".";
      const FullLayer fl = read_layer(ckpt, p, l);
      for (int r = 0; r < options_.tp; ++r) l.shards.push_back(make_shard(fl, r));
      layers_.push_back(std::move(l));
    }
    final_norm_ = norm(ckpt, gptj || falcon ? "transformer.ln_f" : "model.norm");
    // The embedding and the LM head stay as loaded (weight-only schemes keep them so).
    head_bias_ = arch_.head_bias ? ckpt.load("lm_head.bias", {arch_.vocab}).to(torch::kFloat)
                                 : torch::Tensor();
    head_ =
        Linear(arch_.tied_embeddings ? embedding_ : ckpt.load("lm_head.weight", {arch_.vocab, h}),
               head_bias_, WeightQuant::kFp16);
  }

  // The logits of the batch's last rows: [rows wanting logits, vocab].
  torch::Tensor head(const torch::Tensor& x, const StepBatch& batch) const {
    return head_(final_norm_(x.index_select(0, batch.last)));
  }

  // Stage s's thread: receive, run the stage's layers, hand the activations on (a copy,
  // as a transfer to the next device), the last stage applying the head.
  void stage_loop(int s) {
    c10::InferenceMode inference;
    auto& in = queues_[static_cast<std::size_t>(s)];
    auto& out = queues_[static_cast<std::size_t>(s) + 1];
    for (;;) {
      StageJob job = in.pop();
      if (job.stop) return;
      torch::Tensor x = run_stage(s, job.x, *job.batch);
      job.x = s + 1 == options_.pp ? head(x, *job.batch) : x.clone();
      out.push(std::move(job));
    }
  }

  // Runs stage s's layers on [tokens, hidden] activations with its TP shards.
  torch::Tensor run_stage(int s, const torch::Tensor& x_in, const StepBatch& batch) const {
    const auto su = static_cast<std::size_t>(s);
    const int64_t first = stage_first_[su], count = stage_layers_[su];
    if (count == 0) return x_in;
    const int tp = options_.tp;
    ShardPool& pool = *pools_[su];
    std::vector<torch::Tensor> partial(static_cast<std::size_t>(tp));
    torch::Tensor result;
    pool.run([&](int r) {
      c10::InferenceMode inference;
      memory_meter::charge_to(r);  // each rank metered like its own device
      const auto all_reduce = [&](torch::Tensor p) {
        if (tp == 1) return p;
        partial[static_cast<std::size_t>(r)] = std::move(p);
        pool.all_reduce_sync();
        torch::Tensor sum = partial[0];
        for (int i = 1; i < tp; ++i) sum = sum + partial[static_cast<std::size_t>(i)];
        pool.all_reduce_sync();
        return sum;
      };
      torch::Tensor x = x_in;
      for (int64_t i = first; i < first + count; ++i) {
        const Layer& l = layers_[static_cast<std::size_t>(i)];
        const Shard& sh = l.shards[static_cast<std::size_t>(r)];
        const std::size_t slot = static_cast<std::size_t>(i * tp + r);
        const torch::Tensor h = l.attn_norm(x);
        const torch::Tensor attn = attention(sh, slot, h, batch);
        if (arch_.parallel_residual) {
          x = x + all_reduce(attn + mlp(sh, l.shared_norm ? h : l.mlp_norm(x)));
        } else {
          x = x + all_reduce(attn);
          x = x + all_reduce(mlp(sh, l.mlp_norm(x)));
        }
      }
      if (r == 0) result = x;
    });
    return result;
  }

  // The rotary inverse frequencies (rotary_dim / 2 of them) for a sequence of `length`
  // tokens, as transformers' modeling_rope_utils computes them for the config's scaling
  // (only dynamic NTK depends on the length).
  std::vector<double> rope_inverse_frequencies(int64_t length) const {
    const RopeSettings& rope = arch_.rope;
    const int64_t rd = arch_.rotary_dim, half = rd / 2;
    const double d = static_cast<double>(rd);
    double base = rope.theta;
    if (rope.scaling == RopeScaling::kDynamic && length > arch_.max_positions) {
      const double ratio = static_cast<double>(length) / static_cast<double>(arch_.max_positions);
      base *= std::pow(rope.factor * ratio - (rope.factor - 1.0), d / (d - 2.0));
    }
    std::vector<double> inv(static_cast<std::size_t>(half));
    for (int64_t i = 0; i < half; ++i) {
      inv[static_cast<std::size_t>(i)] = 1.0 / std::pow(base, static_cast<double>(2 * i) / d);
    }
    constexpr double kTwoPi = 6.283185307179586;
    if (rope.scaling == RopeScaling::kLinear) {
      for (double& f : inv) f /= rope.factor;
    } else if (rope.scaling == RopeScaling::kLlama3) {
      const auto old_len = static_cast<double>(rope.original_max_positions);
      const double low_wavelen = old_len / rope.low_freq_factor;
      const double high_wavelen = old_len / rope.high_freq_factor;
      for (double& f : inv) {
        const double wavelen = kTwoPi / f;
        if (wavelen > low_wavelen) {
          f /= rope.factor;
        } else if (wavelen >= high_wavelen) {  // the middle band: blended
          const double smooth = (old_len / wavelen - rope.low_freq_factor) /
                                (rope.high_freq_factor - rope.low_freq_factor);
          f = (1.0 - smooth) * f / rope.factor + smooth * f;
        }
      }
    } else if (rope.scaling == RopeScaling::kYarn) {
      const auto trained = static_cast<double>(
          rope.original_max_positions > 0 ? rope.original_max_positions : arch_.max_positions);
      const auto correction_dim = [&](double rotations) {
        return d * std::log(trained / (rotations * kTwoPi)) / (2.0 * std::log(rope.theta));
      };
      const double low = std::max(std::floor(correction_dim(rope.beta_fast)), 0.0);
      double high = std::min(std::ceil(correction_dim(rope.beta_slow)), d - 1.0);
      if (low == high) high += 0.001;
      for (int64_t i = 0; i < half; ++i) {
        const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
        const double extrapolation = 1.0 - ramp;  // the share of the unscaled frequency
        double& f = inv[static_cast<std::size_t>(i)];
        f = f / rope.factor * (1.0 - extrapolation) + f * extrapolation;
      }
    }
    return inv;
  }

  // cos and sin of every token's rotary angles: [tokens, 1, rotary_dim], laid out for the
  // family's rotation (halves, or interleaved pairs for GPT-J), times YaRN's attention
  // factor.
  std::pair<torch::Tensor, torch::Tensor> rotary(const StepBatch& batch) const {
    std::vector<float> positions;
    bool dynamic = false;
    for (const BatchRow& r : batch.rows) {
      for (int64_t p = r.start; p < r.start + r.count; ++p)
        positions.push_back(static_cast<float>(p));
      dynamic = dynamic || (arch_.rope.scaling == RopeScaling::kDynamic &&
                            r.start + r.count > arch_.max_positions);
    }
    torch::Tensor freqs;  // [tokens, rd/2]
    if (!dynamic) {
      freqs = torch::outer(torch::tensor(positions, torch::kFloat).to(device_), inv_freq_tensor_);
    } else {  // dynamic NTK: each sequence's frequencies follow its length
      std::vector<torch::Tensor> parts;
      for (const BatchRow& r : batch.rows) {
        const torch::Tensor pos = torch::arange(r.start, r.start + r.count, floats());
        parts.push_back(
            torch::outer(pos, host_floats(rope_inverse_frequencies(r.start + r.count))));
      }
      freqs = torch::cat(parts, 0);
    }
    freqs = arch_.family == ModelFamily::kGptj ? freqs.repeat_interleave(2, -1)
                                               : torch::cat({freqs, freqs}, -1);
    torch::Tensor cos = freqs.cos().unsqueeze(1), sin = freqs.sin().unsqueeze(1);
    if (arch_.rope.attention_factor != 1.0) {
      cos = cos * arch_.rope.attention_factor;
      sin = sin * arch_.rope.attention_factor;
    }
    return {cos, sin};
  }

  torch::Tensor host_floats(const std::vector<double>& values) const {
    std::vector<float> f(values.begin(), values.end());
    return torch::tensor(f, torch::kFloat).to(device_);
  }

  torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos,
                       const torch::Tensor& sin) const {
    using torch::indexing::Slice;
    const int64_t rd = arch_.rotary_dim;
    const torch::Tensor part = rd == x.size(-1) ? x : x.index({"...", Slice(0, rd)});
    torch::Tensor turned;
    if (arch_.family == ModelFamily::kGptj) {  // pairs (2i, 2i+1)
      const torch::Tensor even = part.index({"...", Slice(0, torch::indexing::None, 2)});
      const torch::Tensor odd = part.index({"...", Slice(1, torch::indexing::None, 2)});
      turned = torch::stack({-odd, even}, -1).flatten(-2);
    } else {  // halves
      turned = torch::cat({-part.narrow(-1, rd / 2, rd / 2), part.narrow(-1, 0, rd / 2)}, -1);
    }
    const torch::Tensor rotated = part * cos + turned * sin;
    if (rd == x.size(-1)) return rotated;
    return torch::cat({rotated, x.index({"...", Slice(rd, torch::indexing::None)})}, -1);
  }

  // One shard's attention over its heads for every sequence of the batch (the
  // projections, rotations and output projection over all tokens at once; scores per
  // sequence against its own cache); returns its partial of the output projection.
  torch::Tensor attention(const Shard& sh, std::size_t slot, const torch::Tensor& h,
                          const StepBatch& batch) const {
    const int64_t n = h.size(0), hd = arch_.head_dim(), heads = sh.heads, kvh = sh.kv_heads;
    const int64_t group = heads / kvh;
    torch::Tensor q = sh.q(h).view({n, heads, hd});
    torch::Tensor k = sh.k(h).view({n, kvh, hd});
    const torch::Tensor v = sh.v(h).view({n, kvh, hd});
    if (arch_.positions == PositionKind::kRotary) {
      q = rotate(q, batch.cos, batch.sin);
      k = rotate(k, batch.cos, batch.sin);
    }
    q = q * (1.0 / std::sqrt(static_cast<double>(hd)));
    torch::Tensor out = torch::empty({n, heads, hd}, floats());
    const int64_t window = arch_.sliding_window;
    for (const BatchRow& r : batch.rows) {
      const int64_t t = r.count;
      auto [keys, values] = r.seq->append(slot, k.narrow(0, r.offset, t).transpose(0, 1),
                                          v.narrow(0, r.offset, t).transpose(0, 1));
      int64_t total = keys.size(1), first_key = 0;
      if (window > 0 && t == 1 && total > window) {  // a decode token sees the last window
        first_key = total - window;
        keys = keys.narrow(1, first_key, window);
        values = values.narrow(1, first_key, window);
        total = window;
      }
      // Queries grouped by the KV head they read: [kv_heads, group * t, head_dim].
      const torch::Tensor qg =
          q.narrow(0, r.offset, t).permute({1, 0, 2}).reshape({kvh, group * t, hd});
      torch::Tensor scores = torch::bmm(qg, keys.transpose(1, 2));  // [kvh, group * t, total]
      if (t > 1 || (window > 0 && total > window)) {
        const auto longs = torch::TensorOptions().dtype(torch::kLong).device(device_);
        const torch::Tensor qpos = torch::arange(r.start, r.start + t, longs).unsqueeze(1);
        const torch::Tensor kpos = torch::arange(first_key, first_key + total, longs).unsqueeze(0);
        torch::Tensor hidden = kpos > qpos;
        if (window > 0) hidden = hidden.logical_or(qpos - kpos >= window);
        scores = scores.view({kvh, group, t, total})
                     .masked_fill(hidden, -std::numeric_limits<float>::infinity())
                     .view({kvh, group * t, total});
      }
      const torch::Tensor o = torch::bmm(torch::softmax(scores, -1), values);  // [kvh, g t, hd]
      out.narrow(0, r.offset, t).copy_(o.view({heads, t, hd}).permute({1, 0, 2}));
    }
    return sh.o(out.view({n, heads * hd}));
  }

  torch::Tensor mlp(const Shard& sh, const torch::Tensor& x) const {
    if (arch_.mlp == MlpKind::kGated) return sh.down(torch::silu(sh.gate(x)) * sh.up(x));
    const torch::Tensor up = sh.up(x);
    return sh.down(arch_.family == ModelFamily::kGptj ? torch::gelu(up, "tanh") : torch::gelu(up));
  }

  torch::TensorOptions floats() const {
    return torch::TensorOptions().dtype(torch::kFloat).device(device_);
  }

  DecoderOptions options_;
  c10::Device device_{c10::kCPU};  // every tensor of the weights and caches is here
  LlmArchitecture arch_;
  std::vector<double> inv_freq_;   // the rotary inverse frequencies (not dynamic NTK's)
  torch::Tensor inv_freq_tensor_;  // the same, FP32 on the device
  std::vector<int64_t> stage_layers_, stage_first_;
  torch::Tensor embedding_, head_bias_;
  std::vector<Layer> layers_;
  Norm final_norm_;
  Linear head_;
  std::vector<std::unique_ptr<ShardPool>> pools_;  // one TP group per stage
  mutable std::vector<HandOff<StageJob>> queues_;  // stage s reads queues_[s]; the last, results
  std::vector<std::thread> stage_threads_;
  mutable std::mutex step_mutex_;
};

}  // namespace

std::unique_ptr<Decoder> Decoder::load(const std::filesystem::path& dir,
                                       const DecoderOptions& options) {
  return std::make_unique<TorchDecoder>(dir, options);
}

int Decoder::check_device(const DeviceSpec& device) {
  DeviceEnvironment env;
#ifdef TESSERA_WITH_CUDA
  env.built_with_cuda = true;
  env.visible_devices =
      torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
#endif
  env.cuda_visible_devices = cuda_visible_devices_from_env();
  return resolve_device(device, env);
}

std::vector<float> Decoder::step(Sequence& sequence, const std::vector<int64_t>& tokens) const {
  return std::move(step_batch({StepInput{&sequence, tokens, true}}).front());
}

double Decoder::bytes_per_parameter() const {
  return static_cast<double>(weight_bytes()) / static_cast<double>(architecture().total_params());
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
