#pragma once

// What the exports tell NVIDIA's GPU operator (docs/deploy.md#what-the-gpu-operator-allows):
// the device plugin's configuration that shares each whole GPU among MPS clients.
//
// Contract: pure text; the device plugin's MPS sharing serves only `nvidia.com/gpu`, so
// this shares whole GPUs (MIG slices are not shared this way); `flags.migStrategy: mixed`
// keeps MIG devices of the same node advertised as nvidia.com/mig-<profile>.

#include <string>

namespace tessera::exporter {

// The device plugin's config file (version v1) with `sharing.mps` of `replicas` per GPU.
std::string device_plugin_mps_config(int replicas);

}  // namespace tessera::exporter
