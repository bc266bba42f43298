#include "spec/llm_backend_spec.hpp"

#include <fmt/format.h>

#include <set>

#include "policy/llm_routing.hpp"
#include "policy/spec_choice.hpp"
#include "spec/llm_measured_spec.hpp"
#include "spec/llm_spec.hpp"
#include "spec/run_spec.hpp"

namespace tessera {
namespace {

// "http://HOST:PORT[/PREFIX]" into the backend's host, port and prefix. https is refused
// (the gateway's client speaks plain HTTP), as is anything a URL could hide: user info, a
// query, a fragment, whitespace or control characters.
void parse_url(const SpecNode& node, LlmBackendSpec& b) {
  b.url = node.as_string();
  const std::string& u = b.url;
  if (u.size() > 2048) node.fail("a URL of at most 2048 characters");
  for (const char c : u) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      node.fail("a URL without spaces or control characters");
    }
  }
  const std::string scheme = "http://";
  if (u.rfind("https://", 0) == 0) {
    node.fail(
        "https backends are not supported: give http://HOST:PORT (TLS to backends is "
        "not implemented)");
  }
  if (u.rfind(scheme, 0) != 0) node.fail("'" + u + "' is not http://HOST:PORT[/PREFIX]");
  std::string rest = u.substr(scheme.size());
  const auto slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  b.prefix = slash == std::string::npos ? "" : rest.substr(slash);
  while (!b.prefix.empty() && b.prefix.back() == '/') b.prefix.pop_back();
  if (b.prefix.find_first_of("?#") != std::string::npos) {
    node.fail("'" + u + "' has a query or fragment; give http://HOST:PORT[/PREFIX]");
  }
  if (authority.find('@') != std::string::npos) {
    node.fail("'" + u + "' carries user info; give the key with api_key_env");
  }
  std::string port = "80";
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string::npos) node.fail("'" + u + "' has an unclosed IPv6 address");
    b.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') node.fail("'" + u + "' is not http://HOST:PORT");
      port = authority.substr(close + 2);
    }
  } else {
    const auto colon = authority.find(':');
    b.host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  if (b.host.empty()) node.fail("'" + u + "' has no host");
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) < 1 ||
      std::stoi(port) > 65535) {
    node.fail("'" + u + "' has no port in 1..65535");
  }
  b.port = std::stoi(port);
}

LlmBackendSpec parse_backend(const SpecNode& node, const LlmSpec& base) {
  node.allow_only({"url", "model", "gpu", "parallel", "weights", "api_key_env", "cost_model"});
  LlmBackendSpec b;
  parse_url(node.at("url"), b);
  b.model = node.string_or("model", base.model.name);
  if (b.model.empty() || b.model.size() > 256)
    node.at("model").fail("a name of 1 to 256 characters");
  b.shape = base.model;
  b.gpu = base.gpu;
  b.parallel = base.parallel;
  if (auto g = node.get("gpu")) b.gpu = parse_llm_gpu(*g);
  if (auto p = node.get("parallel")) b.parallel = parse_llm_parallel(*p);
  if (auto w = node.get("weights")) b.shape.weight_bytes = parse_llm_weight_bytes(*w);
  if (auto k = node.get("api_key_env")) {
    b.api_key_env = k->as_string();
    if (b.api_key_env.empty() ||
        b.api_key_env.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                        "0123456789_") != std::string::npos) {
      k->fail("the name of an environment variable (letters, digits, _)");
    }
  }
  b.kv_blocks = kv_blocks_for(b.shape, b.gpu, b.parallel, base.scheduler.block_tokens);
  if (b.kv_blocks == 0) {
    node.fail(fmt::format(
        "the model's weights ({:.1f} GB) leave no room for a KV block in {} "
        "GPU(s) of {:.1f} GB",
        b.shape.weight_bytes_total() / 1e9, b.parallel.gpus(), b.gpu.memory_bytes / 1e9));
  }
  LlmSpec own = base;
  own.model = b.shape;
  own.gpu = b.gpu;
  own.parallel = b.parallel;
  b.cost = llm_cost_model(own);
  if (auto c = node.get("cost_model")) {
    c->at("kind").as_choice({"llm_measured"});
    b.sim_cost = parse_llm_measured_cost(*c);
  }
  return b;
}

}  // namespace

