#include "plan/jigsawserve/search_space.hpp"

#include <cctype>
#include <stdexcept>

namespace tessera::plan {

std::string SearchSpace::name() const {
  std::string out;
  auto add = [&out](bool on, const char* letter) {
    if (!on) return;
    if (!out.empty()) out += "+";
    out += letter;
  };
  add(accuracy_scaling, "A");
  add(spatial, "S");
  add(task_graph, "T");
  return out.empty() ? "Unopt" : out;
}

SearchSpace parse_search_space(const std::string& text) {
  std::string t;
  for (char c : text) t += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (t == "UNOPT") return SearchSpace{false, false, false};
  if (t == "JIGSAWSERVE") return SearchSpace{};
  SearchSpace s{false, false, false};
  bool expect_letter = true;
  for (char c : t) {
    if (c == '+' && !expect_letter) {
      expect_letter = true;
      continue;
    }
    bool* flag = c == 'A'   ? &s.accuracy_scaling
                 : c == 'S' ? &s.spatial
                 : c == 'T' ? &s.task_graph
                            : nullptr;
    if (!expect_letter || flag == nullptr || *flag) {
      throw std::invalid_argument("unknown search space '" + text +
                                  "' (expected Unopt, A, S, T, A+S, A+T, S+T or A+S+T)");
    }
    *flag = true;
    expect_letter = false;
  }
  if (expect_letter) {
    throw std::invalid_argument("unknown search space '" + text +
                                "' (expected Unopt, A, S, T, A+S, A+T, S+T or A+S+T)");
  }
  return s;
}

std::vector<SearchSpace> all_search_spaces() {
  return {
      {false, false, false}, {false, false, true}, {true, false, false}, {true, false, true},
      {false, true, false},  {false, true, true},  {true, true, false},  {true, true, true},
  };
}

}  // namespace tessera::plan
