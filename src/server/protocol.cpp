#include "server/protocol.hpp"

#include <cmath>
#include <cstdint>
#include <optional>
#include <set>

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

// Reads an inference request straight from the body's SAX events, without building a
// JSON tree: memory is the body plus the input's floats (at most one more value than the
// model takes is kept), whatever the body holds. Every error stops the parse.
class InferSax {
 public:
  using json_t = json;
  InferSax(InferRequest& req, std::size_t expected) : req_(req), expected_(expected) {
    req_.input.data.reserve(expected);
  }

  // The outcome: empty if the events formed a valid request so far.
  const std::string& error() const { return error_; }
  bool inputs_seen = false, shape_seen = false, data_seen = false;
  std::size_t inputs_count = 0, data_count = 0;
  std::optional<std::string> datatype;
  std::vector<int64_t> shape;

  bool null() { return scalar("null"); }
  bool boolean(bool) { return scalar("boolean"); }
  bool number_integer(json::number_integer_t v) { return number(static_cast<double>(v), true); }
  bool number_unsigned(json::number_unsigned_t v) {
    return number(static_cast<double>(v), v <= static_cast<uint64_t>(INT64_MAX));
  }
  bool number_float(json::number_float_t v, const json::string_t&) { return number(v, false); }
  bool binary(json::binary_t&) { return scalar("binary"); }
  bool string(json::string_t& v) {
    if (other_ > 0) return true;
    switch (here()) {
      case Loc::kId:
        req_.id = v;
        return after_value();
      case Loc::kDatatype:
        datatype = v;
        return after_value();
      case Loc::kOther:
        return after_value();
      default:
        return scalar("string");
    }
  }
  bool start_object(std::size_t) {
    if (other_ > 0) return ++other_, true;
    const Loc loc = here();
    if (loc == Loc::kOther) return ++other_, true;
    if (loc != Loc::kRoot && loc != Loc::kParameters && loc != Loc::kInput0) {
      return type_error(loc, "object");
    }
    stack_.push_back(Frame{loc, false, 0, {}});
    return true;
  }
  bool start_array(std::size_t) {
    if (other_ > 0) return ++other_, true;
    const Loc loc = here();
    switch (loc) {
      case Loc::kOther:
        return ++other_, true;
      case Loc::kInputs:
        inputs_seen = true;
        break;
      case Loc::kShape:
        shape_seen = true;
        break;
      case Loc::kData:
        data_seen = true;
        data_depth_ = 1;
        break;
      case Loc::kDataItem:
        if (++data_depth_ > 9) return fail("'data' is nested more than 8 levels deep");
        break;
      default:
        return type_error(loc, "array");
    }
    stack_.push_back(Frame{loc, true, 0, {}});
    return true;
  }
  bool end_object() { return end(); }
  bool end_array() {
    if (other_ == 0 && !stack_.empty() &&
        (stack_.back().loc == Loc::kData || stack_.back().loc == Loc::kDataItem)) {
      --data_depth_;
    }
    if (other_ == 0 && !stack_.empty() && stack_.back().loc == Loc::kInputs) {
      inputs_count = stack_.back().index;
    }
    return end();
  }
  bool key(json::string_t& k) {
    if (other_ > 0) return true;
    Frame& f = stack_.back();
    f.key = k;
    // A repeated key that matters would silently replace the first: refuse it.
    const bool tracked =
        (f.loc == Loc::kRoot && (k == "id" || k == "parameters" || k == "inputs")) ||
        (f.loc == Loc::kParameters && k == "slo_ms") ||
        (f.loc == Loc::kInput0 && (k == "datatype" || k == "shape" || k == "data"));
    if (tracked && !seen_.insert(std::to_string(static_cast<int>(f.loc)) + "/" + k).second) {
      return fail("duplicate key '" + k + "'");
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    return fail(std::string("invalid JSON: ") + e.what());
  }

 private:
  enum class Loc {
    kRoot,
    kId,
    kParameters,
    kSlo,
    kInputs,
    kInput0,
    kDatatype,
    kShape,
    kShapeItem,
    kData,
    kDataItem,
    kOther
  };
  struct Frame {
    Loc loc;
    bool array;
    std::size_t index;  // arrays: the next element's index
    std::string key;    // objects: the current key
  };

  // Where the next value goes.
  Loc here() const {
    if (stack_.empty()) return Loc::kRoot;
    const Frame& f = stack_.back();
    switch (f.loc) {
      case Loc::kRoot:
        if (f.key == "id") return Loc::kId;
        if (f.key == "parameters") return Loc::kParameters;
        if (f.key == "inputs") return Loc::kInputs;
        return Loc::kOther;
      case Loc::kParameters:
        return f.key == "slo_ms" ? Loc::kSlo : Loc::kOther;
      case Loc::kInputs:
        return f.index == 0 ? Loc::kInput0 : Loc::kOther;
      case Loc::kInput0:
        if (f.key == "datatype") return Loc::kDatatype;
        if (f.key == "shape") return Loc::kShape;
        if (f.key == "data") return Loc::kData;
        return Loc::kOther;
      case Loc::kShape:
        return Loc::kShapeItem;
      case Loc::kData:
      case Loc::kDataItem:
        return Loc::kDataItem;
      default:
        return Loc::kOther;
    }
  }

  bool after_value() {
    if (!stack_.empty() && stack_.back().array) ++stack_.back().index;
    return true;
  }
  bool end() {
    if (other_ > 0) {
      if (--other_ == 0) return after_value();
      return true;
    }
    stack_.pop_back();
    return after_value();
  }
  bool fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }
  bool number(double v, bool integer) {
    if (other_ > 0) return true;
    const Loc loc = here();
    switch (loc) {
      case Loc::kSlo:
        if (!(v > 0) || !std::isfinite(v)) return fail("'parameters.slo_ms' must be a number > 0");
        req_.slo_s = v / 1000.0;
        return after_value();
      case Loc::kShapeItem:
        if (!integer) return fail("'shape' must be an array of integers");
        shape.push_back(static_cast<int64_t>(v));
        return after_value();
      case Loc::kDataItem:
        if (!std::isfinite(v)) return fail("'data' holds a value that is not finite");
        if (data_count++ < expected_) req_.input.data.push_back(static_cast<float>(v));
        return after_value();
      case Loc::kOther:
        return after_value();
      default:
        return type_error(loc, "number");
    }
  }
  bool scalar(const char* type) {
    if (other_ > 0) return true;
    const Loc loc = here();
    if (loc == Loc::kOther) return after_value();
    return type_error(loc, type);
  }
  bool type_error(Loc loc, const std::string& found) {
    switch (loc) {
      case Loc::kRoot:
        return fail("the request must be a JSON object");
      case Loc::kId:
        return fail("'id' must be a string");
      case Loc::kParameters:
        return fail("'parameters' must be an object");
      case Loc::kSlo:
        return fail("'parameters.slo_ms' must be a number > 0");
      case Loc::kInputs:
        return fail("'inputs' must be an array with one input");
      case Loc::kInput0:
        return fail("inputs[0] must be an object");
      case Loc::kDatatype:
        return fail("inputs[0].datatype must be a string");
      case Loc::kShape:
      case Loc::kShapeItem:
        return fail("'shape' must be an array of integers");
      case Loc::kData:
        return fail("inputs[0].data must be an array of numbers");
      case Loc::kDataItem:
        return fail("'data' must hold numbers only, found " + found);
      case Loc::kOther:
        break;
    }
    return true;
  }

