#include "serve/kserve/protocol.hpp"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>

namespace tessera {
namespace {

using nlohmann::json;

// Where a JSON value sits in an inference request.
enum class Ctx {
  kRoot,
  kRootParams,
  kInputs,
  kInput,
  kInputParams,
  kShape,
  kData,
  kOutputs,
  kOutput,
  kOutputParams,
};
enum class Slot {
  kRoot,
  kId,
  kRootParams,
  kInputs,
  kInput,
  kInName,
  kInDatatype,
  kShape,
  kShapeItem,
  kInputParams,
  kData,
  kDataItem,
  kOutputs,
  kOutput,
  kOutName,
  kOutputParams,
  kParamValue,
  kOther,
};

// What the SAX pass saw of one input besides its values.
struct InputSeen {
  std::optional<std::string> datatype;
  bool shape = false, data = false;
  std::size_t numbers = 0, bools = 0, strings = 0;
};

// Reads an inference request from the JSON's SAX events without building a tree: the
// memory kept is the request's structure plus at most limits.max_values values.
class InferSax {
 public:
  using json_t = json;
  InferSax(InferRequest& req, const ProtocolLimits& limits) : req_(req), limits_(limits) {
    stack_.reserve(8);  // a request nests 5 deep: one allocation, not one per level
  }

  const std::string& error() const { return error_; }
  std::vector<InputSeen> seen;
  bool inputs_seen = false;

  bool null() { return scalar("null"); }
  bool boolean(bool v) {
    if (other_ > 0) return true;
    switch (here()) {
      case Slot::kParamValue:
        return param(json(v));
      case Slot::kDataItem:
        ++seen.back().bools;
        return value(v ? 1.0 : 0.0);
      default:
        return scalar("boolean");
    }
  }
  bool number_integer(json::number_integer_t v) { return number(json(v), static_cast<double>(v)); }
  bool number_unsigned(json::number_unsigned_t v) {
    return number(json(v), static_cast<double>(v), v > static_cast<uint64_t>(INT64_MAX));
  }
  bool number_float(json::number_float_t v, const json::string_t&) {
    if (other_ == 0 && here() == Slot::kShapeItem)
      return fail(where() + "shape must hold integers");
    return number(json(v), v);
  }
  bool binary(json::binary_t&) { return scalar("binary"); }
  bool string(json::string_t& v) {
    if (other_ > 0) return true;
    switch (here()) {
      case Slot::kId:
        req_.id = v;
        return next();
      case Slot::kInName:
        req_.inputs.back().name = v;
        return next();
      case Slot::kInDatatype:
        seen.back().datatype = v;
        return next();
      case Slot::kOutName:
        req_.outputs.back().name = v;
        return next();
      case Slot::kParamValue:
        return param(json(v));
      case Slot::kDataItem:
        ++seen.back().strings;
        if (++values_ > limits_.max_values) return too_many();
        req_.inputs.back().bytes.push_back(v);
        return next();
      case Slot::kOther:
        return next();
      default:
        return scalar("string");
    }
  }
  bool start_object(std::size_t) {
    if (other_ > 0) return ++other_, true;
    const Slot slot = here();
    Ctx ctx;
    switch (slot) {
      case Slot::kOther:
        return ++other_, true;
      case Slot::kRoot:
        ctx = Ctx::kRoot;
        break;
      case Slot::kRootParams:
        ctx = Ctx::kRootParams;
        break;
      case Slot::kInputParams:
        ctx = Ctx::kInputParams;
        break;
      case Slot::kOutputParams:
        ctx = Ctx::kOutputParams;
        break;
      case Slot::kInput:
        if (req_.inputs.size() >= limits_.max_inputs) {
          return fail("more than " + std::to_string(limits_.max_inputs) + " inputs");
        }
        req_.inputs.emplace_back();
        seen.emplace_back();
        ctx = Ctx::kInput;
        break;
      case Slot::kOutput:
        if (req_.outputs.size() >= limits_.max_outputs) {
          return fail("more than " + std::to_string(limits_.max_outputs) + " requested outputs");
        }
        req_.outputs.emplace_back();
        ctx = Ctx::kOutput;
        break;
      default:
        return type_error(slot);
    }
    stack_.push_back(Frame{ctx, {}, 0, {}});
    return true;
  }
  bool start_array(std::size_t) {
    if (other_ > 0) return ++other_, true;
    const Slot slot = here();
    Ctx ctx;
    switch (slot) {
      case Slot::kOther:
        return ++other_, true;
      case Slot::kInputs:
        inputs_seen = true;
        ctx = Ctx::kInputs;
        break;
      case Slot::kOutputs:
        ctx = Ctx::kOutputs;
        break;
      case Slot::kShape:
        seen.back().shape = true;
        ctx = Ctx::kShape;
        break;
      case Slot::kData:
        seen.back().data = true;
        data_depth_ = 1;
        ctx = Ctx::kData;
        break;
      case Slot::kDataItem:
        if (++data_depth_ > 32) return fail(where() + "data is nested more than 32 levels deep");
        ctx = Ctx::kData;
        break;
      default:
        return type_error(slot);
    }
    stack_.push_back(Frame{ctx, {}, 0, {}});
    return true;
  }
  bool end_object() { return end(); }
  bool end_array() {
    if (other_ == 0 && !stack_.empty() && stack_.back().ctx == Ctx::kData) --data_depth_;
    return end();
  }
  bool key(json::string_t& k) {
    if (other_ > 0) return true;
    Frame& f = stack_.back();
    // A repeated key would silently replace the first: refuse it.
    for (const std::string& s : f.keys) {
      if (s == k) return fail(where() + "duplicate key '" + k + "'");
    }
    const bool params =
        f.ctx == Ctx::kRootParams || f.ctx == Ctx::kInputParams || f.ctx == Ctx::kOutputParams;
    if (params && f.keys.size() >= limits_.max_parameters) {
      return fail(where() + "more than " + std::to_string(limits_.max_parameters) + " parameters");
    }
    if (f.keys.empty()) f.keys.reserve(8);
    f.keys.push_back(k);
    f.key = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    return fail(std::string("invalid JSON: ") + e.what());
  }

