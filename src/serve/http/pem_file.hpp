#pragma once

// Reading a PEM file of a front end's TLS material (serve/http/tls_files.hpp), for the
// HTTP and the gRPC front ends alike. Pure function of the file; thread-safe.

#include <string>

namespace tessera {

// The file's text. std::runtime_error "PATH: cannot read the WHAT" or "PATH: the WHAT is
// not PEM" (`what` names it for the user, as "HTTP TLS key (--http-tls-key)").
std::string read_pem_file(const std::string& path, const std::string& what);

}  // namespace tessera
