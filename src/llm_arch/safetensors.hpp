#pragma once

// Reading and writing checkpoints in the safetensors format (huggingface/safetensors,
// docs/format): an 8-byte little-endian header length N, N bytes of a JSON header naming
// each tensor's dtype, shape and [begin, end) byte range in the data that follows, and an
// optional "__metadata__" map of strings. The reader is written for hostile files: the
// header is bounded (100 MB, as the format's reference reader), every tensor's range must
// match its dtype and shape, ranges may neither overlap nor leave holes nor run past the
// file, duplicate names are errors; any problem is a SpecError naming the file, the tensor
// and the problem. Plain values and free functions; no shared state.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

enum class Dtype { kBool, kU8, kI8, kI16, kU16, kF16, kBF16, kI32, kU32, kF32, kF64, kI64, kU64 };

std::string to_string(Dtype d);  // the format's name: "F16", "BF16", "I8", ...
std::size_t dtype_bytes(Dtype d);

struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // [begin, end) within the data section
  uint64_t end = 0;
  uint64_t elements() const;  // product of the shape (1 for a scalar)
  uint64_t bytes() const { return end - begin; }
};

struct SafetensorsIndex {
  std::vector<TensorInfo> tensors;  // in the header's order
  std::map<std::string, std::string> metadata;
  uint64_t data_offset = 0;  // 8 + N: where the data section starts in the file
  uint64_t data_bytes = 0;

  const TensorInfo* find(std::string_view name) const;
};

inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;
inline constexpr std::size_t kMaxSafetensorsTensors = 1'000'000;
inline constexpr std::size_t kMaxTensorRank = 16;

// Reads and checks the header of `file` (not the data).
SafetensorsIndex read_safetensors_index(const std::filesystem::path& file);
// Checks a header's JSON against a data section of `data_bytes`; `file` names the source
// in errors.
SafetensorsIndex parse_safetensors_header(std::string_view header_json, uint64_t data_bytes,
                                          const std::string& file);
// The bytes of one tensor of `file` (whose index is `index`).
std::vector<char> read_tensor_bytes(const std::filesystem::path& file,
                                    const SafetensorsIndex& index, const TensorInfo& tensor);

// What to write: tensors in order (begin/end are assigned by the writer).
struct TensorToWrite {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<int64_t> shape;
};
// Fills `out` with bytes [offset, offset + out.size()) of tensor `index`'s data.
using TensorFiller = std::function<void(std::size_t index, uint64_t offset, std::span<char> out)>;

// Writes a safetensors file, streaming each tensor's bytes from `fill` in chunks so that a
// checkpoint larger than memory can be written. Throws std::runtime_error on I/O errors.
void write_safetensors(const std::filesystem::path& file, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata,
                       const TensorFiller& fill);

}  // namespace tessera
