#pragma once

// Worker mode (`tessera serve --worker MODELS.yaml`, docs/serve.md#worker-mode): the
// models of a models file served as plain Open Inference Protocol v2 models, with no
// application pipeline, so that a front end's `remote:` models can dispatch batches to
// it. It is the ordinary Server: each model is one single-model endpoint
// (POST /v2/models/VARIANT/infer, HTTP and, with a gRPC port, gRPC), taking batched
// requests (a leading batch dimension) whose rows arrive at its engine together
// (Endpoint::submit_rows) and are batched again eagerly, up to max_batch, on one
// instance per model. Nothing is dropped for lateness (the front end keeps the SLO).
// Pure construction; the Server's own contract holds.

#include <memory>

#include "models/model_spec.hpp"
#include "serve/server/server.hpp"

namespace tessera {

struct WorkerOptions {
  int max_batch = 32;  // rows one model call takes at most
};

// Throws std::invalid_argument naming the model if the file lists none, or lists a
// profile-timed emulation (it needs a plan's profiles; use the zoo's `sleep` model).
std::unique_ptr<Server> make_worker_server(const ModelsConfig& models, const WorkerOptions& worker,
                                           ServeOptions options);

}  // namespace tessera
