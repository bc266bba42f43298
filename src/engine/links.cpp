#include "engine/links.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tessera {

LinkId Links::add(const LinkSpec& spec) {
  if (!(spec.bandwidth > 0) || !std::isfinite(spec.bandwidth)) {
    throw std::invalid_argument("link '" + spec.name + "': bandwidth must be positive and finite");
  }
  if (!(spec.latency >= 0) || !std::isfinite(spec.latency)) {
    throw std::invalid_argument("link '" + spec.name + "': latency must be >= 0 and finite");
  }
  if (find(spec.name) != kNoLink) {
    throw std::invalid_argument("link '" + spec.name + "' is defined twice");
  }
  links_.push_back(Link{spec, 0.0, {}});
  return static_cast<LinkId>(links_.size() - 1);
}

LinkId Links::find(const std::string& name) const {
  for (std::size_t i = 0; i < links_.size(); ++i) {
    if (links_[i].spec.name == name) return static_cast<LinkId>(i);
  }
  return kNoLink;
}

Time Links::transfer(std::initializer_list<LinkId> path, double bytes, Time now) {
  Time start = now;
  double bandwidth = std::numeric_limits<double>::infinity();
  Time latency = 0.0;
  bool any = false;
  for (LinkId id : path) {
    if (id == kNoLink) continue;
    const Link& l = links_.at(id);
    any = true;
    start = std::max(start, l.free_at);
    bandwidth = std::min(bandwidth, l.spec.bandwidth);
    latency = std::max(latency, l.spec.latency);
  }
  if (!any) return now;
  const Time busy = bytes > 0 ? bytes / bandwidth : 0.0;
  for (LinkId id : path) {
    if (id == kNoLink) continue;
    Link& l = links_[id];
    l.free_at = start + busy;
    l.stats.transfers++;
    l.stats.bytes += bytes;
    l.stats.busy += busy;
    l.stats.queueing += start - now;
  }
  return start + busy + latency;
}

}  // namespace tessera