 private:
  struct Frame {
    Ctx ctx;
    std::string key;    // objects: the current key
    std::size_t index;  // arrays: the next element's index
    std::vector<std::string> keys;
  };

  Slot here() const {
    if (stack_.empty()) return Slot::kRoot;
    const Frame& f = stack_.back();
    switch (f.ctx) {
      case Ctx::kRoot:
        if (f.key == "id") return Slot::kId;
        if (f.key == "parameters") return Slot::kRootParams;
        if (f.key == "inputs") return Slot::kInputs;
        if (f.key == "outputs") return Slot::kOutputs;
        return Slot::kOther;
      case Ctx::kRootParams:
      case Ctx::kInputParams:
      case Ctx::kOutputParams:
        return Slot::kParamValue;
      case Ctx::kInputs:
        return Slot::kInput;
      case Ctx::kInput:
        if (f.key == "name") return Slot::kInName;
        if (f.key == "datatype") return Slot::kInDatatype;
        if (f.key == "shape") return Slot::kShape;
        if (f.key == "parameters") return Slot::kInputParams;
        if (f.key == "data") return Slot::kData;
        return Slot::kOther;
      case Ctx::kShape:
        return Slot::kShapeItem;
      case Ctx::kData:
        return Slot::kDataItem;
      case Ctx::kOutputs:
        return Slot::kOutput;
      case Ctx::kOutput:
        if (f.key == "name") return Slot::kOutName;
        if (f.key == "parameters") return Slot::kOutputParams;
        return Slot::kOther;
    }
    return Slot::kOther;
  }

