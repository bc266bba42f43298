#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/input_limits.hpp"

namespace tessera {

// A YAML node that remembers which file it came from and where in it it sits, so that
// every validation error can name the file, the field path and the problem.
//
// Loading is hostile-input safe (docs/reliability-specs.md): files must be regular and at
// most limits::kMaxSpecFileBytes; a document may nest at most limits::kMaxYamlDepth deep
// and hold at most limits::kMaxYamlNodes nodes with aliases expanded; map keys must be
// scalars and must not repeat. Every accessor either returns a checked value or throws a
// SpecError naming the file and field; scalars quoted in messages are shortened and their
// non-printable bytes escaped.
class SpecNode {
 public:
  SpecNode(YAML::Node node, std::string file, std::string path = "");
  // A SpecNode is a handle: copies share the document (read-only here), and assigning one
  // SpecNode to another rebinds the target. (YAML::Node's own assignment writes into the
  // node it refers to, so a default one would change every copy that shares it: a copied
  // RunSpec given another workload would change the original's too.)
  SpecNode(const SpecNode&) = default;
  SpecNode(SpecNode&&) = default;
  SpecNode& operator=(const SpecNode& other);
  SpecNode& operator=(SpecNode&& other);
  ~SpecNode() = default;

  // Parses a YAML file; a missing, special or oversized file, a syntax error, a duplicate
  // key or a too-deep or too-large document becomes a SpecError.
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

  // Scalars, with type checks. Numbers must be finite; integers are written in decimal
  // (an optional sign, then digits) and must fit in 64 bits.
  std::string as_string() const;
  double as_number() const;
  int64_t as_integer() const;
  int64_t as_integer_in(int64_t lo, int64_t hi) const;  // inclusive bounds
  bool as_bool() const;
  double as_number_in(double lo, double hi) const;                  // inclusive bounds
  double as_positive(double hi = kNoBound) const;                   // in (0, hi]
  double as_non_negative(double hi = kNoBound) const;               // in [0, hi]
  double as_ms() const { return as_non_negative(limits::kMaxMs); }  // [0, one day] in ms

  // Shorthands for optional map fields with defaults.
  std::string string_or(std::string_view key, std::string fallback) const;
  double number_or(std::string_view key, double fallback) const;
  int64_t integer_or(std::string_view key, int64_t fallback) const;
  int64_t integer_in_or(std::string_view key, int64_t lo, int64_t hi, int64_t fallback) const;
  bool bool_or(std::string_view key, bool fallback) const;

  // A string that must be one of `choices`.
  std::string as_choice(std::initializer_list<std::string_view> choices) const;

  // A path written in this file, resolved relative to the file's directory.
  std::filesystem::path as_path() const;  // must exist
  // Must be a regular file of at most `max_bytes` (not a device, FIFO or directory).
  std::filesystem::path as_file_path(uint64_t max_bytes = limits::kMaxSpecFileBytes) const;
  std::filesystem::path as_dir_path() const;  // must be a directory
  std::filesystem::path resolve(const std::string& relative) const;

  [[noreturn]] void fail(const std::string& problem) const;

  static constexpr double kNoBound = std::numeric_limits<double>::max();

 private:
  SpecNode child(YAML::Node node, std::string path) const;

  YAML::Node node_;
  std::shared_ptr<const std::string> file_;
  std::string path_;
};

}  // namespace tessera
