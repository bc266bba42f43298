#pragma once

// `tessera export PLAN_DIR --to kubernetes`: manifests that run the plan on a cluster with
// the NVIDIA GPU operator (docs/export.md#kubernetes).
//
// Contract: writes into OUT
//   frontend.yaml        ConfigMap tessera-<app>-plan (the plan's run, app, deployment,
//                        profiles and models files), Deployment and Service of the tessera
//                        front end (`tessera serve` on port 8000, /metrics there too);
//   backends.yaml        per instance kind (variant x MIG profile x MPS): a ConfigMap with
//                        its Triton model (config.pbtxt, and model.py when emulated), a
//                        Deployment of `count` Triton pods each requesting one
//                        nvidia.com/mig-<profile> (nvidia.com/gpu for a whole GPU), and a
//                        Service;
//   mig-parted.yaml      the GPU operator's mig-parted configuration (version v1) naming the
//                        plan's MIG layout tessera-<app>, as a ConfigMap in gpu-operator;
//   servicemonitor.yaml  a Prometheus-operator ServiceMonitor of all of them.
// Every object carries app.kubernetes.io/part-of: tessera-<app>. Returns the files written.

#include <filesystem>
#include <string>
#include <vector>

#include "export/plan_dir.hpp"
#include "export/yaml_text.hpp"

namespace tessera::exporter {

struct KubernetesOptions {
  std::string tessera_image = "tessera:latest";
  std::string triton_image = "nvcr.io/nvidia/tritonserver:24.08-py3";
  std::string namespace_name;  // empty: none set (kubectl -n chooses)
};

// The container of a tessera front end: `tessera serve /etc/tessera/run.yaml` on port 8000
// ("http"), the run spec's files mounted from the pod's volume `volume` (a ConfigMap).
// Probes are the caller's.
ojson tessera_serve_container(const std::string& image, const std::string& volume);

// The name of the Deployment and Service of one instance kind's Triton pods:
// tessera-<app>-<variant>-<profile>[-mps<n>]-b<batch> as a DNS label. The front end's
// models.yaml reaches it at <name>:8001 (KServe v2 gRPC).
std::string backend_service_name(const PlanDir& plan, const InstanceKind& kind);

std::vector<std::filesystem::path> write_kubernetes_manifests(const PlanDir& plan,
                                                              const std::filesystem::path& out,
                                                              const KubernetesOptions& options);

}  // namespace tessera::exporter
