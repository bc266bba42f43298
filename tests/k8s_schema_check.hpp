#pragma once

// Offline validation of exported manifests against the Kubernetes API's OpenAPI schemas with
// the npm package `kubernetes-models` (tests/k8s_validate.mjs), installed by scripts/setup.sh
// into BUILD/node. The YAML files are read with yaml-cpp and handed to node as JSON: quoted
// scalars stay strings, plain ones become numbers, booleans or null as YAML reads them.

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <unistd.h>

namespace tessera::testing {

inline nlohmann::json yaml_to_json(const YAML::Node& n) {
  if (n.IsMap()) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& kv : n) j[kv.first.as<std::string>()] = yaml_to_json(kv.second);
    return j;
  }
  if (n.IsSequence()) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& v : n) j.push_back(yaml_to_json(v));
    return j;
  }
  if (n.IsNull()) return nullptr;
  const std::string s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted: a string
  if (s == "true" || s == "false") return s == "true";
  try {
    std::size_t used = 0;
    const long long i = std::stoll(s, &used);
    if (used == s.size()) return i;
    const double d = std::stod(s, &used);
    if (used == s.size()) return d;
  } catch (const std::exception&) {
  }
  return s;
}

inline std::filesystem::path k8s_models_dir() {
  return std::filesystem::path(TESSERA_BINARY_DIR) / "node" / "node_modules";
}

inline bool k8s_validator_available() {
  return std::filesystem::exists(k8s_models_dir() / "kubernetes-models" / "package.json") &&
         std::system("node --version >/dev/null 2>&1") == 0;
}

// Runs the validator on `docs`; returns its lines by object ("Kind name" -> "ok",
// "unknown" or "invalid: why").
inline std::map<std::string, std::string> k8s_validate(const std::vector<nlohmann::json>& docs) {
  const auto file = std::filesystem::temp_directory_path() /
                    ("tessera_k8s_docs_" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << nlohmann::json(docs).dump();
  const std::string cmd = "node '" + std::string(TESSERA_SOURCE_DIR) +
                          "/tests/k8s_validate.mjs' '" + k8s_models_dir().string() + "' '" +
                          file.string() + "' 2>&1";
  std::map<std::string, std::string> out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char line[4096];
  while (std::fgets(line, sizeof line, p) != nullptr) {
    std::string s(line);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    const auto a = s.find(' ');
    const auto b = s.find(' ', a + 1);
    if (a == std::string::npos || b == std::string::npos) {
      out["?"] = s;
      continue;
    }
    std::string key = s.substr(a + 1, b - a - 1);
    std::string rest = s.substr(b + 1);
    const auto colon = rest.find(':');
    key += " " + rest.substr(0, colon);
    out[key] = s.substr(0, a) + (colon == std::string::npos ? "" : rest.substr(colon));
  }
  ::pclose(p);
  std::filesystem::remove(file);
  return out;
}

inline std::vector<nlohmann::json> k8s_documents(const std::vector<std::filesystem::path>& files) {
  std::vector<nlohmann::json> docs;
  for (const auto& f : files) {
    for (const YAML::Node& d : YAML::LoadAllFromFile(f.string())) docs.push_back(yaml_to_json(d));
  }
  return docs;
}

}  // namespace tessera::testing