  // "inputs[2]: " inside an input, "outputs[0]: " inside an output, else "".
  std::string where() const {
    for (auto it = stack_.rbegin(); it != stack_.rend(); ++it) {
      if (it->ctx == Ctx::kInput) return "inputs[" + std::to_string(req_.inputs.size() - 1) + "]: ";
      if (it->ctx == Ctx::kOutput) {
        return "outputs[" + std::to_string(req_.outputs.size() - 1) + "]: ";
      }
    }
    return "";
  }

  bool next() {
    if (!stack_.empty()) ++stack_.back().index;
    return true;
  }
  bool end() {
    if (other_ > 0) {
      if (--other_ == 0) return next();
      return true;
    }
    stack_.pop_back();
    return next();
  }
  bool fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }
  bool too_many() {
    return fail("the request holds more than " + std::to_string(limits_.max_values) +
                " tensor elements");
  }
  bool value(double v) {
    if (++values_ > limits_.max_values) return too_many();
    auto& values = req_.inputs.back().values;
    if (values.empty()) values.reserve(16);
    values.push_back(v);
    return next();
  }
  json& params() {
    switch (stack_.back().ctx) {
      case Ctx::kInputParams:
        return req_.inputs.back().parameters;
      case Ctx::kOutputParams:
        return req_.outputs.back().parameters;
      default:
        return req_.parameters;
    }
  }
  bool param(json v) {
    params()[stack_.back().key] = std::move(v);
    return next();
  }
  bool number(json j, double v, bool above_int64 = false) {
    if (other_ > 0) return true;
    const Slot slot = here();
    switch (slot) {
      case Slot::kParamValue:
        return param(std::move(j));
      case Slot::kShapeItem:
        if (above_int64 || v < 0) {
          return fail(where() + "shape dimension " + j.dump() + " is not in 0.." +
                      std::to_string(INT64_MAX));
        }
        if (req_.inputs.back().shape.size() >= limits_.max_dims) {
          return fail(where() + "shape has more than " + std::to_string(limits_.max_dims) +
                      " dimensions");
        }
        if (req_.inputs.back().shape.empty()) req_.inputs.back().shape.reserve(4);
        req_.inputs.back().shape.push_back(j.get<int64_t>());
        return next();
      case Slot::kDataItem:
        ++seen.back().numbers;
        return value(v);
      case Slot::kOther:
        return next();
      default:
        return type_error(slot);
    }
  }
  bool scalar(const char* type) {
    if (other_ > 0) return true;
    const Slot slot = here();
    if (slot == Slot::kOther) return next();
    if (slot == Slot::kDataItem) return fail(where() + "data holds a " + type);
    if (slot == Slot::kParamValue) {
      return fail(where() + "parameter '" + stack_.back().key +
                  "' must be a string, number or boolean");
    }
    return type_error(slot);
  }
  bool type_error(Slot slot) {
    switch (slot) {
      case Slot::kRoot:
        return fail("the request must be a JSON object");
      case Slot::kId:
        return fail("'id' must be a string");
      case Slot::kRootParams:
      case Slot::kInputParams:
      case Slot::kOutputParams:
        return fail(where() + "'parameters' must be an object");
      case Slot::kParamValue:
        return fail(where() + "parameter '" + stack_.back().key +
                    "' must be a string, number or boolean");
      case Slot::kInputs:
        return fail("'inputs' must be an array of input tensors");
      case Slot::kInput:
        return fail("each of 'inputs' must be an object");
      case Slot::kInName:
        return fail(where() + "name must be a string");
      case Slot::kInDatatype:
        return fail(where() + "datatype must be a string");
      case Slot::kShape:
      case Slot::kShapeItem:
        return fail(where() + "shape must be an array of integers");
      case Slot::kData:
      case Slot::kDataItem:
        return fail(where() + "data must be an array");
      case Slot::kOutputs:
        return fail("'outputs' must be an array of requested outputs");
      case Slot::kOutput:
        return fail("each of 'outputs' must be an object");
      case Slot::kOutName:
        return fail(where() + "name must be a string");
      case Slot::kOther:
        break;
    }
    return true;
  }

