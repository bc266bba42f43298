#pragma once

// PpipeSetup: one DNN of a PPipe plan (ppipe::PpipePlan) turned into what the engine runs: an
// App with one task per (pipeline, partition), chained within each pipeline; a Deployment
// whose instances are the partitions' vGPUs placed on servers, each server with an uplink
// and a downlink; and the partitions' latency curves from the block profiles.
//
// VgpuPlacement (place_plan): per GPU class, physical GPUs are numbered in order and packed
// gpus_per_server to a server. Partitions take vGPUs one (DNN, partition position) at a time,
// the larger vGPU sizes first (first-fit decreasing), in plan order within a size; a GPU is
// split into `mps` vGPUs of one size, and the vGPUs of one size of one position fill a
// partly used GPU before a new one is opened, so a GPU may hold vGPUs of several pipelines
// of the same size. When that GPU is full, a vGPU first goes into a GPU with room left
// that holds vGPUs of the same DNN and partition position (a 1/2 and two 1/4 vGPUs fill one
// GPU), as the planner's integer-GPUs-per-position refinement counts sum(1/v) per (DNN,
// class, position), not whole GPUs per vGPU size; then into a new GPU; then, with every
// GPU open, into any GPU with room left. All vGPUs of a
// server share its NIC: bandwidth = nic_gbps x bandwidth_fraction per direction.
//
// The App's only root is pipeline 0's first partition: a DNN's requests enter one central
// queue and the data plane moves a batch to the first partition of the pipeline it picks.
// Task names are "<dnn>/p<pipeline>.<partition>".
//
// Plain values; build once, read from one thread.

#include <string>
#include <vector>

#include "dataplane/ppipe/ppipe_plan.hpp"
#include "engine/app.hpp"
#include "engine/deployment.hpp"
#include "profile/ppipe_import.hpp"
#include "profile/profile_table.hpp"

namespace tessera::reservation {

// Where each vGPU of a plan runs: [dnn][pipeline][partition][vGPU] -> server.
struct VgpuPlacement {
  struct Server {
    std::string gpu_class;
    int index = 0;           // within its class
    double bandwidth = 0.0;  // bytes per second, each direction
    std::vector<int> gpus;   // physical GPU indices within the class
  };
  std::vector<Server> servers;
  std::vector<std::vector<std::vector<std::vector<int>>>> server_of;
  std::string server_name(int s) const;  // "<class>-s<index>"
};

// Throws std::invalid_argument when a class lacks the GPUs the plan uses or a partition
// names an unknown class.
VgpuPlacement place_plan(const ppipe::PpipePlan& plan);

struct SetupOptions {
  // Edges carry the cut's bytes per item, so the engine's FIFO links move them (the
  // reactive baseline). Off: the reservation data plane moves them on its own tables.
  bool link_edges = false;
  Time link_latency = 0.0;  // per transfer, on every NIC direction
};

struct PpipeSetup {
  App app;
  Deployment deployment;
  ProfileTable profiles;
  // Per pipeline: the task of each partition, the unified batch size, the bytes per item
  // of each partition's incoming cut (0 for the first), the planned step time per
  // partition at the batch size (s), and the planned throughput (requests/s).
  struct PipelineTasks {
    std::vector<TaskId> tasks;
    int batch = 1;
    std::vector<double> in_bytes;
    std::vector<Time> planned_step;
    double throughput = 0.0;
  };
  std::vector<PipelineTasks> pipelines;
};

// The DNN `dnn` of `plan`, with `blocks` the block profiles of its model (every GPU class
// and MPS share the plan uses). Cut sizes the plan leaves at 0 come from the profiles'
// transfer_bytes. Throws std::invalid_argument for a missing profile or a bad plan.
PpipeSetup build_setup(const ppipe::PpipePlan& plan, std::size_t dnn,
                       const std::vector<PpipeBlockProfile>& blocks,
                       const SetupOptions& options = {});

}  // namespace tessera::reservation
