#include "llm_torch/host_memory.hpp"

#include <atomic>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <string_view>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tessera::host_memory {
namespace {

// The largest block glibc lets the heap serve instead of an mmap (its DEFAULT_MMAP_THRESHOLD_MAX
// on 64-bit targets); a larger M_MMAP_THRESHOLD is refused.
constexpr int kLargestHeapBlock = 32 * 1024 * 1024;

std::once_flag g_once;
std::atomic<bool> g_holding{false};

}  // namespace

void hold_freed_host_memory() {
  std::call_once(g_once, [] {
    const char* choice = std::getenv("TESSERA_HOST_MEMORY");
    if (choice != nullptr && std::string_view(choice) == "return") return;  // glibc's defaults
#if defined(__GLIBC__)
    // Setting either threshold also turns off glibc's dynamic adjustment of both.
    const bool ok = mallopt(M_MMAP_THRESHOLD, kLargestHeapBlock) == 1 &&
                    mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1;
    g_holding.store(ok);
#endif
  });
}

bool holding_freed_host_memory() { return g_holding.load(); }

}  // namespace tessera::host_memory
