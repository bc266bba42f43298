#pragma once

#include <vector>

#include "supernet/supernet_config.hpp"

namespace tessera::supernet {

// A nested chain of canonical subnets from the minimum to the maximum subnet: each step raises
// one choice digit to its next value that changes the network, taking the step that adds the
// fewest MACs (ties: the lowest digit position, d before e before w). Every subnet in it
// contains the one before, so MACs, accuracy and latency all grow along it: 57 subnets.
std::vector<SubnetConfig> growth_chain();

// A deterministic set of `n` subnets spanning the MAC range, used as the pareto set:
//   n <= 57: the minimum, the maximum and chain subnets nearest to MAC targets spaced evenly
//            in log(MACs) (each picked once), sorted by MACs;
//   n > 57:  the whole chain plus pseudo-random canonical subnets (fixed seed) until there are
//            n distinct networks, sorted by MACs.
// MACs are counted at 224x224. Throws std::invalid_argument for n < 2.
std::vector<SubnetConfig> select_subnets(int n);

}  // namespace tessera::supernet