  InferRequest& req_;
  std::size_t expected_;
  std::string error_;
  std::vector<Frame> stack_;
  std::size_t other_ = 0;  // depth inside an ignored container
  int data_depth_ = 0;
  std::set<std::string> seen_;
};

}  // namespace

std::string dump_json(const json& doc) {
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

InferRequest parse_infer_request(std::string_view body, const std::vector<int64_t>& input_shape) {
  InferRequest req;
  const auto expected = static_cast<std::size_t>(shape_numel(input_shape));
  InferSax sax(req, expected);
  const bool parsed = json::sax_parse(body, &sax);
  if (!parsed || !sax.error().empty()) {
    throw ProtocolError(sax.error().empty() ? std::string("invalid JSON") : sax.error());
  }
  if (!sax.inputs_seen) throw ProtocolError("'inputs' must be an array with one input");
  if (sax.inputs_count != 1) {
    throw ProtocolError("expected exactly 1 input, got " + std::to_string(sax.inputs_count));
  }
  if (!sax.datatype) throw ProtocolError("inputs[0].datatype is missing");
  if (!numeric_datatype(*sax.datatype)) {
    throw ProtocolError("inputs[0].datatype '" + *sax.datatype +
                        "' is not supported (use FP32 or another numeric type)");
  }
  if (!sax.shape_seen) throw ProtocolError("inputs[0].shape is missing");
  std::vector<int64_t> batched{1};
  batched.insert(batched.end(), input_shape.begin(), input_shape.end());
  if (sax.shape != input_shape && sax.shape != batched) {
    throw ProtocolError("inputs[0].shape " + shape_string(sax.shape) +
                        " does not match the model's " + shape_string(input_shape) + " (or " +
                        shape_string(batched) + ")");
  }
  if (!sax.data_seen) throw ProtocolError("inputs[0].data must be an array of numbers");
  if (sax.data_count != expected) {
    throw ProtocolError("inputs[0].data holds " + std::to_string(sax.data_count) +
                        " values; shape " + shape_string(sax.shape) + " needs " +
                        std::to_string(expected));
  }
  req.input.shape = input_shape;
  return req;
}

std::string make_infer_body(const FloatTensor& input, const std::string& id, double slo_ms) {
  json in = {{"name", "input"}, {"datatype", "FP32"}, {"shape", input.shape}, {"data", input.data}};
  json doc = {{"inputs", json::array({in})}};
  if (!id.empty()) doc["id"] = id;
  if (slo_ms > 0) doc["parameters"] = {{"slo_ms", slo_ms}};
  return dump_json(doc);
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
  return dump_json(doc);
}

std::string error_body(const std::string& message, const nlohmann::json& extra) {
  json doc = extra.is_object() ? extra : json::object();
  doc["error"] = message;
  return dump_json(doc);
}

}  // namespace tessera
