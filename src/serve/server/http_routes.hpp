#pragma once

// The KServe v2 (Open Inference Protocol) routes of an app server over HTTP
// (docs/serve.md#protocol): health, server and model metadata and readiness, inference (JSON
// and the binary tensor data extension) through KServeInference, the model repository
// extension (index, load, unload), the statistics extension, /metrics and the live
// deployment route. A path no route serves, or a route asked with another method, is 404
// ("no route for ...").
//
// The routes hold a copy of KServeRoutes; what it references must outlive the router.

#include <functional>

#include "serve/http/admission.hpp"
#include "serve/http/router.hpp"
#include "serve/metrics/server_metrics.hpp"
#include "serve/server/infer_call.hpp"
#include "serve/server/model_repository.hpp"

namespace tessera {

struct KServeRoutes {
  KServeInference& inference;
  ModelRepository& repository;
  ServerMetrics& metrics;
  const Admission& admission;
  std::function<HttpResponse()> metrics_text;                  // GET /metrics
  std::function<HttpResponse(const HttpRequest&)> deployment;  // GET, POST /v2/tessera/deployment
};

void add_kserve_routes(HttpRouter& router, KServeRoutes routes);

}  // namespace tessera
