// The gRPC transport of a remote model: the generated GRPCInferenceService stub on one
// channel per backend (HTTP/2 multiplexes the concurrent calls; the channel reconnects by
// itself); a batch is one ModelInfer call with its tensor in raw_input_contents.

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstring>

#include "inference.grpc.pb.h"
#include "serve/fleet/remote_transport.hpp"

namespace tessera {
namespace {

std::chrono::system_clock::time_point deadline_in(double ms) {
  return std::chrono::system_clock::now() +
         std::chrono::microseconds(static_cast<int64_t>(ms * 1000.0));
}

bool retryable(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::CANCELLED:
      return true;
    default:
      return false;
  }
}

class GrpcTransport final : public RemoteTransport {
 public:
  GrpcTransport(const std::string& endpoint, const RemoteSpec& spec, const std::string& key)
      : endpoint_(endpoint), spec_(spec), authorization_(key.empty() ? "" : "Bearer " + key) {
    const RemoteAddress a = parse_remote_address(endpoint, RemoteSpec::Protocol::kGrpc);
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(static_cast<int>(spec.max_reply_bytes));
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 50);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    // Each transport gets its own connection (no subchannel sharing across models).
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    channel_ = grpc::CreateCustomChannel(a.host + ":" + std::to_string(a.port),
                                         grpc::InsecureChannelCredentials(), args);
    stub_ = inference::GRPCInferenceService::NewStub(channel_);
  }

  RemoteCall infer(std::span<const FloatTensor* const> inputs, const std::string& id,
                   const RemoteExpect& expect) override {
    RemoteCall call;
    inference::ModelInferRequest req;
    req.set_model_name(spec_.model);
    req.set_id(id);
    auto* in = req.add_inputs();
    in->set_name(spec_.input_name);
    in->set_datatype("FP32");
    in->add_shape(static_cast<int64_t>(inputs.size()));
    if (!inputs.empty()) {
      for (int64_t d : inputs[0]->shape) in->add_shape(d);
    }
    std::string& raw = *req.add_raw_input_contents();
    for (const FloatTensor* t : inputs) {
      raw.append(reinterpret_cast<const char*>(t->data.data()), t->data.size() * sizeof(float));
    }
    if (!spec_.output_name.empty()) req.add_outputs()->set_name(spec_.output_name);
    inference::ModelInferResponse res;
    grpc::ClientContext ctx;
    if (!authorization_.empty()) ctx.AddMetadata("authorization", authorization_);
    ctx.set_deadline(deadline_in(spec_.timeout_ms));
    const grpc::Status status = stub_->ModelInfer(&ctx, req, &res);
    if (!status.ok()) {
      const bool too_big = status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
                           status.error_message().find("message larger") != std::string::npos;
      call.kind = too_big                          ? RemoteCall::Kind::kBadReply
                  : retryable(status.error_code()) ? RemoteCall::Kind::kUnavailable
                                                   : RemoteCall::Kind::kRefused;
      call.detail = std::string(too_big ? "bad reply: " : "") + "gRPC status " +
                    std::to_string(static_cast<int>(status.error_code())) + ": " +
                    status.error_message().substr(0, 200);
      if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
        call.detail = fmt::format("timed out after {:g} ms ({})", spec_.timeout_ms, call.detail);
      }
      return call;
    }
    try {
      std::vector<ReplyTensor> tensors;
      const bool raw_out = res.raw_output_contents_size() > 0;
      if (raw_out && res.raw_output_contents_size() != res.outputs_size()) {
        throw RemoteReplyError("backend " + expect.backend +
                               ": bad reply: " + std::to_string(res.raw_output_contents_size()) +
                               " raw_output_contents for " + std::to_string(res.outputs_size()) +
                               " outputs");
      }
      for (int i = 0; i < res.outputs_size(); ++i) {
        const auto& o = res.outputs(i);
        ReplyTensor t;
        t.name = o.name();
        t.datatype = o.datatype();
        t.shape.assign(o.shape().begin(), o.shape().end());
        if (raw_out) {
          t.raw = std::string_view(res.raw_output_contents(i));
        } else {
          const auto& c = o.contents();
          for (float v : c.fp32_contents()) t.values.push_back(v);
          for (double v : c.fp64_contents()) t.values.push_back(v);
          for (int32_t v : c.int_contents()) t.values.push_back(v);
          for (int64_t v : c.int64_contents()) t.values.push_back(static_cast<double>(v));
          for (uint32_t v : c.uint_contents()) t.values.push_back(v);
          for (uint64_t v : c.uint64_contents()) t.values.push_back(static_cast<double>(v));
          for (bool v : c.bool_contents()) t.values.push_back(v ? 1.0 : 0.0);
        }
        tensors.push_back(std::move(t));
      }
      call.outputs = split_reply(tensors, expect);
    } catch (const RemoteReplyError& e) {
      call.kind = RemoteCall::Kind::kBadReply;
      call.detail = e.what();
    }
    return call;
  }

  bool ready(std::string& why) override {
    inference::ServerReadyRequest req;
    inference::ServerReadyResponse res;
    grpc::ClientContext ctx;
    if (!authorization_.empty()) ctx.AddMetadata("authorization", authorization_);
    ctx.set_deadline(deadline_in(spec_.health_timeout_ms));
    const grpc::Status status = stub_->ServerReady(&ctx, req, &res);
    if (!status.ok()) {
      why = "ServerReady: gRPC status " + std::to_string(static_cast<int>(status.error_code())) +
            ": " + status.error_message().substr(0, 200);
      return false;
    }
    if (!res.ready()) why = "ServerReady: not ready";
    return res.ready();
  }

  std::vector<int64_t> output_shape(const std::string& output_name) override {
    inference::ModelMetadataRequest req;
    req.set_name(spec_.model);
    inference::ModelMetadataResponse res;
    grpc::ClientContext ctx;
    if (!authorization_.empty()) ctx.AddMetadata("authorization", authorization_);
    ctx.set_deadline(deadline_in(spec_.timeout_ms));
    const grpc::Status status = stub_->ModelMetadata(&ctx, req, &res);
    if (!status.ok()) {
      throw std::runtime_error("backend " + endpoint_ +
                               ": ModelMetadata: " + status.error_message().substr(0, 200));
    }
    for (const auto& o : res.outputs()) {
      if (!output_name.empty() && o.name() != output_name) continue;
      if (o.shape_size() < 2) break;
      std::vector<int64_t> shape(o.shape().begin() + 1, o.shape().end());
      for (int64_t d : shape) {
        if (d < 1 || d > (1 << 20)) {
          throw std::runtime_error("backend " + endpoint_ +
                                   ": model metadata output's shape has a variable or "
                                   "out-of-range item dimension; give remote.output");
        }
      }
      return shape;
    }
    throw std::runtime_error("backend " + endpoint_ +
                             ": model metadata has no output (with a batch dimension) named '" +
                             output_name + "'");
  }

 private:
  std::string endpoint_;
  RemoteSpec spec_;
  std::string authorization_;  // "Bearer KEY", or "": no key
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
};

}  // namespace

std::unique_ptr<RemoteTransport> make_grpc_transport(const std::string& endpoint,
                                                     const RemoteSpec& spec,
                                                     const std::string& key) {
  return std::make_unique<GrpcTransport>(endpoint, spec, key);
}

}  // namespace tessera
