#pragma once

#include <cstdint>

namespace tessera {

// Derives an independent seed for a sub-stream (a stream of a sum, a transform's own
// randomness) from a parent seed and a salt, so that changing one part of a workload
// never shifts the random numbers of another. The mixer is SplitMix64's finalizer.
inline uint64_t derive_seed(uint64_t seed, uint64_t salt) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (salt + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace tessera
