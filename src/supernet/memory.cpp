#include "supernet/memory.hpp"

#include <malloc.h>
#include <unistd.h>

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <fstream>
#include <memory>

#include "supernet/extract.hpp"
#include "supernet/supernet.hpp"

namespace tessera::supernet {

std::int64_t resident_bytes() {
  malloc_trim(0);
  std::ifstream statm("/proc/self/statm");
  std::int64_t size = 0;
  std::int64_t resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::int64_t>(sysconf(_SC_PAGESIZE));
}

MemoryReport measure_memory(const std::vector<SubnetConfig>& subnets, int calibration_resolution,
                            int calibration_batch) {
  MemoryReport r;
  r.subnets = static_cast<int>(subnets.size());
  const at::Tensor calibration =
      at::randn({calibration_batch, 3, calibration_resolution, calibration_resolution},
                at::detail::createCPUGenerator(7), at::kFloat);
  const std::int64_t rss0 = resident_bytes();
  auto supernet = std::make_shared<Supernet>();
  for (const SubnetConfig& c : subnets) supernet->host(c, calibration);
  const std::int64_t rss1 = resident_bytes();
  std::vector<std::shared_ptr<ExtractedNet>> extracted;
  for (const SubnetConfig& c : subnets) {
    extracted.push_back(std::make_shared<ExtractedNet>(*supernet, c));
  }
  const std::int64_t rss2 = resident_bytes();
  r.supernet_weight_bytes = supernet->weight_bytes();
  r.subnet_norm_bytes = supernet->subnet_norm().bytes();
  r.supernet_rss_bytes = rss1 - rss0;
  for (const auto& net : extracted) r.extracted_bytes += net->bytes();
  r.extracted_rss_bytes = rss2 - rss1;
  for (const SubnetConfig& c : subnets) {
    const auto& entry = supernet->subnet_norm().lookup(c.id());
    r.largest_subnet_stats_bytes =
        std::max<std::int64_t>(r.largest_subnet_stats_bytes, entry.buffer.numel() * 4);
  }
  return r;
}

}  // namespace tessera::supernet
