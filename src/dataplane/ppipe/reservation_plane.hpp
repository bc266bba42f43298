#pragma once

// ReservationPlane: PPipe's resource reservation-based data plane (§5.4) on the engine.
// One object per DNN (one engine). It owns the DNN's central queue (sorted by deadline),
// the ReservationBook (a table per vGPU and per NIC direction) and the batches in flight;
// the engine's instances are the partitions' vGPUs (PpipeSetup), and each runs a
// forwarding InstanceScheduler (forwarding.hpp) that calls this object.
//
// Flow: a request enters the root task's anchor instance, whose scheduler moves it to the
// central queue; AdaptiveBatcher (Algorithm 1) then drops the head (kPredictedLate at the
// root task), waits (a timer on the anchor) or reserves a path and hands the batch to the
// first vGPU. A vGPU runs its batches in the order of their reserved starts, each as soon
// as the vGPU is idle and the batch's items are there. When a step ends, the engine routes
// the items to the next partition's task and the dispatcher sends them to the vGPU the
// reservation names (a batch keeps its identity along the pipeline: same items, same path).
// Transfers happen in their reserved slot on both links (the book's link tables are the
// network model here, so reserved and actual use agree); a transfer whose sender ends after
// the slot started is moved to the earliest free common slot.
//
// Feedback correction (§5.4): a step's start moves its vGPU interval to [actual start,
// actual start + planned time]; its end, and a transfer's use, remove the interval, so the
// tables hold only what is running or still to come. Losing an instance fails the batches
// reserved on it (their requests end failed); queued requests move to another anchor.
//
// Every request ends exactly once through the engine's ledger. Not thread-safe: called on
// the engine's thread.

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "core/log_histogram.hpp"
#include "core/time.hpp"
#include "dataplane/ppipe/batcher.hpp"
#include "dataplane/ppipe/book.hpp"
#include "dataplane/ppipe/nic_tables.hpp"
#include "dataplane/ppipe/setup.hpp"
#include "engine/instance_scheduler.hpp"
#include "engine/policies.hpp"
#include "engine/worker.hpp"

namespace tessera::reservation {

struct PlaneStats {
  uint64_t batches = 0;                   // dispatched
  uint64_t batch_items = 0;               // requests in them
  uint64_t decisions = 0;                 // AdaptiveBatcher::decide calls
  uint64_t drops = 0;                     // heads dropped (kPredictedLate)
  uint64_t first_look_drops = 0;          // ... of them by the first-look rule
  uint64_t waits = 0;                     // decisions to wait for more requests
  uint64_t transfers = 0;                 // inter-partition transfers over a NIC
  uint64_t reslotted = 0;                 // transfers whose sender ended after the reserved slot
  Time transfer_busy = 0.0;               // link time of the transfers
  LogHistogram transfer_time{1e-7, 1e3};  // sender end to arrival (s)
  std::vector<uint64_t> per_pipeline;     // batches per pipeline
  std::vector<uint64_t> per_size;         // batches per size ([0] unused)
};

class ReservationPlane final : public std::enable_shared_from_this<ReservationPlane> {
 public:
  // `nics` (optional): NIC tables shared with the planes of the other DNNs of the same run
  // (nic_tables.hpp); links are then found by their deployment names. Without it the plane
  // has tables of its own.
  static std::shared_ptr<ReservationPlane> create(const PpipeSetup& setup,
                                                  BatcherOptions options = {},
                                                  std::shared_ptr<NicTables> nics = nullptr);

  // The engine's policies for this DNN; they share this object.
  EnginePolicies policies();

  const ReservationBook& book() const { return book_; }
  const PlaneStats& stats() const { return stats_; }
  uint64_t probes() const { return book_.probes(); }
  std::size_t queued() const { return queue_.size(); }
  // With keep_history(true): every batch reserved, and every actual use of a vGPU (a step)
  // or a link (a transfer), for checks that nothing was over-booked.
  struct Usage {
    bool link = false;
    uint32_t resource = 0;  // vGPU or link index in the book
    Time start = 0.0;
    Time end = 0.0;
  };
  const std::vector<Offer>& history() const { return history_; }
  const std::vector<Usage>& usage() const { return usage_; }
  void keep_history(bool on) { keep_history_ = on; }

  // The instance scheduler's calls.
  void attach(Worker& worker, SchedulerHost& host);
  void on_queue_grew(Worker& worker);
  void on_step_done(Worker& worker);
  void on_timer(Worker& worker);
  void release(Worker& worker, std::vector<Item>& out);
  // The dispatcher's: the index in `workers` an item of `task` goes to, or -1.
  int route(TaskId task, const std::vector<Worker*>& workers, const Item& item) const;

 private:
  struct Batch {
    uint64_t id = 0;
    Offer offer;
    int stage = 0;  // the hop its items are at or travelling to
    int live = 0;   // items expected at this stage
    std::vector<Item> items;
    bool resolved = false;  // the incoming transfer is placed; `ready` holds
    Time ready = 0.0;
    bool dead = false;  // its next vGPU left service
  };
  struct Member {
    Worker* worker = nullptr;
    int pipeline = -1;
    int partition = -1;
    std::vector<uint32_t> pending;  // batches, by reserved start
    int64_t running = -1;           // the batch in its step
    Time step_start = 0.0;
    Time own_wake = -1.0;
    mutable int route_hint = -1;  // its index in the engine's worker list, found last time
  };

  ReservationPlane(const PpipeSetup& setup, BatcherOptions options,
                   std::shared_ptr<NicTables> nics);
  Time now() const { return host_->now(); }
  void run();  // Algorithm 1 until it waits or the queue is empty
  void dispatch(const Offer& offer);
  void try_start(uint32_t vgpu);
  void resolve_transfer(Batch& b);
  void add_pending(uint32_t vgpu, uint32_t batch);
  void free_batch(uint32_t batch);
  void arm_timer(uint32_t vgpu);
  void pick_anchor();

  std::vector<PpipeSetup::PipelineTasks> layout_;
  ReservationBook book_;
  std::vector<uint32_t> link_ids_;  // by deployment link index: the book's link
  std::vector<PipelinePlan> pipelines_;
  AdaptiveBatcher batcher_;
  SchedulerHost* host_ = nullptr;
  std::vector<Member> members_;                // by vGPU
  std::vector<int64_t> vgpu_of_worker_;        // by WorkerId, -1 if not ours
  std::vector<std::pair<int, int>> task_pos_;  // by TaskId: (pipeline, partition)
  TaskId root_ = 0;
  int64_t anchor_ = -1;  // vGPU whose instance takes arrivals and holds the central timer
  Time central_wake_ = -1.0;
  std::deque<Item> queue_;
  std::vector<uint8_t> looked_;  // by request slot: its head position was seen (first look)
  std::vector<Batch> batches_;
  std::vector<uint32_t> free_batches_;
  std::vector<uint32_t> batch_of_slot_;
  uint64_t next_batch_id_ = 1;
  bool in_run_ = false;
  PlaneStats stats_;
  bool keep_history_ = false;
  std::vector<Offer> history_;
  std::vector<Usage> usage_;
};

}  // namespace tessera::reservation
