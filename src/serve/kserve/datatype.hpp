#pragma once

// The tensor datatypes of the Open Inference Protocol v2 (KServe / Triton, "Tensor Data
// Types"): names, element sizes, value ranges, and the little-endian binary encoding of
// the binary tensor data extension. Pure functions and constants; thread-safe.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera {

enum class DataType : uint8_t {
  kBool,
  kUint8,
  kUint16,
  kUint32,
  kUint64,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kFp16,
  kFp32,
  kFp64,
  kBytes,
};

// "FP32" -> kFp32; nullopt for anything else (names are case-sensitive).
std::optional<DataType> parse_datatype(std::string_view name);
std::string_view datatype_name(DataType t);
// Bytes per element in binary form; 0 for BYTES (each element is a 4-byte length + bytes).
std::size_t datatype_size(DataType t);
bool is_integer(DataType t);
bool is_float(DataType t);

// Whether `v` is a value of type `t` (integers: whole and within the type's range; floats:
// finite and within the type's largest magnitude; BOOL: 0 or 1). BYTES: never.
bool in_range(DataType t, double v);

// Decodes element i of a little-endian binary buffer of fixed-size type `t` (not BYTES).
double decode_element(DataType t, const unsigned char* p);

// IEEE 754 half precision <-> float (round to nearest even on the way down).
float half_to_float(uint16_t h);

}  // namespace tessera
