#pragma once

// GPU metrics in NVIDIA Triton's names (docs/serve.md#metrics): per GPU, nv_gpu_utilization
// (0.0 to 1.0), nv_gpu_memory_used_bytes and nv_gpu_memory_total_bytes, labelled by
// gpu_uuid. The numbers come from NVML, which is loaded at run time with dlopen
// (libnvidia-ml.so.1, part of the NVIDIA driver): tessera has no build dependency on it,
// and where it is absent (no driver, a CPU-only machine) nothing is exported and one info
// line is logged. The sampler is an interface so the rendering is tested with a fake.
//
// Thread safety: a GpuSampler's sample() may be called from several threads at once (the
// NVML one serialises its calls); render_gpu_metrics is pure; process_gpu_sampler() is
// safe to call from any thread and returns an object that lives until the process exits.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tessera {

// One GPU (or MIG device) at one moment; a quantity its driver does not report is unset.
struct GpuSample {
  std::string uuid;                   // "GPU-8932f937-..." as nvidia-smi -L prints it
  std::optional<double> utilization;  // fraction of the last sample period busy, [0, 1]
  std::optional<uint64_t> memory_used_bytes;
  std::optional<uint64_t> memory_total_bytes;
};

class GpuSampler {
 public:
  virtual ~GpuSampler() = default;
  // Every GPU the sampler sees, in its order; empty when none can be read now.
  virtual std::vector<GpuSample> sample() = 0;
};

// The Prometheus text for `sampler`'s GPUs; "" when `sampler` is null or sees no GPU.
std::string render_gpu_metrics(GpuSampler* sampler);

// NVML from `library` (a name for dlopen or a path). Null, with `why` saying what failed
// (the library cannot be opened, a function is missing, nvmlInit fails), when unusable.
std::unique_ptr<GpuSampler> open_nvml(const std::string& library, std::string* why);

// The process's sampler: open_nvml("libnvidia-ml.so.1") on the first call. Where NVML is
// absent it returns null, having logged why once at info level.
GpuSampler* process_gpu_sampler();

}  // namespace tessera
