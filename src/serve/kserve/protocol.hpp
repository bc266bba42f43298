#pragma once

// The Open Inference Protocol v2 (KServe / Triton) inference request and response, in
// JSON and with Triton's binary tensor data extension (docs/serve.md#protocol).
// parse_infer_request reads any request (any number of inputs, every datatype) into
// typed, range-checked values; the server then checks it against the model. Pure
// functions; thread-safe. Memory: a parse keeps the body plus at most
// ProtocolLimits::max_values values, whatever the body holds.

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "models/tensor.hpp"
#include "serve/kserve/datatype.hpp"

namespace tessera {

// A malformed request: the message goes back to the client with status 400.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ProtocolLimits {
  std::size_t max_inputs = 16;
  std::size_t max_outputs = 64;
  std::size_t max_dims = 16;
  std::size_t max_values = std::size_t{1} << 24;  // elements over all inputs
  std::size_t max_parameters = 64;                // per parameters object
};

struct RequestInput {
  std::string name;
  DataType datatype = DataType::kFp32;
  std::vector<int64_t> shape;
  nlohmann::json parameters = nlohmann::json::object();
  bool binary = false;             // came as binary data (parameters.binary_data_size)
  std::vector<double> values;      // numeric and BOOL (0 / 1) elements, range-checked
  std::vector<std::string> bytes;  // BYTES elements
};

struct RequestedOutput {
  std::string name;
  bool binary = false;  // parameters.binary_data, else the request's binary_data_output
  nlohmann::json parameters = nlohmann::json::object();
};

struct InferRequest {
  std::optional<std::string> id;
  nlohmann::json parameters = nlohmann::json::object();  // scalar values only
  double slo_s = 0.0;                    // parameters.slo_ms, or 0: the application's SLO
  bool binary_data_output = false;       // parameters.binary_data_output
  std::vector<RequestInput> inputs;      // in request order
  std::vector<RequestedOutput> outputs;  // empty: every output, as JSON (or binary)
};

// Parses one inference request body. `header_length` is the Inference-Header-Content-Length
// header (nullopt when absent): the JSON is then its first bytes and the binary tensors
// follow, in input order. Checks the JSON's structure, every shape (dimensions >= 0, at
// most max_values elements), that each input's data holds exactly as many elements as its
// shape, each a value of its datatype (UINT8 within 0..255, BOOL true/false, BYTES
// strings, ...), and that the binary part is exactly what the inputs claim. Throws
// ProtocolError naming the input, field or header at fault.
InferRequest parse_infer_request(std::string_view body,
                                 const std::optional<std::string>& header_length,
                                 const ProtocolLimits& limits = {});

// Fills `in` (its name, datatype and shape set) from the little-endian binary data `raw`
// (a binary_data_size part, or a gRPC raw_input_contents entry): checks the size against
// shape x datatype, at most `max_values` elements, and every value's range. `index` names
// the input in errors. Throws ProtocolError.
void decode_binary_input(std::size_t index, RequestInput& in, std::string_view raw,
                         std::size_t max_values);

// Checks `in`'s values (set from typed data) against its shape and datatype, as for JSON.
void check_input_values(std::size_t index, const RequestInput& in, std::size_t max_values);

// One output tensor of a response: FP32 `data` (the server's models produce floats), or,
// when `indices` is set, INT64 `row_index` values (which input row each row of another
// output came from).
struct ResponseOutput {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
  bool binary = false;
  bool indices = false;
  std::vector<int64_t> row_index = {};

  std::string_view datatype() const { return indices ? "INT64" : "FP32"; }
  std::size_t byte_size() const {
    return indices ? row_index.size() * sizeof(int64_t) : data.size() * sizeof(float);
  }
  // The little-endian bytes of the values (the binary extension; gRPC raw contents).
  std::string_view bytes() const {
    return indices ? std::string_view(reinterpret_cast<const char*>(row_index.data()), byte_size())
                   : std::string_view(reinterpret_cast<const char*>(data.data()), byte_size());
  }
};

struct InferResponseHead {
  std::string model_name;     // omitted when empty
  std::string model_version;  // omitted when empty
  std::optional<std::string> id;
  nlohmann::json parameters = nlohmann::json::object();  // omitted when empty
};

struct EncodedResponse {
  std::string body;
  std::optional<std::size_t> header_length;  // set when binary outputs follow the JSON
};

// The 200 response body: JSON (FP32 values written in their shortest exact form), then
// the binary outputs in order, each announced by parameters.binary_data_size.
EncodedResponse encode_infer_response(const InferResponseHead& head,
                                      const std::vector<ResponseOutput>& outputs);

// The request body a client sends for `input` (used by the load generator and tests).
std::string make_infer_body(const FloatTensor& input, const std::string& id = "",
                            double slo_ms = 0.0);

// Serializes `doc`, replacing invalid UTF-8 (from request text) with U+FFFD instead of
// throwing. Every JSON answer goes through it.
std::string dump_json(const nlohmann::json& doc);

// {"error": message} plus optional fields.
std::string error_body(const std::string& message, const nlohmann::json& extra = {});

}  // namespace tessera