LlmGatewaySpec parse_llm_gateway(const SpecNode& backends, const std::optional<SpecNode>& gateway,
                                 const LlmSpec& base) {
  LlmGatewaySpec g;
  g.block_tokens = base.scheduler.block_tokens;
  const std::vector<SpecNode> items = backends.items();
  if (items.empty()) backends.fail("at least one backend");
  if (items.size() > 4096) backends.fail("at most 4096 backends");
  std::set<std::string> seen;
  for (const SpecNode& item : items) {
    item.expect_map();
    g.backends.push_back(parse_backend(item, base));
    const LlmBackendSpec& b = g.backends.back();
    if (!seen.insert(b.host + ":" + std::to_string(b.port) + b.prefix).second) {
      item.at("url").fail("'" + b.url + "' is listed twice");
    }
  }
  if (gateway) {
    const SpecNode& n = *gateway;
    n.allow_only({"routing", "connect_timeout_ms", "timeout_ms", "retries", "health_interval_ms",
                  "health_timeout_ms", "health_path", "metrics_path", "max_event_bytes",
                  "keep_alive", "affinity_blocks", "affinity_load_factor", "default_priority"});
    if (auto r = n.get("routing")) g.routing = spec_choice(*r, llm_routing_names());
    if (auto t = n.get("connect_timeout_ms")) g.connect_timeout_ms = t->as_number_in(1.0, 600000.0);
    if (auto t = n.get("timeout_ms")) g.timeout_ms = t->as_number_in(1.0, 3600000.0);
    if (auto r = n.get("retries")) g.retries = static_cast<int>(r->as_integer_in(0, 3));
    if (auto h = n.get("health_interval_ms"))
      g.health_interval_ms = h->as_number_in(0.0, 3600000.0);
    if (auto h = n.get("health_timeout_ms")) g.health_timeout_ms = h->as_number_in(1.0, 600000.0);
    for (auto [key, path] :
         {std::pair{"health_path", &g.health_path}, std::pair{"metrics_path", &g.metrics_path}}) {
      if (auto h = n.get(key)) {
        *path = h->as_string();
        if (path->empty() || path->front() != '/' || path->size() > 256 ||
            path->find_first_of(" \t\r\n?#") != std::string::npos) {
          h->fail("a path starting with / (no spaces, query or fragment)");
        }
      }
    }
    if (auto m = n.get("max_event_bytes")) g.max_event_bytes = m->as_integer_in(1024, 64 << 20);
    if (auto k = n.get("keep_alive")) g.keep_alive = k->as_bool();
    LlmRoutingConfig& rc = g.routing_config;
    if (auto a = n.get("affinity_blocks"))
      rc.affinity_blocks = static_cast<int>(a->as_integer_in(1, 64));
    if (auto a = n.get("affinity_load_factor"))
      rc.affinity_load_factor = a->as_number_in(1.0, 100.0);
    if (auto p = n.get("default_priority")) {
      g.default_priority = spec_enum<LlmPriority>(
          *p, {{"sheddable", LlmPriority::kSheddable}, {"critical", LlmPriority::kCritical}});
    }
  }
  return g;
}

LlmRouterSetup llm_router_setup(const LlmGatewaySpec& spec) {
  LlmRouterSetup setup;
  setup.config = spec.routing_config;
  for (const LlmBackendSpec& b : spec.backends) {
    // The backend's measured step costs when its spec gives them, else its deployment's
    // analytic model: the simulator runs the same (llm_fleet_sim), so both predict alike.
    const std::shared_ptr<const CostModel>& cost = b.sim_cost ? b.sim_cost : b.cost;
    setup.step_costs.push_back(cost ? sample_step_cost(*cost) : LlmStepCost{});
  }
  return setup;
}

std::optional<LlmGatewaySpec> load_llm_gateway(const RunSpec& run) {
  if (!run.llm) return std::nullopt;
  const SpecNode root = SpecNode::load_file(run.file);
  const auto llm = root.get("llm");
  if (!llm) return std::nullopt;
  const auto backends = llm->get("backends");
  if (!backends) return std::nullopt;
  return parse_llm_gateway(*backends, llm->get("gateway"), *run.llm);
}

}  // namespace tessera
