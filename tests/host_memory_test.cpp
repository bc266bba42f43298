// host_memory (src/llm_torch/host_memory): once the process holds freed host memory, a
// block of 1 MiB (above glibc's default 128 KiB mmap threshold) comes from the heap rather
// than its own mmap, and freeing it does not give the heap back to the kernel, so the next
// request's buffers are pages the process already has. Skipped under AddressSanitizer,
// which replaces malloc (and ignores mallopt).

#include "llm_torch/host_memory.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TESSERA_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TESSERA_UNDER_ASAN 1
#endif

namespace tessera {
namespace {

TEST(HostMemory, AFreedMegabyteStaysInTheProcessForTheNextRequest) {
#if defined(TESSERA_UNDER_ASAN) || !defined(__GLIBC__)
  GTEST_SKIP() << "the sanitizer's allocator (or a non-glibc one) replaces malloc";
#else
  host_memory::hold_freed_host_memory();
  host_memory::hold_freed_host_memory();  // a second call does nothing
  ASSERT_TRUE(host_memory::holding_freed_host_memory());

  constexpr std::size_t kBlock = 1 << 20;
  const struct mallinfo2 before = mallinfo2();
  void* block = std::malloc(kBlock);
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, kBlock);  // touch it, as a tensor's data is
  const struct mallinfo2 held = mallinfo2();
  EXPECT_EQ(held.hblks, before.hblks) << "the block got its own mmap";
  EXPECT_GE(held.arena, kBlock) << "the block did not come from the heap";
  std::free(block);
  const struct mallinfo2 after = mallinfo2();
  EXPECT_EQ(after.arena, held.arena) << "freeing the block gave heap pages back to the kernel";
  EXPECT_GE(after.fordblks, kBlock) << "the freed block is not free in the heap for reuse";
#endif
}

}  // namespace
}  // namespace tessera
