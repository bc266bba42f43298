#pragma once

// The OpenSSL context of the HTTP front end's TLS (docs/security.md#tls), built from
// TlsFiles: TLS 1.2 and later, the certificate chain and key, and with a client CA,
// client certificates required and verified against it. Built once at start; OpenSSL's
// context is then shared read-only by every connection's stream (thread-safe).

#include <boost/asio/ssl/context.hpp>
#include <memory>

#include "serve/http/tls_files.hpp"

namespace tessera {

// Throws std::runtime_error naming the file (and flag) that cannot be read, is not PEM,
// or whose key does not match the certificate.
std::unique_ptr<boost::asio::ssl::context> make_tls_context(const TlsFiles& files);

}  // namespace tessera
