#include "profile/profile_yaml.hpp"

#include <charconv>
#include <ostream>
#include <set>

namespace tessera {
namespace {

std::string non_empty_string(const SpecNode& node) {
  std::string s = node.as_string();
  if (s.empty()) node.fail("must not be empty");
  return s;
}

int parse_batch(const std::string& key, const SpecNode& value) {
  int batch = 0;
  auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), batch);
  if (key.empty() || ec != std::errc() || end != key.data() + key.size() || batch < 1 ||
      batch > limits::kMaxProfileBatch) {
    value.fail("batch size must be an integer in [1, " + std::to_string(limits::kMaxProfileBatch) +
               "], found '" + printable(key) + "'");
  }
  return batch;
}

ProfileCurve load_curve(const SpecNode& item) {
  item.allow_only({"variant", "segment", "origin", "source", "latency_ms"});
  ProfileCurve curve;
  curve.variant = non_empty_string(item.at("variant"));
  curve.segment = non_empty_string(item.at("segment"));
  if (auto origin = item.get("origin")) {
    curve.origin = origin->as_choice({"measured", "derived"}) == "derived"
                       ? ProfileOrigin::kDerived
                       : ProfileOrigin::kMeasured;
  }
  curve.source = item.string_or("source", item.file());
  SpecNode latency = item.at("latency_ms");
  std::set<int> seen;
  for (const auto& [key, value] : latency.entries()) {
    int batch = parse_batch(key, value);
    if (!seen.insert(batch).second) value.fail("batch size " + key + " is given twice");
    curve.points.push_back(ProfilePoint{batch, value.as_positive(limits::kMaxMs)});
  }
  if (curve.points.empty()) latency.fail("needs at least one batch size");
  return curve;
}

bool plain_safe(const std::string& s) {
  if (s.empty() || s == "null" || s == "Null" || s == "NULL" || s == "~") return false;
  char first = s.front();
  bool first_ok = (first >= 'A' && first <= 'Z') || (first >= 'a' && first <= 'z') ||
                  (first >= '0' && first <= '9') || first == '_';
  if (!first_ok) return false;
  for (char c : s) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.' || c == '/' || c == '+';
    if (!ok) return false;
  }
  return true;
}

std::string yaml_string(const std::string& s) {
  if (plain_safe(s)) return s;
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

std::string shortest(double value) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, end);
}

}  // namespace

ProfileTable load_profile_yaml(const SpecNode& node) {
  node.allow_only({"profiles"});
  ProfileTable table;
  std::set<std::pair<std::string, std::string>> seen;
  for (const SpecNode& item : node.at("profiles").items()) {
    ProfileCurve curve = load_curve(item);
    if (!seen.insert({curve.variant, curve.segment}).second) {
      item.fail("variant '" + printable(curve.variant) + "' on segment '" +
                printable(curve.segment) + "' is given twice");
    }
    table.set_curve(std::move(curve));
  }
  return table;
}

ProfileTable load_profile_yaml_file(const std::filesystem::path& file) {
  return load_profile_yaml(SpecNode::load_file(file));
}

void write_profile_yaml(const ProfileTable& table, std::ostream& out) {
  out << "# tessera latency profiles (docs/profiles.md): batch size -> milliseconds\n";
  if (table.empty()) {
    out << "profiles: []\n";
    return;
  }
  out << "profiles:\n";
  for (const auto& [key, curve] : table.curves()) {
    out << "  - variant: " << yaml_string(curve.variant) << "\n";
    out << "    segment: " << yaml_string(curve.segment) << "\n";
    out << "    origin: " << to_string(curve.origin) << "\n";
    if (!curve.source.empty()) out << "    source: " << yaml_string(curve.source) << "\n";
    out << "    latency_ms: {";
    for (std::size_t i = 0; i < curve.points.size(); ++i) {
      out << (i == 0 ? "" : ", ") << curve.points[i].batch << ": "
          << shortest(curve.points[i].latency_ms);
    }
    out << "}\n";
  }
}

}  // namespace tessera
