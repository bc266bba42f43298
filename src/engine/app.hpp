#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/time.hpp"

namespace tessera {

using TaskId = uint16_t;

// How many sub-requests a finished item derives (a detector's objects per frame).
enum class FanoutDistribution : uint8_t {
  kFixed,      // exactly round(mean) every time (mean 1 = a plain chain)
  kPoisson,    // Poisson(mean): objects per frame
  kGeometric,  // geometric on {0,1,2,...} with the given mean: heavy-tailed bursts of objects
};

struct Variant {
  std::string name;
  double accuracy = 1.0;     // in [0, 1]; a request's accuracy is the product along its path
  double fanout_mean = 1.0;  // mean number of derived sub-requests after this variant
};

struct Task {
  std::string name;
  std::vector<Variant> variants;
  FanoutDistribution fanout = FanoutDistribution::kFixed;
  std::vector<uint32_t> out_edges;  // indices into App::edges
  std::vector<uint32_t> in_edges;
  std::vector<TaskId> ancestors;  // all tasks upstream of this one (for joins)

  bool is_join() const { return in_edges.size() > 1; }
  bool is_leaf() const { return out_edges.empty(); }
  int variant_index(const std::string& variant) const;
};

// Routing along an edge. `kAll` edges receive every derived sub-request (parallel
// branches); `kShare` edges of one parent split the derived sub-requests among
// themselves by probability (conditional branches such as cars vs faces); sub-requests
// that no share edge takes are discarded (objects of other classes).
enum class EdgeMode : uint8_t { kAll, kShare };

struct Edge {
  TaskId from = 0;
  TaskId to = 0;
  EdgeMode mode = EdgeMode::kAll;
  std::vector<double> share_by_variant;  // for kShare: probability per parent variant
  Time delay = 0.0;                      // network hop from parent to child
  // Bytes each item sends along this edge (the intermediate tensor per sample at a
  // partition cut). With links in the deployment, a batch's items on this edge travel as
  // one transfer of count x bytes over the sender's uplink and the receiver's downlink.
  double bytes_per_item = 0.0;
};

// A validated application DAG. Requests enter every root task; a request is complete
// when all of its items have finished at leaves (or been discarded by routing).
struct App {
  std::string name;
  Time slo = 0.0;  // end-to-end latency SLO
  // LLM SLOs (0 = none): time to first token and mean time per output token after the
  // first. A request that reports tokens (SchedulerHost::record_tokens) and misses one of
  // them ends late.
  Time ttft_slo = 0.0;
  Time tpot_slo = 0.0;
  std::vector<Task> tasks;
  std::vector<Edge> edges;
  std::vector<TaskId> roots;
  Time ingress_delay = 0.0;  // front end to the root tasks

  int task_index(const std::string& name) const;  // -1 if absent
  bool has_joins() const;
  // Fills in_edges/out_edges, roots and ancestors; throws std::invalid_argument if the
  // graph has a cycle or no root.
  void finalize();
  // Tasks in an order where every parent precedes its children.
  std::vector<TaskId> topological_order() const;
};

}  // namespace tessera
