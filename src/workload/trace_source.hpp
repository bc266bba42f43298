#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "workload/arrival.hpp"

namespace tessera {

// Replays arrivals held in memory (a trace file already read). The arrivals must be in
// non-decreasing time order; the trace readers guarantee it.
class TraceSource final : public ArrivalSource {
 public:
  // `label` names the trace in describe(), e.g. "azure-llm 'data/traces/x.csv'".
  TraceSource(std::vector<Arrival> arrivals, std::string label);

  bool next(Arrival& out) override;
  std::string describe() const override;

  std::size_t size() const { return arrivals_.size(); }

 private:
  std::vector<Arrival> arrivals_;
  std::string label_;
  std::size_t pos_ = 0;
};

}  // namespace tessera
