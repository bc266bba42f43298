#include "llm_arch/checkpoint_layout.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numbers>
#include <regex>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/spec_node.hpp"

namespace tessera {
namespace {

class LayoutBuilder {
 public:
  explicit LayoutBuilder(Dtype dtype) : dtype_(dtype) {}
  void add(std::string name, std::vector<int64_t> shape) {
    out_.push_back(TensorToWrite{std::move(name), dtype_, std::move(shape)});
  }
  std::vector<TensorToWrite> take() { return std::move(out_); }

 private:
  Dtype dtype_;
  std::vector<TensorToWrite> out_;
};

void llama_layout(const LlmArchitecture& a, LayoutBuilder& b) {
  const int64_t h = a.hidden, kv = a.kv_heads * a.head_dim();
  b.add("model.embed_tokens.weight", {a.vocab, h});
  for (int64_t i = 0; i < a.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    b.add(p + "self_attn.q_proj.weight", {h, h});
    b.add(p + "self_attn.k_proj.weight", {kv, h});
    b.add(p + "self_attn.v_proj.weight", {kv, h});
    b.add(p + "self_attn.o_proj.weight", {h, h});
    if (a.attention_bias) {
      b.add(p + "self_attn.q_proj.bias", {h});
      b.add(p + "self_attn.k_proj.bias", {kv});
      b.add(p + "self_attn.v_proj.bias", {kv});
      b.add(p + "self_attn.o_proj.bias", {h});
    }
    b.add(p + "mlp.gate_proj.weight", {a.ffn, h});
    b.add(p + "mlp.up_proj.weight", {a.ffn, h});
    b.add(p + "mlp.down_proj.weight", {h, a.ffn});
    b.add(p + "input_layernorm.weight", {h});
    b.add(p + "post_attention_layernorm.weight", {h});
  }
  b.add("model.norm.weight", {h});
  if (!a.tied_embeddings) b.add("lm_head.weight", {a.vocab, h});
}

void gptj_layout(const LlmArchitecture& a, LayoutBuilder& b) {
  const int64_t h = a.hidden;
  b.add("transformer.wte.weight", {a.vocab, h});
  for (int64_t i = 0; i < a.layers; ++i) {
    const std::string p = "transformer.h." + std::to_string(i) + ".";
    b.add(p + "ln_1.weight", {h});
    b.add(p + "ln_1.bias", {h});
    for (const char* proj : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
      b.add(p + "attn." + proj + ".weight", {h, h});
    }
    b.add(p + "mlp.fc_in.weight", {a.ffn, h});
    b.add(p + "mlp.fc_in.bias", {a.ffn});
    b.add(p + "mlp.fc_out.weight", {h, a.ffn});
    b.add(p + "mlp.fc_out.bias", {h});
  }
  b.add("transformer.ln_f.weight", {h});
  b.add("transformer.ln_f.bias", {h});
  if (!a.tied_embeddings) b.add("lm_head.weight", {a.vocab, h});
  b.add("lm_head.bias", {a.vocab});
}

void falcon_layout(const LlmArchitecture& a, LayoutBuilder& b) {
  const int64_t h = a.hidden, qkv = (a.heads + 2 * a.kv_heads) * a.head_dim();
  b.add("transformer.word_embeddings.weight", {a.vocab, h});
  for (int64_t i = 0; i < a.layers; ++i) {
    const std::string p = "transformer.h." + std::to_string(i) + ".";
    b.add(p + "self_attention.query_key_value.weight", {qkv, h});
    if (a.attention_bias) b.add(p + "self_attention.query_key_value.bias", {qkv});
    b.add(p + "self_attention.dense.weight", {h, h});
    if (a.attention_bias) b.add(p + "self_attention.dense.bias", {h});
    b.add(p + "mlp.dense_h_to_4h.weight", {a.ffn, h});
    if (a.mlp_bias) b.add(p + "mlp.dense_h_to_4h.bias", {a.ffn});
    b.add(p + "mlp.dense_4h_to_h.weight", {h, a.ffn});
    if (a.mlp_bias) b.add(p + "mlp.dense_4h_to_h.bias", {h});
    std::vector<std::string> norms{"input_layernorm"};
    if (a.norms_per_layer == 2) {
      norms = a.parallel_residual
                  ? std::vector<std::string>{"ln_attn", "ln_mlp"}
                  : std::vector<std::string>{"input_layernorm", "post_attention_layernorm"};
    }
    for (const std::string& norm : norms) {
      b.add(p + norm + ".weight", {h});
      b.add(p + norm + ".bias", {h});
    }
  }
  b.add("transformer.ln_f.weight", {h});
  b.add("transformer.ln_f.bias", {h});
  if (!a.tied_embeddings) b.add("lm_head.weight", {a.vocab, h});
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A standard normal draw that depends only on (seed, tensor, element): any chunk of any
// tensor can be generated on its own.
float normal_at(uint64_t seed, std::size_t tensor, uint64_t element) {
  const uint64_t r = splitmix64(seed ^ splitmix64(tensor * 0x100000001b3ULL ^ element));
  const double u1 = (static_cast<double>(r >> 11) + 0.5) / 9007199254740992.0;
  const double u2 = static_cast<double>(r & 0x7ff) / 2048.0;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2));
}

bool is_norm(const std::string& name) {
  return name.find("norm") != std::string::npos || name.find(".ln_") != std::string::npos;
}
bool ends_with(const std::string& s, const char* suffix) {
  const std::size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

void store(Dtype dtype, float value, char* out) {
  if (dtype == Dtype::kF32) {
    std::memcpy(out, &value, 4);
    return;
  }
  const uint16_t bits =
      dtype == Dtype::kBF16 ? float_to_bfloat16_bits(value) : float_to_half_bits(value);
  std::memcpy(out, &bits, 2);
}

}  // namespace

uint16_t float_to_half_bits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t mantissa = x & 0x7fffffu;
  const int32_t exponent = static_cast<int32_t>((x >> 23) & 0xffu) - 127 + 15;
  if (((x >> 23) & 0xffu) == 0xffu) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (mantissa != 0 ? 0x200u : 0u));
  }
  if (exponent >= 31) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to inf
  if (exponent <= 0) {                                               // subnormal or zero
    if (exponent < -10) return static_cast<uint16_t>(sign);
    const uint32_t m = mantissa | 0x800000u;
    const auto shift = static_cast<uint32_t>(14 - exponent);
    uint32_t half = m >> shift;
    const uint32_t rest = m & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into inf
  return static_cast<uint16_t>(sign | half);
}

