// The serving path's own cost (docs/benchmarks.md#serving): tessera serve with a no-op
// model next to a minimal cpp-httplib echo server, measured in the same run on the same
// machine with the same client. Both use TCP_NODELAY; the echo server (72 threads, one
// per connection) answers the request body unchanged, so its cost is HTTP alone; tessera
// serves on its default asynchronous front end (Boost.Beast, one I/O thread per core).
//
//   serve_bench [--seconds S] [--connections a,b,...] [--http-threads N] [--echo-path P]
//
// --echo-path: the path the echo answers on (default /echo; /v2/models/noop/infer makes the
// client send both servers the same bytes, so that the client's own work is the same).
// --echo-reply tessera: the echo answers every request with the body tessera gave to the
// first one, and tessera's Server header, so that the client also reads the same answer.
//
// For each connection count, every client thread sends the same small KServe v2 request
// back-to-back on its own keep-alive connection (closed loop) for S seconds; requests per
// second, and the p50 / p99 latency, are reported for both servers. "tessera (API key)" is
// the inline server with an inference key, every request sending it (docs/security.md);
// "tessera (TLS)" the inline server with HTTPS on its port (a certificate this bench makes
// with the openssl command; each client connection does one handshake and keeps it), and
// "tessera (TLS+key)" both.

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "closed_loop.hpp"
#include "noop_server.hpp"
#include "serve/kserve/protocol.hpp"
#include "serve/server/server.hpp"

