#include "serve/kserve/datatype.hpp"

#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <utility>

namespace tessera {
namespace {

struct TypeInfo {
  DataType type;
  std::string_view name;
  std::size_t size;
};
constexpr std::array<TypeInfo, 13> kTypes{{
    {DataType::kBool, "BOOL", 1},
    {DataType::kUint8, "UINT8", 1},
    {DataType::kUint16, "UINT16", 2},
    {DataType::kUint32, "UINT32", 4},
    {DataType::kUint64, "UINT64", 8},
    {DataType::kInt8, "INT8", 1},
    {DataType::kInt16, "INT16", 2},
    {DataType::kInt32, "INT32", 4},
    {DataType::kInt64, "INT64", 8},
    {DataType::kFp16, "FP16", 2},
    {DataType::kFp32, "FP32", 4},
    {DataType::kFp64, "FP64", 8},
    {DataType::kBytes, "BYTES", 0},
}};

template <typename T>
T load(const unsigned char* p) {
  static_assert(std::endian::native == std::endian::little, "binary tensors are little-endian");
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

std::optional<DataType> parse_datatype(std::string_view name) {
  for (const TypeInfo& t : kTypes) {
    if (t.name == name) return t.type;
  }
  return std::nullopt;
}

std::string_view datatype_name(DataType t) { return kTypes[static_cast<std::size_t>(t)].name; }
std::size_t datatype_size(DataType t) { return kTypes[static_cast<std::size_t>(t)].size; }

bool is_integer(DataType t) { return t >= DataType::kUint8 && t <= DataType::kInt64; }
bool is_float(DataType t) { return t >= DataType::kFp16 && t <= DataType::kFp64; }

bool in_range(DataType t, double v) {
  if (!std::isfinite(v)) return false;
  if (is_integer(t) && std::trunc(v) != v) return false;
  switch (t) {
    case DataType::kBool:
      return v == 0.0 || v == 1.0;
    case DataType::kUint8:
      return v >= 0 && v <= 255;
    case DataType::kUint16:
      return v >= 0 && v <= 65535;
    case DataType::kUint32:
      return v >= 0 && v <= 4294967295.0;
    case DataType::kUint64:
      return v >= 0 && v <= 18446744073709551615.0;
    case DataType::kInt8:
      return v >= -128 && v <= 127;
    case DataType::kInt16:
      return v >= -32768 && v <= 32767;
    case DataType::kInt32:
      return v >= -2147483648.0 && v <= 2147483647.0;
    case DataType::kInt64:
      return v >= -9223372036854775808.0 && v <= 9223372036854775807.0;
    case DataType::kFp16:
      return std::fabs(v) <= 65504.0;
    case DataType::kFp32:
      return std::fabs(v) <= FLT_MAX;
    case DataType::kFp64:
      return true;
    case DataType::kBytes:
      return false;
  }
  return false;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1u;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);  // zero or subnormal
  } else if (exp == 31) {
    v = mant == 0 ? INFINITY : NAN;
  } else {
    v = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
  }
  return sign ? -v : v;
}

double decode_element(DataType t, const unsigned char* p) {
  switch (t) {
    case DataType::kBool:
      return p[0];
    case DataType::kUint8:
      return load<uint8_t>(p);
    case DataType::kUint16:
      return load<uint16_t>(p);
    case DataType::kUint32:
      return load<uint32_t>(p);
    case DataType::kUint64:
      return static_cast<double>(load<uint64_t>(p));
    case DataType::kInt8:
      return load<int8_t>(p);
    case DataType::kInt16:
      return load<int16_t>(p);
    case DataType::kInt32:
      return load<int32_t>(p);
    case DataType::kInt64:
      return static_cast<double>(load<int64_t>(p));
    case DataType::kFp16:
      return half_to_float(load<uint16_t>(p));
    case DataType::kFp32:
      return load<float>(p);
    case DataType::kFp64:
      return load<double>(p);
    case DataType::kBytes:
      break;
  }
  return 0.0;
}

}  // namespace tessera
