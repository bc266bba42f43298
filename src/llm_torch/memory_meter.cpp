#include "llm_torch/memory_meter.hpp"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include <c10/core/impl/alloc_cpu.h>

namespace tessera::memory_meter {
namespace {

constexpr int kMaxAccounts = 1024;

struct Account {
  uint64_t current = 0;
  uint64_t peak = 0;
};

struct Allocation {
  uint64_t bytes = 0;
  int account = 0;
};

std::atomic<bool> g_installed{false};
std::mutex g_mutex;  // guards the accounts and the live allocations
thread_local int t_account = 0;

// Both outlive every tensor (never destroyed).
std::vector<Account>& accounts() {
  static auto* list = new std::vector<Account>(1);
  return *list;
}
// Sizes and accounts of the live allocations, so the deleter (which gets only the pointer:
// libtorch's raw_allocate needs context == data) can find them.
std::unordered_map<void*, Allocation>& live() {
  static auto* map = new std::unordered_map<void*, Allocation>();
  return *map;
}

void release(void* ptr) {
  if (ptr == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    const auto it = live().find(ptr);
    if (it != live().end()) {
      accounts()[static_cast<std::size_t>(it->second.account)].current -= it->second.bytes;
      live().erase(it);
    }
  }
  c10::free_cpu(ptr);
}

// libtorch changed this interface: before 2.3 `allocate` is const and there is no
// `copy_data`; from 2.3 `allocate` is non-const and `copy_data` is pure. Both spellings are
// declared without `override` so that the one the linked libtorch declares overrides it
// (Debian 12's libtorch 1.13 and a CUDA PyTorch 2.x wheel on a GPU machine).
class CountingAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) { return std::as_const(*this).allocate(n); }
  c10::DataPtr allocate(size_t n) const {
    void* ptr = c10::alloc_cpu(n);
    if (ptr != nullptr) {
      std::lock_guard<std::mutex> lock(g_mutex);
      const int id = t_account;
      if (static_cast<std::size_t>(id) >= accounts().size()) {
        accounts().resize(static_cast<std::size_t>(id) + 1);
      }
      Account& a = accounts()[static_cast<std::size_t>(id)];
      live()[ptr] = Allocation{n, id};
      a.current += n;
      a.peak = std::max(a.peak, a.current);
    }
    return {ptr, ptr, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const {
    if (count > 0) std::memcpy(dest, src, count);
  }
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

void charge_to(int account) { t_account = std::clamp(account, 0, kMaxAccounts - 1); }

uint64_t current() {
  std::lock_guard<std::mutex> lock(g_mutex);
  uint64_t sum = 0;
  for (const Account& a : accounts()) sum += a.current;
  return sum;
}

uint64_t peak() {
  std::lock_guard<std::mutex> lock(g_mutex);
  uint64_t sum = 0;
  for (const Account& a : accounts()) sum += a.peak;
  return sum;
}

void reset_peak() {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Account& a : accounts()) a.peak = a.current;
}

}  // namespace tessera::memory_meter
