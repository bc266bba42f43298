#pragma once

// The wire side of a remote model (server/remote_model.hpp): one batch as one Open
// Inference Protocol v2 request with a leading batch dimension, and the checks of the
// backend's reply. Every problem with a reply is a RemoteReplyError naming the backend and
// the field at fault; nothing a backend sends can crash the caller or make it read more
// than the reply it holds. Pure functions; thread-safe.

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "models/tensor.hpp"
#include "serve/kserve/datatype.hpp"

namespace tessera {

class RemoteReplyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a reply must hold.
struct RemoteExpect {
  std::string backend;                // names the backend in errors ("http://h:p")
  std::string output_name;            // "" = the first output
  std::vector<int64_t> output_shape;  // per item
  std::size_t batch = 0;              // items in the request
};

struct RemoteRequestBody {
  std::string body;
  std::optional<std::size_t> header_length;  // Inference-Header-Content-Length (binary)
};

// The batch as one request: input `input_name`, FP32, shape [batch, item shape...], as the
// binary tensor data extension (binary = true) or JSON data; asks for `output_name` (all
// outputs if empty) in binary when `binary`.
RemoteRequestBody encode_remote_request(std::span<const FloatTensor* const> inputs,
                                        const std::string& id, const std::string& output_name,
                                        bool binary, const std::string& input_name = "input");

// One output tensor as a backend sent it: its raw little-endian bytes (binary or gRPC raw
// contents) or its values (JSON or typed gRPC contents).
struct ReplyTensor {
  std::string name;
  std::string datatype;
  std::vector<int64_t> shape;
  std::optional<std::string_view> raw;
  std::vector<double> values;
};

// Checks the chosen output's name, datatype (a number type), shape ([batch] + the
// expected item shape) and element count, and splits it into one tensor per item.
std::vector<FloatTensor> split_reply(const std::vector<ReplyTensor>& outputs,
                                     const RemoteExpect& expect);

// Parses an HTTP reply body (JSON, then the binary outputs when header_length is set) and
// returns split_reply's items.
std::vector<FloatTensor> decode_remote_reply(std::string_view body,
                                             std::optional<std::size_t> header_length,
                                             const RemoteExpect& expect);

// The per-item shape of a model's output in a model metadata document (GET
// /v2/models/NAME): the named output (or the first), its leading batch dimension
// (-1 or any) removed. Throws RemoteReplyError naming the backend and field.
std::vector<int64_t> output_shape_from_metadata(std::string_view body, const std::string& backend,
                                                const std::string& output_name);

}  // namespace tessera
