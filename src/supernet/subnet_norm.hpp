#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace tessera::supernet {

// SubnetNorm (SuperServe §3.1): BatchNorm running statistics per hosted subnet, looked up by
// (subnet id, BN layer id). Only the statistics are per subnet; BN's gamma and beta stay
// shared in the supernet. Each subnet's statistics cover only its active layers and channels
// and live in one flat buffer; the per-layer tensors are views into it.
class SubnetNorm {
 public:
  struct Entry {
    at::Tensor buffer;             // [2, channels]: means, then variances
    std::vector<at::Tensor> mean;  // indexed by BN layer id; undefined for inactive layers
    std::vector<at::Tensor> var;
  };

  // Stores (replaces) the statistics of `subnet_id`. mean[i] and var[i] are 1-D and equal in
  // size, or both undefined for a layer the subnet does not use.
  void set(std::uint64_t subnet_id, const std::vector<at::Tensor>& mean,
           const std::vector<at::Tensor>& var);
  // Throws std::out_of_range when the subnet is not hosted.
  const Entry& lookup(std::uint64_t subnet_id) const;
  bool contains(std::uint64_t subnet_id) const { return table_.count(subnet_id) != 0; }
  void erase(std::uint64_t subnet_id) { table_.erase(subnet_id); }
  std::size_t size() const { return table_.size(); }
  std::int64_t bytes() const;  // statistics bytes over all hosted subnets

 private:
  std::unordered_map<std::uint64_t, Entry> table_;
};

}  // namespace tessera::supernet
