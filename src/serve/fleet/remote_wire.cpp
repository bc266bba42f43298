#include "serve/fleet/remote_wire.hpp"

#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>

namespace tessera {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const RemoteExpect& e, const std::string& what) {
  throw RemoteReplyError("backend " + e.backend + ": bad reply: " + what);
}

// Appends the float's little-endian bytes (the platforms tessera builds on are
// little-endian, as the protocol's binary data is).
void append_floats(std::string& out, const std::vector<float>& data) {
  const std::size_t at = out.size();
  out.resize(at + data.size() * sizeof(float));
  if (!data.empty()) std::memcpy(out.data() + at, data.data(), data.size() * sizeof(float));
}

std::vector<int64_t> read_shape(const json& j, const std::string& field,
                                const std::function<void(const std::string&)>& fail) {
  if (!j.is_array()) fail(field + " must be an array of integers");
  if (j.size() > 16) fail(field + " has more than 16 dimensions");
  std::vector<int64_t> shape;
  for (const json& d : j) {
    if (!d.is_number_integer()) fail(field + " must be an array of integers");
    shape.push_back(d.get<int64_t>());
  }
  return shape;
}

// Flattens a JSON data array (flat or nested, as the protocol allows) into `out`, at most
// `limit` values.
void flatten(const json& j, std::vector<double>& out, std::size_t limit, const std::string& field,
             const RemoteExpect& e, int depth = 0) {
  if (depth > 16) bad(e, field + " is nested too deeply");
  for (const json& v : j) {
    if (v.is_array()) {
      flatten(v, out, limit, field, e, depth + 1);
    } else if (v.is_number()) {
      if (out.size() >= limit) bad(e, field + " holds more values than its shape");
      out.push_back(v.get<double>());
    } else if (v.is_boolean()) {
      if (out.size() >= limit) bad(e, field + " holds more values than its shape");
      out.push_back(v.get<bool>() ? 1.0 : 0.0);
    } else {
      bad(e, field + " holds a value that is not a number");
    }
  }
}

}  // namespace

RemoteRequestBody encode_remote_request(std::span<const FloatTensor* const> inputs,
                                        const std::string& id, const std::string& output_name,
                                        bool binary, const std::string& input_name) {
  std::vector<int64_t> shape{static_cast<int64_t>(inputs.size())};
  if (!inputs.empty()) shape.insert(shape.end(), inputs[0]->shape.begin(), inputs[0]->shape.end());
  std::size_t values = 0;
  for (const FloatTensor* t : inputs) values += t->data.size();
  json in = {{"name", input_name}, {"datatype", "FP32"}, {"shape", shape}};
  json doc = {{"id", id}};
  if (binary) {
    in["parameters"] = {{"binary_data_size", values * sizeof(float)}};
  } else {
    json data = json::array();
    for (const FloatTensor* t : inputs) {
      for (float v : t->data) data.push_back(v);
    }
    in["data"] = std::move(data);
  }
  doc["inputs"] = json::array({in});
  if (!output_name.empty()) {
    json out = {{"name", output_name}};
    if (binary) out["parameters"] = {{"binary_data", true}};
    doc["outputs"] = json::array({out});
  } else if (binary) {
    doc["parameters"] = {{"binary_data_output", true}};
  }
  RemoteRequestBody r;
  r.body = doc.dump();
  if (binary) {
    r.header_length = r.body.size();
    r.body.reserve(r.body.size() + values * sizeof(float));
    for (const FloatTensor* t : inputs) append_floats(r.body, t->data);
  }
  return r;
}

std::vector<FloatTensor> split_reply(const std::vector<ReplyTensor>& outputs,
                                     const RemoteExpect& e) {
  if (outputs.empty()) bad(e, "'outputs' is empty");
  const ReplyTensor* out = &outputs[0];
  std::string field = "outputs[0]";
  if (!e.output_name.empty()) {
    out = nullptr;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].name == e.output_name) {
        out = &outputs[i];
        field = "outputs[" + std::to_string(i) + "]";
      }
    }
    if (!out) bad(e, "no output named '" + e.output_name + "'");
  }
  const auto type = parse_datatype(out->datatype);
  if (!type || *type == DataType::kBytes) {
    bad(e, field + ".datatype '" + out->datatype.substr(0, 32) + "' is not a number type");
  }
  std::vector<int64_t> want{static_cast<int64_t>(e.batch)};
  want.insert(want.end(), e.output_shape.begin(), e.output_shape.end());
  if (out->shape != want) {
    bad(e, field + ".shape is " + shape_string(out->shape) + ", expected " + shape_string(want));
  }
  const auto n = static_cast<std::size_t>(shape_numel(want));
  std::vector<float> flat(n);
  if (out->raw) {
    const std::size_t size = datatype_size(*type);
    if (out->raw->size() != n * size) {
      bad(e, field + " has " + std::to_string(out->raw->size()) +
                 " bytes of binary data, expected " + std::to_string(n * size) + " (" +
                 std::to_string(n) + " x " + std::string(datatype_name(*type)) + ")");
    }
    const auto* p = reinterpret_cast<const unsigned char*>(out->raw->data());
    for (std::size_t i = 0; i < n; ++i) {
      flat[i] = static_cast<float>(decode_element(*type, p + i * size));
    }
  } else {
    if (out->values.size() != n) {
      bad(e, field + ".data has " + std::to_string(out->values.size()) + " values, expected " +
                 std::to_string(n));
    }
    for (std::size_t i = 0; i < n; ++i) flat[i] = static_cast<float>(out->values[i]);
  }
  std::vector<FloatTensor> items(e.batch);
  const std::size_t per = e.batch ? n / e.batch : 0;
  for (std::size_t i = 0; i < e.batch; ++i) {
    items[i].shape = e.output_shape;
    items[i].data.assign(flat.begin() + static_cast<std::ptrdiff_t>(i * per),
                         flat.begin() + static_cast<std::ptrdiff_t>((i + 1) * per));
  }
  return items;
}

