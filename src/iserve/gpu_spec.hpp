#pragma once

// GpuSpec: the figures of one GPU type that tessera's analytic LLM model
// (analytic_model.hpp) needs — memory, memory bandwidth, dense FP16 tensor FLOP/s (vendor
// datasheets), the achieved shares of bandwidth and FLOP/s (fitted to microsoft/vidur's
// public per-operator timings by scripts/iserve-calibrate.py) and the collective costs of
// its interconnect. Every constant and its source is listed in docs/iserve.md#gpu-model.
// Plain values; the table is immutable and safe to share between threads.

#include <string>
#include <vector>

namespace tessera::iserve {

struct GpuLink {
  double alpha_s = 50e-6;       // latency of one collective / transfer
  double bus_bandwidth = 50e9;  // bytes/s (all-reduce bus bandwidth, or per-direction p2p)
};

struct GpuSpec {
  std::string name;
  double memory_bytes = 48e9;
  double bandwidth = 768e9;             // bytes/s of device memory (datasheet)
  double flops = 154.8e12;              // dense FP16 tensor FLOP/s (datasheet)
  double mbu = 0.78;                    // achieved share of bandwidth in decode (fitted)
  double mfu = 0.77;                    // achieved share of FLOP/s in prefill (fitted)
  double per_layer_overhead_s = 30e-6;  // norms, rotary, activation, residual per layer
  double runtime_bytes = 1.5e9;         // CUDA context, workspaces, runtime buffers per GPU
  int fast_group = 2;  // GPUs that share the fast link (NVLink pairs: 2; NVSwitch: 8)
  GpuLink fast;        // NVLink
  GpuLink slow;        // PCIe, between fast groups
  const GpuLink& link_for(int gpus) const { return gpus <= fast_group ? fast : slow; }
};

// "a6000", "a100-80g", "h100-80g", "a40"; throws std::invalid_argument listing the names.
GpuSpec gpu_spec(const std::string& name);
std::vector<std::string> gpu_spec_names();

}  // namespace tessera::iserve
