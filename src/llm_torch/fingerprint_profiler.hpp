#pragma once

// iServe's profiler (§5.2–5.3, digest §2.2–2.3 methods M2 and L2) on the libtorch decoder:
// cuts a checkpoint's 1- and 2-layer fingerprints and measures, per compression (weight ×
// KV-cache quantisation), the memory at (TP, PP) = (1, 1), (1, 2), (2, 1) and the latency
// at PP = 1 for each TP, of one batch-1 request at two output lengths. Memory is the peak
// bytes libtorch holds while serving one request (memory_meter, the CPU analogue of
// torch.cuda.max_memory_allocated), counted from before the load; latency is the median
// wall time of `repeats` requests after `warmups` untimed ones (the output lengths taking
// turns within each repeat), and the median CPU time the process spent on them (all
// shards' threads); libtorch runs one intra-op thread per shard at every TP. The profiler
// loads both fingerprints at once and times them in turn too (each repeat serves every
// length on each), so a slower spell of the machine falls on both depths alike instead of
// being multiplied by the extrapolation over layers. Both entry points first make the
// process hold the host memory libtorch frees (host_memory.hpp: a request's buffers then do
// not depend on what ran before it), and the profile's `device` says so. A 1-layer fingerprint
// at PP = 2 runs its layer on stage 0 and only the final norm and head on stage 1 (the paper does
// not say how it runs one; digest §2.2 "open question").
//
// Single caller; it installs the memory meter and runs models, so nothing else should
// use libtorch in the process while it measures.

#include <cstdint>
#include <filesystem>
#include <utility>
#include <vector>

#include "llm_arch/iserve_estimator.hpp"
#include "llm_torch/decoder.hpp"

namespace tessera {

struct MeasureOptions {
  int64_t prompt_tokens = 16;
  std::vector<int64_t> output_lengths{4, 24};  // tokens after the first
  int repeats = 3;
  DeviceSpec device{};  // where the decoder runs (peak memory is the host's: memory_meter)
  int warmups = 2;      // untimed requests of the longest length before the timed ones
};

struct Measurement {
  double peak_bytes = 0;
  std::vector<double> seconds;      // median request latency per output length (wall clock)
  std::vector<double> cpu_seconds;  // median process CPU time per request, per output length
};

// Loads `checkpoint` with `options`, serves one request of the longest output length and
// reports its peak memory, then times the requests. std::invalid_argument for options the
// model cannot run.
Measurement measure_checkpoint(const std::filesystem::path& checkpoint,
                               const DecoderOptions& options, const MeasureOptions& how,
                               bool memory = true, bool latency = true);

// As measure_checkpoint, and in the same timing loop the `alongside` checkpoints (each at PP 1
// with `options`' TP, quantisation and device; no memory): every repeat serves every length
// on each in turn, so the machine's changes of speed fall on all of them alike. The first
// measurement is the checkpoint's, then one per `alongside` in order. Validation uses it to
// time a model's fingerprints beside the full model (scripts/iserve-estimation.sh, paired).
std::vector<Measurement> measure_alongside(const std::filesystem::path& checkpoint,
                                           const DecoderOptions& options,
                                           const std::vector<std::filesystem::path>& alongside,
                                           const MeasureOptions& how, bool memory = true,
                                           bool latency = true);

// Writes the fingerprints of `depths` layers under `work_dir` (fp1/, fp2/ for the paper's
// {1, 2}; {4, 8} gives fp4/, fp8/, the iserve-deep variant) and profiles them for each
// compression, at TP degrees `tps` (those the model cannot run are skipped). A fingerprint
// of more than one layer runs at PP = 2 with its layers split evenly.
FingerprintProfile profile_fingerprints(const std::filesystem::path& checkpoint,
                                        const std::filesystem::path& work_dir,
                                        const std::vector<CompressionProfile>& compressions,
                                        const std::vector<int>& tps, const MeasureOptions& how,
                                        std::pair<int64_t, int64_t> depths = {1, 2});

}  // namespace tessera
