#pragma once

// ReservationBook: the reservation tables of PPipe's data plane (§5.4, Appendix A.3) and
// its probe() and reserve() (Algorithm 2). Resources are vGPUs and the two directions of
// each server's NIC; every vGPU names the uplink and downlink of its server, so the vGPUs
// of one server (and of one MPS-shared GPU) contend on the same links. A PipelinePlan is a
// pooled pipeline as the scheduler sees it: its unified batch size and, per partition, the
// pool's vGPUs, its step time per batch size and the bytes per item of the incoming cut.
//
// probe() is the paper's greedy: partition by partition, the pool member that finishes
// the stage earliest given the tables (ties: the earlier member in pool order), where a
// transfer needs the previous member's uplink and this member's downlink free at the same
// time (earliest_common_fit). Two vGPUs of one server exchange data without the NIC [I:
// the paper's Fig. 5 assumes separate nodes]. reserve() marks an offer's intervals under
// ids derived from the batch's id.
//
// How probe() finds that member without working out every member: a member's stage
// cannot end before its vGPU's earliest fit at the time the input could be there with free
// links (the transfer's length and latency after the previous stage), a bound that needs
// only the member's vGPU table; a member is worked out in full (its transfer's common fit
// on both links) only if that bound can beat the best so far (end, then pool order).
//
// Pools ordered by next free time: the book keeps, per pool it has probed, its members
// sorted three ways. A vGPU table spanning [a, F) whose gaps are all shorter than len gives
// a stage whose input is ready at r the slot r when r + len <= a or r >= F, else a slot at
// or after F; so once the previous stage ends at t, such a member with a < t + len ends no
// earlier than F + len. probe() visits the members with a gap of len or more (sorted by
// their longest gap), those with a >= t + len (sorted by a), then every member by F until
// F + len exceeds the best end found (no later one can win or tie). A member's place is
// refreshed when its table may have changed: the non-const gpu() and reserve() note the
// vGPU, so a reference from gpu() must not be kept across a probe(). A pool whose members
// changed since the last probe is indexed again. The result is the scan's, bit for bit
// (tests/reservation_sequence_test.cpp checks it against the scan).
//
// The link tables live in a NicTables the book shares (share_nics) with the books of the
// other DNNs on the same servers, so their transfers contend for one NIC table; by default
// a book has its own.
//
// Engine-independent and deterministic (ties go to the earlier pool member). Owned by one
// data plane; not thread-safe.

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include "core/time.hpp"

#include "dataplane/ppipe/nic_tables.hpp"
#include "dataplane/ppipe/timeline.hpp"

namespace tessera::reservation {

// One partition's pool.
struct PoolPlan {
  std::vector<uint32_t> members;   // vGPU indices in the book, in a fixed order
  std::vector<Time> latency;       // step time of one member at batch size b ([0] unused)
  double in_bytes_per_item = 0.0;  // the incoming cut (ignored for the first partition)
  Time step_time(int batch) const {
    const auto b = static_cast<std::size_t>(batch);
    return b < latency.size() ? latency[b] : latency.back();
  }
};

// A pooled pipeline: the planned (unified) batch size and its pools in order.
struct PipelinePlan {
  int batch = 1;
  std::vector<PoolPlan> pools;
};

inline constexpr int kMaxHops = 4;  // partitions per pipeline (the plans use up to 3)

// One stage of a probed path: the incoming transfer (none for the first stage or between
// vGPUs of one server: xfer_len 0) and the vGPU slot.
struct Hop {
  uint32_t vgpu = 0;
  Time xfer_start = 0.0;
  Time xfer_len = 0.0;
  Time ready = 0.0;  // the input is at the vGPU: transfer end + link latency
  Time start = 0.0;  // the vGPU slot [start, start + len)
  Time len = 0.0;
};

// What probe() returns: a path and the intervals to reserve on it.
struct Offer {
  int pipeline = -1;
  int batch = 0;
  int hops = 0;
  std::array<Hop, kMaxHops> hop{};
  Time finish = std::numeric_limits<Time>::infinity();
  // Σ over the path of (slot start − the time the resource was first needed) (§5.4).
  Time wait = std::numeric_limits<Time>::infinity();
  bool valid() const { return hops > 0; }
};

class ReservationBook {
 public:
  ReservationBook() : nics_(std::make_shared<NicTables>()) {}
  // Use `nics` for every link from now on; only before the first link is added (throws
  // std::logic_error otherwise).
  void share_nics(std::shared_ptr<NicTables> nics);
  const std::shared_ptr<NicTables>& nics() const { return nics_; }
  uint32_t add_link(const LinkParams& params);
  // The link `name` of the shared tables (the same id for every book that names it).
  uint32_t add_link(const std::string& name, const LinkParams& params);
  // A vGPU on the server whose NIC directions are `uplink` and `downlink`.
  uint32_t add_vgpu(uint32_t uplink, uint32_t downlink);

