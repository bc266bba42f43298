// The front end both servers share (src/serve/http): the router's patterns (literals, one
// segment, the rest of a path with slashes), the first matching pattern deciding the
// method (405 with Allow, or the server's fallback), and admission with its drain.

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "serve/http/front_end.hpp"

namespace tessera {
namespace {

HttpLimits small() {
  HttpLimits l;
  l.threads = 1;
  return l;
}

// Answers with the route's name and its captures, "name:a|b".
HttpRouter::Handler echo(const std::string& name) {
  return [name](HttpRequest&&, const Responder& respond, const RouteParams& p) {
    std::string body = name + ":";
    for (std::size_t i = 0; i < p.size(); ++i) body += (i ? "|" : "") + p[i];
    respond(HttpResponse(200, body, "text/plain"));
  };
}

TEST(HttpRouter, PatternsCapturesAndTheFirstMatchDecides) {
  FrontEnd front(
      small(), 4, [](int) {}, [](const std::string& m) { return m; });
  HttpRouter& r = front.routes();
  r.add("GET", "/v2/health/live", echo("live"));
  r.add("GET", "/v2/models/stats", echo("stats"));
  r.add("POST", "/v2/models/{}/infer", echo("infer"));
  r.add("POST", "/v2/models/{}/versions/{}/infer", echo("infer_v"));
  r.add("POST", "/m/{...}/generate", echo("generate"));
  r.add("GET", "/m/{...}", echo("meta"));
  r.add("", "/any", echo("any"));
  r.set_wrong_method([](HttpRequest&&, const Responder& respond, const std::string& allowed) {
    HttpResponse res(405, "use " + allowed, "text/plain");
    res.headers.emplace_back("Allow", allowed);
    respond(std::move(res));
  });
  r.set_fallback([](HttpRequest&& req, const Responder& respond) {
    respond(HttpResponse(404, "no route for " + req.path, "text/plain"));
  });
  EXPECT_THROW(r.add("GET", "no/slash", echo("x")), std::invalid_argument);
  EXPECT_THROW(r.add("GET", "/{...}/{...}", echo("x")), std::invalid_argument);
  const int port = front.start("127.0.0.1", 0);
  httplib::Client cli("127.0.0.1", port);
  auto body = [](const httplib::Result& res) { return res ? res->body : std::string("<none>"); };
  EXPECT_EQ(body(cli.Get("/v2/health/live")), "live:");
  EXPECT_EQ(body(cli.Get("/v2/models/stats")), "stats:");
  EXPECT_EQ(body(cli.Post("/v2/models/resnet/infer", "", "text/plain")), "infer:resnet");
  EXPECT_EQ(body(cli.Post("/v2/models/a/versions/1/infer", "", "text/plain")), "infer_v:a|1");
  // {...} takes the segments between the fixed ones, slashes and all.
  EXPECT_EQ(body(cli.Post("/m/org/model-7b/generate", "", "text/plain")), "generate:org/model-7b");
  EXPECT_EQ(body(cli.Get("/m/org/model-7b")), "meta:org/model-7b");
  EXPECT_EQ(body(cli.Delete("/any")), "any:");
  // The first matching pattern decides: GET .../generate is that route's, with its methods.
  auto wrong = cli.Get("/m/org/model/generate");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 405);
  EXPECT_EQ(wrong->get_header_value("Allow"), "POST");
  EXPECT_EQ(cli.Post("/v2/health/live", "", "text/plain")->status, 405);
  // "{}" is one non-empty segment.
  EXPECT_EQ(cli.Post("/v2/models//infer", "", "text/plain")->status, 404);
  EXPECT_EQ(body(cli.Get("/v3/nothing")), "no route for /v3/nothing");
  front.stop(1.0);
}

TEST(Admission, BoundsTheRequestsInFlightAndDrains) {
  Admission a(2);
  {
    Admission::Ticket one = a.enter();
    Admission::Ticket two = a.enter();
    EXPECT_FALSE(two.over_limit());
    Admission::Ticket three = a.enter();
    EXPECT_TRUE(three.over_limit());  // the caller refuses it (429)
    EXPECT_EQ(a.in_flight(), 3);
    three.release();
    EXPECT_EQ(a.in_flight(), 2);
    Admission::Ticket moved = std::move(two);
    EXPECT_EQ(a.in_flight(), 2);
    EXPECT_FALSE(a.drain(0.01));  // two still in flight
    EXPECT_TRUE(a.draining());
    // A drain returns as soon as the last one is answered.
    auto drained = std::async(std::launch::async, [&a] { return a.drain(30.0); });
    one.release();
    moved.release();
    EXPECT_TRUE(drained.get());
  }
  EXPECT_EQ(a.in_flight(), 0);
  Admission b(4);
  auto seen = std::async(std::launch::async, [&b] { return b.wait_until_in_flight(2, 30.0); });
  Admission::Ticket both = b.enter(2);
  EXPECT_TRUE(seen.get());
  EXPECT_EQ(both.count(), 2);
}

}  // namespace
}  // namespace tessera
