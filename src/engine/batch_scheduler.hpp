#pragma once

// BatchInstanceScheduler: the instance scheduler of a model that runs atomic batches (every
// wave-1 policy). The batching policy says when an idle instance starts (eager, timeout,
// idle); the variant policy picks the variant and the batch cap; each item passes the drop
// policy (through SchedulerHost::admit) as it joins. Items the drop policy deems stale while
// still queued (DropPolicy::stale_at) are purged from the queue's least-budget end (a FIFO
// queue's front) whenever the queue is touched, and by a timer while the instance is busy.
// With a batching policy that forms while busy (PARD §4.2), the next batch forms while one
// runs and starts the moment it ends.
//
// Holds references to policies owned by the engine; one object per instance. Not
// thread-safe.

#include "engine/instance_scheduler.hpp"
#include "engine/policies.hpp"

namespace tessera {

class BatchInstanceScheduler final : public InstanceScheduler {
 public:
  BatchInstanceScheduler(const BatchingPolicy& batching, VariantPolicy& variant,
                         const DropPolicy& dropping, SchedulerHost& host)
      : batching_(batching),
        variant_(variant),
        dropping_(dropping),
        purges_stale_(dropping.purges_stale()),
        host_(host) {}

  void on_queue_grew(Worker& worker) override;
  void on_step_done(Worker& worker) override;
  void on_timer(Worker& worker) override;
  void on_settings_changed(Worker& worker) override;
  void release(Worker& worker, std::vector<Item>& out) override;

 private:
  void try_start(Worker& worker);
  void fill_forming(Worker& worker);
  void start(Worker& worker);
  // Drops the stale items at the queue's least-budget end; while busy, a timer for the next.
  void purge_stale(Worker& worker);

  const BatchingPolicy& batching_;
  VariantPolicy& variant_;
  const DropPolicy& dropping_;
  const bool purges_stale_;
  SchedulerHost& host_;
};

}  // namespace tessera
