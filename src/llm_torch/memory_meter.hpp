#pragma once

// Counts the bytes libtorch allocates on the CPU, the analogue of
// torch.cuda.memory_allocated / max_memory_allocated that iServe's profiler reads on a GPU:
// install() replaces libtorch's CPU allocator by a counting one over the same alloc_cpu (once
// per process; later calls do nothing). Tensors allocated before install() are not counted.
//
// Accounting is per account, as a GPU's is per device: each thread charges its
// allocations to the account it has chosen with charge_to() (account 0 unless it chose),
// until they are freed, by whichever thread. The decoder charges tensor-parallel rank r to
// account r, so each shard is metered like its own GPU; the pipeline stages of one rank
// share its account (one request's stages run one after another). current() is the bytes
// held by live tensors (all accounts); peak() is the sum over accounts of each account's
// own peak since the last reset_peak(). Summing per-account peaks makes the peak
// independent of how concurrently running shards interleave (a global high-water mark is
// not: their transient buffers overlap or not with thread timing), while every byte
// counted is a real allocation.
//
// Thread safety: all functions may be called from any thread; the counters are guarded by
// one mutex (taken on every allocation and free).

#include <cstdint>

namespace tessera::memory_meter {

void install();
bool installed();
// The calling thread's later allocations are charged to `account` (0..1023; clamped).
void charge_to(int account);
uint64_t current();
uint64_t peak();
void reset_peak();  // every account's peak := its current

}  // namespace tessera::memory_meter
