// The replaced global operator new / delete behind bench/alloc_count.hpp: malloc and free,
// as libstdc++'s own, plus one count per operator new call.

#include "alloc_count.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace tessera::bench {
namespace {

constexpr int kAllocSlots = 256;
struct alignas(64) Slot {
  std::atomic<uint64_t> n{0};
};
Slot g_slots[kAllocSlots];
std::atomic<int> g_next_slot{0};
thread_local int t_slot = -1;
thread_local uint64_t t_count = 0;

void count() {
  if (t_slot < 0) t_slot = g_next_slot.fetch_add(1, std::memory_order_relaxed) % kAllocSlots;
  g_slots[t_slot].n.fetch_add(1, std::memory_order_relaxed);
  ++t_count;
}

void* allocate(std::size_t n) {
  count();
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}

}  // namespace

uint64_t allocations_total() {
  uint64_t n = 0;
  for (const Slot& s : g_slots) n += s.n.load(std::memory_order_relaxed);
  return n;
}

uint64_t allocations_this_thread() { return t_count; }

}  // namespace tessera::bench

void* operator new(std::size_t n) { return tessera::bench::allocate(n); }
void* operator new[](std::size_t n) { return tessera::bench::allocate(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return tessera::bench::allocate(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return tessera::bench::allocate(n);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
