#pragma once

// TLS for the tests (HTTP and gRPC front ends, docs/security.md#tls): TestPki makes a CA,
// a server certificate for 127.0.0.1 and localhost, and a client certificate with the
// openssl command in a fresh temporary folder; TlsClient is an HTTPS/1.1 client on
// Boost.Asio's ssl stream whose every step has a deadline (10 s), so no test can hang on
// a server that stops answering. One TlsClient per thread; not thread-safe.

#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

namespace tessera::testing {

struct TestPki {
  std::filesystem::path dir;
  std::string pem(const char* name) const { return (dir / name).string(); }
  static std::string read(const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  // EC keys; a folder of this process's own (tests run in parallel).
  TestPki()
      : dir(std::filesystem::temp_directory_path() /
            ("tessera_tls_test_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string d = dir.string();
    const std::string key = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    std::ofstream(d + "/san.ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
    const std::string script =
        "cd " + d + " && openssl req -x509" + key +
        " -keyout ca.key -out ca.pem -days 2 -subj /CN=tessera-test-ca && "
        "openssl req" +
        key +
        " -keyout server.key -out server.csr -subj /CN=localhost && "
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
        "-out server.pem -days 2 -extfile san.ext && "
        "openssl req" +
        key +
        " -keyout client.key -out client.csr -subj /CN=client && "
        "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
        "-out client.pem -days 2 > /dev/null 2>&1";
    ok = std::system((script + " > /dev/null 2>&1").c_str()) == 0;
  }
  ~TestPki() { std::filesystem::remove_all(dir); }
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;
  bool ok = false;
};

struct TlsAnswer {
  int status = 0;  // 0: no answer (the handshake failed, the connection closed, or 10 s passed)
  std::string body;
};

// Connects to 127.0.0.1:port and does the TLS handshake, trusting only the test CA (and
// checking the server's name), with the client certificate if `client_cert`.
class TlsClient {
 public:
  TlsClient(int port, const TestPki& pki, bool client_cert = false)
      : context_(boost::asio::ssl::context::tls_client) {
    namespace ssl = boost::asio::ssl;
    boost::system::error_code ec;
    context_.load_verify_file(pki.pem("ca.pem"), ec);
    context_.set_verify_mode(ssl::verify_peer);
    if (client_cert) {
      context_.use_certificate_chain_file(pki.pem("client.pem"), ec);
      context_.use_private_key_file(pki.pem("client.key"), ssl::context::pem, ec);
    }
    stream_.emplace(ioc_, context_);
    stream_->set_verify_callback(ssl::host_name_verification("127.0.0.1"));
    const boost::asio::ip::tcp::endpoint server(boost::asio::ip::make_address("127.0.0.1"),
                                                static_cast<unsigned short>(port));
    stream_->next_layer().connect(server, ec);
    if (ec) return;
    bool ok = false;
    stream_->async_handshake(ssl::stream_base::client,
                             [&](boost::system::error_code e) { ok = !e; });
    handshake_ok_ = finish() && ok;
  }
  bool handshake_ok() const { return handshake_ok_; }

  // One request on the connection (kept alive); its answer.
  TlsAnswer request(const std::string& method, const std::string& target,
                    const std::string& body = "", const std::string& authorization = "") {
    namespace http = boost::beast::http;
    TlsAnswer answer;
    if (!handshake_ok_) return answer;
    http::request<http::string_body> req(http::string_to_verb(method), target, 11);
    req.set(http::field::host, "127.0.0.1");
    if (!authorization.empty()) req.set(http::field::authorization, authorization);
    if (!body.empty() || method == "POST") {
      req.set(http::field::content_type, "application/json");
      req.body() = body;
      req.prepare_payload();
    }
    http::response<http::string_body> res;
    bool ok = false;
    http::async_write(*stream_, req, [&](boost::system::error_code e, std::size_t) {
      if (e) return;
      http::async_read(*stream_, buffer_, res,
                       [&](boost::system::error_code e2, std::size_t) { ok = !e2; });
    });
    if (!finish() || !ok) return answer;
    answer.status = static_cast<int>(res.result_int());
    answer.body = res.body();
    return answer;
  }

 private:
  // Runs the operation started for at most 10 s; false (and the connection closed) if
  // it did not end by then.
  bool finish() {
    ioc_.restart();
    ioc_.run_for(std::chrono::seconds(10));
    if (ioc_.stopped()) return true;
    boost::system::error_code ec;
    stream_->next_layer().close(ec);
    ioc_.restart();
    ioc_.run();
    return false;
  }

  boost::asio::io_context ioc_;
  boost::asio::ssl::context context_;
  std::optional<boost::asio::ssl::stream<boost::asio::ip::tcp::socket>> stream_;
  boost::beast::flat_buffer buffer_;
  bool handshake_ok_ = false;
};

}  // namespace tessera::testing
