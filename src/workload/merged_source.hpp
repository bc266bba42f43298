#pragma once

#include <memory>
#include <string>
#include <vector>

#include "workload/arrival.hpp"

namespace tessera {

// The superposition of several streams, merged by time. Ties go to the earlier stream,
// so the result is deterministic. Ends when every stream has ended. Holds one pending
// arrival per stream.
class MergedSource final : public ArrivalSource {
 public:
  explicit MergedSource(std::vector<std::unique_ptr<ArrivalSource>> streams);
  bool next(Arrival& out) override;
  std::string describe() const override;

 private:
  struct Head {
    std::unique_ptr<ArrivalSource> source;
    Arrival pending;
    bool live = false;
  };
  std::vector<Head> heads_;
};

}  // namespace tessera
