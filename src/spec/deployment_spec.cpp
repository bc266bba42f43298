#include "spec/deployment_spec.hpp"

namespace tessera {

Cluster parse_cluster(const SpecNode& node) {
  node.allow_only({"name", "segments"});
  Cluster cluster;
  for (const SpecNode& s : node.at("segments").items()) {
    s.allow_only({"name", "count", "gpu", "cost"});
    const std::string name = s.at("name").as_string();
    const auto count = s.at("count").as_integer_in(0, limits::kMaxSegmentCount);
    if (!cluster.segments.emplace(name, static_cast<int>(count)).second) {
      s.at("name").fail("duplicate segment '" + printable(name) + "'");
    }
  }
  return cluster;
}

Deployment parse_deployment(const SpecNode& node, const App& app, const ProfileTable& profiles,
                            const Cluster* cluster) {
  node.allow_only({"workers", "links"});
  Deployment deployment;
  if (auto links = node.get("links")) {
    for (const SpecNode& l : links->items()) {
      l.allow_only({"name", "bandwidth_gbps", "latency_ms"});
      LinkSpec link;
      link.name = l.at("name").as_string();
      for (const LinkSpec& other : deployment.links) {
        if (other.name == link.name) l.at("name").fail("duplicate link '" + link.name + "'");
      }
      // Gbit/s to bytes/s; 1 Mbit/s .. 100 Tbit/s.
      link.bandwidth = l.at("bandwidth_gbps").as_number_in(1e-3, 1e5) * 1e9 / 8.0;
      if (auto lat = l.get("latency_ms")) link.latency = from_ms(lat->as_number_in(0.0, 1e4));
      deployment.links.push_back(std::move(link));
    }
  }
  auto link_name = [&](const SpecNode& n) {
    const std::string name = n.as_string();
    for (const LinkSpec& l : deployment.links) {
      if (l.name == name) return name;
    }
    n.fail("no link named '" + name + "' in the deployment's links");
    return name;
  };
  // Counts are bounded per group and in total, so these sums cannot wrap.
  std::map<std::string, int64_t> used;
  int64_t total = 0;
  for (const SpecNode& w : node.at("workers").items()) {
    w.allow_only({"task", "variant", "variants", "segment", "max_batch", "count",
                  "batch_timeout_ms", "uplink", "downlink"});
    WorkerGroup group;
    const int task = app.task_index(w.at("task").as_string());
    if (task < 0) w.at("task").fail("unknown task '" + printable(w.at("task").as_string()) + "'");
    group.task = static_cast<TaskId>(task);
    const Task& t = app.tasks[group.task];
    group.segment = w.at("segment").as_string();
    group.max_batch = static_cast<int>(w.integer_in_or("max_batch", 1, limits::kMaxBatch, 1));
    group.count = static_cast<int>(w.integer_in_or("count", 0, limits::kMaxWorkersPerGroup, 1));
    total += group.count;
    if (total > limits::kMaxWorkers) {
      w.at("count").fail("the deployment would have more than " +
                         std::to_string(limits::kMaxWorkers) + " workers");
    }
    if (auto timeout = w.get("batch_timeout_ms")) group.batch_timeout = from_ms(timeout->as_ms());
    if (auto up = w.get("uplink")) group.uplink = link_name(*up);
    if (auto down = w.get("downlink")) group.downlink = link_name(*down);

    std::vector<SpecNode> names;
    if (w.has("variant") && w.has("variants")) w.fail("give either 'variant' or 'variants'");
    if (auto v = w.get("variant")) names.push_back(*v);
    if (auto vs = w.get("variants")) names = vs->items();
    if (names.empty()) w.fail("required field 'variant' is missing");
    for (const SpecNode& n : names) {
      const int vi = t.variant_index(n.as_string());
      if (vi < 0) {
        n.fail("'" + printable(n.as_string()) + "' is not a variant of task '" + printable(t.name) +
               "'");
      }
      if (!profiles.has(n.as_string(), group.segment)) {
        n.fail("no latency profile for variant '" + printable(n.as_string()) + "' on segment '" +
               printable(group.segment) + "'");
      }
      group.variants.push_back(vi);
    }
    if (cluster != nullptr && !cluster->segments.count(group.segment)) {
      w.at("segment").fail("segment '" + printable(group.segment) + "' is not in the cluster");
    }
    used[group.segment] += group.count;
    deployment.groups.push_back(std::move(group));
  }
  if (cluster != nullptr) {
    for (const auto& [segment, count] : used) {
      const int available = cluster->segments.at(segment);
      if (count > available) {
        node.at("workers").fail("needs " + std::to_string(count) + " of segment '" +
                                printable(segment) + "' but the cluster has " +
                                std::to_string(available));
      }
    }
  }
  for (std::size_t t = 0; t < app.tasks.size(); ++t) {
    if (deployment.workers_of(static_cast<TaskId>(t)) == 0) {
      node.at("workers").fail("task '" + printable(app.tasks[t].name) + "' has no workers");
    }
  }
  return deployment;
}

}  // namespace tessera
