#include "iserve/gpu_spec.hpp"

#include <stdexcept>

namespace tessera::iserve {
namespace {

// Fitted to data/gpu/vidur_*.csv by scripts/iserve-calibrate.py (docs/results/iserve.md):
// Llama-2-70B linear layers, decode (<= 8 tokens) and prefill (>= 1024 tokens), and the
// all-reduce alpha / bus bandwidth per network.
constexpr double kA100Mbu = 0.752, kA100Mfu = 0.727;
constexpr double kH100Mbu = 0.830, kH100Mfu = 0.697;
constexpr double kA40Mbu = 0.779, kA40Mfu = 0.768;  // GA102, the A6000's chip
constexpr GpuLink kA100NvlinkPair{50.5e-6, 193e9};  // a100_pairwise_nvlink, 2 GPUs
constexpr GpuLink kA100PciePairs{59.0e-6, 24e9};    // a100_pairwise_nvlink, 4 GPUs
constexpr GpuLink kH100Nvswitch{31.0e-6, 366e9};    // h100_dgx, 8 GPUs

GpuSpec make(std::string name, double memory, double bandwidth, double flops, double mbu,
             double mfu, int fast_group, GpuLink fast, GpuLink slow) {
  GpuSpec g;
  g.name = std::move(name);
  g.memory_bytes = memory;
  g.bandwidth = bandwidth;
  g.flops = flops;
  g.mbu = mbu;
  g.mfu = mfu;
  g.fast_group = fast_group;
  g.fast = fast;
  g.slow = slow;
  return g;
}

}  // namespace

std::vector<std::string> gpu_spec_names() { return {"a6000", "a100-80g", "h100-80g", "a40"}; }

GpuSpec gpu_spec(const std::string& name) {
  // NVIDIA RTX A6000 datasheet: 48 GB GDDR6, 768 GB/s, 309.7 TFLOPS FP16 tensor with
  // sparsity (154.8 dense); NVLink bridge 112.5 GB/s both ways (56 GB/s each way) between
  // pairs, PCIe 4.0 x16 otherwise (iServe's testbed). Efficiencies of the A40 (same GA102).
  if (name == "a6000") {
    return make(name, 48e9, 768e9, 154.8e12, kA40Mbu, kA40Mfu, 2,
                GpuLink{kA100NvlinkPair.alpha_s, 56e9}, kA100PciePairs);
  }
  // NVIDIA A40 datasheet: 48 GB GDDR6, 696 GB/s, 149.7 TFLOPS dense FP16 tensor; NVLink pairs.
  if (name == "a40") {
    return make(name, 48e9, 696e9, 149.7e12, kA40Mbu, kA40Mfu, 2,
                GpuLink{kA100NvlinkPair.alpha_s, 56e9}, kA100PciePairs);
  }
  // NVIDIA A100 80GB SXM datasheet: 2,039 GB/s HBM2e, 312 TFLOPS dense FP16 tensor;
  // NVLink 600 GB/s through NVSwitch (HGX A100 8-GPU).
  if (name == "a100-80g") {
    return make(name, 80e9, 2039e9, 312e12, kA100Mbu, kA100Mfu, 8, kA100NvlinkPair, kA100PciePairs);
  }
  // NVIDIA H100 SXM5 80GB datasheet: 3.35 TB/s HBM3, 989 TFLOPS dense FP16 tensor (1,979 with
  // sparsity); NVLink 900 GB/s through NVSwitch (DGX H100).
  if (name == "h100-80g") {
    return make(name, 80e9, 3.35e12, 989e12, kH100Mbu, kH100Mfu, 8, kH100Nvswitch, kA100PciePairs);
  }
  std::string names;
  for (const std::string& n : gpu_spec_names()) names += (names.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown GPU type '" + name + "' (known: " + names + ")");
}

}  // namespace tessera::iserve
