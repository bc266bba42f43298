#include "serve/http/router.hpp"

#include <stdexcept>

namespace tessera {

std::vector<std::string> HttpRouter::segments(const std::string& path) {
  std::vector<std::string> out;
  if (path.empty() || path[0] != '/') return out;
  std::size_t p = 0;
  while (p < path.size()) {
    const std::size_t q = path.find('/', p + 1);
    out.push_back(path.substr(p + 1, q == std::string::npos ? std::string::npos : q - p - 1));
    p = q == std::string::npos ? path.size() : q;
  }
  return out;
}

void HttpRouter::add(std::string method, std::string_view pattern, Handler handler) {
  if (pattern.empty() || pattern[0] != '/') {
    throw std::invalid_argument("route pattern '" + std::string(pattern) + "' must start with /");
  }
  Route route;
  route.method = std::move(method);
  route.handler = std::move(handler);
  for (const std::string& text : segments(std::string(pattern))) {
    Segment s;
    if (text == "{}") {
      s.kind = Segment::Kind::kOne;
    } else if (text == "{...}") {
      if (route.rest >= 0) {
        throw std::invalid_argument("route pattern '" + std::string(pattern) +
                                    "' has more than one {...}");
      }
      s.kind = Segment::Kind::kRest;
      route.rest = static_cast<int>(route.segments.size());
    } else {
      s.literal = text;
    }
    route.segments.push_back(std::move(s));
  }
  routes_.push_back(std::move(route));
}

bool HttpRouter::match(const Route& route, const std::vector<std::string>& path,
                       RouteParams* params) {
  const std::size_t n = route.segments.size();
  if (route.rest < 0 ? path.size() != n : path.size() < n) return false;
  const auto rest = static_cast<std::size_t>(route.rest < 0 ? n : route.rest);
  const std::size_t tail = n - rest - (route.rest < 0 ? 0 : 1);  // segments after {...}
  // Path index of pattern segment i: before {...} the same; after it, counted from the end.
  const auto at = [&](std::size_t i) { return i < rest ? i : path.size() - (n - i); };
  for (std::size_t i = 0; i < n; ++i) {
    if (i == rest) continue;
    const Segment& s = route.segments[i];
    const std::string& p = path[at(i)];
    if (s.kind == Segment::Kind::kLiteral ? p != s.literal : p.empty()) return false;
  }
  if (params == nullptr) return true;
  params->clear();
  for (std::size_t i = 0; i < n; ++i) {
    const Segment& s = route.segments[i];
    if (s.kind == Segment::Kind::kOne) params->push_back(path[at(i)]);
    if (s.kind != Segment::Kind::kRest) continue;
    std::string joined;
    for (std::size_t k = rest; k < path.size() - tail; ++k) {
      if (k > rest) joined += '/';
      joined += path[k];
    }
    params->push_back(std::move(joined));
  }
  return true;
}

void HttpRouter::handle(HttpRequest&& request, const Responder& respond) const {
  const std::vector<std::string> path = segments(request.path);
  const auto same_pattern = [](const Route& a, const Route& b) {
    if (a.segments.size() != b.segments.size()) return false;
    for (std::size_t i = 0; i < a.segments.size(); ++i) {
      if (a.segments[i].kind != b.segments[i].kind ||
          a.segments[i].literal != b.segments[i].literal) {
        return false;
      }
    }
    return true;
  };
  for (std::size_t i = 0; i < routes_.size(); ++i) {
    if (!match(routes_[i], path, nullptr)) continue;
    // The first matching pattern decides; its route for this method answers.
    std::string allowed;
    for (std::size_t j = i; j < routes_.size(); ++j) {
      const Route& route = routes_[j];
      if (j != i && !same_pattern(route, routes_[i])) continue;
      if (route.method.empty() || route.method == request.method) {
        RouteParams params;
        match(route, path, &params);
        return route.handler(std::move(request), respond, params);
      }
      if (allowed.find(route.method) == std::string::npos) {
        allowed += (allowed.empty() ? "" : ", ") + route.method;
      }
    }
    if (wrong_method_) return wrong_method_(std::move(request), respond, allowed);
    break;
  }
  if (fallback_) return fallback_(std::move(request), respond);
  respond(HttpResponse(404, "{\"error\":\"no route\"}"));
}

}  // namespace tessera
