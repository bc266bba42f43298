#include "serve/metrics/gpu_metrics.hpp"

#include <dlfcn.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <mutex>

#include "serve/metrics/prometheus.hpp"

namespace tessera {
namespace {

// The few NVML entry points used, declared from NVML's documented C API (nvml.h): every
// function returns nvmlReturn_t (0 is NVML_SUCCESS); a device is an opaque handle.
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
struct NvmlUtilization {
  unsigned int gpu;     // percent of time a kernel ran in the last sample period
  unsigned int memory;  // percent of time memory was read or written
};
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr unsigned int kUuidBufferBytes = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE

class NvmlSampler final : public GpuSampler {
 public:
  NvmlSampler() = default;
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;
  ~NvmlSampler() override {
    if (initialised_ && shutdown_) shutdown_();
    if (handle_) dlclose(handle_);
  }

  // Opens and initialises; false with `why` set when unusable.
  bool open(const std::string& library, std::string* why) {
    handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      const char* err = dlerror();
      *why = "cannot load " + library + (err ? std::string(": ") + err : std::string());
      return false;
    }
    const bool found = bind(init_, "nvmlInit_v2", why) && bind(shutdown_, "nvmlShutdown", why) &&
                       bind(count_, "nvmlDeviceGetCount_v2", why) &&
                       bind(by_index_, "nvmlDeviceGetHandleByIndex_v2", why) &&
                       bind(uuid_, "nvmlDeviceGetUUID", why) &&
                       bind(utilization_, "nvmlDeviceGetUtilizationRates", why) &&
                       bind(memory_, "nvmlDeviceGetMemoryInfo", why);
    if (!found) return false;
    const NvmlReturn r = init_();
    if (r != kNvmlSuccess) {
      *why = library + ": nvmlInit_v2 failed (NVML error " + std::to_string(r) + ")";
      return false;
    }
    initialised_ = true;
    return true;
  }

  std::vector<GpuSample> sample() override {
    std::lock_guard lock(mutex_);
    std::vector<GpuSample> out;
    unsigned int n = 0;
    if (count_(&n) != kNvmlSuccess) return out;
    for (unsigned int i = 0; i < n && i < 1024; ++i) {
      NvmlDevice device = nullptr;
      if (by_index_(i, &device) != kNvmlSuccess) continue;
      char uuid[kUuidBufferBytes] = {};
      if (uuid_(device, uuid, kUuidBufferBytes) != kNvmlSuccess) continue;
      GpuSample s;
      s.uuid.assign(uuid, strnlen(uuid, kUuidBufferBytes));
      NvmlUtilization u{};
      if (utilization_(device, &u) == kNvmlSuccess && u.gpu <= 100) s.utilization = u.gpu / 100.0;
      NvmlMemory m{};
      if (memory_(device, &m) == kNvmlSuccess) {
        s.memory_used_bytes = m.used;
        s.memory_total_bytes = m.total;
      }
      out.push_back(std::move(s));
    }
    return out;
  }

 private:
  template <typename F>
  bool bind(F*& fn, const char* name, std::string* why) {
    fn = reinterpret_cast<F*>(dlsym(handle_, name));
    if (!fn) *why = std::string("NVML has no ") + name;
    return fn != nullptr;
  }

  void* handle_ = nullptr;
  bool initialised_ = false;
  std::mutex mutex_;
  NvmlReturn (*init_)() = nullptr;
  NvmlReturn (*shutdown_)() = nullptr;
  NvmlReturn (*count_)(unsigned int*) = nullptr;
  NvmlReturn (*by_index_)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*uuid_)(NvmlDevice, char*, unsigned int) = nullptr;
  NvmlReturn (*utilization_)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*memory_)(NvmlDevice, NvmlMemory*) = nullptr;
};

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

}  // namespace

std::string render_gpu_metrics(GpuSampler* sampler) {
  if (!sampler) return "";
  const std::vector<GpuSample> gpus = sampler->sample();
  if (gpus.empty()) return "";
  std::string out;
  const auto family = [&](const char* name, const char* help, auto value) {
    std::string lines;
    for (const GpuSample& g : gpus) {
      const std::optional<std::string> v = value(g);
      if (v)
        lines +=
            std::string(name) + "{gpu_uuid=\"" + prom_label_escape(g.uuid) + "\"} " + *v + "\n";
    }
    if (lines.empty()) return;
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n" + lines;
  };
  family("nv_gpu_utilization", "GPU utilization rate [0.0 - 1.0) (NVML).",
         [](const GpuSample& g) -> std::optional<std::string> {
           if (!g.utilization) return std::nullopt;
           return number(*g.utilization);
         });
  family("nv_gpu_memory_total_bytes", "GPU total memory, in bytes (NVML).",
         [](const GpuSample& g) -> std::optional<std::string> {
           if (!g.memory_total_bytes) return std::nullopt;
           return std::to_string(*g.memory_total_bytes);
         });
  family("nv_gpu_memory_used_bytes", "GPU used memory, in bytes (NVML).",
         [](const GpuSample& g) -> std::optional<std::string> {
           if (!g.memory_used_bytes) return std::nullopt;
           return std::to_string(*g.memory_used_bytes);
         });
  return out;
}

std::unique_ptr<GpuSampler> open_nvml(const std::string& library, std::string* why) {
  auto sampler = std::make_unique<NvmlSampler>();
  std::string reason;
  if (!sampler->open(library, &reason)) {
    if (why) *why = reason;
    return nullptr;
  }
  return sampler;
}

GpuSampler* process_gpu_sampler() {
  static const std::unique_ptr<GpuSampler> sampler = [] {
    std::string why;
    auto s = open_nvml("libnvidia-ml.so.1", &why);
    if (!s) spdlog::info("no GPU metrics: {}", why);
    return s;
  }();
  return sampler.get();
}

}  // namespace tessera
