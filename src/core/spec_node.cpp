#include "core/spec_node.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>
#include <utility>

#include "core/input_file.hpp"

namespace tessera {
namespace {

std::string join_path(const std::string& base, std::string_view key) {
  const std::string safe = printable(key);
  if (base.empty()) return safe;
  return base + "." + safe;
}

std::string describe(const YAML::Node& node) {
  if (!node) return "nothing";
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Null:
      return "null";
    default:
      return "'" + printable(node.Scalar()) + "'";
  }
}

std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// One walk over a freshly parsed document: keys are scalars and unique within their map,
// nesting and size (aliases expanded) stay within the limits.
class DocumentCheck {
 public:
  explicit DocumentCheck(const std::string& file) : file_(file) {}

  void walk(const YAML::Node& node, const std::string& path, int depth) {
    if (++nodes_ > limits::kMaxYamlNodes) {
      fail(path, "the document has more than " + std::to_string(limits::kMaxYamlNodes) +
                     " nodes (aliases expanded)");
    }
    if (depth > limits::kMaxYamlDepth) {
      fail(path, "nested more than " + std::to_string(limits::kMaxYamlDepth) + " levels deep");
    }
    if (node.IsMap()) {
      std::map<std::string, int> seen;
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
          fail(path, "map keys must be plain strings, found " + describe(kv.first));
        }
        const std::string& key = kv.first.Scalar();
        const int line = kv.first.Mark().line + 1;
        auto [it, fresh] = seen.emplace(key, line);
        if (!fresh) {
          fail(join_path(path, key), "duplicate key (first at line " + std::to_string(it->second) +
                                         ", again at line " + std::to_string(line) + ")");
        }
        walk(kv.second, join_path(path, key), depth + 1);
      }
    } else if (node.IsSequence()) {
      for (std::size_t i = 0; i < node.size(); ++i) {
        walk(node[i], path + "[" + std::to_string(i) + "]", depth + 1);
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& path, const std::string& problem) const {
    throw SpecError(file_, path.empty() ? "(top level)" : path, problem);
  }

  const std::string& file_;
  uint64_t nodes_ = 0;
};

}  // namespace

SpecNode::SpecNode(YAML::Node node, std::string file, std::string path)
    : node_(std::move(node)),
      file_(std::make_shared<const std::string>(std::move(file))),
      path_(std::move(path)) {}

SpecNode& SpecNode::operator=(const SpecNode& other) {
  if (this != &other) {
    node_.reset(other.node_);  // rebinds; `node_ = other.node_` would write through
    file_ = other.file_;
    path_ = other.path_;
  }
  return *this;
}

SpecNode& SpecNode::operator=(SpecNode&& other) { return *this = std::as_const(other); }

SpecNode SpecNode::load_file(const std::filesystem::path& file) {
  return load_string(read_input_file(file, limits::kMaxSpecFileBytes), file.string());
}

SpecNode SpecNode::load_string(const std::string& text, const std::string& name) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw SpecError(name, "line " + std::to_string(e.mark.line + 1),
                    "invalid YAML: " + printable(e.msg, 200));
  } catch (const YAML::Exception& e) {
    throw SpecError(name, "", "invalid YAML: " + printable(e.msg, 200));
  }
  DocumentCheck(name).walk(root, "", 0);
  return SpecNode(root, name);
}

SpecNode SpecNode::child(YAML::Node node, std::string path) const {
  SpecNode out(std::move(node), "", std::move(path));
  out.file_ = file_;
  return out;
}

void SpecNode::fail(const std::string& problem) const {
  throw SpecError(*file_, path_.empty() ? "(top level)" : path_, problem);
}

void SpecNode::expect_map() const {
  if (!node_.IsMap()) fail("expected a map, found " + describe(node_));
}

bool SpecNode::has(std::string_view key) const {
  return node_.IsMap() && node_[std::string(key)].IsDefined() && !node_[std::string(key)].IsNull();
}

SpecNode SpecNode::at(std::string_view key) const {
  expect_map();
  YAML::Node value = node_[std::string(key)];
  if (!value.IsDefined() || value.IsNull()) {
    throw SpecError(*file_, join_path(path_, key), "required field is missing");
  }
  return child(value, join_path(path_, key));
}

std::optional<SpecNode> SpecNode::get(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return at(key);
}

std::vector<std::pair<std::string, SpecNode>> SpecNode::entries() const {
  expect_map();
  std::vector<std::pair<std::string, SpecNode>> out;
  for (const auto& kv : node_) {
    if (!kv.first.IsScalar()) fail("map keys must be plain strings, found " + describe(kv.first));
    const std::string& key = kv.first.Scalar();
    out.emplace_back(key, child(kv.second, join_path(path_, key)));
  }
  return out;
}

void SpecNode::allow_only(std::initializer_list<std::string_view> allowed) const {
  expect_map();
  for (const auto& kv : node_) {
    if (!kv.first.IsScalar()) fail("map keys must be plain strings, found " + describe(kv.first));
    const std::string& key = kv.first.Scalar();
    bool known = false;
    for (auto a : allowed) known = known || a == key;
    if (!known) {
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      throw SpecError(*file_, join_path(path_, key),
                      "unknown field (expected one of: " + list + ")");
    }
  }
}

std::vector<SpecNode> SpecNode::items() const {
  if (!node_.IsSequence()) fail("expected a list, found " + describe(node_));
  std::vector<SpecNode> out;
  out.reserve(node_.size());
  for (std::size_t i = 0; i < node_.size(); ++i) {
    out.push_back(child(node_[i], path_ + "[" + std::to_string(i) + "]"));
  }
  return out;
}

