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

#include "inference.grpc.pb.h"
#include "server/server.hpp"

namespace {

using namespace tessera;
using Clock = std::chrono::steady_clock;
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

struct Result {
  double rps = 0.0;
  double p50_us = 0.0;
  double p99_us = 0.0;
  uint64_t errors = 0;
};

Result load(int port, const pb::ModelInferRequest& request, int connections, double seconds) {
  std::atomic<bool> go{false};
  std::atomic<bool> stop{false};
  std::vector<std::vector<double>> lat(static_cast<std::size_t>(connections));
  std::vector<uint64_t> errors(static_cast<std::size_t>(connections), 0);
  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back([&, c] {
      // One channel (one HTTP/2 connection) per client thread.
      grpc::ChannelArguments args;
      args.SetInt("grpc.channel_id", c);  // distinct arguments: no shared subchannel
      auto stub = pb::GRPCInferenceService::NewStub(grpc::CreateCustomChannel(
          "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(), args));
      {
        grpc::ClientContext ctx;
        pb::ServerLiveResponse live;
        stub->ServerLive(&ctx, {}, &live);  // connect first
      }
      while (!go.load()) std::this_thread::yield();
      auto& mine = lat[static_cast<std::size_t>(c)];
      while (!stop.load()) {
        grpc::ClientContext ctx;
        pb::ModelInferResponse response;
        const auto t0 = Clock::now();
        const grpc::Status st = stub->ModelInfer(&ctx, request, &response);
        const auto t1 = Clock::now();
        if (!st.ok() || response.outputs_size() != 1) {
          ++errors[static_cast<std::size_t>(c)];
          continue;
        }
        mine.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      }
    });
  }
  const auto start = Clock::now();
  go = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  Result r;
  for (std::size_t c = 0; c < lat.size(); ++c) {
    all.insert(all.end(), lat[c].begin(), lat[c].end());
    r.errors += errors[c];
  }
  std::sort(all.begin(), all.end());
  r.rps = static_cast<double>(all.size()) / wall;
  if (!all.empty()) {
    r.p50_us = all[all.size() / 2];
    r.p99_us = all[std::min(all.size() - 1, all.size() * 99 / 100)];
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 5.0;
  std::vector<int> connections{1, 8, 32};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::stod(argv[i + 1]);
    if (std::strcmp(argv[i], "--connections") == 0) {
      connections.clear();
      std::string list = argv[i + 1];
      for (std::size_t p = 0; p < list.size();) {
        const std::size_t q = list.find(',', p);
        connections.push_back(std::stoi(list.substr(p, q - p)));
        p = q == std::string::npos ? list.size() : q + 1;
      }
    }
  }
  spdlog::set_level(spdlog::level::warn);

  EchoService echo_service;
  grpc::ServerBuilder builder;
  int echo_port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &echo_port);
  builder.RegisterService(&echo_service);
  std::unique_ptr<grpc::Server> echo = builder.BuildAndStart();

  // tessera serve: one task, a no-op model, eager batching up to 32 (as serve_bench).
  App app;
  app.name = "noop";
  app.slo = 1.0;
  Task task;
  task.name = "noop";
  task.variants.push_back(Variant{"noop", 1.0, 1.0});
  app.tasks.push_back(task);
  app.finalize();
  Deployment deployment;
  deployment.groups.push_back(WorkerGroup{0, {0}, "cpu", 32, 1});
  ProfileTable profiles;
  for (int b = 1; b <= 32; ++b) profiles.add("noop", "cpu", b, 0.01);
  ModelsConfig models;
  ModelSpec noop;
  noop.variant = "noop";
  noop.arch = "noop";
  noop.input_shape = {4};
  models.models.push_back(noop);
  ServeOptions options;
  options.port = 0;
  options.grpc_port = 0;
  options.max_inflight = 64;
  options.model_endpoints = false;
  Server server(app, deployment, profiles, PolicyConfig{}, 1, models, options);
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
  std::printf("%-9s %-17s %9s %8s %8s %7s %8s %8s\n", "conns", "server", "rps", "p50 us", "p99 us",
              "ratio", "+p50 us", "+p99 us");
  for (int c : connections) {
    const Result e = load(echo_port, request, c, seconds);
    std::printf("%-9d %-17s %9.0f %8.0f %8.0f\n", c, "grpc echo", e.rps, e.p50_us, e.p99_us);
    const Result t = load(server.grpc_port(), request, c, seconds);
    std::printf("%-9d %-17s %9.0f %8.0f %8.0f %6.0f%% %8.0f %8.0f\n", c, "tessera grpc", t.rps,
                t.p50_us, t.p99_us, 100.0 * t.rps / e.rps, t.p50_us - e.p50_us,
                t.p99_us - e.p99_us);
    if (e.errors + t.errors > 0) {
      std::printf("  errors: echo %llu, tessera %llu\n", static_cast<unsigned long long>(e.errors),
                  static_cast<unsigned long long>(t.errors));
    }
  }
  server.shutdown();
  echo->Shutdown();
  return 0;
}
