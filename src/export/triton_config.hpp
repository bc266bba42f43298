#pragma once

// The text of one Triton model (docs/export.md#triton): its config.pbtxt, in protobuf
// text format with the fields of Triton's ModelConfig message, and for an emulated
// variant the Python-backend model.py that times each batch by the plan's profile.
//
// Contract: one Triton model per variant. max_batch_size is the largest batch the plan
// gives the variant; dynamic batching prefers the plan's batch sizes and waits at most the
// plan's queue delay (the smallest of its groups'); one instance group per device (GPU or
// MIG slice) the variant is placed on, with one instance per MPS process. A TorchScript
// variant runs on the PyTorch backend (INPUT__0 / OUTPUT__0); any other (an emulation, or
// a zoo model, which has no exportable weights) is a profile-timed emulation on the
// Python backend, labelled by the parameter tessera_emulated: "true".

#include <string>
#include <vector>

#include "export/plan_dir.hpp"

namespace tessera::exporter {

// One instance group: a device index (as the Triton process numbers its GPUs) and the
// kind placed there.
struct TritonDevice {
  int device = 0;
  int kind = 0;       // index into PlanDir::kinds
  int instances = 0;  // model instances on it (0: the kind's MPS level)
};

bool triton_emulated(const ModelEntry& model);

// config.pbtxt of `variant` with one instance group per entry of `devices` (all of that
// variant). `header` is a comment line placed first.
std::string triton_config_pbtxt(const PlanDir& plan, const std::string& variant,
                                const std::vector<TritonDevice>& devices,
                                const std::string& header);

// model.py of an emulated variant: reads the latency curve of its instance's device from
// the config's tessera_latency_ms parameter and sleeps that long per batch.
std::string triton_emulation_model_py(const std::string& variant);

}  // namespace tessera::exporter
