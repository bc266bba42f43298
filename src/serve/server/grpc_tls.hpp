#pragma once

// GrpcTls: where the gRPC front end's TLS material is (docs/security.md#tls): the same
// files as the HTTP port's (serve/http/tls_files.hpp). The front end reads them when it
// starts.

#include "serve/http/tls_files.hpp"

namespace tessera {

using GrpcTls = TlsFiles;

}  // namespace tessera
