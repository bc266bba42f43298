#pragma once

// ReactivePlane: the reactive, distributed data plane PPipe's ablation compares against
// (§7.4; digest §3.5): "The reactive scheduler performs adaptive batching independently for
// each GPU pool in a pooled pipeline. For each pool, it selects the largest possible batch
// size that meets the pool's SLO (as determined by the MILP solver)." Nothing tracks
// resource use: transfers go over the engine's FIFO links (PpipeSetup built with
// link_edges), so batches can land on servers whose links are saturated.
//
// This reading ([I] where the paper is silent; [R] from the repository's
// SlaAwareLoadBalancer):
//   - a request enters the DNN's anchor instance and goes to a pipeline by smooth weighted
//     round robin over the pipelines' planned throughputs (the paper's reactive baseline
//     runs one plan, so the split follows the plan) [I];
//   - at every pool, an item goes to the member with the earliest expected completion
//     (busy until its step's expected end, plus its queued items and the batches on their
//     way to it at the planned step time; ties rotate) [R];
//   - a member batches its own queue (by deadline): remaining = deadline - now - the planned
//     time of the downstream partitions and the transfers after the next one; the batch
//     size is the largest bs <= the planned one with step(bs) + transfer-out(bs) <=
//     remaining [R]; none: the head is dropped here (kPredictedLate at this partition);
//     fewer queued than bs: wait until the last moment, as ReservationPlane does [R];
//   - the first-look rule is the same option as ReservationPlane's [R].
//
// Every request ends once through the engine's ledger. Not thread-safe.

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "core/log_histogram.hpp"
#include "core/time.hpp"
#include "dataplane/ppipe/batcher.hpp"
#include "dataplane/ppipe/setup.hpp"
#include "engine/instance_scheduler.hpp"
#include "engine/policies.hpp"
#include "engine/worker.hpp"

namespace tessera::reservation {

struct ReactiveStats {
  uint64_t batches = 0;
  uint64_t batch_items = 0;
  uint64_t drops = 0;
  uint64_t first_look_drops = 0;
  uint64_t waits = 0;
  std::vector<uint64_t> drops_per_partition;  // by partition position
  uint64_t transfers = 0;
  LogHistogram transfer_time{1e-7, 1e3};  // sender end to arrival (s), FIFO queueing included
};

class ReactivePlane final : public std::enable_shared_from_this<ReactivePlane> {
 public:
  // `setup` must be built with SetupOptions::link_edges.
  static std::shared_ptr<ReactivePlane> create(const PpipeSetup& setup,
                                               BatcherOptions options = {});
  EnginePolicies policies();
  const ReactiveStats& stats() const { return stats_; }

  void attach(Worker& worker, SchedulerHost& host);
  void on_queue_grew(Worker& worker);
  void on_step_done(Worker& worker);
  void on_timer(Worker& worker);
  void release(Worker& worker, std::vector<Item>& out);
  int route(TaskId task, const std::vector<Worker*>& workers, const Item& item) const;

 private:
  struct Member {
    Worker* worker = nullptr;
    int pipeline = -1;
    int partition = -1;
    std::deque<Item> queue;                  // by deadline
    std::vector<RequestSlot> running_slots;  // the items of its running step
    int inbound = 0;                         // transfers sent to it, not yet arrived
  };

  ReactivePlane(const PpipeSetup& setup, BatcherOptions options);
  Time now() const { return host_->now(); }
  void enqueue(Member& m, const Item& item);
  void try_start(Member& m);
  int earliest_member(int pipeline, int partition) const;
  Time transfer_out(int pipeline, int partition, int batch) const;
  void pick_anchor();

  std::vector<PpipeSetup::PipelineTasks> layout_;
  std::vector<std::vector<std::vector<int>>> pools_;  // [pipeline][partition] -> member
  std::vector<std::vector<Time>> slack_;              // [pipeline][partition]
  std::vector<std::vector<double>> out_bandwidth_;    // [pipeline][partition], bytes/s
  std::vector<double> weight_;                        // per pipeline
  std::vector<double> credit_;
  BatcherOptions options_;
  SchedulerHost* host_ = nullptr;
  // Mutable: the dispatcher's pick is const in the plane's interface but books the
  // transfer it routes (inbound) and rotates its tie-break.
  mutable std::vector<Member> members_;
  mutable std::size_t rotate_ = 0;
  std::vector<int64_t> member_of_worker_;
  std::vector<std::pair<int, int>> task_pos_;
  std::vector<double> link_bandwidth_;
  TaskId root_ = 0;
  int anchor_ = -1;
  std::vector<Time> sent_at_;    // by request slot: when its last step ended
  std::vector<uint8_t> looked_;  // by request slot: first look done at its current pool
  ReactiveStats stats_;
};

}  // namespace tessera::reservation
