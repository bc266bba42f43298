#pragma once

// The front end of an exported PPipe plan (docs/deploy.md#ppipe-plans): per DNN and pipeline
// a `tessera serve` run spec whose app is the pipeline's partitions as a chain of stages,
// each stage's model `remote:` on its pool's Service over KServe v2 gRPC and taking the
// previous partition's output (`stage_input: parent`, docs/serve.md#stage-inputs).
//
// Contract: pure functions of the plan and the options; the caller (ppipe_export.cpp) puts
// the files in a ConfigMap. Per-item shapes: the first partition takes the DNN's input
// (`options.input`, the plan does not know it), partition k > 0 takes the incoming cut as
// FP32 elements, one per fp16 value of its `in_bytes_per_sample` (so the bytes on the wire
// are twice the plan's; docs/deploy.md says so), and the last outputs `options.output`.
// The data plane is the engine's ordinary one (least-loaded dispatch, eager batching at the
// pipeline's batch size, one front-end instance per vGPU of the pool), not PPipe's
// reservation plane. Thread-safe (no shared state).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dataplane/ppipe/ppipe_plan.hpp"

namespace tessera::exporter {

struct PpipeFrontendOptions {
  std::vector<int64_t> input{3, 224, 224};  // the DNN's per-item input
  std::vector<int64_t> output{1000};        // the last partition's per-item output
};

// The pool Service of partition k of pipeline `pipeline` of `dnn` (a DNS label).
std::string ppipe_pool_name(const ppipe::DnnPlan& dnn, std::size_t pipeline, std::size_t k,
                            const ppipe::Partition& p);
// The partition's model name, <dnn>_b<first>_<end>.
std::string ppipe_partition_model(const ppipe::DnnPlan& dnn, const ppipe::Partition& p);
// The served app's name (and its endpoint): <dnn>_p<pipeline>.
std::string ppipe_app_name(const ppipe::DnnPlan& dnn, std::size_t pipeline);
// Per-item input and output shapes of partition k of `pipe`.
std::vector<int64_t> ppipe_partition_input(const ppipe::Pipeline& pipe, std::size_t k,
                                           const PpipeFrontendOptions& o);
std::vector<int64_t> ppipe_partition_output(const ppipe::Pipeline& pipe, std::size_t k,
                                            const PpipeFrontendOptions& o);

// The front end's files, by name: run.yaml, app.yaml, deployment.yaml, profiles.yaml,
// models.yaml (mounted together; run.yaml names the others).
std::map<std::string, std::string> ppipe_frontend_files(const ppipe::DnnPlan& dnn,
                                                        std::size_t pipeline,
                                                        const PpipeFrontendOptions& o);

}  // namespace tessera::exporter
