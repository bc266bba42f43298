#include "core/spec_node.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

namespace tessera {
namespace {

std::string join_path(const std::string& base, std::string_view key) {
  if (base.empty()) return std::string(key);
  return base + "." + std::string(key);
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
      return "'" + node.Scalar() + "'";
  }
}

}  // namespace

SpecNode::SpecNode(YAML::Node node, std::string file, std::string path)
    : node_(std::move(node)),
      file_(std::make_shared<const std::string>(std::move(file))),
      path_(std::move(path)) {}

SpecNode SpecNode::load_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw SpecError(file.string(), "", "cannot open file");
  std::stringstream text;
  text << in.rdbuf();
  return load_string(text.str(), file.string());
}

SpecNode SpecNode::load_string(const std::string& text, const std::string& name) {
  try {
    return SpecNode(YAML::Load(text), name);
  } catch (const YAML::ParserException& e) {
    throw SpecError(name, "line " + std::to_string(e.mark.line + 1), "invalid YAML: " + e.msg);
  }
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
    std::string key = kv.first.as<std::string>();
    out.emplace_back(key, child(kv.second, join_path(path_, key)));
  }
  return out;
}

void SpecNode::allow_only(std::initializer_list<std::string_view> allowed) const {
  expect_map();
  for (const auto& kv : node_) {
    std::string key = kv.first.as<std::string>();
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
  if (!YAML::convert<double>::decode(node_, value) || !std::isfinite(value)) {
    fail("expected a number, found " + describe(node_));
  }
  return value;
}

int64_t SpecNode::as_integer() const {
  if (!node_.IsScalar()) fail("expected an integer, found " + describe(node_));
  int64_t value = 0;
  if (!YAML::convert<int64_t>::decode(node_, value)) {
    fail("expected an integer, found " + describe(node_));
  }
  return value;
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
    std::ostringstream msg;
    msg << "must be between " << lo << " and " << hi << ", found " << v;
    fail(msg.str());
  }
  return v;
}

double SpecNode::as_positive() const {
  double v = as_number();
  if (!(v > 0)) fail("must be greater than 0, found " + node_.Scalar());
  return v;
}

double SpecNode::as_non_negative() const {
  double v = as_number();
  if (v < 0) fail("must not be negative, found " + node_.Scalar());
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
  fail("'" + v + "' is not one of: " + list);
}

std::filesystem::path SpecNode::resolve(const std::string& relative) const {
  std::filesystem::path p(relative);
  if (p.is_absolute() || file_->empty() || file_->front() == '<') return p;
  return std::filesystem::path(*file_).parent_path() / p;
}

std::filesystem::path SpecNode::as_path() const {
  auto p = resolve(as_string());
  if (!std::filesystem::exists(p)) fail("file not found: " + p.string());
  return p;
}

}  // namespace tessera
