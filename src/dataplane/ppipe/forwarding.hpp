#pragma once

// The engine-facing shims of a central data plane (ReservationPlane, ReactivePlane): an
// InstanceScheduler and a Dispatcher that forward every call to the plane object that owns
// the DNN's state. Each shim shares ownership of the plane, so the plane lives as long as
// the engine's policies. Not thread-safe: called on the engine's thread.

#include <memory>
#include <vector>

#include "engine/instance_scheduler.hpp"
#include "engine/policies.hpp"

namespace tessera::reservation {

template <typename Plane>
class ForwardingScheduler final : public InstanceScheduler {
 public:
  explicit ForwardingScheduler(std::shared_ptr<Plane> plane) : plane_(std::move(plane)) {}
  void on_queue_grew(Worker& w) override { plane_->on_queue_grew(w); }
  void on_step_done(Worker& w) override { plane_->on_step_done(w); }
  void on_timer(Worker& w) override { plane_->on_timer(w); }
  void on_settings_changed(Worker&) override {}
  void release(Worker& w, std::vector<Item>& out) override { plane_->release(w, out); }

 private:
  std::shared_ptr<Plane> plane_;
};

template <typename Plane>
class ForwardingDispatcher final : public Dispatcher {
 public:
  ForwardingDispatcher(std::shared_ptr<Plane> plane, TaskId task)
      : plane_(std::move(plane)), task_(task) {}
  int pick(const std::vector<Worker*>& workers, const Item& item) override {
    return plane_->route(task_, workers, item);
  }

 private:
  std::shared_ptr<Plane> plane_;
  TaskId task_;
};

// The index of `w` in `workers`, or -1.
inline int index_of(const std::vector<Worker*>& workers, const Worker* w) {
  for (std::size_t i = 0; i < workers.size(); ++i) {
    if (workers[i] == w) return static_cast<int>(i);
  }
  return -1;
}

// The same, trying `hint` (the index found last time) first and keeping the index found.
inline int index_of(const std::vector<Worker*>& workers, const Worker* w, int& hint) {
  const auto at = static_cast<std::size_t>(hint);
  if (hint >= 0 && at < workers.size() && workers[at] == w) return hint;
  hint = index_of(workers, w);
  return hint;
}

// Policies every central plane fills the unused families with.
EnginePolicies central_plane_policies();

}  // namespace tessera::reservation
