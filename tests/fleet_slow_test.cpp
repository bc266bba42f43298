// A slow backend, not a dead one (docs/serve.md#remote-backends): a worker whose model
// takes longer than the remote model's timeout_ms. The call times out once; the batch is
// re-sent to the other backend and answered exactly once, or, with no retry left, fails
// exactly once naming the timeout. The slow backend's failure is counted and it is out of
// service; its health check (a live server answers /v2/health/ready at once) then puts it
// back. HTTP and gRPC. In-process workers on loopback (fleet_support.hpp).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fleet_support.hpp"
#include "serve/fleet/remote_model.hpp"

namespace tessera {
namespace {

using fleet::remote_spec;
using fleet::Worker;
using fleet::zoo;

constexpr double kTimeoutMs = 300.0;
constexpr double kSlowMs = 1000.0;  // well past the timeout, even on a loaded machine

ModelsConfig slow_models() {
  ModelSpec m = zoo("m", "sleep", {4});
  m.latency_ms = kSlowMs;
  ModelsConfig c;
  c.models = {m};
  return c;
}

ModelsConfig fast_models() {
  ModelsConfig c;
  c.models = {zoo("m", "noop", {4})};
  return c;
}

std::string endpoint(const Worker& w, bool grpc) {
  return grpc ? "127.0.0.1:" + std::to_string(w.grpc_port) : w.url();
}

// A remote model over `endpoints` with the test's timeout and `retries` re-sends.
ModelSpec timed_remote(const std::vector<std::string>& endpoints, int retries, bool grpc) {
  ModelSpec spec = remote_spec("m", {4}, endpoints, retries);
  if (grpc) spec.remote.protocol = RemoteSpec::Protocol::kGrpc;
  spec.remote.timeout_ms = kTimeoutMs;
  spec.remote.output = {4};
  return spec;
}

class FleetSlowBackend : public ::testing::TestWithParam<bool> {};  // gRPC?

TEST_P(FleetSlowBackend, ATimedOutBatchIsReSentOnceAndTheBackendJudged) {
  const bool grpc = GetParam();
  Worker slow(slow_models()), fast(fast_models());
  slow.start(0, grpc);
  fast.start(0, grpc);
  // The slow backend first: the first call goes to it (equal load, round-robin from 0).
  RemoteModel remote(timed_remote({endpoint(slow, grpc), endpoint(fast, grpc)}, 1, grpc));

  FloatTensor in{{4}, {1, 2, 3, 4}};
  const FloatTensor* batch[] = {&in};
  const std::vector<FloatTensor> out = remote.run(batch);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data, in.data);
  auto stats = remote.backends();
  EXPECT_EQ(stats[0].requests, 1u);
  EXPECT_EQ(stats[0].failures, 1u);
  EXPECT_FALSE(stats[0].up);
  EXPECT_NE(stats[0].last_error.find("timed out after 300 ms"), std::string::npos)
      << stats[0].last_error;
  EXPECT_EQ(stats[1].requests, 1u);
  EXPECT_EQ(stats[1].redispatches, 1u);
  EXPECT_EQ(stats[1].failures, 0u);
  // Out of service, the slow backend gets nothing: the next batch goes straight to the
  // fast one.
  EXPECT_EQ(remote.run(batch).size(), 1u);
  stats = remote.backends();
  EXPECT_EQ(stats[0].requests, 1u);
  EXPECT_EQ(stats[1].requests, 2u);
  // Slow is not dead: its health check passes, and it is back in service.
  remote.check_now();
  EXPECT_TRUE(remote.backends()[0].up);
}

TEST_P(FleetSlowBackend, WithNoRetryATimedOutBatchFailsOnceNamingTheTimeout) {
  const bool grpc = GetParam();
  Worker slow(slow_models());
  slow.start(0, grpc);
  RemoteModel remote(timed_remote({endpoint(slow, grpc)}, 0, grpc));

  FloatTensor in{{4}, {1, 2, 3, 4}};
  const FloatTensor* batch[] = {&in};
  int thrown = 0;
  std::string why;
  try {
    remote.run(batch);
  } catch (const std::runtime_error& e) {
    ++thrown;
    why = e.what();
  }
  EXPECT_EQ(thrown, 1);
  EXPECT_NE(why.find("failed on 1 backend(s)"), std::string::npos) << why;
  EXPECT_NE(why.find(endpoint(slow, grpc)), std::string::npos) << why;
  EXPECT_NE(why.find("timed out after 300 ms"), std::string::npos) << why;
  const auto stats = remote.backends();
  EXPECT_EQ(stats[0].requests, 1u);
  EXPECT_EQ(stats[0].failures, 1u);
  EXPECT_FALSE(stats[0].up);
}

std::string protocol_name(const ::testing::TestParamInfo<bool>& p) {
  return p.param ? "Grpc" : "Http";
}

INSTANTIATE_TEST_SUITE_P(Protocols, FleetSlowBackend, ::testing::Values(false, true),
                         protocol_name);

}  // namespace
}  // namespace tessera
