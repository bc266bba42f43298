#pragma once

// The `remote:` source of a models file (docs/serve.md#remote-backends): a variant whose
// batches run on a fleet of inference servers that speak the Open Inference Protocol v2
// (KServe v2) over HTTP or gRPC: `tessera serve --worker` processes, or a Triton server.
// A plain value, parsed here; the client that uses it lives in the server module
// (server/remote_model.hpp). Pure functions; thread-safe.

#include <cstdint>
#include <string>
#include <vector>

#include "core/spec_node.hpp"

namespace tessera {

struct RemoteSpec {
  enum class Protocol { kHttp, kGrpc };
  // "http://HOST:PORT" (protocol http) or "HOST:PORT" / "grpc://HOST:PORT" (protocol grpc).
  std::vector<std::string> endpoints;
  Protocol protocol = Protocol::kHttp;
  std::string model;                   // the backend's model name; default: the variant
  std::string input_name = "input";    // the backend model's input tensor
  std::string output_name;             // which output to take; default: the reply's first
  std::vector<int64_t> output;         // per-item output shape; empty: asked of the backend
  double timeout_ms = 5000.0;          // one attempt: connect, send, and the whole reply
  int retries = 1;                     // re-sends of a failed batch to another backend
  double health_interval_ms = 1000.0;  // 0: no periodic checks (check_now() only)
  double health_timeout_ms = 500.0;
  int pool = 4;                        // idle connections kept per backend
  int64_t max_reply_bytes = 64 << 20;  // a larger reply is an error, read no further
  bool binary = true;                  // binary tensor data extension (HTTP)
  // The key sent to every backend (`Authorization: Bearer KEY`, gRPC metadata alike):
  // the first key of this file, or the value of this environment variable (its name),
  // read when the model loads; both empty: no key. Never the key itself in the spec.
  std::string api_key_file;
  std::string api_key_env;
};

// Reads a `remote:` map. Throws SpecError naming the field at fault.
RemoteSpec parse_remote_spec(const SpecNode& node);

// "host" and port of an endpoint ("http://h:1", "grpc://h:1", "h:1"); throws
// std::invalid_argument naming the endpoint.
struct RemoteAddress {
  std::string host;
  int port = 0;
};
RemoteAddress parse_remote_address(const std::string& endpoint, RemoteSpec::Protocol protocol);

}  // namespace tessera
