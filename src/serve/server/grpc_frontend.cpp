#include "serve/server/grpc_frontend.hpp"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <stdexcept>

#include "inference.grpc.pb.h"
#include "serve/http/pem_file.hpp"
#include "serve/server/infer_call.hpp"

namespace tessera {
namespace {

using grpc::ServerContext;
using grpc::Status;
using grpc::StatusCode;
namespace pb = inference;

StatusCode code_of(int http_status) {
  switch (http_status) {
    case 400:
      return StatusCode::INVALID_ARGUMENT;
    case 404:
      return StatusCode::NOT_FOUND;
    case 429:
      return StatusCode::RESOURCE_EXHAUSTED;
    case 503:
      return StatusCode::UNAVAILABLE;
    default:
      return StatusCode::INTERNAL;
  }
}

nlohmann::json param_json(const pb::InferParameter& p) {
  switch (p.parameter_choice_case()) {
    case pb::InferParameter::kBoolParam:
      return p.bool_param();
    case pb::InferParameter::kInt64Param:
      return p.int64_param();
    case pb::InferParameter::kStringParam:
      return p.string_param();
    case pb::InferParameter::kDoubleParam:
      return p.double_param();
    case pb::InferParameter::kUint64Param:
      return p.uint64_param();
    default:
      return nullptr;
  }
}

void set_param(pb::InferParameter& p, const nlohmann::json& v) {
  if (v.is_boolean()) {
    p.set_bool_param(v.get<bool>());
  } else if (v.is_number_unsigned()) {
    p.set_uint64_param(v.get<uint64_t>());
  } else if (v.is_number_integer()) {
    p.set_int64_param(v.get<int64_t>());
  } else if (v.is_number()) {
    p.set_double_param(v.get<double>());
  } else if (v.is_string()) {
    p.set_string_param(v.get<std::string>());
  }
}

template <typename Field>
void take(RequestInput& in, const Field& values) {
  in.values.assign(values.begin(), values.end());
}

// A ModelInferRequest as the protocol's InferRequest: the same checks as JSON.
InferRequest from_proto(const pb::ModelInferRequest& m, const ProtocolLimits& limits) {
  InferRequest r;
  if (!m.id().empty()) r.id = m.id();
  for (const auto& [k, v] : m.parameters()) r.parameters[k] = param_json(v);
  if (auto it = r.parameters.find("slo_ms"); it != r.parameters.end()) {
    if (!it->is_number() || !(it->get<double>() > 0)) {
      throw ProtocolError("'parameters.slo_ms' must be a number > 0");
    }
    r.slo_s = it->get<double>() / 1000.0;
  }
  if (m.inputs_size() > static_cast<int>(limits.max_inputs)) {
    throw ProtocolError("more than " + std::to_string(limits.max_inputs) + " inputs");
  }
  const bool raw = m.raw_input_contents_size() > 0;
  if (raw && m.raw_input_contents_size() != m.inputs_size()) {
    throw ProtocolError("raw_input_contents has " + std::to_string(m.raw_input_contents_size()) +
                        " entries for " + std::to_string(m.inputs_size()) + " inputs");
  }
  std::size_t total = 0;
  for (int i = 0; i < m.inputs_size(); ++i) {
    const auto& t = m.inputs(i);
    const auto idx = static_cast<std::size_t>(i);
    RequestInput in;
    in.name = t.name();
    const std::string who = "inputs[" + std::to_string(i) + "] ('" + t.name() + "')";
    const auto type = parse_datatype(t.datatype());
    if (!type) throw ProtocolError(who + ": datatype '" + t.datatype() + "' is not supported");
    in.datatype = *type;
    if (t.shape_size() > static_cast<int>(limits.max_dims)) {
      throw ProtocolError(who + ": shape has more than " + std::to_string(limits.max_dims) +
                          " dimensions");
    }
    for (int64_t d : t.shape()) {
      if (d < 0) throw ProtocolError(who + ": shape dimension " + std::to_string(d) + " < 0");
      in.shape.push_back(d);
    }
    for (const auto& [k, v] : t.parameters()) in.parameters[k] = param_json(v);
    const std::size_t left = limits.max_values - std::min(total, limits.max_values);
    if (raw) {
      if (t.has_contents()) throw ProtocolError(who + ": has both contents and raw_input_contents");
      decode_binary_input(idx, in, m.raw_input_contents(i), left);
    } else {
      const auto& c = t.contents();
      switch (in.datatype) {
        case DataType::kBool:
          take(in, c.bool_contents());
          break;
        case DataType::kInt8:
        case DataType::kInt16:
        case DataType::kInt32:
          take(in, c.int_contents());
          break;
        case DataType::kInt64:
          take(in, c.int64_contents());
          break;
        case DataType::kUint8:
        case DataType::kUint16:
        case DataType::kUint32:
          take(in, c.uint_contents());
          break;
        case DataType::kUint64:
          take(in, c.uint64_contents());
          break;
        case DataType::kFp32:
          take(in, c.fp32_contents());
          break;
        case DataType::kFp64:
          take(in, c.fp64_contents());
          break;
        case DataType::kFp16:
          throw ProtocolError(who + ": FP16 must be sent as raw_input_contents");
        case DataType::kBytes:
          in.bytes.assign(c.bytes_contents().begin(), c.bytes_contents().end());
          break;
      }
      check_input_values(idx, in, left);
    }
    total += in.datatype == DataType::kBytes ? in.bytes.size() : in.values.size();
    r.inputs.push_back(std::move(in));
  }
  for (const auto& o : m.outputs()) {
    RequestedOutput out;
    out.name = o.name();
    for (const RequestedOutput& p : r.outputs) {
      if (p.name == out.name) throw ProtocolError("output '" + out.name + "' is requested twice");
    }
    r.outputs.push_back(std::move(out));
  }
  return r;
}

void fill_metadata(const Endpoint& ep, pb::ModelMetadataResponse& r) {
  r.set_name(ep.name());
  r.add_versions(kModelVersion);
  r.set_platform("tessera");
  const auto tensor = [](auto* t, const std::string& name, const std::vector<int64_t>& shape) {
    t->set_name(name);
    t->set_datatype("FP32");
    t->add_shape(-1);
    for (int64_t d : shape) t->add_shape(d);
  };
  tensor(r.add_inputs(), "input", ep.input_shape());
  for (const auto& [task, shape] : ep.outputs()) tensor(r.add_outputs(), task, shape);
}

std::shared_ptr<grpc::ServerCredentials> credentials(const GrpcTls& tls) {
  if (tls.cert_file.empty()) return grpc::InsecureServerCredentials();
  if (tls.key_file.empty()) {
    throw std::runtime_error("a gRPC TLS certificate needs its key (--grpc-tls-key)");
  }
  grpc::SslServerCredentialsOptions options(
      tls.client_ca_file.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                 : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_key_cert_pairs.push_back({read_pem_file(tls.key_file, "gRPC TLS key"),
                                        read_pem_file(tls.cert_file, "gRPC TLS certificate")});
  if (!tls.client_ca_file.empty()) {
    options.pem_root_certs = read_pem_file(tls.client_ca_file, "gRPC TLS client CA");
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace

// ModelInfer is served raw (its bytes, parsed here): gRPC's own parse of a callback
// method's request answers a malformed message UNIMPLEMENTED with no message.
struct GrpcFrontEnd::Impl final : public pb::GRPCInferenceService::WithRawCallbackMethod_ModelInfer<
                                      pb::GRPCInferenceService::Service> {
  Impl(KServeInference& inference, ModelRepository& repository, const ServerMetrics& metrics,
       const Admission& admission, std::size_t max_message_bytes, AccessControl access)
      : inference_(inference),
        repository_(repository),
        metrics_(metrics),
        admission_(admission),
        max_message_bytes_(max_message_bytes),
        access_(std::move(access)) {}

  // Whether the call's "authorization" metadata opens a call of kind `access`.
  Status authorize(const grpc::ServerContextBase& ctx, RouteAccess access) const {
    std::string_view authorization;
    const auto& metadata = ctx.client_metadata();
    if (auto it = metadata.find("authorization"); it != metadata.end()) {
      authorization = std::string_view(it->second.data(), it->second.size());
    }
    const AccessVerdict verdict = access_.check(access, authorization);
    if (verdict == AccessVerdict::kAllow) return Status::OK;
    return Status(verdict == AccessVerdict::kUnauthenticated ? StatusCode::UNAUTHENTICATED
                                                             : StatusCode::PERMISSION_DENIED,
                  access_message(verdict));
  }

  Status ServerLive(ServerContext*, const pb::ServerLiveRequest*,
                    pb::ServerLiveResponse* r) override {
    r->set_live(true);
    return Status::OK;
  }
  Status ServerReady(ServerContext*, const pb::ServerReadyRequest*,
                     pb::ServerReadyResponse* r) override {
    r->set_ready(!admission_.draining());
    return Status::OK;
  }
  Status ModelReady(ServerContext* ctx, const pb::ModelReadyRequest* q,
                    pb::ModelReadyResponse* r) override {
    if (Status st = authorize(*ctx, RouteAccess::kInference); !st.ok()) return st;
    if (Status st = check_model(q->name(), q->version()); !st.ok()) return st;
    r->set_ready(!admission_.draining() && repository_.loaded(q->name()));
    return Status::OK;
  }
  Status ServerMetadata(ServerContext* ctx, const pb::ServerMetadataRequest*,
                        pb::ServerMetadataResponse* r) override {
    if (Status st = authorize(*ctx, RouteAccess::kInference); !st.ok()) return st;
    r->set_name("tessera");
    r->set_version("0.1.0");
    for (const char* e : {"binary_tensor_data", "parameters", "model_repository", "statistics"}) {
      r->add_extensions(e);
    }
    return Status::OK;
  }
  Status ModelMetadata(ServerContext* ctx, const pb::ModelMetadataRequest* q,
                       pb::ModelMetadataResponse* r) override {
    if (Status st = authorize(*ctx, RouteAccess::kInference); !st.ok()) return st;
    if (Status st = check_model(q->name(), q->version()); !st.ok()) return st;
    fill_metadata(*repository_.find(q->name()), *r);
    return Status::OK;
  }
  Status ModelStatistics(ServerContext* ctx, const pb::ModelStatisticsRequest* q,
                         pb::ModelStatisticsResponse* r) override {
    if (Status st = authorize(*ctx, RouteAccess::kInference); !st.ok()) return st;
    if (!q->name().empty()) {
      if (Status st = check_model(q->name(), q->version()); !st.ok()) return st;
    }
    for (const auto& ep : repository_.endpoints()) {
      if (!q->name().empty() && ep->name() != q->name()) continue;
      const ModelStats st = repository_.stats().get(ep->name());
      pb::ModelStatistics* m = r->add_model_stats();
      m->set_name(ep->name());
      m->set_version(kModelVersion);
      m->set_last_inference(st.last_inference_ms);
      m->set_inference_count(st.inference_count);
      m->set_execution_count(metrics_.executions(ep->metrics()));
      auto* is = m->mutable_inference_stats();
      const auto d = [](pb::StatisticDuration* p, const StatDuration& x) {
        p->set_count(x.count);
        p->set_ns(x.ns);
      };
      d(is->mutable_success(), st.success);
      d(is->mutable_fail(), st.fail);
      d(is->mutable_queue(), st.queue);
      d(is->mutable_compute_input(), st.compute_input);
      d(is->mutable_compute_infer(), st.compute_infer);
      d(is->mutable_compute_output(), st.compute_output);
    }
    return Status::OK;
  }
  Status RepositoryIndex(ServerContext* ctx, const pb::RepositoryIndexRequest* q,
                         pb::RepositoryIndexResponse* r) override {
    if (Status st = authorize(*ctx, RouteAccess::kInference); !st.ok()) return st;
    for (const auto& ep : repository_.endpoints()) {
      const bool ready = repository_.loaded(ep->name()) && !admission_.draining();
      if (q->ready() && !ready) continue;
      auto* m = r->add_models();
      m->set_name(ep->name());
      m->set_version(kModelVersion);
      m->set_state(ready ? "READY" : "UNAVAILABLE");
      if (!ready) m->set_reason(admission_.draining() ? "shutting down" : "unloaded");
    }
    return Status::OK;
  }
  Status RepositoryModelLoad(ServerContext* ctx, const pb::RepositoryModelLoadRequest* q,
                             pb::RepositoryModelLoadResponse*) override {
    if (Status st = authorize(*ctx, RouteAccess::kControl); !st.ok()) return st;
    return set_loaded(q->model_name(), true);
  }
  Status RepositoryModelUnload(ServerContext* ctx, const pb::RepositoryModelUnloadRequest* q,
                               pb::RepositoryModelUnloadResponse*) override {
    if (Status st = authorize(*ctx, RouteAccess::kControl); !st.ok()) return st;
    return set_loaded(q->model_name(), false);
  }

  // Asynchronous (gRPC's callback API): no thread waits while the request is in the
  // engine; the answer finishes the call from the event loop thread. The request's bytes
  // are parsed here, so a malformed message is INVALID_ARGUMENT naming the problem.
  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* ctx,
                                       const grpc::ByteBuffer* bytes,
                                       grpc::ByteBuffer* answer) override {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    // Finishes the call exactly once: with the answer, or UNAVAILABLE if the answer is
    // dropped unanswered (with the event loop, at shutdown).
    struct Finisher {
      explicit Finisher(grpc::ServerUnaryReactor* r) : reactor(r) {}
      Finisher(const Finisher&) = delete;
      Finisher& operator=(const Finisher&) = delete;
      grpc::ServerUnaryReactor* reactor;
      bool finished = false;
      void finish(const Status& st) {
        if (finished) return;
        finished = true;
        reactor->Finish(st);
      }
      ~Finisher() { finish(Status(StatusCode::UNAVAILABLE, "the server is shutting down")); }
    };
    auto finisher = std::make_shared<Finisher>(reactor);
    if (Status st = authorize(*ctx, RouteAccess::kInference); !st.ok()) {
      finisher->finish(st);
      return reactor;
    }
    auto q = std::make_shared<pb::ModelInferRequest>();
    grpc::ByteBuffer request(*bytes);  // shares the bytes; parsing consumes the copy
    if (!grpc::SerializationTraits<pb::ModelInferRequest>::Deserialize(&request, q.get()).ok()) {
      finisher->finish(Status(StatusCode::INVALID_ARGUMENT,
                              "malformed ModelInfer request: its " +
                                  std::to_string(bytes->Length()) +
                                  " bytes are not a ModelInferRequest protobuf message"));
      return reactor;
    }
    inference_.start(
        q->model_name(), q->model_version(),
        [q](const ProtocolLimits& limits) { return from_proto(*q, limits); },
        std::chrono::steady_clock::now(),
        [this, q, answer, finisher](InferResult&& res) {
          pb::ModelInferResponse r;
          Status st = respond(*q, res, r);
          bool own = false;
          if (st.ok() &&
              !grpc::SerializationTraits<pb::ModelInferResponse>::Serialize(r, answer, &own).ok()) {
            st = Status(StatusCode::INTERNAL, "the ModelInfer response could not be encoded");
          }
          finisher->finish(st);
        });
    return reactor;
  }

  Status respond(const pb::ModelInferRequest& q, InferResult& res, pb::ModelInferResponse& r) {
    if (res.status != 200) return Status(code_of(res.status), res.error);
    const auto t0 = std::chrono::steady_clock::now();
    r.set_model_name(res.head.model_name);
    r.set_model_version(res.head.model_version);
    if (res.head.id) r.set_id(*res.head.id);
    for (const auto& [k, v] : res.head.parameters.items()) {
      set_param((*r.mutable_parameters())[k], v);
    }
    const bool raw = q.raw_input_contents_size() > 0;
    for (ResponseOutput& o : res.outputs) {
      auto* t = r.add_outputs();
      t->set_name(o.name);
      t->set_datatype(std::string(o.datatype()));
      for (int64_t d : o.shape) t->add_shape(d);
      if (raw) {
        const std::string_view bytes = o.bytes();
        r.add_raw_output_contents(bytes.data(), bytes.size());
      } else if (o.indices) {
        t->mutable_contents()->mutable_int64_contents()->Add(o.row_index.begin(),
                                                             o.row_index.end());
      } else {
        t->mutable_contents()->mutable_fp32_contents()->Add(o.data.begin(), o.data.end());
      }
    }
    inference_.record_output_time(
        res.head.model_name,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return Status::OK;
  }

  Status check_model(const std::string& name, const std::string& version) const {
    if (repository_.find(name) == nullptr) {
      return Status(StatusCode::NOT_FOUND, "unknown model '" + name + "'");
    }
    if (!version.empty() && version != kModelVersion) {
      return Status(StatusCode::NOT_FOUND,
                    "model '" + name + "' has no version '" + version + "' (versions: 1)");
    }
    return Status::OK;
  }
  Status set_loaded(const std::string& name, bool loaded) {
    if (repository_.find(name) == nullptr) {
      return Status(StatusCode::INVALID_ARGUMENT,
                    "failed to " + std::string(loaded ? "load" : "unload") + " '" + name +
                        "': no such model in the repository");
    }
    repository_.set_loaded(name, loaded);
    return Status::OK;
  }

  KServeInference& inference_;
  ModelRepository& repository_;
  const ServerMetrics& metrics_;
  const Admission& admission_;
  std::size_t max_message_bytes_;
  AccessControl access_;
  std::unique_ptr<grpc::Server> server;
  bool stopped = false;
};

GrpcFrontEnd::GrpcFrontEnd(KServeInference& inference, ModelRepository& repository,
                           const ServerMetrics& metrics, const Admission& admission,
                           std::size_t max_message_bytes, AccessControl access, GrpcTls tls)
    : impl_(std::make_unique<Impl>(inference, repository, metrics, admission, max_message_bytes,
                                   std::move(access))),
      tls_(std::move(tls)) {}
GrpcFrontEnd::~GrpcFrontEnd() { stop(0.0); }

int GrpcFrontEnd::start(const std::string& host, int port) {
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort(host + ":" + std::to_string(port), credentials(tls_), &bound);
  builder.RegisterService(impl_.get());
  const int max_message =
      static_cast<int>(std::min<std::size_t>(impl_->max_message_bytes_, INT32_MAX));
  builder.SetMaxReceiveMessageSize(max_message);
  builder.SetMaxSendMessageSize(-1);
  // The synchronous calls (health, metadata, repository) are quick: a few threads.
  grpc::ResourceQuota quota("tessera-grpc");
  quota.SetMaxThreads(16);
  builder.SetResourceQuota(quota);
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || bound == 0) {
    throw std::runtime_error("cannot listen for gRPC on " + host + ":" + std::to_string(port));
  }
  return bound;
}

void GrpcFrontEnd::stop(double grace_s) {
  if (!impl_->server || impl_->stopped) return;
  impl_->stopped = true;
  impl_->server->Shutdown(std::chrono::system_clock::now() +
                          std::chrono::milliseconds(static_cast<int64_t>(grace_s * 1000)));
  impl_->server->Wait();
}

}  // namespace tessera
