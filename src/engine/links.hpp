#pragma once

// Links: network resources with a bandwidth, a fixed latency and FIFO contention, such as a
// server's NIC uplink and downlink (PPipe §4, §5.4). A transfer occupies every link on its
// path at once (a sender's uplink and the receiver's downlink) from the moment all of them
// are free, for bytes / (slowest bandwidth) seconds, and arrives one latency later. Later
// transfers on a busy link queue behind earlier ones in the order they were asked for.
//
// Owned by one engine; not thread-safe.

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "core/time.hpp"

namespace tessera {

using LinkId = uint32_t;
inline constexpr LinkId kNoLink = std::numeric_limits<LinkId>::max();

struct LinkSpec {
  std::string name;
  double bandwidth = 0.0;  // bytes per second, > 0
  Time latency = 0.0;      // propagation + per-transfer overhead
};

struct LinkStats {
  uint64_t transfers = 0;
  double bytes = 0.0;
  Time busy = 0.0;      // time the link carried data
  Time queueing = 0.0;  // total time transfers waited for it to be free
};

class Links {
 public:
  // Adds a link; names are unique. Throws std::invalid_argument on a duplicate name or a
  // bandwidth that is not positive and finite.
  LinkId add(const LinkSpec& spec);
  LinkId find(const std::string& name) const;  // kNoLink if absent
  std::size_t size() const { return links_.size(); }
  const LinkSpec& spec(LinkId id) const { return links_[id].spec; }
  const LinkStats& stats(LinkId id) const { return links_[id].stats; }
  Time free_at(LinkId id) const { return links_[id].free_at; }

  // Reserves a transfer of `bytes` over the links of `path` (kNoLink entries are skipped)
  // asked for at `now`; returns when the data has arrived. An empty path arrives at once.
  Time transfer(std::initializer_list<LinkId> path, double bytes, Time now);

 private:
  struct Link {
    LinkSpec spec;
    Time free_at = 0.0;
    LinkStats stats;
  };
  std::vector<Link> links_;
};

}  // namespace tessera
