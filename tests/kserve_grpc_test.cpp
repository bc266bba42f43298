// The Open Inference Protocol v2 over gRPC (GRPCInferenceService, --grpc-port) with an
// in-process gRPC client against a live server on loopback: health, metadata, inference
// (typed and raw contents, batched), the same errors and limits as HTTP, the repository
// and statistics RPCs.

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstring>
#include <future>

#include "inference.grpc.pb.h"
#include "serve/server/server.hpp"
#include "test_support.hpp"

namespace tessera {
namespace {

using testing::add_affine;
using testing::make_task;
namespace pb = inference;

// One task "echo" (noop on 4 values), served over HTTP and gRPC on free ports.
struct EchoServer {
  App app;
  Deployment deployment;
  ProfileTable profiles;
  PolicyConfig policies;
  ModelsConfig models;
  ServeOptions options;
  std::unique_ptr<Server> server;
  std::unique_ptr<pb::GRPCInferenceService::Stub> stub;

  explicit EchoServer(std::size_t max_message = 16u << 20, double latency_ms = 0.0,
                      AccessConfig access = {}) {
    options.access = std::move(access);
    options.port = 0;
    options.grpc_port = 0;
    options.max_inflight = 16;
    options.max_body_bytes = max_message;
    options.drain_timeout_s = 5.0;
    app.name = "echo";
    app.slo = 5.0;
    app.tasks = {make_task("echo")};
    app.finalize();
    ModelSpec m;
    m.variant = "echo";
    m.arch = latency_ms > 0 ? "sleep" : "noop";
    m.latency_ms = latency_ms;
    m.input_shape = {4};
    models.models = {m};
    deployment.groups.push_back(WorkerGroup{0, {0}, "cpu", 4, 1});
    add_affine(profiles, "echo", 1.0, 0.1, 4, "cpu");
    options.model_endpoints = false;
    server = std::make_unique<Server>(app, deployment, profiles, policies, 1, models, options);
    server->start();
    stub = pb::GRPCInferenceService::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(server->grpc_port()), grpc::InsecureChannelCredentials()));
  }
  ~EchoServer() { server->shutdown(); }
};

pb::ModelInferRequest fp32_request(int rows) {
  pb::ModelInferRequest q;
  q.set_model_name("echo");
  q.set_id("g1");
  auto* in = q.add_inputs();
  in->set_name("input");
  in->set_datatype("FP32");
  in->add_shape(rows);
  in->add_shape(4);
  for (int i = 0; i < rows * 4; ++i)
    in->mutable_contents()->add_fp32_contents(0.5f * static_cast<float>(i));
  return q;
}

TEST(KServeGrpc, HealthAndMetadata) {
  EchoServer es;
  ASSERT_GT(es.server->grpc_port(), 0);
  grpc::ClientContext c1, c2, c3, c4;
  pb::ServerLiveResponse live;
  ASSERT_TRUE(es.stub->ServerLive(&c1, {}, &live).ok());
  EXPECT_TRUE(live.live());
  pb::ServerMetadataResponse meta;
  ASSERT_TRUE(es.stub->ServerMetadata(&c2, {}, &meta).ok());
  EXPECT_EQ(meta.name(), "tessera");
  EXPECT_EQ(meta.extensions_size(), 4);
  pb::ModelMetadataRequest mq;
  mq.set_name("echo");
  pb::ModelMetadataResponse mm;
  ASSERT_TRUE(es.stub->ModelMetadata(&c3, mq, &mm).ok());
  ASSERT_EQ(mm.inputs_size(), 1);
  EXPECT_EQ(mm.inputs(0).datatype(), "FP32");
  EXPECT_EQ(std::vector<int64_t>(mm.inputs(0).shape().begin(), mm.inputs(0).shape().end()),
            (std::vector<int64_t>{-1, 4}));
  mq.set_name("nope");
  const grpc::Status st = es.stub->ModelMetadata(&c4, mq, &mm);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(st.error_message(), "unknown model 'nope'");
}

