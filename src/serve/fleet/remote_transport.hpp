#pragma once

// One backend's connection for a remote model (server/remote_model.hpp): how a batch, a
// health check and a metadata query travel to one inference server. Two kinds: HTTP
// (cpp-httplib clients, a pool of keep-alive connections) and gRPC (the generated
// GRPCInferenceService stub on one channel). Threads: every call may come from several
// threads at once; a transport keeps its own pool under its own lock.

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "models/remote_spec.hpp"
#include "models/tensor.hpp"
#include "serve/fleet/remote_wire.hpp"

namespace tessera {

struct RemoteCall {
  enum class Kind {
    kOk,
    kUnavailable,  // connect refused, reset, timeout, 5xx: the batch may go elsewhere
    kRefused,      // 4xx: the request's fault; another backend would refuse it too
    kBadReply,     // a reply that breaks the protocol (RemoteReplyError)
  };
  Kind kind = Kind::kOk;
  std::string detail;  // why, for anything but kOk
  std::vector<FloatTensor> outputs;
};

class RemoteTransport {
 public:
  virtual ~RemoteTransport() = default;
  // Runs one batch; `expect` says what the reply must hold. Never throws.
  virtual RemoteCall infer(std::span<const FloatTensor* const> inputs, const std::string& id,
                           const RemoteExpect& expect) = 0;
  // The health check (HTTP GET /v2/health/ready, gRPC ServerReady): true when ready; else
  // `why` says what failed. Never throws.
  virtual bool ready(std::string& why) = 0;
  // The model's per-item output shape from its metadata; throws std::runtime_error.
  virtual std::vector<int64_t> output_shape(const std::string& output_name) = 0;
};

// `endpoint` is one of spec.endpoints; `model` the backend's model name. `key`: sent with
// every call as `Authorization: Bearer KEY` (HTTP header, gRPC metadata); "": none.
std::unique_ptr<RemoteTransport> make_http_transport(const std::string& endpoint,
                                                     const RemoteSpec& spec,
                                                     const std::string& key = "");
std::unique_ptr<RemoteTransport> make_grpc_transport(const std::string& endpoint,
                                                     const RemoteSpec& spec,
                                                     const std::string& key = "");

}  // namespace tessera
