#include "supernet/supernet_config.hpp"

#include <cmath>
#include <stdexcept>

namespace tessera::supernet {
namespace {

constexpr int kDigits = kDepthDigits + kMaxBlocks + kWidthDigits;

template <std::size_t N>
void append_digits(std::string& s, const std::array<std::uint8_t, N>& digits) {
  for (std::uint8_t v : digits) s.push_back(static_cast<char>('0' + v));
}

template <std::size_t N>
std::size_t parse_digits(const std::string& s, std::size_t pos, char tag,
                         std::array<std::uint8_t, N>& out) {
  if (pos >= s.size() || s[pos] != tag) {
    throw std::invalid_argument("subnet name '" + s + "': expected '" + tag + "' at position " +
                                std::to_string(pos));
  }
  ++pos;
  for (std::size_t i = 0; i < N; ++i, ++pos) {
    if (pos >= s.size() || s[pos] < '0' || s[pos] > '2') {
      throw std::invalid_argument("subnet name '" + s + "': expected " + std::to_string(N) +
                                  " digits 0-2 after '" + tag + "'");
    }
    out[i] = static_cast<std::uint8_t>(s[pos] - '0');
  }
  return pos;
}

int stage_width(int stage, int width_index) {
  return make_divisible(kStageWidth[static_cast<std::size_t>(stage)] *
                        kWidthMultList[static_cast<std::size_t>(width_index)]);
}

int stem_out_width(int width_index) {
  return make_divisible(kStemWidth * kWidthMultList[static_cast<std::size_t>(width_index)]);
}

int stem_mid_width(int width_index) { return make_divisible(stem_out_width(width_index) / 2); }

}  // namespace

int make_divisible(double v, int divisor) {
  int rounded = static_cast<int>(v + divisor / 2.0) / divisor * divisor;
  if (rounded < divisor) rounded = divisor;
  if (rounded < 0.9 * v) rounded += divisor;
  return rounded;
}

std::uint64_t SubnetConfig::id() const {
  std::uint64_t id = 0;
  std::uint64_t place = 1;
  auto add = [&](std::uint8_t digit) {
    id += digit * place;
    place *= 3;
  };
  for (std::uint8_t v : d) add(v);
  for (std::uint8_t v : e) add(v);
  for (std::uint8_t v : w) add(v);
  return id;
}

SubnetConfig SubnetConfig::from_id(std::uint64_t id) {
  SubnetConfig c;
  auto next = [&]() {
    const auto digit = static_cast<std::uint8_t>(id % 3);
    id /= 3;
    return digit;
  };
  for (auto& v : c.d) v = next();
  for (auto& v : c.e) v = next();
  for (auto& v : c.w) v = next();
  if (id != 0) throw std::invalid_argument("subnet id out of range (>= 3^29)");
  return c;
}

std::string SubnetConfig::name() const {
  std::string s;
  s.reserve(kDigits + 5);
  s.push_back('d');
  append_digits(s, d);
  s += "-e";
  append_digits(s, e);
  s += "-w";
  append_digits(s, w);
  return s;
}

SubnetConfig SubnetConfig::from_name(const std::string& name) {
  SubnetConfig c;
  std::size_t pos = parse_digits(name, 0, 'd', c.d);
  if (pos >= name.size() || name[pos] != '-')
    throw std::invalid_argument("subnet name '" + name + "': expected '-'");
  pos = parse_digits(name, pos + 1, 'e', c.e);
  if (pos >= name.size() || name[pos] != '-')
    throw std::invalid_argument("subnet name '" + name + "': expected '-'");
  pos = parse_digits(name, pos + 1, 'w', c.w);
  if (pos != name.size())
    throw std::invalid_argument("subnet name '" + name + "': trailing characters");
  return c;
}

SubnetConfig SubnetConfig::canonical() const {
  SubnetConfig c = *this;
  for (int s = 0; s < kStages; ++s) {
    const int first = first_block_of_stage(s);
    const int kept = active_blocks(s, d[static_cast<std::size_t>(1 + s)]);
    const int all = kBaseDepth[static_cast<std::size_t>(s)] + kMaxDepthChoice;
    for (int i = kept; i < all; ++i) c.e[static_cast<std::size_t>(first + i)] = 0;
  }
  if (c.d[0] != kMaxDepthChoice) c.d[0] = 0;  // the stem's residual conv is dropped either way
  for (std::uint8_t j = 0; j < c.w[0]; ++j) {
    if (stem_mid_width(j) == stem_mid_width(c.w[0])) {
      c.w[0] = j;
      break;
    }
  }
  return c;
}

SubnetConfig SubnetConfig::min_config() { return uniform(0, 0, 0); }
SubnetConfig SubnetConfig::max_config() { return uniform(2, 2, 2); }

SubnetConfig SubnetConfig::uniform(int d, int e, int w) {
  if (d < 0 || d > 2 || e < 0 || e > 2 || w < 0 || w > 2) {
    throw std::invalid_argument("subnet choice indices must be 0, 1 or 2");
  }
  SubnetConfig c;
  c.d.fill(static_cast<std::uint8_t>(d));
  c.e.fill(static_cast<std::uint8_t>(e));
  c.w.fill(static_cast<std::uint8_t>(w));
  return c;
}

int active_blocks(int stage, int depth_index) {
  return kBaseDepth[static_cast<std::size_t>(stage)] +
         kDepthList[static_cast<std::size_t>(depth_index)];
}

int first_block_of_stage(int stage) {
  int first = 0;
  for (int s = 0; s < stage; ++s)
    first += kBaseDepth[static_cast<std::size_t>(s)] + kMaxDepthChoice;
  return first;
}

SubnetShape subnet_shape(const SubnetConfig& config) {
  SubnetShape shape;
  shape.stem_mid = stem_mid_width(config.w[0]);
  shape.stem_out = stem_out_width(config.w[1]);
  shape.stem_residual = config.d[0] == kMaxDepthChoice;
  int in = shape.stem_out;
  for (int s = 0; s < kStages; ++s) {
    const int out = stage_width(s, config.w[static_cast<std::size_t>(2 + s)]);
    const int first = first_block_of_stage(s);
    const int n = active_blocks(s, config.d[static_cast<std::size_t>(1 + s)]);
    for (int i = 0; i < n; ++i) {
      BlockShape b;
      b.index = first + i;
      b.stage = s;
      b.in = in;
      b.out = out;
      const double e = kExpandList[config.e[static_cast<std::size_t>(b.index)]];
      b.mid = make_divisible(static_cast<double>(std::lround(out * e)));
      b.stride = i == 0 ? kStageStride[static_cast<std::size_t>(s)] : 1;
      b.downsample = i == 0;
      shape.blocks.push_back(b);
      in = out;
    }
  }
  shape.features = in;
  return shape;
}

SubnetShape supernet_shape() { return subnet_shape(SubnetConfig::max_config()); }

}  // namespace tessera::supernet