  InferRequest& req_;
  const ProtocolLimits& limits_;
  std::string error_;
  std::vector<Frame> stack_;
  std::size_t other_ = 0;  // depth inside an ignored value
  int data_depth_ = 0;
  std::size_t values_ = 0;
};

std::string label(std::size_t i, const RequestInput& in) {
  std::string s = "inputs[" + std::to_string(i) + "]";
  if (!in.name.empty()) s += " ('" + in.name + "')";
  return s;
}

std::string range_text(DataType t) {
  switch (t) {
    case DataType::kBool:
      return "true or false";
    case DataType::kUint8:
      return "an integer in 0..255";
    case DataType::kUint16:
      return "an integer in 0..65535";
    case DataType::kUint32:
      return "an integer in 0..4294967295";
    case DataType::kUint64:
      return "an integer in 0..18446744073709551615";
    case DataType::kInt8:
      return "an integer in -128..127";
    case DataType::kInt16:
      return "an integer in -32768..32767";
    case DataType::kInt32:
      return "an integer in -2147483648..2147483647";
    case DataType::kInt64:
      return "an integer in -9223372036854775808..9223372036854775807";
    case DataType::kFp16:
      return "a finite number within +-65504";
    case DataType::kFp32:
      return "a finite number within +-3.4e38";
    case DataType::kFp64:
      return "a finite number";
    case DataType::kBytes:
      break;
  }
  return "a string";
}

std::string number_text(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// The elements a shape holds, or nullopt when more than `limit`.
std::optional<std::size_t> elements(const std::vector<int64_t>& shape, std::size_t limit) {
  std::size_t n = 1;
  for (int64_t d : shape) {
    const auto u = static_cast<std::size_t>(d);
    if (u == 0) return 0;
    if (n > limit / u) return std::nullopt;
    n *= u;
  }
  return n <= limit ? std::optional(n) : std::nullopt;
}

std::size_t parse_header_length(const std::string& text, std::size_t body_size) {
  std::size_t n = 0;
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, n);
  if (text.empty() || r.ec != std::errc() || r.ptr != end) {
    throw ProtocolError("Inference-Header-Content-Length '" + text.substr(0, 40) +
                        "' is not a byte count");
  }
  if (n > body_size) {
    throw ProtocolError("Inference-Header-Content-Length " + std::to_string(n) +
                        " is larger than the body (" + std::to_string(body_size) + " bytes)");
  }
  return n;
}

void check_json_values(std::size_t i, RequestInput& in, const InputSeen& seen) {
  const std::string who = label(i, in);
  if (in.datatype == DataType::kBytes) {
    if (seen.numbers + seen.bools > 0) throw ProtocolError(who + ": BYTES data must be strings");
    return;
  }
  if (seen.strings > 0) {
    throw ProtocolError(who + ": " + std::string(datatype_name(in.datatype)) +
                        " data must hold numbers only, found a string");
  }
  if (in.datatype == DataType::kBool && seen.numbers > 0) {
    throw ProtocolError(who + ": BOOL data must hold true / false only, found a number");
  }
  if (in.datatype != DataType::kBool && seen.bools > 0) {
    throw ProtocolError(who + ": " + std::string(datatype_name(in.datatype)) +
                        " data must hold numbers only, found a boolean");
  }
  for (std::size_t k = 0; k < in.values.size(); ++k) {
    if (!in_range(in.datatype, in.values[k])) {
      throw ProtocolError(who + ": data[" + std::to_string(k) + "] = " + number_text(in.values[k]) +
                          " is not " + range_text(in.datatype) + " (" +
                          std::string(datatype_name(in.datatype)) + ")");
    }
  }
}

// Decodes input `in`'s binary data (`size` bytes at `p`).
void decode_binary(std::size_t i, RequestInput& in, std::size_t count, const unsigned char* p,
                   std::size_t size) {
  const std::string who = label(i, in);
  if (in.datatype == DataType::kBytes) {
    std::size_t at = 0;
    in.bytes.reserve(count);
    while (at < size) {
      if (size - at < 4) throw ProtocolError(who + ": BYTES binary data ends inside a length");
      uint32_t len = 0;
      std::memcpy(&len, p + at, 4);
      at += 4;
      if (len > size - at) {
        throw ProtocolError(who + ": BYTES element " + std::to_string(in.bytes.size()) +
                            " claims " + std::to_string(len) + " bytes; only " +
                            std::to_string(size - at) + " follow");
      }
      if (in.bytes.size() == count) {
        throw ProtocolError(who + ": BYTES binary data holds more than the shape's " +
                            std::to_string(count) + " elements");
      }
      in.bytes.emplace_back(reinterpret_cast<const char*>(p + at), len);
      at += len;
    }
    if (in.bytes.size() != count) {
      throw ProtocolError(who + ": BYTES binary data holds " + std::to_string(in.bytes.size()) +
                          " elements; shape " + shape_string(in.shape) + " needs " +
                          std::to_string(count));
    }
    return;
  }
  const std::size_t es = datatype_size(in.datatype);
  if (size != count * es) {
    throw ProtocolError(who + ": binary_data_size " + std::to_string(size) +
                        " does not match shape " + shape_string(in.shape) + " of " +
                        std::string(datatype_name(in.datatype)) + " (" +
                        std::to_string(count * es) + " bytes)");
  }
  in.values.resize(count);
  for (std::size_t k = 0; k < count; ++k) {
    const double v = decode_element(in.datatype, p + k * es);
    if (!in_range(in.datatype, v)) {
      throw ProtocolError(who + ": element " + std::to_string(k) + " = " + number_text(v) +
                          " is not " + range_text(in.datatype));
    }
    in.values[k] = v;
  }
}

// `s` as a JSON string, exactly as dump_json(s) writes it: printable ASCII without a
// quote or backslash is copied as is (no json value, no temporary string); anything
// else goes through dump_json.
void append_json_string(std::string& out, const std::string& s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
      out += dump_json(s);
      return;
    }
  }
  out += '"';
  out += s;
  out += '"';
}

