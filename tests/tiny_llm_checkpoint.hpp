#pragma once

// The tests' tiny Llama-shaped random-weight checkpoint (2 layers, hidden 32, a byte-sized
// vocabulary of 260, 512 positions), written into `dir` (test-only).

#include <filesystem>
#include <string>

#include "llm_arch/checkpoint_layout.hpp"
#include "llm_arch/llm_architecture.hpp"

namespace tessera::testing {

inline void write_tiny_llm_checkpoint(const std::filesystem::path& dir) {
  LlmArchitecture a =
      load_llm_architecture(std::string(TESSERA_SOURCE_DIR) + "/data/llm/llama-2-7b/config.json");
  a.layers = 2;
  a.hidden = 32;
  a.heads = 4;
  a.kv_heads = 2;
  a.ffn = 64;
  a.vocab = 260;
  a.max_positions = 512;
  a.rotary_dim = 8;
  write_random_checkpoint(a, dir, Dtype::kF32, 5);
}

}  // namespace tessera::testing
