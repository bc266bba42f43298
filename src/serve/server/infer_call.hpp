#pragma once

// KServeInference: one inference request on its way through an endpoint, whatever the
// transport (HTTP in http_routes.cpp, gRPC in grpc_frontend.cpp), so that both take the
// same path: admission (--max-inflight, the front end's Admission), the model's checks (one
// FP32 input, a batch dimension, outputs), one engine request per batch row, and the
// answers gathered into one result, counted in the statistics extension and the metrics.
//
// Holds references to the repository, the admission and the metrics (the server owns them).
// Threads: start() from any thread; `done` runs exactly once, on the calling thread (a
// refusal, or an answer when the caller ran an idle event loop itself: Endpoint::submit)
// or on the event loop thread (an answer), and must not block.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "serve/http/admission.hpp"
#include "serve/kserve/protocol.hpp"
#include "serve/metrics/server_metrics.hpp"
#include "serve/server/model_repository.hpp"

namespace tessera {

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

class KServeInference {
 public:
  KServeInference(ModelRepository& repository, Admission& admission, ServerMetrics& metrics)
      : repository_(repository), admission_(admission), metrics_(metrics) {}

  // `version`: the URL's or message's model version ("" = any). `start`: when the request
  // arrived, for the statistics extension.
  void start(const std::string& name, const std::string& version, const ParseFn& parse,
             std::chrono::steady_clock::time_point start, DoneFn done);
  // Records an answered request's encode time (the statistics extension's compute_output)
  // once the transport has written its result.
  void record_output_time(const std::string& model, double seconds);

 private:
  ModelRepository& repository_;
  Admission& admission_;
  ServerMetrics& metrics_;
};

}  // namespace tessera
