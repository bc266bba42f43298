#pragma once

// The gRPC front end of `tessera serve` (--grpc-port): the Open Inference Protocol v2
// GRPCInferenceService (src/server/proto/inference.proto, written from the published
// specification) on gRPC's synchronous server. ModelInfer takes the same path as HTTP
// inference (infer_call.hpp: admission, the model's checks, the engine), under the same
// bounds: messages larger than ServeOptions::max_body_bytes are refused by gRPC
// (RESOURCE_EXHAUSTED), at most --max-inflight items are admitted (429 -> RESOURCE_EXHAUSTED),
// and a call waits for its answer no longer than its client's deadline.
//
// Ownership and threads: owned by Server::Impl, which it references; gRPC's thread pool
// runs the handlers (each ModelInfer blocks its thread until its answer). stop() once,
// from a thread outside the pool.

#include <memory>
#include <string>

#include "server/server.hpp"

namespace tessera {

class GrpcFrontEnd {
 public:
  explicit GrpcFrontEnd(Server::Impl& server);
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
