#pragma once

// Internal to the server: one inference request on its way through an endpoint, whatever
// the transport (HTTP in http_routes.cpp, gRPC in grpc_frontend.cpp), so that both take
// the same path: admission (--max-inflight), the model's checks (one FP32 input, a batch
// dimension, outputs), one engine request per batch row, and the answers gathered into
// one result. Threads: start_infer() from any thread; `done` runs exactly once, on the
// calling thread (a refusal, or an answer when the caller ran an idle event loop itself:
// Endpoint::submit) or on the event loop thread (an answer), and must not block.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "serve/kserve/protocol.hpp"
#include "serve/server/server_impl.hpp"

namespace tessera {

inline constexpr const char* kModelVersion = "1";  // every endpoint has one version

struct InferResult {
  int status = 200;          // an HTTP status: 200 = head + outputs, else error_body
  bool retry_after = false;  // 429 / 503 that a client may retry
  std::string error;         // the message (status != 200)
  std::string error_body;    // {"error": ..., ...} (status != 200)
  InferResponseHead head;
  std::vector<ResponseOutput> outputs;
};

// Parses the request once admitted (HTTP parses its body; gRPC converts its message);
// throws ProtocolError. Called at most once, before start_infer() returns.
using ParseFn = std::function<InferRequest(const ProtocolLimits&)>;
using DoneFn = std::function<void(InferResult&&)>;

// `version`: the URL's or message's model version ("" = any). `start`: when the request
// arrived, for the statistics extension.
void start_infer(Server::Impl& s, const std::string& name, const std::string& version,
                 const ParseFn& parse, std::chrono::steady_clock::time_point start, DoneFn done);

// Records an answered request's encode time (the statistics extension's compute_output)
// once the transport has written `result`.
void record_output_time(Server::Impl& s, const std::string& model, double seconds);

}  // namespace tessera
