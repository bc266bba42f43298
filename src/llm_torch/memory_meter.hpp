#pragma once

// Counts the bytes libtorch allocates on the CPU, the analogue of
// torch.cuda.memory_allocated / max_memory_allocated that iServe's profiler reads on a GPU:
// install() replaces libtorch's CPU allocator by a counting one over the same alloc_cpu (once
// per process; later calls do nothing), after which current() is the bytes held by live
// tensors and peak() the most held since the last reset_peak(). Tensors allocated before
// install() are not counted. Counters are atomics: any thread may allocate, read or reset.

#include <cstdint>

namespace tessera::memory_meter {

void install();
bool installed();
uint64_t current();
uint64_t peak();
void reset_peak();  // peak := current

}  // namespace tessera::memory_meter
