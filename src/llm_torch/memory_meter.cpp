#include "llm_torch/memory_meter.hpp"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

#include <c10/core/impl/alloc_cpu.h>

namespace tessera::memory_meter {
namespace {

std::atomic<uint64_t> g_current{0};
std::atomic<uint64_t> g_peak{0};
std::atomic<bool> g_installed{false};

// Sizes of the live allocations, so the deleter (which gets only the pointer: libtorch's
// raw_allocate needs context == data) can subtract them.
std::mutex g_sizes_mutex;
std::unordered_map<void*, uint64_t>& sizes() {
  static auto* map = new std::unordered_map<void*, uint64_t>();  // outlives every tensor
  return *map;
}

void release(void* ptr) {
  if (ptr == nullptr) return;
  uint64_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(g_sizes_mutex);
    const auto it = sizes().find(ptr);
    if (it != sizes().end()) {
      bytes = it->second;
      sizes().erase(it);
    }
  }
  g_current.fetch_sub(bytes);
  c10::free_cpu(ptr);
}

class CountingAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) const override {
    void* ptr = c10::alloc_cpu(n);
    if (ptr != nullptr) {
      std::lock_guard<std::mutex> lock(g_sizes_mutex);
      sizes()[ptr] = n;
    }
    const uint64_t now = g_current.fetch_add(n) + n;
    uint64_t seen = g_peak.load();
    while (now > seen && !g_peak.compare_exchange_weak(seen, now)) {
    }
    return {ptr, ptr, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
};

}  // namespace

void install() {
  static std::once_flag once;
  std::call_once(once, [] {
    static CountingAllocator allocator;
    // Priority above the default so libtorch keeps ours.
    c10::SetCPUAllocator(&allocator, /*priority=*/1);
    g_installed = true;
  });
}

bool installed() { return g_installed.load(); }
uint64_t current() { return g_current.load(); }
uint64_t peak() { return g_peak.load(); }
void reset_peak() { g_peak.store(g_current.load()); }

}  // namespace tessera::memory_meter
