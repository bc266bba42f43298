#pragma once

// Where a model or a decoder runs: the `device` field of a models file, `tessera serve
// --device`, `tessera profile --device` and `tessera llm ... --device`
// (docs/serve.md#serving-on-gpus). Parsing and resolution are pure functions of their arguments
// (the CUDA side, which needs libtorch, fills in a DeviceEnvironment): they hold no state and are
// thread-safe.
//
// Accepted forms: `cpu`; `cuda` (= `cuda:0`); `cuda:N`, the N-th CUDA device this process
// sees; a GPU or MIG UUID, `GPU-...` or `MIG-...` (as `nvidia-smi -L` prints it, or a unique
// prefix of it), resolved through CUDA_VISIBLE_DEVICES: the process sees exactly the
// devices that variable lists, numbered 0, 1, ... in its order, so a UUID names the
// ordinal of the one entry of CUDA_VISIBLE_DEVICES that it matches (equal, or one a prefix
// of the other). A UUID not listed there, or listed twice, is an error: tessera does not
// query the driver for UUIDs (a MIG slice is visible to CUDA only through that variable).

#include <optional>
#include <string>
#include <string_view>

namespace tessera {

struct DeviceSpec {
  enum class Kind { kCpu, kCuda, kUuid };
  Kind kind = Kind::kCpu;
  int index = 0;     // kCuda: the ordinal among visible devices
  std::string uuid;  // kUuid: "GPU-..." or "MIG-..."

  bool is_cpu() const { return kind == Kind::kCpu; }
  std::string text() const;  // "cpu", "cuda:1", "GPU-..."
  bool operator==(const DeviceSpec&) const = default;
};

// Parses one of the forms above; throws std::invalid_argument naming the accepted forms.
DeviceSpec parse_device(std::string_view text);

// What the process can use, as the libtorch side sees it.
struct DeviceEnvironment {
  bool built_with_cuda = false;                     // tessera was compiled against a CUDA libtorch
  int visible_devices = 0;                          // CUDA devices this process sees
  std::optional<std::string> cuda_visible_devices;  // CUDA_VISIBLE_DEVICES, if set
};

// The CUDA ordinal `device` names (-1 for the CPU). Throws std::runtime_error saying why
// it cannot be used: "this tessera was built against a CPU-only libtorch", "no CUDA device
// visible", an ordinal beyond the visible devices, a UUID not in CUDA_VISIBLE_DEVICES.
int resolve_device(const DeviceSpec& device, const DeviceEnvironment& env);

// CUDA_VISIBLE_DEVICES from the process environment (nullopt if unset).
std::optional<std::string> cuda_visible_devices_from_env();

}  // namespace tessera
