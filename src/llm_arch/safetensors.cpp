#include "llm_arch/safetensors.hpp"

#include <algorithm>
#include <array>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "core/error.hpp"
#include "core/input_file.hpp"

namespace tessera {
namespace {

struct DtypeName {
  Dtype dtype;
  const char* name;
  std::size_t bytes;
};
constexpr std::array<DtypeName, 13> kDtypes{{
    {Dtype::kBool, "BOOL", 1},
    {Dtype::kU8, "U8", 1},
    {Dtype::kI8, "I8", 1},
    {Dtype::kI16, "I16", 2},
    {Dtype::kU16, "U16", 2},
    {Dtype::kF16, "F16", 2},
    {Dtype::kBF16, "BF16", 2},
    {Dtype::kI32, "I32", 4},
    {Dtype::kU32, "U32", 4},
    {Dtype::kF32, "F32", 4},
    {Dtype::kF64, "F64", 8},
    {Dtype::kI64, "I64", 8},
    {Dtype::kU64, "U64", 8},
}};

[[noreturn]] void fail(const std::string& file, const std::string& field,
                       const std::string& problem) {
  throw SpecError(file, field, problem);
}

// A non-negative JSON integer that fits in 63 bits.
uint64_t as_count(const nlohmann::json& j, const std::string& file, const std::string& field) {
  if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<int64_t>() >= 0)) {
    fail(file, field, "must be a non-negative integer");
  }
  const uint64_t v = j.get<uint64_t>();
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    fail(file, field, "is too large");
  }
  return v;
}

TensorInfo parse_tensor(const std::string& name, const nlohmann::json& entry,
                        const std::string& file) {
  const std::string field = "tensor '" + name + "'";
  if (!entry.is_object()) fail(file, field, "must be an object");
  TensorInfo t;
  t.name = name;
  for (const auto& [key, value] : entry.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      fail(file, field + "." + key, "unknown field (expected dtype, shape, data_offsets)");
    }
  }
  if (!entry.contains("dtype") || !entry["dtype"].is_string()) {
    fail(file, field + ".dtype", "missing or not a string");
  }
  const std::string dtype = entry["dtype"].get<std::string>();
  const auto it = std::find_if(kDtypes.begin(), kDtypes.end(),
                               [&](const DtypeName& d) { return dtype == d.name; });
  if (it == kDtypes.end()) fail(file, field + ".dtype", "unsupported dtype '" + dtype + "'");
  t.dtype = it->dtype;

  if (!entry.contains("shape") || !entry["shape"].is_array()) {
    fail(file, field + ".shape", "missing or not a list");
  }
  const auto& shape = entry["shape"];
  if (shape.size() > kMaxTensorRank) {
    fail(file, field + ".shape", "has more than " + std::to_string(kMaxTensorRank) + " dimensions");
  }
  uint64_t elements = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const uint64_t dim = as_count(shape[i], file, field + ".shape[" + std::to_string(i) + "]");
    t.shape.push_back(static_cast<int64_t>(dim));
    if (dim != 0 && elements > std::numeric_limits<uint64_t>::max() / 8 / dim) {
      fail(file, field + ".shape", "has too many elements");
    }
    elements *= dim;
  }

  if (!entry.contains("data_offsets") || !entry["data_offsets"].is_array() ||
      entry["data_offsets"].size() != 2) {
    fail(file, field + ".data_offsets", "missing or not a [begin, end] pair");
  }
  t.begin = as_count(entry["data_offsets"][0], file, field + ".data_offsets[0]");
  t.end = as_count(entry["data_offsets"][1], file, field + ".data_offsets[1]");
  if (t.end < t.begin) fail(file, field + ".data_offsets", "end is before begin");
  if (t.end - t.begin != elements * it->bytes) {
    fail(file, field + ".data_offsets",
         "holds " + std::to_string(t.end - t.begin) + " bytes but dtype " + dtype +
             " and shape need " + std::to_string(elements * it->bytes));
  }
  return t;
}

}  // namespace

std::string to_string(Dtype d) {
  for (const DtypeName& n : kDtypes) {
    if (n.dtype == d) return n.name;
  }
  return "?";
}

std::size_t dtype_bytes(Dtype d) {
  for (const DtypeName& n : kDtypes) {
    if (n.dtype == d) return n.bytes;
  }
  return 0;
}

uint64_t TensorInfo::elements() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

