#pragma once

// NicTables: the reservation tables of the servers' NIC directions (PPipe §5.4: "a table
// per vGPU and per NIC direction"), kept apart from the vGPU tables so that the data
// planes of several DNNs whose vGPUs sit on one server share that server's uplink and
// downlink tables: a transfer one DNN reserves delays the other's. Each ReservationBook
// holds a shared_ptr to one NicTables (its own by default; ReservationBook::share_nics
// joins a common one). Links are found by name ("<server>/up", "<server>/down"), so two
// DNNs' setups that name the same server get the same table.
//
// Reservation ids in a shared table must not collide between DNNs: every data plane takes
// an id space (next_id_space) and numbers its batches inside it.
//
// Plain value shared by the planes of one simulated run; not thread-safe (one engine
// thread, or several engines advanced in turn by one thread).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/time.hpp"
#include "dataplane/ppipe/timeline.hpp"

namespace tessera::reservation {

struct LinkParams {
  double bandwidth = 1.0;  // bytes per second, > 0
  Time latency = 0.0;      // added to every transfer's arrival
};

class NicTables {
 public:
  // A new, unnamed link (never shared). Throws std::invalid_argument if bandwidth <= 0.
  uint32_t add(const LinkParams& params);
  // The link named `name`, added on first use. A later call with other parameters throws
  // std::invalid_argument naming the link (two setups disagree on one server's NIC).
  uint32_t named(const std::string& name, const LinkParams& params);

  Timeline& link(uint32_t id) { return links_[id]; }
  const Timeline& link(uint32_t id) const { return links_[id]; }
  const LinkParams& params(uint32_t id) const { return params_[id]; }
  std::size_t size() const { return links_.size(); }
  // How many data planes took an id space here (1 per plane; > 1 means shared).
  uint64_t spaces() const { return spaces_; }

  // A fresh id space: batch ids of the caller are (space << kSpaceShift) + 1, + 2, ...
  uint64_t next_id_space() { return spaces_++; }
  static constexpr int kSpaceShift = 40;

 private:
  std::vector<Timeline> links_;
  std::vector<LinkParams> params_;
  std::map<std::string, uint32_t> by_name_;
  uint64_t spaces_ = 0;
};

}  // namespace tessera::reservation
