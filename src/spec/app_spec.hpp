#pragma once

#include "core/spec_node.hpp"
#include "engine/app.hpp"

namespace tessera {

// Reads and validates an application DAG (docs/specs.md#application).
App parse_app(const SpecNode& node);

}  // namespace tessera
