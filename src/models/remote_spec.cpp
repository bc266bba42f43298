#include "models/remote_spec.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>

namespace tessera {

RemoteAddress parse_remote_address(const std::string& endpoint, RemoteSpec::Protocol protocol) {
  std::string rest = endpoint;
  const std::string scheme = protocol == RemoteSpec::Protocol::kHttp ? "http://" : "grpc://";
  if (rest.rfind(scheme, 0) == 0) {
    rest = rest.substr(scheme.size());
  } else if (rest.find("://") != std::string::npos) {
    throw std::invalid_argument("endpoint '" + endpoint + "': expected " + scheme +
                                "HOST:PORT (https is not supported)");
  }
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) {
    throw std::invalid_argument("endpoint '" + endpoint + "': expected HOST:PORT");
  }
  RemoteAddress a;
  a.host = rest.substr(0, colon);
  const std::string port = rest.substr(colon + 1);
  const auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), a.port);
  if (ec != std::errc{} || p != port.data() + port.size() || a.port < 1 || a.port > 65535) {
    throw std::invalid_argument("endpoint '" + endpoint + "': port must be in [1, 65535]");
  }
  if (a.host.find_first_of("/?#@ ") != std::string::npos) {
    throw std::invalid_argument("endpoint '" + endpoint + "': a host may not hold a path");
  }
  return a;
}

RemoteSpec parse_remote_spec(const SpecNode& node) {
  node.expect_map();
  node.allow_only({"endpoints", "protocol", "model", "input_name", "output_name", "output",
                   "timeout_ms", "retries", "health_interval_ms", "health_timeout_ms", "pool",
                   "max_reply_bytes", "binary", "api_key_file", "api_key_env"});
  RemoteSpec spec;
  if (auto p = node.get("protocol")) {
    spec.protocol = p->as_choice({"http", "grpc"}) == "grpc" ? RemoteSpec::Protocol::kGrpc
                                                             : RemoteSpec::Protocol::kHttp;
  }
  const SpecNode list = node.at("endpoints");
  for (const SpecNode& e : list.items()) {
    std::string url = e.as_string();
    try {
      parse_remote_address(url, spec.protocol);
    } catch (const std::invalid_argument& err) {
      e.fail(err.what());
    }
    for (const std::string& seen : spec.endpoints) {
      if (seen == url) e.fail("endpoint '" + url + "' is listed twice");
    }
    spec.endpoints.push_back(std::move(url));
  }
  if (spec.endpoints.empty()) list.fail("needs at least one endpoint");
  if (spec.endpoints.size() > 256) list.fail("at most 256 endpoints");
  if (auto m = node.get("model")) {
    spec.model = m->as_string();
    if (spec.model.empty() || spec.model.find_first_of("/?#% ") != std::string::npos) {
      m->fail("must be a non-empty model name without '/', '?', '#', '%' or spaces");
    }
  }
  if (auto i = node.get("input_name")) {
    spec.input_name = i->as_string();
    if (spec.input_name.empty()) i->fail("must not be empty");
  }
  if (auto o = node.get("output_name")) spec.output_name = o->as_string();
  if (auto o = node.get("output")) {
    for (const SpecNode& d : o->items()) spec.output.push_back(d.as_integer_in(1, 1 << 20));
    if (spec.output.empty()) o->fail("shape must have at least one dimension");
  }
  if (auto t = node.get("timeout_ms")) spec.timeout_ms = t->as_number_in(1.0, 3600e3);
  if (auto r = node.get("retries")) spec.retries = static_cast<int>(r->as_integer_in(0, 16));
  if (auto h = node.get("health_interval_ms"))
    spec.health_interval_ms = h->as_number_in(0.0, 3600e3);
  if (auto h = node.get("health_timeout_ms")) spec.health_timeout_ms = h->as_number_in(1.0, 600e3);
  if (auto p = node.get("pool")) spec.pool = static_cast<int>(p->as_integer_in(0, 1024));
  if (auto m = node.get("max_reply_bytes")) spec.max_reply_bytes = m->as_integer_in(1024, 1 << 30);
  if (auto b = node.get("binary")) spec.binary = b->as_bool();
  if (auto k = node.get("api_key_file")) spec.api_key_file = k->as_string();
  if (auto k = node.get("api_key_env")) {
    spec.api_key_env = k->as_string();
    const bool name = !spec.api_key_env.empty() &&
                      std::all_of(spec.api_key_env.begin(), spec.api_key_env.end(), [](char c) {
                        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
                      });
    if (!name) {
      k->fail("'" + spec.api_key_env +
              "' is not an environment variable's name (letters, digits, _); the key itself "
              "belongs in that variable or in api_key_file");
    }
  }
  if (!spec.api_key_file.empty() && !spec.api_key_env.empty()) {
    node.fail("give api_key_file or api_key_env, not both");
  }
  return spec;
}

}  // namespace tessera
