#pragma once

// The gRPC front end of `tessera serve` (--grpc-port): the Open Inference Protocol v2
// GRPCInferenceService (src/server/proto/inference.proto, written from the published
// specification). ModelInfer runs on gRPC's callback API and takes the same path as HTTP
// inference (infer_call.hpp: admission, the model's checks, the engine), under the same
// bounds: messages larger than ServeOptions::max_body_bytes are refused by gRPC
// (RESOURCE_EXHAUSTED), at most --max-inflight items are admitted (429 ->
// RESOURCE_EXHAUSTED); a client's deadline ends its call on its side (DEADLINE_EXCEEDED).
//
// Ownership and threads: owned by the Server; references its inference path, repository,
// metrics and admission. No thread waits on an inference: the event loop finishes each
// ModelInfer with its answer (or UNAVAILABLE if the answer is dropped at shutdown); the
// other RPCs run on gRPC's small synchronous pool. stop() once, from a thread outside
// gRPC's, after the event loop has stopped.

#include <memory>
#include <string>

#include "serve/http/admission.hpp"
#include "serve/metrics/server_metrics.hpp"
#include "serve/server/infer_call.hpp"
#include "serve/server/model_repository.hpp"

namespace tessera {

class GrpcFrontEnd {
 public:
  // Messages over `max_message_bytes` are refused (RESOURCE_EXHAUSTED).
  GrpcFrontEnd(KServeInference& inference, ModelRepository& repository,
               const ServerMetrics& metrics, const Admission& admission,
               std::size_t max_message_bytes);
  ~GrpcFrontEnd();
  GrpcFrontEnd(const GrpcFrontEnd&) = delete;
  GrpcFrontEnd& operator=(const GrpcFrontEnd&) = delete;

  // Binds (port 0: any free port) and starts serving; returns the port. Throws
  // std::runtime_error if it cannot bind.
  int start(const std::string& host, int port);
  // Stops taking calls; calls in progress get up to grace_s to finish. Idempotent.
  void stop(double grace_s);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
