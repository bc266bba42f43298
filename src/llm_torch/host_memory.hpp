#pragma once

// How the process's C allocator treats the memory libtorch frees on the host.
//
// libtorch's CPU tensors come from malloc (c10::alloc_cpu). glibc's defaults give a block
// above 128 KiB its own mmap and return the top of a heap to the kernel once more than
// 128 KiB of it is free, so a request's buffers may be fresh pages the kernel must fault in
// and zero — or not, depending on what the process allocated and freed before (which model
// served the previous request, how many layers it had). A GPU serving stack does not pay
// that: PyTorch's CUDA caching allocator keeps what a request freed for the next one.
// hold_freed_host_memory() makes the host allocator behave the same way: blocks up to
// 32 MiB come from the heap, and freed heap memory stays in the process (its resident size
// stays at its peak). Larger blocks keep their own mmap. What a request allocates is not
// changed: the memory meter counts the same bytes.
//
// TESSERA_HOST_MEMORY=return in the environment keeps glibc's defaults (freed memory goes
// back to the kernel), for a process that must stay small between requests, and for the
// comparison scripts/iserve-host-memory.sh measures (docs/results/iserve/host-memory.md).
//
// Thread safety: the first call configures the process (mallopt); later calls, from any
// thread, do nothing. Without glibc it does nothing.

namespace tessera::host_memory {

void hold_freed_host_memory();

// Whether the allocator was configured by this process (false without glibc).
bool holding_freed_host_memory();

}  // namespace tessera::host_memory