std::string SpecNode::as_string() const {
  if (!node_.IsScalar()) fail("expected a string, found " + describe(node_));
  return node_.Scalar();
}

double SpecNode::as_number() const {
  if (!node_.IsScalar()) fail("expected a number, found " + describe(node_));
  double value = 0;
  if (!YAML::convert<double>::decode(node_, value)) {
    fail("expected a number, found " + describe(node_));
  }
  if (!std::isfinite(value)) fail("expected a finite number, found " + describe(node_));
  return value;
}

int64_t SpecNode::as_integer() const {
  if (!node_.IsScalar()) fail("expected an integer, found " + describe(node_));
  std::string_view text = node_.Scalar();
  // An optional sign, then at least one digit ("+-1" and "-" are not integers).
  const bool plus = !text.empty() && text.front() == '+';
  if (plus) text.remove_prefix(1);
  const std::size_t first = !plus && !text.empty() && text.front() == '-' ? 1 : 0;
  const bool digits =
      text.size() > first && std::isdigit(static_cast<unsigned char>(text[first])) != 0;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (!digits || (ec != std::errc() && ec != std::errc::result_out_of_range) ||
      end != text.data() + text.size()) {
    fail("expected an integer, found " + describe(node_));
  }
  if (ec == std::errc::result_out_of_range) {
    fail("integer out of range (beyond 64 bits), found " + describe(node_));
  }
  return value;
}

int64_t SpecNode::as_integer_in(int64_t lo, int64_t hi) const {
  const int64_t v = as_integer();
  if (v < lo) {
    fail(
        (lo == 0 ? std::string("must not be negative") : "must be at least " + std::to_string(lo)) +
        ", found " + std::to_string(v) + " (an integer in [" + std::to_string(lo) + ", " +
        std::to_string(hi) + "])");
  }
  if (v > hi) {
    fail("must be at most " + std::to_string(hi) + ", found " + std::to_string(v) +
         " (an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "])");
  }
  return v;
}

bool SpecNode::as_bool() const {
  bool value = false;
  if (!node_.IsScalar() || !YAML::convert<bool>::decode(node_, value)) {
    fail("expected true or false, found " + describe(node_));
  }
  return value;
}

double SpecNode::as_number_in(double lo, double hi) const {
  double v = as_number();
  if (v < lo || v > hi) {
    fail("must be between " + number_text(lo) + " and " + number_text(hi) + ", found " +
         number_text(v));
  }
  return v;
}

double SpecNode::as_positive(double hi) const {
  double v = as_number();
  if (!(v > 0)) fail("must be greater than 0, found " + number_text(v));
  if (v > hi) fail("must be at most " + number_text(hi) + ", found " + number_text(v));
  return v;
}

double SpecNode::as_non_negative(double hi) const {
  double v = as_number();
  if (v < 0) fail("must not be negative, found " + number_text(v));
  if (v > hi) fail("must be at most " + number_text(hi) + ", found " + number_text(v));
  return v;
}

std::string SpecNode::string_or(std::string_view key, std::string fallback) const {
  auto v = get(key);
  return v ? v->as_string() : std::move(fallback);
}
double SpecNode::number_or(std::string_view key, double fallback) const {
  auto v = get(key);
  return v ? v->as_number() : fallback;
}
int64_t SpecNode::integer_or(std::string_view key, int64_t fallback) const {
  auto v = get(key);
  return v ? v->as_integer() : fallback;
}
int64_t SpecNode::integer_in_or(std::string_view key, int64_t lo, int64_t hi,
                                int64_t fallback) const {
  auto v = get(key);
  return v ? v->as_integer_in(lo, hi) : fallback;
}
bool SpecNode::bool_or(std::string_view key, bool fallback) const {
  auto v = get(key);
  return v ? v->as_bool() : fallback;
}

std::string SpecNode::as_choice(std::initializer_list<std::string_view> choices) const {
  std::string v = as_string();
  std::string list;
  for (auto c : choices) {
    if (c == v) return v;
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  fail("'" + printable(v) + "' is not one of: " + list);
}

std::filesystem::path SpecNode::resolve(const std::string& relative) const {
  std::filesystem::path p(relative);
  if (p.is_absolute() || file_->empty() || file_->front() == '<') return p;
  return std::filesystem::path(*file_).parent_path() / p;
}

std::filesystem::path SpecNode::as_path() const {
  const std::string text = as_string();
  if (text.empty()) fail("expected a path, found ''");
  auto p = resolve(text);
  std::error_code ec;
  if (!std::filesystem::exists(p, ec)) fail("file not found: " + printable(p.string(), 200));
  return p;
}

std::filesystem::path SpecNode::as_file_path(uint64_t max_bytes) const {
  const std::string text = as_string();
  if (text.empty()) fail("expected a file path, found ''");
  if (text.find('\0') != std::string::npos) fail("a file path cannot hold a NUL byte");
  auto p = resolve(text);
  if (auto problem = input_file_problem(p, max_bytes)) fail(printable(*problem, 300));
  return p;
}

std::filesystem::path SpecNode::as_dir_path() const {
  const std::string text = as_string();
  if (text.empty()) fail("expected a folder path, found ''");
  if (text.find('\0') != std::string::npos) fail("a path cannot hold a NUL byte");
  auto p = resolve(text);
  std::error_code ec;
  if (!std::filesystem::exists(p, ec)) fail("not found: " + printable(p.string(), 200));
  if (!std::filesystem::is_directory(p, ec)) fail("not a directory: " + printable(p.string(), 200));
  return p;
}

}  // namespace tessera
