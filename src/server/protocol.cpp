#include "server/protocol.hpp"

#include <cmath>

namespace tessera {
namespace {

using nlohmann::json;

bool numeric_datatype(const std::string& t) {
  static const char* const kTypes[] = {"FP32",  "FP64",  "FP16",   "INT8",   "INT16", "INT32",
                                       "INT64", "UINT8", "UINT16", "UINT32", "UINT64"};
  for (const char* k : kTypes) {
    if (t == k) return true;
  }
  return false;
}

// Appends the numbers of a flat or nested array; throws on anything else.
void flatten(const json& data, std::vector<float>& out, std::size_t limit, int depth) {
  if (depth > 8) throw ProtocolError("'data' is nested more than 8 levels deep");
  for (const json& v : data) {
    if (v.is_array()) {
      flatten(v, out, limit, depth + 1);
    } else if (v.is_number()) {
      const double d = v.get<double>();
      if (!std::isfinite(d)) throw ProtocolError("'data' holds a value that is not finite");
      out.push_back(static_cast<float>(d));
    } else {
      throw ProtocolError("'data' must hold numbers only, found " + std::string(v.type_name()));
    }
    if (out.size() > limit) return;
  }
}

std::vector<int64_t> read_shape(const json& shape) {
  if (!shape.is_array()) throw ProtocolError("'shape' must be an array of integers");
  std::vector<int64_t> out;
  for (const json& d : shape) {
    if (!d.is_number_integer()) throw ProtocolError("'shape' must be an array of integers");
    out.push_back(d.get<int64_t>());
  }
  return out;
}

}  // namespace

InferRequest parse_infer_request(std::string_view body, const std::vector<int64_t>& input_shape) {
  json doc;
  try {
    doc = json::parse(body);
  } catch (const json::parse_error& e) {
    throw ProtocolError(std::string("invalid JSON: ") + e.what());
  }
  if (!doc.is_object()) throw ProtocolError("the request must be a JSON object");
  InferRequest req;
  if (auto it = doc.find("id"); it != doc.end()) {
    if (!it->is_string()) throw ProtocolError("'id' must be a string");
    req.id = it->get<std::string>();
  }
  if (auto it = doc.find("parameters"); it != doc.end()) {
    if (!it->is_object()) throw ProtocolError("'parameters' must be an object");
    if (auto slo = it->find("slo_ms"); slo != it->end()) {
      if (!slo->is_number() || !(slo->get<double>() > 0) || !std::isfinite(slo->get<double>())) {
        throw ProtocolError("'parameters.slo_ms' must be a number > 0");
      }
      req.slo_s = slo->get<double>() / 1000.0;
    }
  }
  auto inputs = doc.find("inputs");
  if (inputs == doc.end() || !inputs->is_array()) {
    throw ProtocolError("'inputs' must be an array with one input");
  }
  if (inputs->size() != 1) {
    throw ProtocolError("expected exactly 1 input, got " + std::to_string(inputs->size()));
  }
  const json& in = (*inputs)[0];
  if (!in.is_object()) throw ProtocolError("inputs[0] must be an object");
  auto datatype = in.find("datatype");
  if (datatype == in.end() || !datatype->is_string()) {
    throw ProtocolError("inputs[0].datatype is missing");
  }
  if (!numeric_datatype(datatype->get<std::string>())) {
    throw ProtocolError("inputs[0].datatype '" + datatype->get<std::string>() +
                        "' is not supported (use FP32 or another numeric type)");
  }
  auto shape_it = in.find("shape");
  if (shape_it == in.end()) throw ProtocolError("inputs[0].shape is missing");
  std::vector<int64_t> shape = read_shape(*shape_it);
  std::vector<int64_t> batched{1};
  batched.insert(batched.end(), input_shape.begin(), input_shape.end());
  if (shape != input_shape && shape != batched) {
    throw ProtocolError("inputs[0].shape " + shape_string(shape) + " does not match the model's " +
                        shape_string(input_shape) + " (or " + shape_string(batched) + ")");
  }
  auto data = in.find("data");
  if (data == in.end() || !data->is_array()) {
    throw ProtocolError("inputs[0].data must be an array of numbers");
  }
  const auto expected = static_cast<std::size_t>(shape_numel(input_shape));
  req.input.shape = input_shape;
  req.input.data.reserve(expected);
  flatten(*data, req.input.data, expected, 0);
  if (req.input.data.size() != expected) {
    throw ProtocolError(
        "inputs[0].data holds " +
        (req.input.data.size() > expected ? std::string("more than ") : std::string()) +
        std::to_string(req.input.data.size()) + " values; shape " + shape_string(shape) +
        " needs " + std::to_string(expected));
  }
  return req;
}

std::string make_infer_body(const FloatTensor& input, const std::string& id, double slo_ms) {
  json in = {{"name", "input"}, {"datatype", "FP32"}, {"shape", input.shape}, {"data", input.data}};
  json doc = {{"inputs", json::array({in})}};
  if (!id.empty()) doc["id"] = id;
  if (slo_ms > 0) doc["parameters"] = {{"slo_ms", slo_ms}};
  return doc.dump();
}

std::string infer_response(const std::string& model, const InferRequest& request,
                           const Answer& answer) {
  json doc;
  doc["model_name"] = model;
  doc["model_version"] = "1";
  if (request.id) doc["id"] = *request.id;
  doc["parameters"] = {{"outcome", answer.kind == AnswerKind::kOk ? "ok" : "late"},
                       {"latency_ms", answer.latency * 1e3},
                       {"accuracy", answer.accuracy}};
  json outputs = json::array();
  for (const NamedOutput& o : answer.outputs) {
    outputs.push_back({{"name", o.name},
                       {"datatype", "FP32"},
                       {"shape", o.tensor.shape},
                       {"data", o.tensor.data}});
  }
  doc["outputs"] = std::move(outputs);
  return doc.dump();
}

std::string error_body(const std::string& message, const nlohmann::json& extra) {
  json doc = extra.is_object() ? extra : json::object();
  doc["error"] = message;
  return doc.dump();
}

}  // namespace tessera
