#pragma once

// GrpcTls: where the gRPC front end's TLS material is (docs/security.md#tls). Plain values
// the caller owns; the front end reads the files when it starts.

#include <string>

namespace tessera {

// PEM files; an empty cert_file: plaintext.
struct GrpcTls {
  std::string cert_file;       // the server's certificate chain
  std::string key_file;        // its private key
  std::string client_ca_file;  // "": no client certificates; else required and verified
};

}  // namespace tessera
