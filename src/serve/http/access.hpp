#pragma once

// Access control of `tessera serve` (docs/security.md): who may call which endpoint, the
// same rule over HTTP (the router asks it before a route's handler runs) and gRPC (each
// RPC asks it with its metadata).
//
// Every route is one of three kinds (RouteAccess):
//  - kOpen: health probes; never authenticated, so an orchestrator's probe needs no key;
//  - kInference: inference, metadata, statistics, metrics; open when no inference key is
//    configured, else the request needs `Authorization: Bearer <key>` with an inference
//    key or a control key;
//  - kControl: every state-changing endpoint (deployment changes, repository load and
//    unload). Disabled unless AccessConfig::control_enabled; when enabled, only a control
//    key opens them (an inference key gets 403), and enabling them needs a control key.
//
// Keys are compared in time that depends only on the configured keys' lengths, never on
// how much of a presented token matches, and each presented token is compared with every
// key (no early exit). A refusal says only "unauthorized" (401, no or an unknown key),
// "forbidden" (403, a valid key without the right) or that control endpoints are disabled.
//
// Keys come from files (one per line; blank lines and lines starting with '#' are skipped)
// or the environment (TESSERA_API_KEY, TESSERA_CONTROL_KEY), never from the command line,
// which other users of the machine can read in the process list.
//
// Thread safety: an AccessControl is immutable after construction; check() from any thread.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

enum class RouteAccess : uint8_t { kOpen, kInference, kControl };

struct AccessConfig {
  std::vector<std::string> inference_keys;  // empty: inference endpoints need no key
  std::vector<std::string> control_keys;    // also accepted on inference endpoints
  bool control_enabled = false;             // state-changing endpoints served at all
};

enum class AccessVerdict : uint8_t {
  kAllow,
  kUnauthenticated,  // 401: no credential, or one that is no key
  kForbidden,        // 403: a valid key without the right (inference key on control)
  kDisabled,         // 403: control endpoints are disabled
};

class AccessControl {
 public:
  AccessControl() = default;
  // std::invalid_argument if control is enabled without a control key, or a key is empty.
  explicit AccessControl(AccessConfig config);

  // `authorization`: the Authorization header (or gRPC "authorization" metadata) as sent,
  // "" if absent. Only the "Bearer" scheme is read (case-insensitive).
  AccessVerdict check(RouteAccess access, std::string_view authorization) const;

  bool inference_open() const { return config_.inference_keys.empty(); }
  bool control_enabled() const { return config_.control_enabled; }

 private:
  AccessConfig config_;
};

// The HTTP status (401 or 403) and the JSON error message of a refusal.
int access_status(AccessVerdict verdict);
std::string access_message(AccessVerdict verdict);

// a == b in time that depends on b's length only (b: the secret).
bool constant_time_equal(std::string_view presented, std::string_view secret);

// The keys of a key file (one per line, '#' comments and blank lines skipped, surrounding
// spaces trimmed). std::runtime_error naming the file if it cannot be read or holds no key.
std::vector<std::string> read_key_file(const std::string& path);

// The key a client sends to a server that needs one (a front end to its `remote:`
// workers): the first key of `file`, else the value of the environment variable `env`;
// "" when both names are empty. std::runtime_error naming the file or the variable if it
// cannot be read, holds no key, or is unset or empty. Never from the command line.
std::string read_credential(const std::string& file, const std::string& env);

// The access configuration of a server from its flags and the environment: inference keys
// from `api_key_file` and TESSERA_API_KEY, control keys from `control_key_file` and
// TESSERA_CONTROL_KEY ("" files: none). std::runtime_error on an unreadable file, or
// std::invalid_argument when control is enabled without a control key.
AccessConfig load_access_config(const std::string& api_key_file,
                                const std::string& control_key_file, bool control_enabled);

}  // namespace tessera
