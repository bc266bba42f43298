#pragma once

#include "engine/app.hpp"
#include "spec/spec_node.hpp"

namespace tessera {

// Reads and validates an application DAG (docs/specs.md#application).
App parse_app(const SpecNode& node);

}  // namespace tessera