void append_float(std::string& out, float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_shape(std::string& out, const std::vector<int64_t>& shape) {
  out += '[';
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ',';
    char buf[24];
    out.append(buf, std::to_chars(buf, buf + sizeof buf, shape[i]).ptr);
  }
  out += ']';
}

}  // namespace

std::string dump_json(const json& doc) {
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

InferRequest parse_infer_request(std::string_view body,
                                 const std::optional<std::string>& header_length,
                                 const ProtocolLimits& limits) {
  InferRequest req;
  std::string_view text = body;
  std::string_view binary;
  if (header_length) {
    const std::size_t n = parse_header_length(*header_length, body.size());
    text = body.substr(0, n);
    binary = body.substr(n);
  }
  InferSax sax(req, limits);
  const bool parsed = json::sax_parse(text, &sax);
  if (!parsed || !sax.error().empty()) {
    throw ProtocolError(sax.error().empty() ? std::string("invalid JSON") : sax.error());
  }
  if (!sax.inputs_seen) throw ProtocolError("'inputs' is missing");

  // Request parameters the server reads.
  if (auto it = req.parameters.find("slo_ms"); it != req.parameters.end()) {
    if (!it->is_number() || !(it->get<double>() > 0) || !std::isfinite(it->get<double>())) {
      throw ProtocolError("'parameters.slo_ms' must be a number > 0");
    }
    req.slo_s = it->get<double>() / 1000.0;
  }
  if (auto it = req.parameters.find("binary_data_output"); it != req.parameters.end()) {
    if (!it->is_boolean()) throw ProtocolError("'parameters.binary_data_output' must be a boolean");
    req.binary_data_output = it->get<bool>();
  }
  for (std::size_t o = 0; o < req.outputs.size(); ++o) {
    RequestedOutput& out = req.outputs[o];
    if (out.name.empty())
      throw ProtocolError("outputs[" + std::to_string(o) + "]: name is missing");
    out.binary = req.binary_data_output;
    if (auto it = out.parameters.find("binary_data"); it != out.parameters.end()) {
      if (!it->is_boolean()) {
        throw ProtocolError("outputs[" + std::to_string(o) + "]: binary_data must be a boolean");
      }
      out.binary = it->get<bool>();
    }
    for (std::size_t p = 0; p < o; ++p) {
      if (req.outputs[p].name == out.name) {
        throw ProtocolError("output '" + out.name + "' is requested twice");
      }
    }
  }

  std::size_t offset = 0;  // into `binary`
  std::size_t total = 0;   // elements over all inputs
  for (std::size_t i = 0; i < req.inputs.size(); ++i) {
    RequestInput& in = req.inputs[i];
    const InputSeen& seen = sax.seen[i];
    const std::string who = label(i, in);
    if (!seen.datatype) throw ProtocolError(who + ": datatype is missing");
    const auto type = parse_datatype(*seen.datatype);
    if (!type) {
      throw ProtocolError(who + ": datatype '" + *seen.datatype +
                          "' is not one of BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, "
                          "INT32, INT64, FP16, FP32, FP64, BYTES");
    }
    in.datatype = *type;
    if (!seen.shape) throw ProtocolError(who + ": shape is missing");
    const auto count = elements(in.shape, limits.max_values - total);
    if (!count) {
      throw ProtocolError(who + ": shape " + shape_string(in.shape) + " holds more than " +
                          std::to_string(limits.max_values - total) +
                          " elements (the request's limit is " + std::to_string(limits.max_values) +
                          ")");
    }
    total += *count;
    for (std::size_t p = 0; p < i; ++p) {
      if (!in.name.empty() && req.inputs[p].name == in.name) {
        throw ProtocolError("input '" + in.name + "' is given twice");
      }
    }
    const auto size_it = in.parameters.find("binary_data_size");
    if (size_it != in.parameters.end()) {
      if (!header_length) {
        throw ProtocolError(who +
                            ": binary_data_size is given but the request has no "
                            "Inference-Header-Content-Length header");
      }
      if (!size_it->is_number_integer() || size_it->get<int64_t>() < 0) {
        throw ProtocolError(who + ": binary_data_size must be an integer >= 0");
      }
      if (seen.data) throw ProtocolError(who + ": has both data and binary_data_size");
      const auto size = static_cast<std::size_t>(size_it->get<int64_t>());
      if (size > binary.size() - offset) {
        throw ProtocolError(who + ": truncated binary data: binary_data_size " +
                            std::to_string(size) + " but only " +
                            std::to_string(binary.size() - offset) + " bytes follow");
      }
      in.binary = true;
      decode_binary(i, in, *count, reinterpret_cast<const unsigned char*>(binary.data()) + offset,
                    size);
      offset += size;
      continue;
    }
    if (!seen.data) throw ProtocolError(who + ": data is missing");
    const std::size_t got = seen.numbers + seen.bools + seen.strings;
    if (got != *count) {
      throw ProtocolError(who + ": data holds " + std::to_string(got) + " values; shape " +
                          shape_string(in.shape) + " needs " + std::to_string(*count));
    }
    check_json_values(i, in, seen);
  }
  if (offset != binary.size()) {
    throw ProtocolError(std::to_string(binary.size() - offset) +
                        " bytes of binary data follow the JSON that no input's "
                        "binary_data_size claims");
  }
  return req;
}

void decode_binary_input(std::size_t index, RequestInput& in, std::string_view raw,
                         std::size_t max_values) {
  const auto count = elements(in.shape, max_values);
  if (!count) {
    throw ProtocolError(label(index, in) + ": shape " + shape_string(in.shape) +
                        " holds more than " + std::to_string(max_values) + " elements");
  }
  in.binary = true;
  decode_binary(index, in, *count, reinterpret_cast<const unsigned char*>(raw.data()), raw.size());
}

void check_input_values(std::size_t index, const RequestInput& in, std::size_t max_values) {
  const std::string who = label(index, in);
  const auto count = elements(in.shape, max_values);
  if (!count) {
    throw ProtocolError(who + ": shape " + shape_string(in.shape) + " holds more than " +
                        std::to_string(max_values) + " elements");
  }
  const std::size_t got = in.datatype == DataType::kBytes ? in.bytes.size() : in.values.size();
  if (got != *count) {
    throw ProtocolError(who + ": contents hold " + std::to_string(got) + " values; shape " +
                        shape_string(in.shape) + " needs " + std::to_string(*count));
  }
  for (std::size_t k = 0; k < in.values.size(); ++k) {
    if (!in_range(in.datatype, in.values[k])) {
      throw ProtocolError(who + ": element " + std::to_string(k) + " = " +
                          number_text(in.values[k]) + " is not " + range_text(in.datatype));
    }
  }
}

EncodedResponse encode_infer_response(const InferResponseHead& head,
                                      const std::vector<ResponseOutput>& outputs) {
  EncodedResponse r;
  std::string& out = r.body;
  std::size_t values = 0;
  for (const ResponseOutput& o : outputs) values += o.data.size() + o.row_index.size();
  out.reserve(128 + values * 12);
  out += '{';
  bool first = true;
  const auto field = [&](const char* name) {
    if (!first) out += ',';
    first = false;
    out += '"';
    out += name;
    out += "\":";
  };
  if (!head.model_name.empty()) field("model_name"), append_json_string(out, head.model_name);
  if (!head.model_version.empty()) {
    field("model_version"), append_json_string(out, head.model_version);
  }
  if (head.id) field("id"), append_json_string(out, *head.id);
  if (head.parameters.is_object() && !head.parameters.empty()) {
    field("parameters"), out += dump_json(head.parameters);
  }
  field("outputs");
  out += '[';
  bool any_binary = false;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const ResponseOutput& o = outputs[i];
    if (i) out += ',';
    out += "{\"name\":";
    append_json_string(out, o.name);
    out += ",\"datatype\":\"";
    out += o.datatype();
    out += "\",\"shape\":";
    append_shape(out, o.shape);
    if (o.binary) {
      any_binary = true;
      out += ",\"parameters\":{\"binary_data_size\":" + std::to_string(o.byte_size()) + "}}";
      continue;
    }
    out += ",\"data\":";
    if (o.indices) {
      append_shape(out, o.row_index);  // a list of integers, as a shape is written
    } else {
      out += '[';
      for (std::size_t k = 0; k < o.data.size(); ++k) {
        if (k) out += ',';
        append_float(out, o.data[k]);
      }
      out += ']';
    }
    out += '}';
  }
  out += "]}";
  if (any_binary) {
    r.header_length = out.size();
    for (const ResponseOutput& o : outputs) {
      if (!o.binary) continue;
      static_assert(std::endian::native == std::endian::little);
      out.append(o.bytes());
    }
  }
  return r;
}

std::string make_infer_body(const FloatTensor& input, const std::string& id, double slo_ms) {
  json in = {{"name", "input"}, {"datatype", "FP32"}, {"shape", input.shape}, {"data", input.data}};
  json doc = {{"inputs", json::array({in})}};
  if (!id.empty()) doc["id"] = id;
  if (slo_ms > 0) doc["parameters"] = {{"slo_ms", slo_ms}};
  return dump_json(doc);
}

std::string error_body(const std::string& message, const nlohmann::json& extra) {
  json doc = extra.is_object() ? extra : json::object();
  doc["error"] = message;
  return dump_json(doc);
}

}  // namespace tessera
