#include "spec/app_spec.hpp"

#include <set>
#include <stdexcept>

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
      if (auto f = v.get("fanout")) variant.fanout_mean = f->as_non_negative();
    }
    if (!seen.insert(variant.name).second) v.fail("duplicate variant '" + variant.name + "'");
    task.variants.push_back(std::move(variant));
  }
  if (task.variants.empty()) node.at("variants").fail("a task needs at least one variant");
  return task;
}

}  // namespace

App parse_app(const SpecNode& node) {
  node.allow_only({"name", "slo_ms", "ingress_delay_ms", "tasks", "edges"});
  App app;
  app.name = node.string_or("name", "app");
  app.slo = from_ms(node.at("slo_ms").as_positive());
  if (auto d = node.get("ingress_delay_ms")) app.ingress_delay = from_ms(d->as_non_negative());

  for (const SpecNode& t : node.at("tasks").items()) {
    Task task = parse_task(t);
    if (app.task_index(task.name) >= 0) t.at("name").fail("duplicate task '" + task.name + "'");
    app.tasks.push_back(std::move(task));
  }
  if (app.tasks.empty()) node.at("tasks").fail("an application needs at least one task");
  if (app.tasks.size() > 65535) node.at("tasks").fail("too many tasks");

  std::set<std::pair<int, int>> seen_edges;
  if (auto edges = node.get("edges")) {
    for (const SpecNode& e : edges->items()) {
      e.allow_only({"from", "to", "share", "delay_ms", "bytes_per_item"});
      const int from = app.task_index(e.at("from").as_string());
      const int to = app.task_index(e.at("to").as_string());
      if (from < 0) e.at("from").fail("unknown task '" + e.at("from").as_string() + "'");
      if (to < 0) e.at("to").fail("unknown task '" + e.at("to").as_string() + "'");
      if (from == to) e.fail("an edge cannot connect a task to itself");
      if (!seen_edges.insert({from, to}).second) e.fail("duplicate edge");
      Edge edge;
      edge.from = static_cast<TaskId>(from);
      edge.to = static_cast<TaskId>(to);
      if (auto d = e.get("delay_ms")) edge.delay = from_ms(d->as_non_negative());
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
            if (vi < 0)
              value.fail("'" + variant + "' is not a variant of task '" + parent.name + "'");
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
  return app;
}

}  // namespace tessera
