// The gRPC serving path's own cost (docs/benchmarks.md#serving-overhead-over-grpc): tessera
// serve's GRPCInferenceService (--grpc-port) with a no-op model next to a bare gRPC echo
// server of the same service (its ModelInfer copies the request's input into the
// response, nothing else), measured in the same run with the same client.
//
//   grpc_bench [--seconds S] [--connections a,b,...]
//
// For each connection count, every client thread sends the same small ModelInfer
// (FP32 [1, 4]) back-to-back on its own channel (closed loop) for S seconds; requests per
// second and the p50 / p99 latency are reported for both servers.

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "closed_loop.hpp"
#include "inference.grpc.pb.h"
#include "noop_server.hpp"
#include "serve/server/server.hpp"

namespace {

using namespace tessera;
using bench::LoadResult;
namespace pb = inference;

// The bare server: answers ModelInfer with its input as the output, nothing else.
class EchoService final : public pb::GRPCInferenceService::Service {
  grpc::Status ModelInfer(grpc::ServerContext*, const pb::ModelInferRequest* q,
                          pb::ModelInferResponse* r) override {
    r->set_model_name(q->model_name());
    r->set_id(q->id());
    for (const auto& in : q->inputs()) {
      auto* out = r->add_outputs();
      out->set_name(in.name());
      out->set_datatype(in.datatype());
      *out->mutable_shape() = in.shape();
      *out->mutable_contents() = in.contents();
    }
    return grpc::Status::OK;
  }
};

LoadResult load(int port, const pb::ModelInferRequest& request, int connections, double seconds) {
  std::atomic<int> next_channel_id{0};
  return bench::run_closed_loop(connections, seconds, [&] {
    // One channel (one HTTP/2 connection) per client thread.
    grpc::ChannelArguments args;
    args.SetInt("grpc.channel_id", next_channel_id++);  // distinct: no shared subchannel
    std::shared_ptr<pb::GRPCInferenceService::Stub> stub =
        pb::GRPCInferenceService::NewStub(grpc::CreateCustomChannel(
            "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(), args));
    {
      grpc::ClientContext ctx;
      pb::ServerLiveResponse live;
      stub->ServerLive(&ctx, {}, &live);  // connect first
    }
    return [stub, &request] {
      grpc::ClientContext ctx;
      pb::ModelInferResponse response;
      return stub->ModelInfer(&ctx, request, &response).ok() && response.outputs_size() == 1;
    };
  });
}

}  // namespace

int main(int argc, char** argv) {
  const auto [seconds, connections] = bench::parse_load_args(argc, argv);
  spdlog::set_level(spdlog::level::warn);

  EchoService echo_service;
  grpc::ServerBuilder builder;
  int echo_port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &echo_port);
  builder.RegisterService(&echo_service);
  std::unique_ptr<grpc::Server> echo = builder.BuildAndStart();

  // tessera serve: one task, a no-op model, eager batching up to 32 (bench/noop_server.hpp).
  const bench::NoopServing noop = bench::noop_serving();
  ServeOptions options;
  options.port = 0;
  options.grpc_port = 0;
  options.max_inflight = 64;
  options.model_endpoints = false;
  Server server(noop.app, noop.deployment, noop.profiles, PolicyConfig{}, 1, noop.models, options);
  server.start();

  pb::ModelInferRequest request;
  request.set_model_name("noop");
  auto* in = request.add_inputs();
  in->set_name("input");
  in->set_datatype("FP32");
  in->add_shape(1);
  in->add_shape(4);
  for (float v : {0.1f, 0.2f, 0.3f, 0.4f}) in->mutable_contents()->add_fp32_contents(v);

  std::printf("ModelInfer FP32 [1, 4]: %zu bytes; %.1f s per point\n", request.ByteSizeLong(),
              seconds);
  // cpu / cli / cpu-bound / allocs: as in serve_bench (bench/closed_loop.hpp).
  std::printf("%-9s %-17s %9s %8s %8s %7s %8s %8s %7s %7s %9s %7s\n", "conns", "server", "rps",
              "p50 us", "p99 us", "ratio", "+p50 us", "+p99 us", "cpu us", "cli us", "cpu-bound",
              "allocs");
  for (int c : connections) {
    const LoadResult e = load(echo_port, request, c, seconds);
    std::printf("%-9d %-17s %9.0f %8.0f %8.0f %7s %8s %8s %7.1f %7.1f %9s %7.1f\n", c, "grpc echo",
                e.rps, e.p50_us, e.p99_us, "", "", "", e.server_cpu_us, e.client_cpu_us, "",
                e.server_allocs);
    const LoadResult t = load(server.grpc_port(), request, c, seconds);
    std::printf("%-9d %-17s %9.0f %8.0f %8.0f %6.0f%% %8.0f %8.0f %7.1f %7.1f %8.0f%% %7.1f\n", c,
                "tessera grpc", t.rps, t.p50_us, t.p99_us, 100.0 * t.rps / e.rps,
                t.p50_us - e.p50_us, t.p99_us - e.p99_us, t.server_cpu_us, t.client_cpu_us,
                100.0 * (e.client_cpu_us + e.server_cpu_us) / (t.client_cpu_us + t.server_cpu_us),
                t.server_allocs);
    if (e.errors + t.errors > 0) {
      std::printf("  errors: echo %llu, tessera %llu\n", static_cast<unsigned long long>(e.errors),
                  static_cast<unsigned long long>(t.errors));
    }
  }
  server.shutdown();
  echo->Shutdown();
  return 0;
}
