#pragma once

#include <string>
#include <vector>

namespace tessera::plan {

// Which of JigsawServe's three features a plan may use (paper §1, Fig. 3):
//   A: accuracy scaling (any variant; without it only each task's most accurate one),
//   S: spatial partitioning (any MIG size x MPS 1..4; without it whole GPUs only),
//   T: task-graph-informed budgets (end-to-end latency and slice budgets; without it the
//      static task-wise budgets of the paper's Appendix B).
struct SearchSpace {
  bool accuracy_scaling = true;
  bool spatial = true;
  bool task_graph = true;

  // "Unopt", "A", "S", "T", "A+S", "A+T", "S+T", "A+S+T".
  std::string name() const;
  bool operator==(const SearchSpace&) const = default;
};

// Parses the names above; letters in any order, case-insensitive; "JigsawServe" = A+S+T.
// Throws std::invalid_argument for anything else.
SearchSpace parse_search_space(const std::string& text);

// The eight spaces in the paper's Fig. 3 order: Unopt, T, A, A+T, S, S+T, A+S, A+S+T.
std::vector<SearchSpace> all_search_spaces();

}  // namespace tessera::plan
