#include "core/device.hpp"

#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "core/error.hpp"

namespace tessera {
namespace {

constexpr int kMaxOrdinal = 1023;
constexpr std::size_t kMaxUuidBytes = 128;

const char* kForms =
    "expected 'cpu', 'cuda', 'cuda:N' (N in [0, 1023]) or a GPU/MIG UUID ('GPU-...', "
    "'MIG-...')";

bool is_uuid_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ||
         c == '/';
}

bool starts_with_uuid_prefix(std::string_view s) {
  return s.size() > 4 && (s.starts_with("GPU-") || s.starts_with("MIG-"));
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = list.find(',', start);
    const std::size_t end = comma == std::string::npos ? list.size() : comma;
    out.push_back(trim(std::string_view(list).substr(start, end - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::string DeviceSpec::text() const {
  switch (kind) {
    case Kind::kCpu:
      return "cpu";
    case Kind::kCuda:
      return "cuda:" + std::to_string(index);
    case Kind::kUuid:
      return uuid;
  }
  return "cpu";
}

DeviceSpec parse_device(std::string_view text) {
  DeviceSpec d;
  if (text == "cpu") return d;
  if (text == "cuda") {
    d.kind = DeviceSpec::Kind::kCuda;
    return d;
  }
  if (text.starts_with("cuda:")) {
    const std::string_view digits = text.substr(5);
    int v = 0;
    bool ok = !digits.empty() && digits.size() <= 4;
    for (char c : digits) {
      if (c < '0' || c > '9') ok = false;
      if (ok) v = v * 10 + (c - '0');
    }
    if (!ok || v > kMaxOrdinal) {
      throw std::invalid_argument("bad device '" + printable(text) + "': " + kForms);
    }
    d.kind = DeviceSpec::Kind::kCuda;
    d.index = v;
    return d;
  }
  if (starts_with_uuid_prefix(text)) {
    bool ok = text.size() <= kMaxUuidBytes;
    for (char c : text) ok = ok && is_uuid_char(c);
    if (!ok) throw std::invalid_argument("bad device UUID '" + printable(text) + "': " + kForms);
    d.kind = DeviceSpec::Kind::kUuid;
    d.uuid = std::string(text);
    return d;
  }
  throw std::invalid_argument("bad device '" + printable(text) + "': " + kForms);
}

int resolve_device(const DeviceSpec& device, const DeviceEnvironment& env) {
  if (device.is_cpu()) return -1;
  const std::string name = device.text();
  if (!env.built_with_cuda) {
    throw std::runtime_error("device '" + name +
                             "': this tessera was built against a CPU-only libtorch (build "
                             "with a CUDA libtorch: docs/serve.md#serving-on-gpus)");
  }
  const std::string cvd = env.cuda_visible_devices ? "CUDA_VISIBLE_DEVICES='" +
                                                         printable(*env.cuda_visible_devices) + "'"
                                                   : std::string("CUDA_VISIBLE_DEVICES unset");
  if (env.visible_devices <= 0) {
    throw std::runtime_error("device '" + name + "': no CUDA device visible (" + cvd + ")");
  }
  int ordinal = device.index;
  if (device.kind == DeviceSpec::Kind::kUuid) {
    if (!env.cuda_visible_devices) {
      throw std::runtime_error("device '" + name +
                               "': a UUID is resolved through CUDA_VISIBLE_DEVICES, which is "
                               "unset; list the UUIDs this process may use there");
    }
    const std::vector<std::string> entries = split_list(*env.cuda_visible_devices);
    ordinal = -1;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const std::string& e = entries[i];
      if (!starts_with_uuid_prefix(e)) continue;
      const bool match = e.starts_with(device.uuid) || device.uuid.starts_with(e);
      if (!match) continue;
      if (ordinal >= 0) {
        throw std::runtime_error("device '" + name + "' matches two entries of " + cvd);
      }
      ordinal = static_cast<int>(i);
    }
    if (ordinal < 0) throw std::runtime_error("device '" + name + "' is not listed in " + cvd);
  }
  if (ordinal >= env.visible_devices) {
    throw std::runtime_error("device '" + name + "': CUDA ordinal " + std::to_string(ordinal) +
                             " but only " + std::to_string(env.visible_devices) +
                             " CUDA device(s) visible (" + cvd + ")");
  }
  return ordinal;
}

std::optional<std::string> cuda_visible_devices_from_env() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");  // NOLINT(concurrency-mt-unsafe)
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

}  // namespace tessera
