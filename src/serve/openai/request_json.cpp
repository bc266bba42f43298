#include "serve/openai/request_json.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "serve/openai/llm_protocol.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera::request_json {
namespace {

using nlohmann::json;

std::string shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 40 ? s.substr(0, 40) + "..." : s;
}

std::string range(int64_t lo, int64_t hi) {
  return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

}  // namespace

void bad(const std::string& field, const std::string& message) {
  throw LlmRequestError(400, field, message);
}

json parse_object(const std::string& body) {
  if (body.empty()) bad("", "the request body is empty; expected a JSON object");
  if (!valid_utf8(body)) bad("", "the request body is not valid UTF-8");
  // The keys of each object being read, innermost last: a repeated key is refused.
  std::vector<std::vector<std::string>> keys;
  std::string duplicate;
  const json::parser_callback_t check = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key: {
        const auto& k = parsed.get_ref<const std::string&>();
        for (const std::string& seen : keys.back()) {
          if (seen == k && duplicate.empty()) duplicate = k;
        }
        keys.back().push_back(k);
        break;
      }
      default:
        break;
    }
    return true;
  };
  json doc;
  try {
    doc = json::parse(body, check);
  } catch (const json::exception& e) {
    bad("", std::string("the request body is not valid JSON: ") + e.what());
  }
  if (!duplicate.empty()) {
    bad(duplicate.substr(0, 100), "the request body repeats the key '" + duplicate.substr(0, 100) +
                                      "' in one object; each key may appear once");
  }
  if (!doc.is_object()) bad("", "the request body must be a JSON object");
  return doc;
}

const json* find(const json& doc, const char* key) {
  auto it = doc.find(key);
  return it == doc.end() || it->is_null() ? nullptr : &*it;
}

std::optional<int64_t> integer(const json& doc, const char* key, const std::string& name,
                               int64_t lo, int64_t hi) {
  const json* v = find(doc, key);
  if (v == nullptr) return std::nullopt;
  const std::string want = name + " must be an integer in " + range(lo, hi);
  if (v->is_number_unsigned()) {
    const auto u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(hi) || static_cast<int64_t>(u) < lo) {
      bad(name, want + ", not " + shown(*v));
    }
    return static_cast<int64_t>(u);
  }
  if (v->is_number_integer()) {
    const auto i = v->get<int64_t>();
    if (i < lo || i > hi) bad(name, want + ", not " + shown(*v));
    return i;
  }
  if (v->is_number_float()) {
    // 1e30 or 2.5: out of range or not whole.
    bad(name, want + ", not " + shown(*v));
  }
  bad(name, want + ", not a " + std::string(v->type_name()));
}

std::optional<uint64_t> bits64(const json& doc, const char* key, const std::string& name) {
  const json* v = find(doc, key);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  if (v->is_number_integer()) return static_cast<uint64_t>(v->get<int64_t>());
  bad(name, name + " must be an integer of at most 64 bits, not " + shown(*v));
}

std::optional<double> number(const json& doc, const char* key, const std::string& name, double lo,
                             double hi) {
  const json* v = find(doc, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) {
    bad(name, name + " must be a number, not a " + std::string(v->type_name()));
  }
  const auto d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) {
    bad(name,
        name + " must be in [" + shown(json(lo)) + ", " + shown(json(hi)) + "], not " + shown(*v));
  }
  return d;
}

std::optional<bool> boolean(const json& doc, const char* key, const std::string& name) {
  const json* v = find(doc, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) {
    bad(name, name + " must be true or false, not a " + std::string(v->type_name()));
  }
  return v->get<bool>();
}

std::optional<std::string> string(const json& doc, const char* key, const std::string& name) {
  const json* v = find(doc, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) bad(name, name + " must be a string, not a " + std::string(v->type_name()));
  return v->get<std::string>();
}

}  // namespace tessera::request_json
