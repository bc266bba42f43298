#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace tessera {

// A YAML node that remembers which file it came from and where in it it sits, so that
// every validation error can name the file, the field path and the problem.
class SpecNode {
 public:
  SpecNode(YAML::Node node, std::string file, std::string path = "");

  // Parses a YAML file; a missing file or a syntax error becomes a SpecError.
  static SpecNode load_file(const std::filesystem::path& file);
  // Parses YAML text (tests, inline specs); `name` stands in for the file name.
  static SpecNode load_string(const std::string& text, const std::string& name = "<inline>");

  const std::string& file() const { return *file_; }
  const std::string& path() const { return path_; }
  const YAML::Node& yaml() const { return node_; }

  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }
  bool is_null() const { return !node_ || node_.IsNull(); }

  // Map access.
  bool has(std::string_view key) const;
  SpecNode at(std::string_view key) const;                  // required: error if absent
  std::optional<SpecNode> get(std::string_view key) const;  // optional
  std::vector<std::pair<std::string, SpecNode>> entries() const;
  // Every key must be one of `allowed`; anything else is an "unknown field" error.
  void allow_only(std::initializer_list<std::string_view> allowed) const;
  void expect_map() const;

  // Sequence access.
  std::vector<SpecNode> items() const;  // error unless a sequence

  // Scalars, with type checks.
  std::string as_string() const;
  double as_number() const;
  int64_t as_integer() const;
  bool as_bool() const;
  double as_number_in(double lo, double hi) const;  // inclusive bounds
  double as_positive() const;                       // > 0
  double as_non_negative() const;                   // >= 0

  // Shorthands for optional map fields with defaults.
  std::string string_or(std::string_view key, std::string fallback) const;
  double number_or(std::string_view key, double fallback) const;
  int64_t integer_or(std::string_view key, int64_t fallback) const;
  bool bool_or(std::string_view key, bool fallback) const;

  // A string that must be one of `choices`.
  std::string as_choice(std::initializer_list<std::string_view> choices) const;

  // A path written in this file, resolved relative to the file's directory.
  std::filesystem::path as_path() const;
  std::filesystem::path resolve(const std::string& relative) const;

  [[noreturn]] void fail(const std::string& problem) const;

 private:
  SpecNode child(YAML::Node node, std::string path) const;

  YAML::Node node_;
  std::shared_ptr<const std::string> file_;
  std::string path_;
};

}  // namespace tessera
