#include "serve/http/access.hpp"

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace tessera {
namespace {

std::string_view trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// The token of "Bearer <token>" (scheme case-insensitive), or "" for anything else.
std::string_view bearer_token(std::string_view authorization) {
  authorization = trim(authorization);
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size()) return {};
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    const char c = authorization[i];
    const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    if (lower != kScheme[i]) return {};
  }
  return trim(authorization.substr(kScheme.size()));
}

// Whether `token` is one of `keys`, comparing with every key (no early exit).
bool any_key(const std::vector<std::string>& keys, std::string_view token) {
  bool found = false;
  for (const std::string& key : keys) found |= constant_time_equal(token, key);
  return found && !token.empty();
}

void add_env_key(std::vector<std::string>& keys, const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return;
  const std::string_view key = trim(value);
  if (!key.empty()) keys.emplace_back(key);
}

}  // namespace

bool constant_time_equal(std::string_view presented, std::string_view secret) {
  // Runs over the secret's length whatever is presented; a length difference is folded in.
  unsigned diff = presented.size() == secret.size() ? 0u : 1u;
  const std::size_t n = presented.size();
  for (std::size_t i = 0; i < secret.size(); ++i) {
    const auto p = static_cast<unsigned char>(n == 0 ? 0 : presented[i % n]);
    diff |= static_cast<unsigned>(p ^ static_cast<unsigned char>(secret[i]));
  }
  return diff == 0;
}

AccessControl::AccessControl(AccessConfig config) : config_(std::move(config)) {
  for (const auto* keys : {&config_.inference_keys, &config_.control_keys}) {
    for (const std::string& k : *keys) {
      if (trim(k).empty()) throw std::invalid_argument("an API key is empty");
    }
  }
  if (config_.control_enabled && config_.control_keys.empty()) {
    throw std::invalid_argument(
        "control endpoints need a control key: --control-key-file FILE or TESSERA_CONTROL_KEY");
  }
}

AccessVerdict AccessControl::check(RouteAccess access, std::string_view authorization) const {
  if (access == RouteAccess::kOpen) return AccessVerdict::kAllow;
  const std::string_view token = bearer_token(authorization);
  const bool control_key = any_key(config_.control_keys, token);
  const bool inference_key = any_key(config_.inference_keys, token);
  if (access == RouteAccess::kInference) {
    return inference_open() || inference_key || control_key ? AccessVerdict::kAllow
                                                            : AccessVerdict::kUnauthenticated;
  }
  if (!config_.control_enabled) {
    // Someone without a key learns nothing about the control plane where keys are asked.
    const bool known = inference_open() || inference_key || control_key;
    return known ? AccessVerdict::kDisabled : AccessVerdict::kUnauthenticated;
  }
  if (control_key) return AccessVerdict::kAllow;
  return inference_key ? AccessVerdict::kForbidden : AccessVerdict::kUnauthenticated;
}

int access_status(AccessVerdict verdict) {
  return verdict == AccessVerdict::kUnauthenticated ? 401 : 403;
}

std::string access_message(AccessVerdict verdict) {
  switch (verdict) {
    case AccessVerdict::kUnauthenticated:
      return "unauthorized";
    case AccessVerdict::kForbidden:
      return "forbidden";
    case AccessVerdict::kDisabled:
      return "control endpoints are disabled (start the server with --allow-control)";
    case AccessVerdict::kAllow:
      break;
  }
  return "";
}

std::vector<std::string> read_key_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read the key file");
  std::vector<std::string> keys;
  std::string line;
  while (std::getline(in, line)) {
    const std::string_view key = trim(line);
    if (key.empty() || key.front() == '#') continue;
    keys.emplace_back(key);
  }
  if (keys.empty()) throw std::runtime_error(path + ": the key file holds no key");
  return keys;
}

std::string read_credential(const std::string& file, const std::string& env) {
  if (!file.empty()) return read_key_file(file).front();
  if (env.empty()) return "";
  const char* value = std::getenv(env.c_str());
  const std::string_view key = value == nullptr ? std::string_view() : trim(value);
  if (key.empty()) {
    throw std::runtime_error("environment variable " + env +
                             (value == nullptr ? " is not set" : " is empty") +
                             " (it should hold the key to send)");
  }
  return std::string(key);
}

AccessConfig load_access_config(const std::string& api_key_file,
                                const std::string& control_key_file, bool control_enabled) {
  AccessConfig config;
  config.control_enabled = control_enabled;
  if (!api_key_file.empty()) config.inference_keys = read_key_file(api_key_file);
  if (!control_key_file.empty()) config.control_keys = read_key_file(control_key_file);
  add_env_key(config.inference_keys, "TESSERA_API_KEY");
  add_env_key(config.control_keys, "TESSERA_CONTROL_KEY");
  (void)AccessControl(config);  // the same checks as the server's
  return config;
}

}  // namespace tessera
