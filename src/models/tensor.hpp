#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

// A dense float tensor in row-major order: the payload the server keeps per request and
// hands to models. It carries no libtorch types, so the server and the engine side stay
// independent of libtorch.
struct FloatTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;

  std::size_t numel() const { return data.size(); }
};

// Product of the dimensions (1 for a scalar shape []); -1 if any dimension is negative.
inline int64_t shape_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    n *= d;
  }
  return n;
}

// "[3, 64, 64]"
inline std::string shape_string(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

}  // namespace tessera
