#pragma once

// HttpRouter: the routes of one server (the KServe routes of an app, the OpenAI and KServe
// generate routes of an LLM): a method and a path pattern per handler, matched in the
// order they were added; the first match answers.
//
// A pattern is "/"-separated segments: a literal; "{}", one non-empty segment, captured;
// or "{...}", one or more segments, captured joined by "/" (at most one per pattern; the
// segments after it are matched from the end of the path, so "/v2/models/{...}/generate"
// takes a model name with slashes). Captures reach the handler in pattern order.
//
// The first pattern (in the order added) that matches the path decides: the route of that
// pattern for the request's method answers; if it has none for this method, the
// wrong-method handler answers with the methods it has ("GET, POST"), or the fallback if
// no wrong-method handler is set. A path no pattern matches goes to the fallback.
//
// Routes are added before the server starts; handle() is then called from any thread.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/http/http_frontend.hpp"

namespace tessera {

using RouteParams = std::vector<std::string>;

class HttpRouter {
 public:
  using Handler =
      std::function<void(HttpRequest&& request, const Responder& respond, const RouteParams&)>;
  using Fallback = std::function<void(HttpRequest&& request, const Responder& respond)>;
  using WrongMethod = std::function<void(HttpRequest&& request, const Responder& respond,
                                         const std::string& allowed)>;

  // `method`: "GET", "POST", ..., or "" for any method. std::invalid_argument on a pattern
  // that does not start with "/" or has two "{...}".
  void add(std::string method, std::string_view pattern, Handler handler);
  void set_fallback(Fallback fallback) { fallback_ = std::move(fallback); }
  void set_wrong_method(WrongMethod wrong_method) { wrong_method_ = std::move(wrong_method); }

  void handle(HttpRequest&& request, const Responder& respond) const;

  // "/a/b/c" -> {"a", "b", "c"}; "" (no leading "/") -> {}.
  static std::vector<std::string> segments(const std::string& path);

 private:
  struct Segment {
    enum class Kind : uint8_t { kLiteral, kOne, kRest } kind = Kind::kLiteral;
    std::string literal;
  };
  struct Route {
    std::string method;
    std::vector<Segment> segments;
    int rest = -1;  // the index of the "{...}" segment, or -1
    Handler handler;
  };
  static bool match(const Route& route, const std::vector<std::string>& path, RouteParams* params);

  std::vector<Route> routes_;
  Fallback fallback_;
  WrongMethod wrong_method_;
};

}  // namespace tessera
