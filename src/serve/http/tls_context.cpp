#include "serve/http/tls_context.hpp"

#include "serve/http/pem_file.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace tessera {

namespace ssl = boost::asio::ssl;

std::string read_pem_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read the " + what);
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().find("-----BEGIN") == std::string::npos) {
    throw std::runtime_error(path + ": the " + what + " is not PEM");
  }
  return text.str();
}

std::unique_ptr<ssl::context> make_tls_context(const TlsFiles& files) {
  if (files.key_file.empty()) {
    throw std::runtime_error("an HTTP TLS certificate needs its key (--http-tls-key)");
  }
  const std::string cert = read_pem_file(files.cert_file, "HTTP TLS certificate (--http-tls-cert)");
  const std::string key = read_pem_file(files.key_file, "HTTP TLS key (--http-tls-key)");
  auto context = std::make_unique<ssl::context>(ssl::context::tls_server);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                       ssl::context::single_dh_use);
  boost::system::error_code ec;
  context->use_certificate_chain(boost::asio::buffer(cert), ec);
  if (ec) {
    throw std::runtime_error(files.cert_file + ": not a usable HTTP TLS certificate chain (" +
                             ec.message() + ")");
  }
  context->use_private_key(boost::asio::buffer(key), ssl::context::pem, ec);
  if (ec) {
    throw std::runtime_error(files.key_file + ": not the private key of " + files.cert_file + " (" +
                             ec.message() + ")");
  }
  if (!files.client_ca_file.empty()) {
    const std::string ca =
        read_pem_file(files.client_ca_file, "HTTP TLS client CA (--http-tls-client-ca)");
    context->add_certificate_authority(boost::asio::buffer(ca), ec);
    if (ec) {
      throw std::runtime_error(files.client_ca_file + ": not a usable client CA (" + ec.message() +
                               ")");
    }
    context->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  }
  return context;
}

}  // namespace tessera
