#include "llm_torch/memory_meter.hpp"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <mutex>

namespace tessera::memory_meter {
namespace {

std::atomic<uint64_t> g_current{0};
std::atomic<uint64_t> g_peak{0};
std::atomic<bool> g_installed{false};

struct Record {
  c10::DataPtr inner;
  uint64_t bytes;
};

void release(void* ctx) {
  auto* record = static_cast<Record*>(ctx);
  g_current.fetch_sub(record->bytes);
  delete record;  // frees the inner allocation through its own deleter
}

class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* inner) : inner_(inner) {}
  c10::DataPtr allocate(size_t n) const override {
    c10::DataPtr data = inner_->allocate(n);
    void* ptr = data.get();
    auto* record = new Record{std::move(data), n};
    const uint64_t now = g_current.fetch_add(n) + n;
    uint64_t seen = g_peak.load();
    while (now > seen && !g_peak.compare_exchange_weak(seen, now)) {
    }
    return {ptr, record, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

 private:
  c10::Allocator* inner_;
};

}  // namespace

void install() {
  static std::once_flag once;
  std::call_once(once, [] {
    static CountingAllocator allocator(c10::GetDefaultCPUAllocator());
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
