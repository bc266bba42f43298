#pragma once

#include <map>
#include <string>

#include "core/spec_node.hpp"
#include "engine/app.hpp"
#include "engine/deployment.hpp"
#include "profile/profile_table.hpp"

namespace tessera {

// Hardware segments available: name -> how many (GPUs, MIG slices, MPS shares...).
struct Cluster {
  std::map<std::string, int> segments;
};

Cluster parse_cluster(const SpecNode& node);

// Reads a deployment and checks it against the application, the profiles (every
// variant must have a latency profile on its segment) and, if given, the cluster.
Deployment parse_deployment(const SpecNode& node, const App& app, const ProfileTable& profiles,
                            const Cluster* cluster);

}  // namespace tessera