TEST(KServeGrpc, InferTypedAndRawContents) {
  EchoServer es;
  {
    grpc::ClientContext ctx;
    pb::ModelInferResponse r;
    const grpc::Status st = es.stub->ModelInfer(&ctx, fp32_request(3), &r);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(r.model_name(), "echo");
    EXPECT_EQ(r.id(), "g1");
    ASSERT_EQ(r.outputs_size(), 1);
    EXPECT_EQ(std::vector<int64_t>(r.outputs(0).shape().begin(), r.outputs(0).shape().end()),
              (std::vector<int64_t>{3, 4}));
    const auto& data = r.outputs(0).contents().fp32_contents();
    ASSERT_EQ(data.size(), 12);
    EXPECT_EQ(data[5], 2.5f);
    EXPECT_EQ(r.parameters().at("outcome").string_param(), "ok");
  }
  {  // INT32 raw contents in, raw FP32 out.
    pb::ModelInferRequest q;
    q.set_model_name("echo");
    auto* in = q.add_inputs();
    in->set_name("input");
    in->set_datatype("INT32");
    in->add_shape(1);
    in->add_shape(4);
    const int32_t v[4] = {7, -1, 3, 9};
    q.add_raw_input_contents(std::string(reinterpret_cast<const char*>(v), sizeof v));
    grpc::ClientContext ctx;
    pb::ModelInferResponse r;
    const grpc::Status st = es.stub->ModelInfer(&ctx, q, &r);
    ASSERT_TRUE(st.ok()) << st.error_message();
    ASSERT_EQ(r.raw_output_contents_size(), 1);
    ASSERT_EQ(r.raw_output_contents(0).size(), 16u);
    float out[4];
    std::memcpy(out, r.raw_output_contents(0).data(), 16);
    EXPECT_EQ(out[0], 7.0f);
    EXPECT_EQ(out[1], -1.0f);
    // A raw part one byte short: the same clear error as HTTP's truncated binary data.
    q.mutable_raw_input_contents(0)->pop_back();
    grpc::ClientContext ctx2;
    const grpc::Status bad = es.stub->ModelInfer(&ctx2, q, &r);
    EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(bad.error_message().find("binary_data_size 15 does not match shape [1, 4] of INT32"),
              std::string::npos)
        << bad.error_message();
  }
  {  // A huge shape is refused before anything is allocated.
    pb::ModelInferRequest q = fp32_request(1);
    auto* in = q.mutable_inputs(0);
    in->clear_shape();
    in->add_shape(int64_t{1} << 40);
    in->add_shape(4);
    grpc::ClientContext ctx;
    pb::ModelInferResponse r;
    const grpc::Status st = es.stub->ModelInfer(&ctx, q, &r);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(st.error_message().find("holds more than 64 elements"), std::string::npos)
        << st.error_message();
  }
  {  // Range checks: a UINT8 value above 255.
    pb::ModelInferRequest q = fp32_request(1);
    auto* in = q.mutable_inputs(0);
    in->set_datatype("UINT8");
    in->clear_contents();
    for (uint32_t v : {1u, 2u, 3u, 300u}) in->mutable_contents()->add_uint_contents(v);
    grpc::ClientContext ctx;
    pb::ModelInferResponse r;
    const grpc::Status st = es.stub->ModelInfer(&ctx, q, &r);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(st.error_message().find("element 3 = 300 is not an integer in 0..255"),
              std::string::npos)
        << st.error_message();
  }
}

TEST(KServeGrpc, AMalformedModelInferIsRefusedNamingTheProblem) {
  EchoServer es;
  grpc::GenericStub generic(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(es.server->grpc_port()), grpc::InsecureChannelCredentials()));
  // Bytes that are no protobuf message (a field with wire type 7, which does not exist).
  const std::string junk = "\x0f\xff\xff\xff\x01garbage";
  grpc::Slice slice(junk);
  const grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  std::promise<grpc::Status> done;
  generic.UnaryCall(&ctx, "/inference.GRPCInferenceService/ModelInfer", grpc::StubOptions(),
                    &request, &response, [&](grpc::Status st) { done.set_value(st); });
  const grpc::Status st = done.get_future().get();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  EXPECT_NE(st.error_message().find("not a ModelInferRequest"), std::string::npos)
      << st.error_message();
  // A well-formed request on the same server is still served.
  grpc::ClientContext ctx2;
  pb::ModelInferResponse r;
  EXPECT_TRUE(es.stub->ModelInfer(&ctx2, fp32_request(1), &r).ok());
}

TEST(KServeGrpc, SameLimitsAsHttp) {
  // --max-body 4096: larger messages are refused by gRPC itself. Unload needs control.
  EchoServer es(4096, 0.0, AccessConfig{{}, {"control-key"}, true});
  grpc::ClientContext ctx;
  pb::ModelInferResponse r;
  const grpc::Status st = es.stub->ModelInfer(&ctx, fp32_request(16 * 20), &r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  grpc::ClientContext ctx2;
  EXPECT_TRUE(es.stub->ModelInfer(&ctx2, fp32_request(2), &r).ok());
  // Repository and statistics.
  pb::RepositoryModelUnloadRequest uq;
  uq.set_model_name("echo");
  pb::RepositoryModelUnloadResponse ur;
  grpc::ClientContext c3, c4, c5, c6;
  c3.AddMetadata("authorization", "Bearer control-key");
  ASSERT_TRUE(es.stub->RepositoryModelUnload(&c3, uq, &ur).ok());
  pb::ModelReadyRequest rq;
  rq.set_name("echo");
  pb::ModelReadyResponse rr;
  ASSERT_TRUE(es.stub->ModelReady(&c4, rq, &rr).ok());
  EXPECT_FALSE(rr.ready());
  const grpc::Status unloaded = es.stub->ModelInfer(&c5, fp32_request(1), &r);
  EXPECT_EQ(unloaded.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  pb::ModelStatisticsRequest sq;
  sq.set_name("echo");
  pb::ModelStatisticsResponse sr;
  ASSERT_TRUE(es.stub->ModelStatistics(&c6, sq, &sr).ok());
  ASSERT_EQ(sr.model_stats_size(), 1);
  EXPECT_EQ(sr.model_stats(0).inference_count(), 2u);
  EXPECT_EQ(sr.model_stats(0).inference_stats().success().count(), 1u);
}

TEST(KServeGrpc, ClientDeadlineEndsTheCall) {
  EchoServer es(16u << 20, 300.0);  // each batch takes 300 ms
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(50));
  pb::ModelInferResponse r;
  const grpc::Status st = es.stub->ModelInfer(&ctx, fp32_request(1), &r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << st.error_message();
  // The server answers the request later, finishing the cancelled call, and still serves.
  grpc::ClientContext ctx2;
  const grpc::Status ok = es.stub->ModelInfer(&ctx2, fp32_request(1), &r);
  EXPECT_TRUE(ok.ok()) << ok.error_message();
}

}  // namespace
}  // namespace tessera
