#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "exec/tensor.hpp"
#include "server/answer.hpp"

namespace tessera {

// The Open Inference Protocol v2 (KServe / Triton), JSON form (docs/serve.md#protocol).

// A malformed request: the message goes back to the client with status 400.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct InferRequest {
  std::optional<std::string> id;
  FloatTensor input;   // shape as the model takes it (no batch dimension)
  double slo_s = 0.0;  // parameters.slo_ms, or 0: the application's SLO
};

// Parses and checks an inference request for a model taking `input_shape`: one input,
// a numeric datatype, shape `input_shape` or [1, input_shape...], and as many numbers
// (flat or nested) as the shape holds. Throws ProtocolError naming the problem. It reads
// the body's SAX events without building a JSON tree, so its memory is the body plus
// at most numel(input_shape) + 1 floats, whatever the body holds.
InferRequest parse_infer_request(std::string_view body, const std::vector<int64_t>& input_shape);

// The request body a client sends for `input` (used by the load generator and tests).
std::string make_infer_body(const FloatTensor& input, const std::string& id = "",
                            double slo_ms = 0.0);

// The 200 response for an answered request.
std::string infer_response(const std::string& model, const InferRequest& request,
                           const Answer& answer);

// Serializes `doc`, replacing invalid UTF-8 (from request text) with U+FFFD instead of
// throwing. Every JSON answer goes through it.
std::string dump_json(const nlohmann::json& doc);

// {"error": message} plus optional fields.
std::string error_body(const std::string& message, const nlohmann::json& extra = {});

}  // namespace tessera
