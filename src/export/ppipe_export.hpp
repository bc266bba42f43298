#pragma once

// `tessera export PLAN_DIR --to kubernetes` for a PPipe plan (plan.json with `dnns`, from
// `tessera plan` with `planner: ppipe`): pools of partition servers on their GPU classes
// (docs/deploy.md#ppipe-plans).
//
// Contract: reads PLAN_DIR/plan.json (validated by ppipe::read_plan_file, which names the
// field of a bad one) and writes into OUT
//   ppipe.yaml          per DNN, pipeline and partition a pool: a Deployment of `vgpus` Triton
//                       pods, each one vGPU (nvidia.com/gpu: 1; a 1/mps share of a GPU through
//                       the device plugin's MPS sharing when mps > 1), on nodes labelled
//                       tessera.io/gpu-class=<class>, serving the partition's model
//                       <dnn>_b<first>_<end> from the claim tessera-ppipe-models; and its Service
//                       (http 8000, grpc 8001, metrics 8002);
//                       a ConfigMap tessera-ppipe-graph: partition-graph.json (per DNN its SLO,
//                       weight, and pipelines: batch size and partitions in order with their
//                       blocks, pool Service, vGPUs, MPS, latencies and the incoming cut's bytes)
//                       and the plan.json itself;
//                       per pipeline its front end (tessera-ppipe-<dnn>-p<i>-frontend): a
//                       ConfigMap of run spec files (export/ppipe_frontend.hpp), a Deployment
//                       of one `tessera serve` pod on them and its Service (http 8000), which
//                       routes the pipeline's partitions to their pools over KServe v2 gRPC;
//   device-plugin.yaml  when a partition shares GPUs by MPS: the device plugin's configuration
//                       per MPS level (ConfigMap in gpu-operator).
// Returns the files written.

#include <filesystem>
#include <string>
#include <vector>

#include "export/ppipe_frontend.hpp"

namespace tessera::exporter {

struct PpipeExportOptions {
  std::string triton_image = "nvcr.io/nvidia/tritonserver:24.08-py3";
  std::string tessera_image = "tessera:latest";
  PpipeFrontendOptions frontend;  // the DNN's input and output shapes
  std::string namespace_name;
};

// Whether PLAN_DIR/plan.json is a PPipe plan (has `dnns`).
bool is_ppipe_plan_dir(const std::filesystem::path& dir);

std::vector<std::filesystem::path> write_ppipe_manifests(const std::filesystem::path& dir,
                                                         const std::filesystem::path& out,
                                                         const PpipeExportOptions& options);

}  // namespace tessera::exporter
