#pragma once

// What `tessera export` reads from a `tessera plan` output directory (docs/export.md):
// plan.json (the GPUs' MIG layout), run.yaml (the app, the deployment with each group's
// batch size and queue delay, the profiles) and models.yaml (each variant's executor).
//
// Contract: load_plan_dir either returns a PlanDir whose instance kinds, placements and
// models agree with each other (every placed variant has a kind and a model entry), or
// throws SpecError naming the file, the field and the problem. It reads files only.

#include <filesystem>
#include <string>
#include <vector>

#include "spec/run_spec.hpp"

namespace tessera::exporter {

// How a variant is executed (models.yaml).
struct ModelEntry {
  enum class Source { kZoo, kTorchScript, kEmulated };
  std::string variant;
  Source source = Source::kEmulated;
  std::string zoo;                    // architecture (kZoo)
  std::filesystem::path torchscript;  // absolute (kTorchScript)
  std::vector<int64_t> input;         // per item
  int64_t classes = 1000;             // zoo classifiers' output size
};

// One kind of instance: a variant on one MIG profile with `mps` processes sharing each
// slice; `count` slices of it, each holding `mps` workers.
struct InstanceKind {
  std::string task;
  std::string variant;
  std::string mig;      // MIG profile, "3g.20gb"
  std::string segment;  // the profiles' segment, "3g.20gb" or "3g.20gb/mps2"
  int mps = 1;
  int max_batch = 1;
  int count = 0;
  double queue_delay_ms = 0.0;     // the deployment group's batch_timeout_ms (0: none)
  bool whole_gpu = false;          // the profile is the whole GPU (nvidia.com/gpu)
  std::vector<double> latency_ms;  // profiled latency at batch 1..max_batch on `segment`
};

// One MIG slice of one GPU in the plan's layout.
struct SlicePlacement {
  int gpu = 0;
  std::string mig;
  int start = 0;
  int kind = 0;  // index into PlanDir::kinds
};

struct PlanDir {
  PlanDir(std::filesystem::path directory, RunSpec run_spec)
      : dir(std::move(directory)), run(std::move(run_spec)) {}

  std::filesystem::path dir;
  RunSpec run;
  std::string gpu_model;  // plan.json "gpu"
  int gpus = 0;
  int gpu_memory_slices = 0;
  std::vector<InstanceKind> kinds;
  std::vector<SlicePlacement> placements;  // by GPU, then start slice
  std::vector<ModelEntry> models;          // one per deployed variant
  std::filesystem::path app_file;          // the app's file (run.yaml's `app:`)

  const ModelEntry& model(const std::string& variant) const;
  // The GPUs whose only slice is the whole GPU (MIG left disabled).
  bool whole_gpu(int gpu) const;
};

PlanDir load_plan_dir(const std::filesystem::path& dir);

// A DNS-1123 label from `text`: lower case, [a-z0-9-], at most 63 characters.
std::string dns_label(const std::string& text);

}  // namespace tessera::exporter
