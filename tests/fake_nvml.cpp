// A stand-in for libnvidia-ml.so.1 (gpu_metrics_test loads it with dlopen): two devices,
// the second a MIG device whose utilisation is not supported (NVML_ERROR_NOT_SUPPORTED, 3),
// as NVML reports for MIG. Only the entry points tessera's NVML sampler uses.

#include <cstring>

extern "C" {

struct FakeNvmlUtilization {
  unsigned int gpu;
  unsigned int memory;
};
struct FakeNvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

static int fake_devices[2];

int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }
int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = 2;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (index >= 2) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = &fake_devices[index];
  return 0;
}
int nvmlDeviceGetUUID(void* device, char* uuid, unsigned int length) {
  const char* name = device == &fake_devices[0] ? "GPU-11111111-2222-3333-4444-555555555555"
                                                : "MIG-66666666-7777-8888-9999-000000000000";
  if (std::strlen(name) + 1 > length) return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  std::strcpy(uuid, name);
  return 0;
}
int nvmlDeviceGetUtilizationRates(void* device, FakeNvmlUtilization* u) {
  if (device != &fake_devices[0]) return 3;
  u->gpu = 42;
  u->memory = 7;
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* device, FakeNvmlMemory* m) {
  const bool first = device == &fake_devices[0];
  m->total = first ? 85899345920ull : 10200547328ull;
  m->used = first ? 1048576ull : 0ull;
  m->free = m->total - m->used;
  return 0;
}
}
