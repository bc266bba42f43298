#pragma once

// Reading a policy's names from a spec when the list of names is built at run time (the
// registry's rows), with SpecNode's own error texts. Header-only helpers of the policy
// module; stateless.

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/spec_node.hpp"

namespace tessera {

// The node's string, which must be one of `names` ("'x' is not one of: a, b").
inline std::string spec_choice(const SpecNode& node, const std::vector<std::string>& names) {
  const std::string value = node.as_string();
  std::string list;
  for (const std::string& n : names) {
    if (n == value) return value;
    list += (list.empty() ? "" : ", ") + n;
  }
  node.fail("'" + printable(value) + "' is not one of: " + list);
}

// The value of the name the node holds, one of `choices` (name, value).
template <typename E>
E spec_enum(const SpecNode& node, std::initializer_list<std::pair<std::string_view, E>> choices) {
  std::vector<std::string> names;
  for (const auto& c : choices) names.emplace_back(c.first);
  const std::string name = spec_choice(node, names);
  for (const auto& c : choices) {
    if (c.first == name) return c.second;
  }
  return choices.begin()->second;  // not reached: spec_choice accepted a listed name
}

// Every key of the map `node` must be one of `allowed` (an "unknown field" error naming it).
inline void spec_allow_only(const SpecNode& node, const std::vector<std::string_view>& allowed) {
  node.expect_map();
  for (const auto& [key, value] : node.entries()) {
    bool known = false;
    for (std::string_view a : allowed) known = known || a == key;
    if (known) continue;
    std::string list;
    for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    value.fail("unknown field (expected one of: " + list + ")");
  }
}

}  // namespace tessera
