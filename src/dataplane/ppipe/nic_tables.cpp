#include "dataplane/ppipe/nic_tables.hpp"

#include <stdexcept>

namespace tessera::reservation {

uint32_t NicTables::add(const LinkParams& params) {
  if (!(params.bandwidth > 0)) throw std::invalid_argument("link bandwidth must be > 0");
  links_.emplace_back();
  params_.push_back(params);
  return static_cast<uint32_t>(links_.size() - 1);
}

uint32_t NicTables::named(const std::string& name, const LinkParams& params) {
  const auto it = by_name_.find(name);
  if (it == by_name_.end()) {
    const uint32_t id = add(params);
    by_name_.emplace(name, id);
    return id;
  }
  const LinkParams& have = params_[it->second];
  if (have.bandwidth != params.bandwidth || have.latency != params.latency) {
    throw std::invalid_argument("link '" + name +
                                "' is shared by two data planes with different bandwidth or "
                                "latency");
  }
  return it->second;
}

}  // namespace tessera::reservation