uint16_t float_to_bfloat16_bits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

std::vector<TensorToWrite> checkpoint_layout(const LlmArchitecture& arch, Dtype dtype) {
  LayoutBuilder b(dtype);
  if (arch.family == ModelFamily::kGptj) {
    gptj_layout(arch, b);
  } else if (arch.family == ModelFamily::kFalcon) {
    falcon_layout(arch, b);
  } else {
    llama_layout(arch, b);
  }
  return b.take();
}

int64_t layer_of_tensor(const std::string& name) {
  static const std::regex kLayer(R"((?:^|\.)(?:layers|h)\.(\d{1,9})\.)");
  std::smatch m;
  if (!std::regex_search(name, m, kLayer)) return -1;
  return std::stoll(m[1].str());
}

std::vector<std::filesystem::path> checkpoint_files(const std::filesystem::path& dir) {
  if (std::filesystem::is_regular_file(dir / "model.safetensors")) {
    return {dir / "model.safetensors"};
  }
  std::vector<std::filesystem::path> shards;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".safetensors") {
      shards.push_back(entry.path());
    }
  }
  if (ec) throw SpecError(dir.string(), "", "cannot list the folder: " + ec.message());
  if (shards.empty()) throw SpecError(dir.string(), "", "holds no .safetensors file");
  std::sort(shards.begin(), shards.end());
  return shards;
}