const TensorInfo* SafetensorsIndex::find(std::string_view name) const {
  for (const TensorInfo& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

SafetensorsIndex parse_safetensors_header(std::string_view header_json, uint64_t data_bytes,
                                          const std::string& file) {
  // Duplicate keys would silently shadow each other in a JSON object: refuse them, at
  // every level (a tensor named twice, or a tensor with two dtypes).
  std::vector<std::set<std::string>> keys_by_level;
  std::string duplicate;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(
        header_json.begin(), header_json.end(),
        [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
          using Event = nlohmann::json::parse_event_t;
          if (event == Event::object_start) keys_by_level.emplace_back();
          if (event == Event::object_end && !keys_by_level.empty()) keys_by_level.pop_back();
          if (event == Event::key && !keys_by_level.empty() && duplicate.empty() &&
              !keys_by_level.back().insert(parsed.get<std::string>()).second) {
            duplicate = parsed.get<std::string>();
          }
          return depth <= static_cast<int>(kMaxTensorRank) + 3;  // drop absurdly deep values
        });
  } catch (const nlohmann::json::exception& e) {
    fail(file, "header", std::string("is not valid JSON: ") + e.what());
  }
  if (!duplicate.empty())
    fail(file, "header", "the key '" + duplicate + "' appears twice in one object");
  if (!header.is_object()) fail(file, "header", "must be a JSON object");
  if (header.size() > kMaxSafetensorsTensors + 1) {
    fail(file, "header", "names more than " + std::to_string(kMaxSafetensorsTensors) + " tensors");
  }

  SafetensorsIndex index;
  index.data_bytes = data_bytes;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail(file, "__metadata__", "must be a map of strings");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) fail(file, "__metadata__." + key, "must be a string");
        index.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    index.tensors.push_back(parse_tensor(name, entry, file));
  }

  // The data section must be exactly covered: no overlaps, no holes, nothing past its end.
  std::vector<const TensorInfo*> by_offset;
  for (const TensorInfo& t : index.tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t covered = 0;
  for (const TensorInfo* t : by_offset) {
    const std::string field = "tensor '" + t->name + "'.data_offsets";
    if (t->begin < covered) fail(file, field, "overlaps another tensor");
    if (t->begin > covered) {
      fail(file, field, "leaves a hole in the data at byte " + std::to_string(covered));
    }
    covered = t->end;
  }
  if (covered > data_bytes) {
    fail(file, "data",
         "tensors need " + std::to_string(covered) + " bytes but the file holds " +
             std::to_string(data_bytes));
  }
  if (covered < data_bytes) {
    fail(file, "data", std::to_string(data_bytes - covered) + " bytes after the last tensor");
  }
  return index;
}

SafetensorsIndex read_safetensors_index(const std::filesystem::path& file) {
  const std::string name = file.string();
  if (auto problem = input_file_problem(file, std::numeric_limits<uint64_t>::max())) {
    fail(name, "", *problem);
  }
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(file, ec);
  if (ec) fail(name, "", "cannot read its size: " + ec.message());
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(name, "", "cannot be opened");
  if (size < 8) fail(name, "header", "the file is shorter than the 8-byte header length");
  unsigned char len_bytes[8];
  in.read(reinterpret_cast<char*>(len_bytes), 8);
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | len_bytes[i];
  if (header_bytes > kMaxSafetensorsHeaderBytes) {
    fail(name, "header",
         "declares " + std::to_string(header_bytes) + " bytes (at most " +
             std::to_string(kMaxSafetensorsHeaderBytes) + ")");
  }
  if (header_bytes > size - 8) {
    fail(name, "header",
         "declares " + std::to_string(header_bytes) + " bytes but the file holds " +
             std::to_string(size - 8) + " after the length");
  }
  std::string header(header_bytes, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_bytes));
  if (!in) fail(name, "header", "could not be read");
  SafetensorsIndex index = parse_safetensors_header(header, size - 8 - header_bytes, name);
  index.data_offset = 8 + header_bytes;
  return index;
}

std::vector<char> read_tensor_bytes(const std::filesystem::path& file,
                                    const SafetensorsIndex& index, const TensorInfo& tensor) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file.string(), "tensor '" + tensor.name + "'", "cannot open the file");
  std::vector<char> bytes(tensor.bytes());
  in.seekg(static_cast<std::streamoff>(index.data_offset + tensor.begin));
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!in) fail(file.string(), "tensor '" + tensor.name + "'", "the file ended before its data");
  return bytes;
}

void write_safetensors(const std::filesystem::path& file, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata,
                       const TensorFiller& fill) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  std::vector<uint64_t> sizes;
  for (const TensorToWrite& t : tensors) {
    uint64_t n = dtype_bytes(t.dtype);
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    header[t.name] = {
        {"dtype", to_string(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + n}}};
    sizes.push_back(n);
    offset += n;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data section starts 8-byte aligned
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + file.string());
  char len_bytes[8];
  uint64_t len = text.size();
  for (char& b : len_bytes) {
    b = static_cast<char>(len & 0xff);
    len >>= 8;
  }
  out.write(len_bytes, 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  // Chunks of up to 64 MiB (no larger than the largest tensor), so that a fill may split
  // one over threads.
  const uint64_t largest = sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
  std::vector<char> chunk(static_cast<std::size_t>(std::clamp<uint64_t>(largest, 1, 1 << 26)));
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    for (uint64_t done = 0; done < sizes[i];) {
      const std::size_t n =
          static_cast<std::size_t>(std::min<uint64_t>(chunk.size(), sizes[i] - done));
      fill(i, done, std::span<char>(chunk.data(), n));
      out.write(chunk.data(), static_cast<std::streamsize>(n));
      done += n;
    }
  }
  if (!out) throw std::runtime_error("error writing " + file.string());
}

}  // namespace tessera