  // The path of `pipeline` that finishes a batch of `batch` items earliest, starting no
  // earlier than `now`; an invalid offer when a pool has no member.
  Offer probe(const PipelinePlan& pipeline, int batch, Time now) const;
  // Marks the offer's intervals: hop h's vGPU slot under gpu_id(batch_id, h), its incoming
  // transfer on both links under xfer_id(batch_id, h).
  void reserve(const Offer& offer, uint64_t batch_id);

  static ReservationId gpu_id(uint64_t batch_id, int hop) {
    return (batch_id << 3) | (static_cast<uint64_t>(hop) << 1);
  }
  static ReservationId xfer_id(uint64_t batch_id, int hop) { return gpu_id(batch_id, hop) | 1; }

  // Non-const access notes the vGPU as possibly changed (see the probe's index above).
  Timeline& gpu(uint32_t vgpu) {
    note_changed(vgpu);
    return gpus_[vgpu];
  }
  const Timeline& gpu(uint32_t vgpu) const { return gpus_[vgpu]; }
  Timeline& link(uint32_t id) { return nics_->link(id); }
  const Timeline& link(uint32_t id) const { return nics_->link(id); }
  const LinkParams& link_params(uint32_t id) const { return nics_->params(id); }
  uint32_t uplink_of(uint32_t vgpu) const { return vgpus_[vgpu].up; }
  uint32_t downlink_of(uint32_t vgpu) const { return vgpus_[vgpu].down; }
  std::size_t vgpus() const { return vgpus_.size(); }
  std::size_t links() const { return nics_->size(); }
  // The incoming transfer of `bytes` from `from` to `to`: its link occupancy and the
  // latency added on arrival (both 0 within one server).
  Time transfer_time(uint32_t from, uint32_t to, double bytes) const;
  Time transfer_latency(uint32_t from, uint32_t to) const;
  bool same_server(uint32_t a, uint32_t b) const { return vgpus_[a].up == vgpus_[b].up; }

  // Algorithm 1's probes: every probe() call, and every probe a decision answered from an
  // identical one it had made (count_reused_probe), so the figure does not depend on reuse.
  uint64_t probes() const { return probes_; }
  void count_reused_probe() const { ++probes_; }

 private:
  // A vGPU's NIC directions and their figures (fixed once the link exists).
  struct Vgpu {
    uint32_t up = 0;
    uint32_t down = 0;
    double up_bandwidth = 0.0;
    double down_bandwidth = 0.0;
    Time up_latency = 0.0;
    Time down_latency = 0.0;
  };
  // One pool member's candidate hop, worked out in full.
  // `xfer` and `latency`: transfer_time() and transfer_latency() from `last` (unused when
  // `first`).
  Hop member_hop(uint32_t last, uint32_t g, bool first, Time t_g, Time l_i, Time xfer, Time latency,
                 Time& wait) const;
  // The best member of one stage, with its wait and end.
  struct StageBest {
    Hop hop;
    Time wait = 0.0;
    Time end = 0.0;
  };
  // The member's end once its input could be there with the links free: a lower bound of
  // its true end (exact without a transfer).
  Time member_bound(uint32_t g, bool first, Time t_g, Time l_i, Time xfer, Time latency) const;
  // A pool's members in the groups described at the top.
  struct PoolIndex {
    struct Place {  // a member's keys in the lists it is in
      Time free_from = 0.0;
      Time first_start = 0.0;
      Time max_gap = 0.0;
      bool in_free = false;
      bool in_start = false;
      bool in_gap = false;
    };
    struct Entry {  // a member's place in a sorted list: by key, then position
      Time key = 0.0;
      uint32_t pos = 0;
      bool operator<(const Entry& o) const { return key < o.key || (key == o.key && pos < o.pos); }
      bool operator>(const Entry& o) const { return o < *this; }
    };
    std::vector<uint32_t> members;  // the pool's members when indexed
    std::vector<Entry> by_free;     // every member: (F, position)
    std::vector<Entry> by_start;    // a non-empty table: (a, position)
    std::vector<Entry> by_gap;      // a table with a gap: (longest, position)
    std::vector<Place> place;       // per position
    std::vector<uint8_t> dirty;     // per position: noted since last probe
    std::vector<uint32_t> dirty_list;
  };
  // The pool's index, brought up to date (rebuilt if the pool's members changed).
  PoolIndex& index_for(const PoolPlan& pool) const;
  void rebuild(PoolIndex& ix, uint32_t id, const PoolPlan& pool) const;
  void place(PoolIndex& ix, uint32_t pos) const;
  StageBest indexed_stage(const PoolIndex& ix, uint32_t last, bool first, Time t_g, Time l_i,
                          double bytes) const;
  void note_changed(uint32_t vgpu);
  std::vector<Timeline> gpus_;
  std::vector<Vgpu> vgpus_;
  std::shared_ptr<NicTables> nics_;
  bool any_link_ = false;
  mutable uint64_t probes_ = 0;
  mutable std::vector<PoolIndex> pools_;
  mutable std::unordered_map<const PoolPlan*, uint32_t> pool_id_;
  // Per vGPU: the (pool index, position) pairs that hold it.
  mutable std::vector<std::vector<std::pair<uint32_t, uint32_t>>> vgpu_pools_;
};

}  // namespace tessera::reservation
