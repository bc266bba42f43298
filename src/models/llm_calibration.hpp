#pragma once

// `tessera llm step-profile`'s measurement (docs/llm-serve.md#calibration and
// #measured-step-costs): the checkpoint's prefill and decode step costs timed here
// (llm_step_profile.hpp), written as a profile for the simulator's token_linear cost model
// (`out`) and, when `cost_model_out` is given, as the tables of its llm_measured model, the
// prefill form (table or quadratic) chosen by its error on held-out prompt lengths. What it
// measured and fitted is printed to `report`. Single-threaded; runs the decoder (seconds to
// minutes).

#include <cstdint>
#include <ostream>
#include <string>

#include "core/device.hpp"

namespace tessera {

struct StepProfileOptions {
  std::string checkpoint;  // config.json + safetensors
  std::string out;         // the profiles YAML
  std::string variant = "llm";
  std::string segment = "cpu";
  int64_t context = 2048;
  int max_batch = 16;
  int repeats = 5;
  int64_t max_tokens = 0;  // 0: the model's positions
  std::string cost_model_out;
  DeviceSpec device{};  // where the decoder runs (the CPU by default)
};

// std::runtime_error naming a file it cannot write.
void write_step_profiles(const StepProfileOptions& options, std::ostream& report);

}  // namespace tessera