namespace {

using namespace tessera;
using bench::LoadResult;

// `key`: sent as `Authorization: Bearer` on every request ("" none). `ca`: speak HTTPS,
// trusting this CA file ("" plain HTTP).
LoadResult load(int port, const std::string& path, const std::string& body, int connections,
                double seconds, const std::string& key = "", const std::string& ca = "") {
  return bench::run_closed_loop(connections, seconds, [&] {
    const std::string scheme = ca.empty() ? "http://" : "https://";
    auto cli = std::make_shared<httplib::Client>(scheme + "127.0.0.1:" + std::to_string(port));
    if (!ca.empty()) {
      cli->set_ca_cert_path(ca.c_str());
      cli->enable_server_certificate_verification(true);
    }
    cli->set_tcp_nodelay(true);
    cli->set_keep_alive(true);
    if (!key.empty()) cli->set_bearer_token_auth(key);
    cli->Get("/v2/health/live");  // connect first
    return [cli, &path, &body] {
      auto res = cli->Post(path, body, "application/json");
      return res && res->status == 200;
    };
  });
}

// A CA and a server certificate for 127.0.0.1 in `dir` (the openssl command); false if
// openssl failed.
bool make_certificates(const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/san.ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
  const std::string key = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  const std::string script =
      "cd " + dir + " && openssl req -x509" + key +
      " -keyout ca.key -out ca.pem -days 2 -subj /CN=bench-ca && openssl req" + key +
      " -keyout server.key -out server.csr -subj /CN=localhost && openssl x509 -req -in "
      "server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile "
      "san.ext";
  return std::system((script + " > /dev/null 2>&1").c_str()) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const auto [seconds, connections] = bench::parse_load_args(argc, argv);
  int http_threads = 0;  // --http-threads: tessera's HTTP I/O threads (0: its default)
  std::string echo_path = "/echo";
  bool echo_tessera = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--http-threads") == 0) http_threads = std::stoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--echo-path") == 0) echo_path = argv[i + 1];
    if (std::strcmp(argv[i], "--echo-reply") == 0)
      echo_tessera = std::strcmp(argv[i + 1], "tessera") == 0;
  }
  spdlog::set_level(spdlog::level::warn);
  const int threads = 64 + 8;

  // The echo server: the limit of cpp-httplib on this machine.
  httplib::Server echo;
  echo.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  echo.set_tcp_nodelay(true);
  echo.set_keep_alive_max_count(100000);
  echo.Get("/v2/health/live", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{}", "application/json");
  });
  std::string tessera_reply;  // --echo-reply tessera: set before the first run
  echo.Post(echo_path, [&](const httplib::Request& req, httplib::Response& res) {
    if (echo_tessera) {
      res.set_content(tessera_reply, "application/json");
      res.set_header("Server", "tessera");
      return;
    }
    res.set_content(req.body, "application/json");
  });
  const int echo_port = echo.bind_to_any_port("127.0.0.1");
  std::thread echo_thread([&] { echo.listen_after_bind(); });

  // tessera serve: one task, a no-op model, eager batching up to 32 (bench/noop_server.hpp).
  const bench::NoopServing noop = bench::noop_serving();
  ServeOptions options;
  options.port = 0;
  options.max_inflight = 64;
  options.model_endpoints = false;
  options.http_threads = http_threads;
  Server server(noop.app, noop.deployment, noop.profiles, PolicyConfig{}, 1, noop.models, options);
  const int serve_port = server.start();
  options.inline_noop = false;  // the same, with the no-op batch on its executor thread
  Server server_exec(noop.app, noop.deployment, noop.profiles, PolicyConfig{}, 1, noop.models,
                     options);
  const int exec_port = server_exec.start();
  // The inline server again, behind an API key (docs/security.md): the cost of the check.
  const std::string key = "bench-key-0123456789abcdef0123456789abcdef";
  options.inline_noop = true;
  options.access.inference_keys = {key};
  Server server_key(noop.app, noop.deployment, noop.profiles, PolicyConfig{}, 1, noop.models,
                    options);
  const int key_port = server_key.start();
  // The inline server over TLS, without and with the key: the cost of HTTPS.
  const std::string pki = (std::filesystem::temp_directory_path() /
                           ("tessera_serve_bench_" + std::to_string(::getpid())))
                              .string();
  if (!make_certificates(pki)) {
    std::fprintf(stderr, "openssl could not make the TLS certificates in %s\n", pki.c_str());
    return 1;
  }
  const std::string ca = pki + "/ca.pem";
  options.http_tls = TlsFiles{pki + "/server.pem", pki + "/server.key", ""};
  options.access.inference_keys.clear();
  Server server_tls(noop.app, noop.deployment, noop.profiles, PolicyConfig{}, 1, noop.models,
                    options);
  const int tls_port = server_tls.start();
  options.access.inference_keys = {key};
  Server server_tls_key(noop.app, noop.deployment, noop.profiles, PolicyConfig{}, 1, noop.models,
                        options);
  const int tls_key_port = server_tls_key.start();

  const std::string body = make_infer_body(FloatTensor{{1, 4}, {0.1f, 0.2f, 0.3f, 0.4f}});
  if (echo_tessera) {
    httplib::Client probe("127.0.0.1", serve_port);
    if (auto res = probe.Post("/v2/models/noop/infer", body, "application/json")) {
      tessera_reply = res->body;
    }
    std::printf("echo answers tessera's reply: %zu bytes\n", tessera_reply.size());
  }
  std::printf("request body: %zu bytes; %.1f s per point\n", body.size(), seconds);
  // cpu: the server's CPU µs per request (client threads excluded); cpu-bound: the share of
  // the echo's rate this server reaches where client + server CPU is the limit (the echo's
  // client + server CPU per request over this one's); allocs: the server's operator new
  // calls per request (bench/alloc_count.hpp).
  std::printf("%-9s %-17s %9s %8s %8s %7s %8s %8s %7s %7s %9s %7s\n", "conns", "server", "rps",
              "p50 us", "p99 us", "ratio", "+p50 us", "+p99 us", "cpu us", "cli us", "cpu-bound",
              "allocs");
  for (int c : connections) {
    const LoadResult e = load(echo_port, echo_path, body, c, seconds);
    std::printf("%-9d %-17s %9.0f %8.0f %8.0f %7s %8s %8s %7.1f %7.1f %9s %7.1f\n", c,
                "httplib echo", e.rps, e.p50_us, e.p99_us, "", "", "", e.server_cpu_us,
                e.client_cpu_us, "", e.server_allocs);
    for (const auto& [name, port] :
         {std::pair<const char*, int>{"tessera (inline)", serve_port},
          std::pair<const char*, int>{"tessera (executor)", exec_port},
          std::pair<const char*, int>{"tessera (API key)", key_port},
          std::pair<const char*, int>{"tessera (TLS)", tls_port},
          std::pair<const char*, int>{"tessera (TLS+key)", tls_key_port}}) {
      const bool keyed = port == key_port || port == tls_key_port;
      const bool tls = port == tls_port || port == tls_key_port;
      const LoadResult t =
          load(port, "/v2/models/noop/infer", body, c, seconds, keyed ? key : "", tls ? ca : "");
      std::printf("%-9d %-17s %9.0f %8.0f %8.0f %6.0f%% %8.0f %8.0f %7.1f %7.1f %8.0f%% %7.1f\n", c,
                  name, t.rps, t.p50_us, t.p99_us, 100.0 * t.rps / e.rps, t.p50_us - e.p50_us,
                  t.p99_us - e.p99_us, t.server_cpu_us, t.client_cpu_us,
                  100.0 * (e.client_cpu_us + e.server_cpu_us) / (t.client_cpu_us + t.server_cpu_us),
                  t.server_allocs);
      if (t.errors > 0) std::printf("  errors: %llu\n", static_cast<unsigned long long>(t.errors));
    }
  }
  server.shutdown();
  server_exec.shutdown();
  server_key.shutdown();
  server_tls.shutdown();
  server_tls_key.shutdown();
  std::filesystem::remove_all(pki);
  echo.stop();
  echo_thread.join();
  return 0;
}
