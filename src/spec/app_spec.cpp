#include "spec/app_spec.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

namespace tessera {
namespace {

FanoutDistribution parse_fanout_kind(const SpecNode& node) {
  const std::string kind = node.as_choice({"fixed", "poisson", "geometric"});
  if (kind == "poisson") return FanoutDistribution::kPoisson;
  if (kind == "geometric") return FanoutDistribution::kGeometric;
  return FanoutDistribution::kFixed;
}

Task parse_task(const SpecNode& node) {
  node.allow_only({"name", "variants", "fanout"});
  Task task;
  task.name = node.at("name").as_string();
  if (task.name.empty()) node.at("name").fail("must not be empty");
  if (auto f = node.get("fanout")) task.fanout = parse_fanout_kind(*f);
  std::set<std::string> seen;
  for (const SpecNode& v : node.at("variants").items()) {
    Variant variant;
    if (v.is_scalar()) {
      variant.name = v.as_string();
    } else {
      v.allow_only({"name", "accuracy", "fanout"});
      variant.name = v.at("name").as_string();
      if (auto a = v.get("accuracy")) variant.accuracy = a->as_number_in(0.0, 1.0);
      if (auto f = v.get("fanout"))
        variant.fanout_mean = f->as_non_negative(limits::kMaxFanoutMean);
    }
    if (!seen.insert(variant.name).second) {
      v.fail("duplicate variant '" + printable(variant.name) + "'");
    }
    task.variants.push_back(std::move(variant));
  }
  if (task.variants.empty()) node.at("variants").fail("a task needs at least one variant");
  return task;
}

}  // namespace

double expected_items_per_request(const App& app) {
  double total = 0;
  for (const double items : expected_items_by_task(app)) total += items;
  return total;
}

std::vector<double> expected_items_by_task(const App& app) {
  std::vector<double> at(app.tasks.size(), 0.0);
  for (TaskId t : app.topological_order()) {
    const Task& task = app.tasks[t];
    if (task.in_edges.empty()) {
      at[t] = 1.0;
    } else if (task.in_edges.size() > 1) {
      at[t] = std::min(at[t], 1.0);
    }
    for (uint32_t ei : task.out_edges) {
      const Edge& e = app.edges[ei];
      double most = 0;
      for (std::size_t v = 0; v < task.variants.size(); ++v) {
        const double share = e.mode == EdgeMode::kShare ? e.share_by_variant[v] : 1.0;
        most = std::max(most, task.variants[v].fanout_mean * share);
      }
      at[e.to] += at[t] * most;
    }
  }
  return at;
}

App parse_app(const SpecNode& node) {
  node.allow_only(
      {"name", "slo_ms", "ingress_delay_ms", "tasks", "edges", "ttft_slo_ms", "tpot_slo_ms"});
  App app;
  app.name = node.string_or("name", "app");
  app.slo = from_ms(node.at("slo_ms").as_positive(limits::kMaxMs));
  // LLM SLOs (docs/llm.md#slos): checked for requests an LLM instance serves.
  if (auto t = node.get("ttft_slo_ms")) app.ttft_slo = from_ms(t->as_positive(limits::kMaxMs));
  if (auto t = node.get("tpot_slo_ms")) app.tpot_slo = from_ms(t->as_positive(limits::kMaxMs));
  if (auto d = node.get("ingress_delay_ms")) app.ingress_delay = from_ms(d->as_ms());

  const std::vector<SpecNode> task_nodes = node.at("tasks").items();
  if (task_nodes.size() > limits::kMaxTasks) {
    node.at("tasks").fail("too many tasks: " + std::to_string(task_nodes.size()) + " (at most " +
                          std::to_string(limits::kMaxTasks) + ")");
  }
  std::map<std::string, int> index;
  for (const SpecNode& t : task_nodes) {
    Task task = parse_task(t);
    if (!index.emplace(task.name, static_cast<int>(app.tasks.size())).second) {
      t.at("name").fail("duplicate task '" + printable(task.name) + "'");
    }
    app.tasks.push_back(std::move(task));
  }
  if (app.tasks.empty()) node.at("tasks").fail("an application needs at least one task");
  auto task_index = [&index](const std::string& name) {
    auto it = index.find(name);
    return it == index.end() ? -1 : it->second;
  };

  std::set<std::pair<int, int>> seen_edges;
  if (auto edges = node.get("edges")) {
    for (const SpecNode& e : edges->items()) {
      e.allow_only({"from", "to", "share", "delay_ms", "bytes_per_item"});
      const int from = task_index(e.at("from").as_string());
      const int to = task_index(e.at("to").as_string());
      if (from < 0) e.at("from").fail("unknown task '" + printable(e.at("from").as_string()) + "'");
      if (to < 0) e.at("to").fail("unknown task '" + printable(e.at("to").as_string()) + "'");
      if (from == to) e.fail("an edge cannot connect a task to itself");
      if (!seen_edges.insert({from, to}).second) e.fail("duplicate edge");
      Edge edge;
      edge.from = static_cast<TaskId>(from);
      edge.to = static_cast<TaskId>(to);
      if (auto d = e.get("delay_ms")) edge.delay = from_ms(d->as_ms());
      if (auto b = e.get("bytes_per_item")) edge.bytes_per_item = b->as_number_in(0.0, 1e12);
      const Task& parent = app.tasks[static_cast<std::size_t>(from)];
      if (auto s = e.get("share")) {
        edge.mode = EdgeMode::kShare;
        if (s->is_scalar()) {
          edge.share_by_variant.assign(parent.variants.size(), s->as_number_in(0.0, 1.0));
        } else {
          edge.share_by_variant.assign(parent.variants.size(), -1.0);
          for (const auto& [variant, value] : s->entries()) {
            const int vi = parent.variant_index(variant);
            if (vi < 0) {
              value.fail("'" + printable(variant) + "' is not a variant of task '" +
                         printable(parent.name) + "'");
            }
            edge.share_by_variant[static_cast<std::size_t>(vi)] = value.as_number_in(0.0, 1.0);
          }
          for (std::size_t i = 0; i < parent.variants.size(); ++i) {
            if (edge.share_by_variant[i] < 0) {
              s->fail("no share given for variant '" + parent.variants[i].name + "'");
            }
          }
        }
      }
      app.edges.push_back(std::move(edge));
    }
  }
  try {
    app.finalize();
  } catch (const std::invalid_argument& err) {
    (node.has("edges") ? node.at("edges") : node).fail(err.what());
  }
  // Conditional shares of one parent split its sub-requests: they may not exceed 1.
  for (const Task& task : app.tasks) {
    for (std::size_t v = 0; v < task.variants.size(); ++v) {
      double total = 0.0;
      for (uint32_t ei : task.out_edges) {
        if (app.edges[ei].mode == EdgeMode::kShare) total += app.edges[ei].share_by_variant[v];
      }
      if (total > 1.0 + 1e-6) {
        node.at("edges").fail("the shares of the edges out of task '" + task.name + "' add up to " +
                              std::to_string(total) + " for variant '" + task.variants[v].name +
                              "' (at most 1)");
      }
    }
  }
  const double items = expected_items_per_request(app);
  if (!(items <= limits::kMaxItemsPerRequest)) {
    std::ostringstream text;
    text.precision(3);
    text << "one request would make about " << items << " items across the tasks (at most "
         << limits::kMaxItemsPerRequest << "): lower the fan-outs or shares";
    (node.has("edges") ? node.at("edges") : node.at("tasks")).fail(text.str());
  }
  return app;
}

}  // namespace tessera
