#include "export/ppipe_frontend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "export/plan_dir.hpp"

namespace tessera::exporter {
namespace {

std::string flow(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The segment the front end's profile and workers name: the partition's GPU class and MPS.
std::string segment(const ppipe::Partition& p) {
  return p.mps > 1 ? p.gpu_class + "/mps" + std::to_string(p.mps) : p.gpu_class;
}

std::string task_name(std::size_t k) { return "k" + std::to_string(k); }

}  // namespace

std::string ppipe_pool_name(const ppipe::DnnPlan& dnn, std::size_t pipeline, std::size_t k,
                            const ppipe::Partition& p) {
  std::string name = "tessera-ppipe-" + dnn.dnn + "-p" + std::to_string(pipeline) + "-k" +
                     std::to_string(k) + "-" + p.gpu_class;
  if (p.mps > 1) name += "-mps" + std::to_string(p.mps);
  return dns_label(name);
}

std::string ppipe_partition_model(const ppipe::DnnPlan& dnn, const ppipe::Partition& p) {
  return dnn.dnn + "_b" + std::to_string(p.first_block) + "_" + std::to_string(p.end_block);
}

std::string ppipe_app_name(const ppipe::DnnPlan& dnn, std::size_t pipeline) {
  return dnn.dnn + "_p" + std::to_string(pipeline);
}

std::vector<int64_t> ppipe_partition_input(const ppipe::Pipeline& pipe, std::size_t k,
                                           const PpipeFrontendOptions& o) {
  if (k == 0) return o.input;
  // One FP32 element per fp16 value of the cut (at least one).
  const double bytes = pipe.partitions[k].in_bytes_per_sample;
  return {std::max<int64_t>(1, static_cast<int64_t>(std::ceil(bytes / 2.0)))};
}

std::vector<int64_t> ppipe_partition_output(const ppipe::Pipeline& pipe, std::size_t k,
                                            const PpipeFrontendOptions& o) {
  return k + 1 < pipe.partitions.size() ? ppipe_partition_input(pipe, k + 1, o) : o.output;
}

std::map<std::string, std::string> ppipe_frontend_files(const ppipe::DnnPlan& dnn,
                                                        std::size_t pipeline,
                                                        const PpipeFrontendOptions& o) {
  const ppipe::Pipeline& pipe = dnn.pipelines.at(pipeline);
  const std::string app = ppipe_app_name(dnn, pipeline);
  const std::string from = "# Written by `tessera export --to kubernetes` from the PPipe plan's " +
                           dnn.dnn + " pipeline " + std::to_string(pipeline) +
                           " (docs/deploy.md#ppipe-plans).\n";
  std::map<std::string, std::string> files;
  files["run.yaml"] =
      from +
      "# The engine's ordinary data plane (not PPipe's reservation plane): least-loaded\n"
      "# dispatch over one instance per vGPU of each pool, eager batching up to the pipeline's\n"
      "# batch size.\n"
      "app: app.yaml\n"
      "deployment: deployment.yaml\n"
      "profiles:\n  - file: profiles.yaml\n"
      "models: models.yaml\n"
      "workload:\n  source: {kind: poisson, rate_rps: 1}\n  duration_s: 1\n"
      "policies:\n  dispatch: least_loaded\n  batching: eager\n";
  std::ostringstream a, d, p, m;
  a << from << "name: " << app << "\nslo_ms: " << fmt::format("{:g}", dnn.slo_ms) << "\ntasks:\n";
  d << from << "workers:\n";
  p << from
    << "# Each partition's latency at the pipeline's batch size, from the plan.\nprofiles:\n";
  m << from
    << "# Each partition runs on its pool's Service over KServe v2 gRPC; every partition after\n"
       "# the first takes the previous one's output (the cut tensor).\nmodels:\n";
  for (std::size_t k = 0; k < pipe.partitions.size(); ++k) {
    const ppipe::Partition& part = pipe.partitions[k];
    const std::string model = ppipe_partition_model(dnn, part);
    a << "  - name: " << task_name(k) << "\n    variants: [" << model << "]\n";
    d << "  - {task: " << task_name(k) << ", variant: " << model << ", segment: \"" << segment(part)
      << "\", max_batch: " << pipe.batch << ", count: " << part.vgpus << "}\n";
    p << "  - variant: " << model << "\n    segment: \"" << segment(part)
      << "\"\n    origin: derived\n    source: \"PPipe plan, partition latency at batch "
      << pipe.batch << "\"\n    latency_ms: {" << pipe.batch << ": "
      << fmt::format("{:g}", std::max(part.infer_ms, 1e-3)) << "}\n";
    m << "  - variant: " << model << "\n    input: " << flow(ppipe_partition_input(pipe, k, o))
      << "\n";
    if (k > 0) m << "    stage_input: parent\n";
    m << "    remote:\n      endpoints: [\"" << ppipe_pool_name(dnn, pipeline, k, part)
      << ":8001\"]\n      protocol: grpc\n      model: " << model
      << "\n      output: " << flow(ppipe_partition_output(pipe, k, o)) << "\n";
  }
  if (pipe.partitions.size() > 1) {
    a << "edges:\n";
    for (std::size_t k = 0; k + 1 < pipe.partitions.size(); ++k)
      a << "  - {from: " << task_name(k) << ", to: " << task_name(k + 1) << "}\n";
  }
  files["app.yaml"] = a.str();
  files["deployment.yaml"] = d.str();
  files["profiles.yaml"] = p.str();
  files["models.yaml"] = m.str();
  return files;
}

}  // namespace tessera::exporter
