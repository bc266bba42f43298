#pragma once

// Counts calls of the global operator new in a benchmark process (bench/alloc_count.cpp
// replaces it), so that the serving benchmarks can say how many heap allocations a
// request costs the server under test. Bench-only: link alloc_count.cpp into the
// benchmark's executable, never into a library.
//
// Thread safety: every function may be called from any thread. The counts are relaxed
// atomics, one cache line per thread (threads beyond kAllocSlots share lines), so counting
// adds a few nanoseconds to an allocation and no contention.

#include <cstdint>

namespace tessera::bench {

// operator new calls so far in the whole process.
uint64_t allocations_total();
// operator new calls so far by the calling thread.
uint64_t allocations_this_thread();

}  // namespace tessera::bench
