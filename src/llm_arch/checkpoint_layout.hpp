#pragma once

// The tensors of a decoder-only LLM checkpoint under the Hugging Face names of its family
// (Llama/Mistral, GPT-J, Falcon), and the checkpoints tessera writes and cuts from them:
// random-weight checkpoints of any shape (no weights can be downloaded here; tests and
// profiling use these) and iServe's fingerprints (§5.1: embedding, the first one or two
// decoder layers, final norm and LM head, with num_hidden_layers rewritten). Free
// functions over files; no shared state.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "llm_arch/llm_architecture.hpp"
#include "llm_arch/safetensors.hpp"

namespace tessera {

// Every tensor of `arch` in a checkpoint, embedding first, layers in order, then the
// final norm and the LM head (absent when tied).
std::vector<TensorToWrite> checkpoint_layout(const LlmArchitecture& arch, Dtype dtype);

// The decoder layer a tensor belongs to ("model.layers.7.mlp.up_proj.weight" -> 7), or -1
// for the embedding, final norm and LM head.
int64_t layer_of_tensor(const std::string& name);

// The tensor files of a checkpoint folder: model.safetensors, or the shards
// (*.safetensors) in name order. None is a SpecError naming the folder.
std::vector<std::filesystem::path> checkpoint_files(const std::filesystem::path& dir);

// Writes DIR/config.json and DIR/model.safetensors with seeded random weights (normal,
// standard deviation `stddev`; norm weights 1, biases 0) in `dtype` (F16, BF16 or F32). The
// same seed and shape give the same bytes, on any number of `threads` (0: one per hardware
// thread; large tensors are filled in slices on them).
void write_random_checkpoint(const LlmArchitecture& arch, const std::filesystem::path& dir,
                             Dtype dtype, uint64_t seed, float stddev = 0.02f,
                             unsigned threads = 0);

// Writes the `layers`-layer fingerprint of the checkpoint in `source` to `dir`: every
// tensor of layers [0, layers) and every non-layer tensor, byte for byte, and its config
// with the layer count rewritten. Returns the fingerprint's architecture.
LlmArchitecture write_fingerprint(const std::filesystem::path& source, int64_t layers,
                                  const std::filesystem::path& dir);

// IEEE half and bfloat16 bits of a float (round to nearest even).
uint16_t float_to_half_bits(float value);
uint16_t float_to_bfloat16_bits(float value);

}  // namespace tessera
