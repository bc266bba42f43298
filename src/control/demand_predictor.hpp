#pragma once

#include <cstddef>
#include <deque>

namespace tessera::control {

// JigsawServe's demand prediction (§3.5): the mean demand of the last `history` bins.
// The planner adds its slack on top.
class DemandPredictor {
 public:
  explicit DemandPredictor(int history);

  void observe(double rate_rps);
  bool empty() const { return recent_.empty(); }
  // The mean of the bins seen so far (up to `history` of them); 0 before the first.
  double predict() const;

 private:
  std::size_t history_;
  std::deque<double> recent_;
};

}  // namespace tessera::control