void write_random_checkpoint(const LlmArchitecture& arch, const std::filesystem::path& dir,
                             Dtype dtype, uint64_t seed, float stddev, unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  if (dtype != Dtype::kF16 && dtype != Dtype::kBF16 && dtype != Dtype::kF32) {
    throw SpecError(dir.string(), "dtype", "random checkpoints are F16, BF16 or F32");
  }
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << llm_architecture_to_json(arch);
  const std::vector<TensorToWrite> tensors = checkpoint_layout(arch, dtype);
  const std::size_t width = dtype_bytes(dtype);
  write_safetensors(dir / "model.safetensors", tensors, {{"format", "pt"}},
                    [&](std::size_t index, uint64_t offset, std::span<char> out) {
                      const std::string& name = tensors[index].name;
                      const bool bias = ends_with(name, ".bias");
                      const bool norm = is_norm(name);
                      // Every element's value depends only on (seed, tensor, element), so
                      // slices of the chunk are filled on threads with the same result.
                      const auto fill = [&](std::size_t begin, std::size_t end) {
                        for (std::size_t i = begin; i + width <= end; i += width) {
                          const uint64_t element = (offset + i) / width;
                          float v = 0.0f;
                          if (norm && !bias) {
                            v = 1.0f;
                          } else if (!bias) {
                            v = stddev * normal_at(seed, index, element);
                          }
                          store(dtype, v, out.data() + i);
                        }
                      };
                      const std::size_t elements = out.size() / width;
                      const std::size_t parts =
                          std::clamp<std::size_t>(threads, 1, elements / (1 << 18) + 1);
                      if (parts == 1) return fill(0, out.size());
                      const std::size_t slice = (elements + parts - 1) / parts * width;
                      std::vector<std::jthread> workers;
                      for (std::size_t begin = slice; begin < out.size(); begin += slice) {
                        workers.emplace_back(fill, begin, std::min(out.size(), begin + slice));
                      }
                      fill(0, std::min(out.size(), slice));
                    });
}

LlmArchitecture write_fingerprint(const std::filesystem::path& source, int64_t layers,
                                  const std::filesystem::path& dir) {
  LlmArchitecture arch = load_llm_architecture(source / "config.json");
  if (layers < 1 || layers > arch.layers) {
    throw SpecError((source / "config.json").string(), "num_hidden_layers",
                    "a fingerprint keeps 1.." + std::to_string(arch.layers) + " layers, not " +
                        std::to_string(layers));
  }
  struct Kept {
    std::filesystem::path file;
    uint64_t data_offset = 0;
    TensorInfo tensor;
  };
  std::vector<Kept> kept;
  for (const auto& file : checkpoint_files(source)) {
    const SafetensorsIndex index = read_safetensors_index(file);
    for (const TensorInfo& t : index.tensors) {
      if (layer_of_tensor(t.name) < layers) kept.push_back({file, index.data_offset, t});
    }
  }
  arch.layers = layers;
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << llm_architecture_to_json(arch);
  std::vector<TensorToWrite> out;
  for (const Kept& k : kept) out.push_back({k.tensor.name, k.tensor.dtype, k.tensor.shape});
  std::ifstream in;
  std::filesystem::path open_file;
  write_safetensors(
      dir / "model.safetensors", out, {{"format", "pt"}},
      [&](std::size_t index, uint64_t offset, std::span<char> chunk) {
        const Kept& k = kept[index];
        if (open_file != k.file) {
          in = std::ifstream(k.file, std::ios::binary);
          open_file = k.file;
        }
        in.seekg(static_cast<std::streamoff>(k.data_offset + k.tensor.begin + offset));
        in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
        if (!in) {
          throw SpecError(k.file.string(), "tensor '" + k.tensor.name + "'",
                          "the file ended before its data");
        }
      });
  return arch;
}

}  // namespace tessera
