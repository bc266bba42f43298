#include "supernet/subnet_norm.hpp"

#include <stdexcept>
#include <string>

namespace tessera::supernet {

void SubnetNorm::set(std::uint64_t subnet_id, const std::vector<at::Tensor>& mean,
                     const std::vector<at::Tensor>& var) {
  if (mean.size() != var.size())
    throw std::invalid_argument("SubnetNorm: mean/var layer counts differ");
  int64_t channels = 0;
  for (std::size_t i = 0; i < mean.size(); ++i) {
    if (mean[i].defined() != var[i].defined() ||
        (mean[i].defined() && (mean[i].dim() != 1 || !mean[i].sizes().equals(var[i].sizes())))) {
      throw std::invalid_argument("SubnetNorm: layer " + std::to_string(i) +
                                  " needs 1-D mean and var of equal size");
    }
    if (mean[i].defined()) channels += mean[i].size(0);
  }
  Entry entry;
  entry.buffer = at::empty({2, channels}, at::kFloat);
  entry.mean.resize(mean.size());
  entry.var.resize(var.size());
  int64_t offset = 0;
  for (std::size_t i = 0; i < mean.size(); ++i) {
    if (!mean[i].defined()) continue;
    const int64_t n = mean[i].size(0);
    entry.mean[i] = entry.buffer[0].narrow(0, offset, n);
    entry.var[i] = entry.buffer[1].narrow(0, offset, n);
    entry.mean[i].copy_(mean[i]);
    entry.var[i].copy_(var[i]);
    offset += n;
  }
  table_[subnet_id] = std::move(entry);
}

const SubnetNorm::Entry& SubnetNorm::lookup(std::uint64_t subnet_id) const {
  const auto it = table_.find(subnet_id);
  if (it == table_.end()) {
    throw std::out_of_range("SubnetNorm: subnet " + std::to_string(subnet_id) + " is not hosted");
  }
  return it->second;
}

std::int64_t SubnetNorm::bytes() const {
  std::int64_t total = 0;
  for (const auto& [id, entry] : table_) total += entry.buffer.numel() * 4;
  return total;
}

}  // namespace tessera::supernet