std::vector<FloatTensor> decode_remote_reply(std::string_view body,
                                             std::optional<std::size_t> header_length,
                                             const RemoteExpect& e) {
  if (header_length && *header_length > body.size()) {
    bad(e, "Inference-Header-Content-Length " + std::to_string(*header_length) +
               " is more than the body's " + std::to_string(body.size()) + " bytes");
  }
  const std::string_view head = header_length ? body.substr(0, *header_length) : body;
  json doc = json::parse(head.begin(), head.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) bad(e, "the body is not JSON");
  if (!doc.is_object()) bad(e, "the body is not a JSON object");
  auto outs = doc.find("outputs");
  if (outs == doc.end() || !outs->is_array()) bad(e, "'outputs' is missing or not an array");
  if (outs->size() > 64) bad(e, "'outputs' has more than 64 entries");
  auto fail = [&e](const std::string& what) { bad(e, what); };
  std::size_t offset = head.size();
  std::vector<ReplyTensor> tensors;
  for (std::size_t i = 0; i < outs->size(); ++i) {
    const json& o = (*outs)[i];
    const std::string field = "outputs[" + std::to_string(i) + "]";
    if (!o.is_object()) bad(e, field + " is not an object");
    ReplyTensor t;
    auto name = o.find("name");
    if (name == o.end() || !name->is_string()) bad(e, field + ".name is missing or not a string");
    t.name = name->get<std::string>();
    auto dt = o.find("datatype");
    if (dt == o.end() || !dt->is_string()) bad(e, field + ".datatype is missing or not a string");
    t.datatype = dt->get<std::string>();
    if (const auto type = parse_datatype(t.datatype); !type || *type == DataType::kBytes) {
      bad(e, field + ".datatype '" + t.datatype.substr(0, 32) + "' is not a number type");
    }
    auto sh = o.find("shape");
    if (sh == o.end()) bad(e, field + ".shape is missing");
    t.shape = read_shape(*sh, field + ".shape", fail);
    int64_t count = 1;
    for (int64_t d : t.shape) {
      if (d < 0 || d > (int64_t{1} << 32)) bad(e, field + ".shape has a dimension out of range");
      count *= d;
      if (count > (int64_t{1} << 32)) bad(e, field + ".shape is too large");
    }
    std::optional<std::size_t> binary_size;
    if (auto p = o.find("parameters"); p != o.end() && p->is_object()) {
      if (auto b = p->find("binary_data_size"); b != p->end()) {
        if (!b->is_number_unsigned())
          bad(e, field + ".parameters.binary_data_size is not an integer >= 0");
        binary_size = b->get<std::size_t>();
      }
    }
    if (binary_size) {
      if (!header_length)
        bad(e, field + ": binary_data_size without Inference-Header-Content-Length");
      if (*binary_size > body.size() - offset) {
        bad(e, field + ".parameters.binary_data_size " + std::to_string(*binary_size) +
                   " runs past the body's end");
      }
      t.raw = body.substr(offset, *binary_size);
      offset += *binary_size;
    } else {
      auto data = o.find("data");
      if (data == o.end() || !data->is_array()) bad(e, field + ".data is missing or not an array");
      flatten(*data, t.values, static_cast<std::size_t>(count), field + ".data", e);
    }
    tensors.push_back(std::move(t));
  }
  return split_reply(tensors, e);
}

std::vector<int64_t> output_shape_from_metadata(std::string_view body, const std::string& backend,
                                                const std::string& output_name) {
  RemoteExpect e;
  e.backend = backend;
  json doc = json::parse(body.begin(), body.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) bad(e, "model metadata is not a JSON object");
  auto outs = doc.find("outputs");
  if (outs == doc.end() || !outs->is_array() || outs->empty()) {
    bad(e, "model metadata 'outputs' is missing or empty");
  }
  const json* chosen = nullptr;
  for (const json& o : *outs) {
    if (!o.is_object()) bad(e, "model metadata 'outputs' holds a non-object");
    auto n = o.find("name");
    if (output_name.empty() || (n != o.end() && n->is_string() && *n == output_name)) {
      chosen = &o;
      break;
    }
  }
  if (!chosen) bad(e, "model metadata has no output named '" + output_name + "'");
  auto sh = chosen->find("shape");
  if (sh == chosen->end()) bad(e, "model metadata output's shape is missing");
  std::vector<int64_t> shape =
      read_shape(*sh, "model metadata output's shape", [&e](const std::string& w) { bad(e, w); });
  if (shape.size() < 2) {
    bad(e, "model metadata output's shape " + shape_string(shape) +
               " has no batch dimension and item dimensions");
  }
  shape.erase(shape.begin());
  for (int64_t d : shape) {
    if (d < 1 || d > (1 << 20)) {
      bad(e,
          "model metadata output's shape has a variable or out-of-range item dimension; "
          "give remote.output");
    }
  }
  return shape;
}

}  // namespace tessera
