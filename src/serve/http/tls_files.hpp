#pragma once

// TlsFiles: where a front end's TLS material is (docs/security.md#tls), for the HTTP port
// (HttpFrontEnd) and the gRPC port alike. Plain values the caller owns; a front end reads
// the files when it starts and refuses to start, naming the file, if one is unreadable,
// not PEM, or the key does not match the certificate.

#include <string>

namespace tessera {

// PEM files; an empty cert_file: plaintext.
struct TlsFiles {
  std::string cert_file;       // the server's certificate chain
  std::string key_file;        // its private key
  std::string client_ca_file;  // "": no client certificates; else required and verified
  bool enabled() const { return !cert_file.empty(); }
};

}  // namespace tessera
