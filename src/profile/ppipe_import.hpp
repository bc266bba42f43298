#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "profile/profile_table.hpp"

namespace tessera {

// Importer for the block-level profiles of PPipe (JonnyKong/PPipe, USENIX ATC '25); see
// data/profiles/ppipe/SOURCE.md and docs/profiles.md. PPipe cuts each model into ~10
// contiguous blocks; a pipeline partition is a contiguous range of blocks and its latency
// is the sum of its blocks' latencies.

// The profile of one model on one GPU type at one MPS share.
struct PpipeBlockProfile {
  std::string model;
  std::string gpu;     // L4, T4, V100, P4, ...
  int mps_share = 1;   // 1 = the whole GPU; n = one of n processes sharing it through MPS
  std::string source;  // the block-timing file
  // Latency in microseconds, [block][batch - 1], batch sizes 1..max_batch().
  std::vector<std::vector<double>> block_latency_us;
  // Bytes per sample (fp16) crossing the cut after block i, i = 0..num_blocks()-2;
  // empty when the model has no trans-size mapping file.
  std::vector<int64_t> transfer_bytes;

  int num_blocks() const { return static_cast<int>(block_latency_us.size()); }
  int max_batch() const;
  std::string segment() const;  // ppipe_segment_name(gpu, mps_share)
  // Sum of the latencies of blocks first..last (inclusive, 0-based) at `batch`.
  // Throws std::out_of_range for a bad range or a batch outside 1..max_batch().
  double range_latency_us(int first, int last, int batch) const;
};

// "T4" for share 1, "T4/mps2" for share 2.
std::string ppipe_segment_name(const std::string& gpu, int mps_share);
// "MODEL[first:last]": blocks first..last, both inclusive.
std::string ppipe_range_variant(const std::string& model, int first, int last);

// Reads one block-timing file (rows = blocks, columns = batch 1..n, µs, no header) and,
// when `trans_size_csv` is non-empty, the bytes at each block boundary (one per line).
PpipeBlockProfile load_ppipe_block_profile(const std::filesystem::path& timing_csv,
                                           const std::string& model, const std::string& gpu,
                                           int mps_share,
                                           const std::filesystem::path& trans_size_csv = {});

// The models that have at least one MODEL-GPU-SHARE.csv in `block_timing_dir`, sorted.
std::vector<std::string> list_ppipe_models(const std::filesystem::path& block_timing_dir);

// Every MODEL-GPU-SHARE.csv of `model` in `block_timing_dir`, sorted by (gpu, share). The
// trans-size file is looked up as MAPPINGS/MODEL/contraction_trans-size_*.csv, where
// MAPPINGS is `mappings_dir` or, when that is empty, block_timing_dir/../../prepartition_mappings
// (the layout of PPipe's data/ folder). No block-timing file for `model` is a SpecError.
std::vector<PpipeBlockProfile> load_ppipe_model(const std::filesystem::path& block_timing_dir,
                                                const std::string& model,
                                                const std::filesystem::path& mappings_dir = {});

// The latency curve of blocks first..last: variant ppipe_range_variant(model, first, last),
// segment p.segment(), batch sizes 1..max_batch(), origin measured.
ProfileCurve ppipe_range_curve(const PpipeBlockProfile& p, int first, int last);
// The whole model (sum of all blocks) as variant = model name.
ProfileCurve ppipe_model_curve(const PpipeBlockProfile& p);

// Whole-model curves of `model` on every GPU type and share found in `block_timing_dir`.
ProfileTable import_ppipe_model(const std::filesystem::path& block_timing_dir,
                                const std::string& model);

}  // namespace tessera
