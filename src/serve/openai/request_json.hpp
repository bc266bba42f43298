#pragma once

// Reading a JSON request body strictly (docs/llm-serve.md#requests): the body must be valid
// UTF-8 and JSON with no key repeated in any object (a repeated key would silently replace
// the first), and each field is read with its type and range checked, the error naming the
// field. Errors are LlmRequestError (400). Pure functions; thread-safe.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace tessera::request_json {

// The body as a JSON object.
nlohmann::json parse_object(const std::string& body);

[[noreturn]] void bad(const std::string& field, const std::string& message);

// doc[key] when present and not null.
const nlohmann::json* find(const nlohmann::json& doc, const char* key);

// An integer in [lo, hi] (JSON numbers beyond 64 bits, fractions and strings refused with
// the field's name and range). `name`: the field as errors name it.
std::optional<int64_t> integer(const nlohmann::json& doc, const char* key, const std::string& name,
                               int64_t lo, int64_t hi);
// Any integer that fits 64 bits, signed or not, as its 64-bit pattern (a seed).
std::optional<uint64_t> bits64(const nlohmann::json& doc, const char* key, const std::string& name);
// A finite number in [lo, hi].
std::optional<double> number(const nlohmann::json& doc, const char* key, const std::string& name,
                             double lo, double hi);
std::optional<bool> boolean(const nlohmann::json& doc, const char* key, const std::string& name);
std::optional<std::string> string(const nlohmann::json& doc, const char* key,
                                  const std::string& name);

}  // namespace tessera::request_json
