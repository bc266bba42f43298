#include "dataplane/ppipe/reservation_plane.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "dataplane/ppipe/forwarding.hpp"

namespace tessera::reservation {
namespace {

constexpr Time kEps = 1e-12;

}  // namespace

std::shared_ptr<ReservationPlane> ReservationPlane::create(const PpipeSetup& setup,
                                                           BatcherOptions options,
                                                           std::shared_ptr<NicTables> nics) {
  return std::shared_ptr<ReservationPlane>(new ReservationPlane(setup, options, std::move(nics)));
}

ReservationPlane::ReservationPlane(const PpipeSetup& setup, BatcherOptions options,
                                   std::shared_ptr<NicTables> nics)
    : layout_(setup.pipelines),
      batcher_(book_, pipelines_, options),
      task_pos_(setup.app.tasks.size(), {-1, -1}) {
  const bool shared = nics != nullptr;
  if (shared) book_.share_nics(std::move(nics));
  for (const LinkSpec& l : setup.deployment.links) {
    const LinkParams params{l.bandwidth, l.latency};
    link_ids_.push_back(shared ? book_.add_link(l.name, params) : book_.add_link(params));
  }
  // Batch ids inside this plane's id space, so that they name no other DNN's reservation
  // in shared link tables (the first plane's space is 0: ids 1, 2, ... as before).
  next_batch_id_ = (book_.nics()->next_id_space() << NicTables::kSpaceShift) + 1;
  for (std::size_t p = 0; p < layout_.size(); ++p) {
    PipelinePlan plan;
    plan.batch = layout_[p].batch;
    for (std::size_t k = 0; k < layout_[p].tasks.size(); ++k) {
      task_pos_[layout_[p].tasks[k]] = {static_cast<int>(p), static_cast<int>(k)};
      PoolPlan pool;
      pool.in_bytes_per_item = layout_[p].in_bytes[k];
      plan.pools.push_back(pool);
    }
    pipelines_.push_back(plan);
  }
  root_ = setup.app.roots.at(0);
  stats_.per_pipeline.assign(layout_.size(), 0);
  int max_batch = 1;
  for (const auto& p : layout_) max_batch = std::max(max_batch, p.batch);
  stats_.per_size.assign(static_cast<std::size_t>(max_batch) + 1, 0);
}

EnginePolicies ReservationPlane::policies() {
  EnginePolicies out = central_plane_policies();
  std::shared_ptr<ReservationPlane> self = shared_from_this();
  out.make_dispatcher = [self](TaskId task) -> std::unique_ptr<Dispatcher> {
    return std::make_unique<ForwardingDispatcher<ReservationPlane>>(self, task);
  };
  out.make_scheduler = [self](Worker& w, SchedulerHost& host,
                              const CostModel&) -> std::unique_ptr<InstanceScheduler> {
    self->attach(w, host);
    return std::make_unique<ForwardingScheduler<ReservationPlane>>(self);
  };
  return out;
}

void ReservationPlane::attach(Worker& w, SchedulerHost& host) {
  host_ = &host;
  if (w.task >= task_pos_.size() || task_pos_[w.task].first < 0) {
    throw std::invalid_argument("reservation data plane: instance of an unknown task");
  }
  if (w.uplink == kNoLink || w.downlink == kNoLink) {
    throw std::invalid_argument(
        "reservation data plane: every instance needs an uplink and a downlink");
  }
  const auto [p, k] = task_pos_[w.task];
  if (w.uplink >= link_ids_.size() || w.downlink >= link_ids_.size()) {
    throw std::invalid_argument("reservation data plane: instance names an unknown link");
  }
  const uint32_t v = book_.add_vgpu(link_ids_[w.uplink], link_ids_[w.downlink]);
  Member m;
  m.worker = &w;
  m.pipeline = p;
  m.partition = k;
  members_.push_back(m);
  if (vgpu_of_worker_.size() <= w.id) vgpu_of_worker_.resize(w.id + 1, -1);
  vgpu_of_worker_[w.id] = v;
  PoolPlan& pool = pipelines_[static_cast<std::size_t>(p)].pools[static_cast<std::size_t>(k)];
  pool.members.push_back(v);
  if (pool.latency.empty()) {
    pool.latency.assign(static_cast<std::size_t>(w.max_batch) + 1, 0.0);
    for (int b = 1; b <= w.max_batch; ++b)
      pool.latency[static_cast<std::size_t>(b)] = w.profiled_latency(0, b);
  }
  if (anchor_ < 0 && w.task == root_) anchor_ = v;
}

void ReservationPlane::pick_anchor() {
  anchor_ = -1;
  for (uint32_t v : pipelines_[static_cast<std::size_t>(task_pos_[root_].first)].pools[0].members) {
    if (members_[v].worker->alive) {
      anchor_ = v;
      return;
    }
  }
}

int ReservationPlane::route(TaskId task, const std::vector<Worker*>& workers,
                            const Item& item) const {
  if (task == root_) {
    // New requests enter at the anchor; a batch handed back by a lost first-stage vGPU
    // goes back to the central queue the same way.
    if (anchor_ < 0) return -1;
    const Member& a = members_[static_cast<std::size_t>(anchor_)];
    return index_of(workers, a.worker, a.route_hint);
  }
  if (item.request >= batch_of_slot_.size()) return -1;
  const Batch& b = batches_[batch_of_slot_[item.request]];
  if (b.dead || b.stage >= b.offer.hops) return -1;
  const uint32_t v = b.offer.hop[static_cast<std::size_t>(b.stage)].vgpu;
  return index_of(workers, members_[v].worker, members_[v].route_hint);
}

void ReservationPlane::on_queue_grew(Worker& w) {
  const auto v = static_cast<uint32_t>(vgpu_of_worker_[w.id]);
  if (w.task == root_) {
    // Arrivals: into the central queue, by deadline (FIFO among equal deadlines).
    while (!w.queue->empty()) {
      const Item item = w.queue->pop();
      if (looked_.size() <= item.request) looked_.resize(item.request + 1, 0);
      looked_[item.request] = 0;
      if (queue_.empty() || queue_.back().deadline <= item.deadline) {
        queue_.push_back(item);  // the common case: deadlines arrive in order
        continue;
      }
      auto at = std::upper_bound(queue_.begin(), queue_.end(), item.deadline,
                                 [](Time d, const Item& x) { return d < x.deadline; });
      queue_.insert(at, item);
    }
    run();
    return;
  }
  // A batch's items arriving from the previous partition.
  while (!w.queue->empty()) {
    const Item item = w.queue->pop();
    Batch& b = batches_[batch_of_slot_[item.request]];
    b.items.push_back(item);
    if (static_cast<int>(b.items.size()) == b.live) resolve_transfer(b);
  }
  try_start(v);
}

void ReservationPlane::resolve_transfer(Batch& b) {
  const auto k = static_cast<std::size_t>(b.stage);
  Hop& h = b.offer.hop[k];
  const uint32_t from = b.offer.hop[k - 1].vgpu;
  const Time t = now();
  if (h.xfer_len > 0) {
    if (t > h.xfer_start + kEps) {
      // The sender finished after the reserved slot began: the earliest common slot now.
      Timeline& up = book_.link(book_.uplink_of(from));
      Timeline& down = book_.link(book_.downlink_of(h.vgpu));
      const ReservationId id = ReservationBook::xfer_id(b.id, b.stage);
      up.release(id);
      down.release(id);
      h.xfer_start = earliest_common_fit(up, down, t, h.xfer_len);
      up.reserve(id, h.xfer_start, h.xfer_len);
      down.reserve(id, h.xfer_start, h.xfer_len);
      ++stats_.reslotted;
    }
    if (keep_history_) {
      usage_.push_back({true, book_.uplink_of(from), h.xfer_start, h.xfer_start + h.xfer_len});
      usage_.push_back({true, book_.downlink_of(h.vgpu), h.xfer_start, h.xfer_start + h.xfer_len});
    }
    ++stats_.transfers;
    stats_.transfer_busy += h.xfer_len;
    b.ready = h.xfer_start + h.xfer_len + book_.transfer_latency(from, h.vgpu);
    stats_.transfer_time.add(b.ready - t);
  } else {
    b.ready = t + book_.transfer_latency(from, h.vgpu);
  }
  b.resolved = true;
}

void ReservationPlane::add_pending(uint32_t v, uint32_t batch) {
  auto& pending = members_[v].pending;
  const Time start =
      batches_[batch].offer.hop[static_cast<std::size_t>(batches_[batch].stage)].start;
  auto at = std::upper_bound(pending.begin(), pending.end(), start, [&](Time s, uint32_t x) {
    return s < batches_[x].offer.hop[static_cast<std::size_t>(batches_[x].stage)].start;
  });
  pending.insert(at, batch);
}

void ReservationPlane::free_batch(uint32_t batch) {
  batches_[batch].items.clear();
  free_batches_.push_back(batch);
}

void ReservationPlane::arm_timer(uint32_t v) {
  Member& m = members_[v];
  Time at = m.own_wake;
  if (static_cast<int64_t>(v) == anchor_ && central_wake_ >= 0) {
    at = at < 0 ? central_wake_ : std::min(at, central_wake_);
  }
  if (at >= 0 && at != m.worker->timer_at) host_->set_timer(*m.worker, at);
}

void ReservationPlane::try_start(uint32_t v) {
  Member& m = members_[v];
  Worker& w = *m.worker;
  if (w.busy || !w.alive) return;
  while (!m.pending.empty()) {
    const uint32_t bi = m.pending.front();
    Batch& b = batches_[bi];
    if (static_cast<int>(b.items.size()) < b.live) return;  // still arriving
    if (!b.resolved) resolve_transfer(b);
    const Time t = now();
    if (t + kEps < b.ready) {
      m.own_wake = b.ready;
      arm_timer(v);
      return;
    }
    m.own_wake = -1.0;
    m.pending.erase(m.pending.begin());
    const auto k = static_cast<std::size_t>(b.stage);
    const Hop& h = b.offer.hop[k];
    if (k > 0 && h.xfer_len > 0) {  // the transfer is over: feedback removes it
      const ReservationId id = ReservationBook::xfer_id(b.id, b.stage);
      book_.link(book_.uplink_of(b.offer.hop[k - 1].vgpu)).release(id);
      book_.link(book_.downlink_of(h.vgpu)).release(id);
    }
    w.running.clear();
    for (const Item& item : b.items) {
      if (host_->admit(w, item, t, h.len)) w.running.push_back(item);
    }
    b.items.clear();
    const ReservationId gid = ReservationBook::gpu_id(b.id, b.stage);
    if (w.running.empty()) {
      book_.gpu(v).release(gid);
      free_batch(bi);
      continue;
    }
    b.live = static_cast<int>(w.running.size());
    book_.gpu(v).correct(gid, t, t + h.len);  // feedback: the actual start
    m.running = bi;
    m.step_start = t;
    w.running_variant = 0;
    host_->start_step(w);
    return;
  }
}

void ReservationPlane::on_step_done(Worker& w) {
  const auto v = static_cast<uint32_t>(vgpu_of_worker_[w.id]);
  Member& m = members_[v];
  if (m.running >= 0) {
    const auto bi = static_cast<uint32_t>(m.running);
    m.running = -1;
    Batch& b = batches_[bi];
    book_.gpu(v).release(ReservationBook::gpu_id(b.id, b.stage));  // feedback: it is over
    if (keep_history_) usage_.push_back({false, v, m.step_start, now()});
    ++b.stage;
    if (b.stage >= b.offer.hops) {
      free_batch(bi);
    } else {
      const uint32_t next = b.offer.hop[static_cast<std::size_t>(b.stage)].vgpu;
      b.items.clear();
      b.resolved = false;
      if (members_[next].worker->alive) {
        add_pending(next, bi);
      } else {
        b.dead = true;  // its items fail on arrival at the next partition
      }
    }
  }
  try_start(v);
}

void ReservationPlane::on_timer(Worker& w) {
  const auto v = static_cast<uint32_t>(vgpu_of_worker_[w.id]);
  const Time t = now();
  if (static_cast<int64_t>(v) == anchor_ && central_wake_ >= 0 && t + kEps >= central_wake_) {
    central_wake_ = -1.0;
    run();
  }
  if (members_[v].own_wake >= 0 && t + kEps >= members_[v].own_wake) members_[v].own_wake = -1.0;
  try_start(v);
  arm_timer(v);
}

void ReservationPlane::release(Worker& w, std::vector<Item>& out) {
  const auto v = static_cast<uint32_t>(vgpu_of_worker_[w.id]);
  Member& m = members_[v];
  auto& members = pipelines_[static_cast<std::size_t>(m.pipeline)]
                      .pools[static_cast<std::size_t>(m.partition)]
                      .members;
  members.erase(std::remove(members.begin(), members.end(), v), members.end());
  for (uint32_t bi : m.pending) {
    Batch& b = batches_[bi];
    out.insert(out.end(), b.items.begin(), b.items.end());
    b.items.clear();
    b.dead = true;
    book_.gpu(v).release(ReservationBook::gpu_id(b.id, b.stage));
  }
  m.pending.clear();
  m.own_wake = -1.0;
  if (static_cast<int64_t>(v) == anchor_) {
    out.insert(out.end(), queue_.begin(), queue_.end());
    queue_.clear();
    central_wake_ = -1.0;
    pick_anchor();
  }
}

void ReservationPlane::run() {
  if (in_run_ || anchor_ < 0) return;
  in_run_ = true;
  while (!queue_.empty()) {
    const Item& head = queue_.front();
    const bool first = looked_[head.request] == 0;
    looked_[head.request] = 1;
    ++stats_.decisions;
    const Decision d = batcher_.decide(now(), head.deadline, queue_.size(), first);
    if (d.kind == Decision::Kind::kIdle) break;
    if (d.kind == Decision::Kind::kWait) {
      ++stats_.waits;
      central_wake_ = d.wake_at;
      arm_timer(static_cast<uint32_t>(anchor_));
      break;
    }
    if (d.kind == Decision::Kind::kDrop) {
      const Item item = head;
      queue_.pop_front();
      ++stats_.drops;
      stats_.first_look_drops += d.first_look_drop ? 1 : 0;
      host_->drop_queued(*members_[static_cast<std::size_t>(anchor_)].worker, item,
                         DropReason::kPredictedLate);
      continue;
    }
    dispatch(d.offer);
  }
  in_run_ = false;
}

void ReservationPlane::dispatch(const Offer& offer) {
  uint32_t bi;
  if (!free_batches_.empty()) {
    bi = free_batches_.back();
    free_batches_.pop_back();
  } else {
    bi = static_cast<uint32_t>(batches_.size());
    batches_.emplace_back();
  }
  Batch& b = batches_[bi];
  b.id = next_batch_id_++;
  b.offer = offer;
  b.stage = 0;
  b.live = offer.batch;
  b.dead = false;
  b.resolved = true;
  b.ready = now();
  b.items.clear();
  const auto p = static_cast<std::size_t>(offer.pipeline);
  const TaskId first = layout_[p].tasks.front();
  for (int i = 0; i < offer.batch; ++i) {
    Item item = queue_.front();
    queue_.pop_front();
    item.task = first;
    if (batch_of_slot_.size() <= item.request) batch_of_slot_.resize(item.request + 1, 0);
    batch_of_slot_[item.request] = bi;
    b.items.push_back(item);
  }
  book_.reserve(offer, b.id);
  ++stats_.batches;
  stats_.batch_items += static_cast<uint64_t>(offer.batch);
  ++stats_.per_pipeline[p];
  ++stats_.per_size[static_cast<std::size_t>(offer.batch)];
  if (keep_history_) history_.push_back(offer);
  const uint32_t v = offer.hop[0].vgpu;
  add_pending(v, bi);
  try_start(v);
}

}  // namespace tessera::reservation
