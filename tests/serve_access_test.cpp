// Access control of `tessera serve` (serve/http/access.hpp, docs/security.md): the rule
// itself (keys, the three kinds of route, the closed control plane, the constant-time
// comparison, key files and the environment), then the same rule against a live server on
// loopback over HTTP and gRPC: health open, inference behind an inference key, control
// disabled by default and behind a control key when enabled.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "inference.grpc.pb.h"
#include "serve/http/access.hpp"
#include "serve/server/server.hpp"
#include "test_support.hpp"
#include "tls_test_client.hpp"

namespace tessera {
namespace {

namespace pb = inference;
using testing::add_affine;
using testing::make_task;
using testing::TestPki;
using testing::TlsAnswer;
using testing::TlsClient;

constexpr const char* kJson = "application/json";
constexpr const char* kInferKey = "infer-key-0123456789";
constexpr const char* kControlKey = "control-key-9876543210";
const std::string kInferBody =
    R"({"inputs":[{"name":"input","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}]})";

AccessConfig keyed(bool control) { return AccessConfig{{kInferKey}, {kControlKey}, control}; }
std::string bearer(const std::string& key) { return "Bearer " + key; }

TEST(Access, ConstantTimeEqualIsEquality) {
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abd", "abc"));
  EXPECT_FALSE(constant_time_equal("ab", "abc"));
  EXPECT_FALSE(constant_time_equal("abcabc", "abc"));  // a repeat of the key is no key
  EXPECT_FALSE(constant_time_equal("", "abc"));
  EXPECT_FALSE(constant_time_equal("abc", ""));
}

TEST(Access, ClosedByDefaultOpenInference) {
  const AccessControl open;  // no keys, control disabled
  EXPECT_EQ(open.check(RouteAccess::kOpen, ""), AccessVerdict::kAllow);
  EXPECT_EQ(open.check(RouteAccess::kInference, ""), AccessVerdict::kAllow);
  EXPECT_EQ(open.check(RouteAccess::kControl, ""), AccessVerdict::kDisabled);
  EXPECT_EQ(open.check(RouteAccess::kControl, bearer(kControlKey)), AccessVerdict::kDisabled);
}

TEST(Access, KeysDecideEachKindOfRoute) {
  const AccessControl a(keyed(true));
  EXPECT_EQ(a.check(RouteAccess::kOpen, ""), AccessVerdict::kAllow);
  EXPECT_EQ(a.check(RouteAccess::kInference, ""), AccessVerdict::kUnauthenticated);
  EXPECT_EQ(a.check(RouteAccess::kInference, "Bearer wrong"), AccessVerdict::kUnauthenticated);
  EXPECT_EQ(a.check(RouteAccess::kInference, kInferKey), AccessVerdict::kUnauthenticated);
  EXPECT_EQ(a.check(RouteAccess::kInference, "Basic " + std::string(kInferKey)),
            AccessVerdict::kUnauthenticated);
  EXPECT_EQ(a.check(RouteAccess::kInference, "bearer  " + std::string(kInferKey) + " "),
            AccessVerdict::kAllow);
  EXPECT_EQ(a.check(RouteAccess::kInference, bearer(kControlKey)), AccessVerdict::kAllow);
  EXPECT_EQ(a.check(RouteAccess::kControl, ""), AccessVerdict::kUnauthenticated);
  EXPECT_EQ(a.check(RouteAccess::kControl, bearer(kInferKey)), AccessVerdict::kForbidden);
  EXPECT_EQ(a.check(RouteAccess::kControl, bearer(kControlKey)), AccessVerdict::kAllow);
  // Disabled: a stranger still gets 401 (learns nothing), a key holder that it is off.
  const AccessControl closed(keyed(false));
  EXPECT_EQ(closed.check(RouteAccess::kControl, ""), AccessVerdict::kUnauthenticated);
  EXPECT_EQ(closed.check(RouteAccess::kControl, bearer(kControlKey)), AccessVerdict::kDisabled);
  EXPECT_EQ(access_status(AccessVerdict::kUnauthenticated), 401);
  EXPECT_EQ(access_status(AccessVerdict::kForbidden), 403);
  EXPECT_EQ(access_message(AccessVerdict::kUnauthenticated), "unauthorized");
}

TEST(Access, ControlNeedsAControlKey) {
  EXPECT_THROW(AccessControl(AccessConfig{{kInferKey}, {}, true}), std::invalid_argument);
  EXPECT_THROW(AccessControl(AccessConfig{{" "}, {}, false}), std::invalid_argument);
  EXPECT_THROW(load_access_config("", "", true), std::invalid_argument);
}

TEST(Access, KeyFilesAndTheEnvironment) {
  const auto dir = std::filesystem::temp_directory_path() / "tessera_access_test";
  std::filesystem::create_directories(dir);
  const auto file = (dir / "keys").string();
  std::ofstream(file) << "# the team's keys\n\n  first-key \nsecond-key\r\n";
  EXPECT_EQ(read_key_file(file), (std::vector<std::string>{"first-key", "second-key"}));
  std::ofstream(file) << "# nothing but a comment\n";
  EXPECT_THROW(read_key_file(file), std::runtime_error);
  EXPECT_THROW(read_key_file((dir / "missing").string()), std::runtime_error);
  std::ofstream(file) << "file-key\n";
  ::setenv("TESSERA_API_KEY", "env-key", 1);
  ::setenv("TESSERA_CONTROL_KEY", "env-control", 1);
  const AccessConfig c = load_access_config(file, "", true);
  ::unsetenv("TESSERA_API_KEY");
  ::unsetenv("TESSERA_CONTROL_KEY");
  EXPECT_EQ(c.inference_keys, (std::vector<std::string>{"file-key", "env-key"}));
  EXPECT_EQ(c.control_keys, (std::vector<std::string>{"env-control"}));
  EXPECT_TRUE(c.control_enabled);
  std::filesystem::remove_all(dir);
}

// One task "echo" (noop on 4 values) over HTTP and gRPC on free ports.
struct GuardedServer {
  App app;
  Deployment deployment;
  ProfileTable profiles;
  ModelsConfig models;
  ServeOptions options;
  std::unique_ptr<Server> server;
  int port = 0;
  std::unique_ptr<pb::GRPCInferenceService::Stub> stub;

  explicit GuardedServer(AccessConfig access, GrpcTls tls = {}, TlsFiles http_tls = {}) {
    options.access = std::move(access);
    options.grpc_tls = std::move(tls);
    options.http_tls = std::move(http_tls);
    options.port = 0;
    options.grpc_port = 0;
    options.drain_timeout_s = 5.0;
    options.model_endpoints = false;
    app.name = "echo";
    app.slo = 5.0;
    app.tasks = {make_task("echo")};
    app.finalize();
    ModelSpec m;
    m.variant = "echo";
    m.arch = "noop";
    m.input_shape = {4};
    models.models = {m};
    deployment.groups.push_back(WorkerGroup{0, {0}, "cpu", 4, 1});
    add_affine(profiles, "echo", 1.0, 0.1, 4, "cpu");
    server =
        std::make_unique<Server>(app, deployment, profiles, PolicyConfig{}, 1, models, options);
    port = server->start();
    stub = pb::GRPCInferenceService::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(server->grpc_port()), grpc::InsecureChannelCredentials()));
  }
  ~GuardedServer() { server->shutdown(); }

  // The status of `method` `path` with `key` ("" none).
  int http(const std::string& method, const std::string& path, const std::string& key,
           std::string* body = nullptr, std::string* authenticate = nullptr) {
    httplib::Client cli("127.0.0.1", port);
    httplib::Headers headers;
    if (!key.empty()) headers.emplace("Authorization", bearer(key));
    auto res = method == "GET"            ? cli.Get(path, headers)
               : path.ends_with("/infer") ? cli.Post(path, headers, kInferBody, kJson)
                                          : cli.Post(path, headers, "", kJson);
    if (!res) return -1;
    if (body != nullptr) *body = res->body;
    if (authenticate != nullptr) *authenticate = res->get_header_value("WWW-Authenticate");
    return res->status;
  }
};

const std::string kDeployment =
    R"({"workers": [{"task": "echo", "variant": "echo", "segment": "cpu", "max_batch": 2}]})";

TEST(AccessHttp, TheControlPlaneIsClosedByDefault) {
  GuardedServer s(AccessConfig{});
  httplib::Client cli("127.0.0.1", s.port);
  auto post = cli.Post("/v2/tessera/deployment", kDeployment, kJson);
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 403);
  EXPECT_NE(post->body.find("--allow-control"), std::string::npos) << post->body;
  EXPECT_EQ(s.http("POST", "/v2/repository/models/echo/unload", ""), 403);
  EXPECT_EQ(s.server->deployment_status().reconfigurations, 0);
  // Reading stays open, and the model still serves (nothing was unloaded).
  EXPECT_EQ(s.http("GET", "/v2/tessera/deployment", ""), 200);
  EXPECT_EQ(s.http("POST", "/v2/models/echo/infer", ""), 200);
}

TEST(AccessHttp, KeysGuardInferenceAndControl) {
  GuardedServer s(keyed(true));
  std::string body, authenticate;
  // Probes need no key.
  EXPECT_EQ(s.http("GET", "/v2/health/live", ""), 200);
  EXPECT_EQ(s.http("GET", "/v2/health/ready", ""), 200);
  // Without a key: 401 with the Bearer challenge and nothing else, on every other route,
  // unknown paths included (no map of the routes for strangers).
  for (const char* path : {"/v2/models/echo/infer", "/v2/models/echo", "/metrics", "/v2",
                           "/v2/repository/models/echo/unload", "/no/such/path"}) {
    const std::string method =
        std::string(path).ends_with("infer") || std::string(path).ends_with("unload") ? "POST"
                                                                                      : "GET";
    EXPECT_EQ(s.http(method, path, "", &body, &authenticate), 401) << path;
    EXPECT_EQ(authenticate, "Bearer") << path;
    EXPECT_EQ(body, R"({"error":"unauthorized"})") << path;
    EXPECT_EQ(s.http(method, path, "not-a-key"), 401) << path;
  }
  // An inference key: inference, metadata and metrics; control is 403.
  EXPECT_EQ(s.http("POST", "/v2/models/echo/infer", kInferKey), 200);
  EXPECT_EQ(s.http("GET", "/v2/models/echo", kInferKey), 200);
  EXPECT_EQ(s.http("GET", "/metrics", kInferKey), 200);
  EXPECT_EQ(s.http("POST", "/v2/repository/models/echo/unload", kInferKey, &body), 403);
  EXPECT_EQ(body, R"({"error":"forbidden"})");
  // The control key: unload takes effect, load restores.
  EXPECT_EQ(s.http("POST", "/v2/repository/models/echo/unload", kControlKey), 200);
  EXPECT_EQ(s.http("POST", "/v2/models/echo/infer", kInferKey), 400);  // unloaded
  EXPECT_EQ(s.http("POST", "/v2/repository/models/echo/load", kControlKey), 200);
  EXPECT_EQ(s.http("POST", "/v2/models/echo/infer", kInferKey), 200);
  // A deployment POST with the control key applies.
  httplib::Client cli("127.0.0.1", s.port);
  cli.set_bearer_token_auth(kControlKey);
  auto post = cli.Post("/v2/tessera/deployment", kDeployment, kJson);
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 200) << post->body;
  EXPECT_EQ(s.server->deployment_status().reconfigurations, 1);
}

grpc::Status call_infer(GuardedServer& s, const std::string& key) {
  grpc::ClientContext ctx;
  if (!key.empty()) ctx.AddMetadata("authorization", bearer(key));
  pb::ModelInferRequest q;
  q.set_model_name("echo");
  auto* in = q.add_inputs();
  in->set_name("input");
  in->set_datatype("FP32");
  in->add_shape(1);
  in->add_shape(4);
  for (int i = 0; i < 4; ++i) in->mutable_contents()->add_fp32_contents(1.0f);
  pb::ModelInferResponse r;
  return s.stub->ModelInfer(&ctx, q, &r);
}

grpc::Status call_unload(GuardedServer& s, const std::string& key) {
  grpc::ClientContext ctx;
  if (!key.empty()) ctx.AddMetadata("authorization", bearer(key));
  pb::RepositoryModelUnloadRequest q;
  q.set_model_name("echo");
  pb::RepositoryModelUnloadResponse r;
  return s.stub->RepositoryModelUnload(&ctx, q, &r);
}

TEST(AccessGrpc, TheSameRuleOverMetadata) {
  GuardedServer s(keyed(true));
  grpc::ClientContext live_ctx;
  pb::ServerLiveResponse live;
  EXPECT_TRUE(s.stub->ServerLive(&live_ctx, {}, &live).ok());  // probes need no key
  grpc::ClientContext meta_ctx;
  pb::ServerMetadataResponse meta;
  EXPECT_EQ(s.stub->ServerMetadata(&meta_ctx, {}, &meta).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  const grpc::Status anonymous = call_infer(s, "");
  EXPECT_EQ(anonymous.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(anonymous.error_message(), "unauthorized");
  EXPECT_EQ(call_infer(s, "not-a-key").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(call_infer(s, kInferKey).ok());
  EXPECT_EQ(call_unload(s, kInferKey).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(call_unload(s, "").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(call_unload(s, kControlKey).ok());
}

TEST(AccessGrpc, RepositoryChangesAreClosedByDefault) {
  GuardedServer s(AccessConfig{});
  const grpc::Status st = call_unload(s, "");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(st.error_message().find("--allow-control"), std::string::npos);
  EXPECT_TRUE(call_infer(s, "").ok());  // still loaded, inference open without keys
}

// ---- TLS on the gRPC port, with certificates this test makes (the openssl command) ----

bool live_over(int port, const std::shared_ptr<grpc::ChannelCredentials>& creds) {
  auto stub = pb::GRPCInferenceService::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), creds));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  pb::ServerLiveResponse r;
  return stub->ServerLive(&ctx, {}, &r).ok() && r.live();
}

TEST(AccessTls, GrpcOverTlsAndClientCertificates) {
  const TestPki pki;
  ASSERT_TRUE(pki.ok) << "openssl could not make the test certificates";
  grpc::SslCredentialsOptions trust;
  trust.pem_root_certs = TestPki::read(pki.pem("ca.pem"));
  {
    GuardedServer s(AccessConfig{}, GrpcTls{pki.pem("server.pem"), pki.pem("server.key"), ""});
    EXPECT_TRUE(live_over(s.server->grpc_port(), grpc::SslCredentials(trust)));
    EXPECT_FALSE(live_over(s.server->grpc_port(), grpc::InsecureChannelCredentials()));
    grpc::SslCredentialsOptions other;  // a client that trusts another CA: refused
    other.pem_root_certs = TestPki::read(pki.pem("client.pem"));
    EXPECT_FALSE(live_over(s.server->grpc_port(), grpc::SslCredentials(other)));
  }
  {
    GuardedServer s(AccessConfig{},
                    GrpcTls{pki.pem("server.pem"), pki.pem("server.key"), pki.pem("ca.pem")});
    EXPECT_FALSE(live_over(s.server->grpc_port(), grpc::SslCredentials(trust)));  // no client cert
    grpc::SslCredentialsOptions mutual = trust;
    mutual.pem_private_key = TestPki::read(pki.pem("client.key"));
    mutual.pem_cert_chain = TestPki::read(pki.pem("client.pem"));
    EXPECT_TRUE(live_over(s.server->grpc_port(), grpc::SslCredentials(mutual)));
  }
  // A missing file stops the server at start, naming it.
  try {
    GuardedServer s(AccessConfig{}, GrpcTls{pki.pem("nope.pem"), pki.pem("server.key"), ""});
    ADD_FAILURE() << "started without its certificate";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("nope.pem"), std::string::npos) << e.what();
  }
}

// ---- TLS on the HTTP port ----

TEST(AccessTls, HttpsServesEveryRouteAndKeysHoldOverIt) {
  const TestPki pki;
  ASSERT_TRUE(pki.ok) << "openssl could not make the test certificates";
  AccessConfig access;
  access.inference_keys = {"infer-key"};
  GuardedServer s(access, {}, TlsFiles{pki.pem("server.pem"), pki.pem("server.key"), ""});
  TlsClient c(s.port, pki);
  ASSERT_TRUE(c.handshake_ok());
  EXPECT_EQ(c.request("GET", "/v2/health/live").status, 200);  // probes need no key
  EXPECT_EQ(c.request("GET", "/v2/health/ready").status, 200);
  EXPECT_EQ(c.request("POST", "/v2/models/echo/infer", kInferBody).status, 401);
  const TlsAnswer infer =
      c.request("POST", "/v2/models/echo/infer", kInferBody, bearer("infer-key"));
  EXPECT_EQ(infer.status, 200) << infer.body;
  EXPECT_NE(infer.body.find("\"outputs\""), std::string::npos) << infer.body;
  EXPECT_EQ(c.request("GET", "/metrics").status, 401);
  const TlsAnswer metrics = c.request("GET", "/metrics", "", bearer("infer-key"));
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("tessera_requests_total"), std::string::npos);
  // A plain-HTTP client on the TLS port gets no answer (the connection closes), and the
  // server serves TLS clients after it.
  EXPECT_EQ(s.http("GET", "/v2/health/live", ""), -1);
  TlsClient again(s.port, pki);
  EXPECT_EQ(again.request("GET", "/v2/health/live").status, 200);
}

TEST(AccessTls, HttpsWithClientCertificates) {
  const TestPki pki;
  ASSERT_TRUE(pki.ok) << "openssl could not make the test certificates";
  GuardedServer s(AccessConfig{}, {},
                  TlsFiles{pki.pem("server.pem"), pki.pem("server.key"), pki.pem("ca.pem")});
  TlsClient anonymous(s.port, pki);  // no client certificate: never answered
  EXPECT_EQ(anonymous.request("GET", "/v2/health/live").status, 0);
  TlsClient mutual(s.port, pki, true);
  EXPECT_EQ(mutual.request("GET", "/v2/health/live").status, 200);
  EXPECT_EQ(mutual.request("POST", "/v2/models/echo/infer", kInferBody).status, 200);
}

TEST(AccessTls, UnusableHttpsFilesStopTheServerNamingTheFile) {
  const TestPki pki;
  ASSERT_TRUE(pki.ok) << "openssl could not make the test certificates";
  const auto refused = [&](TlsFiles files, const std::string& named) {
    try {
      GuardedServer s(AccessConfig{}, {}, std::move(files));
      ADD_FAILURE() << "started with unusable TLS files";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  };
  refused(TlsFiles{pki.pem("nope.pem"), pki.pem("server.key"), ""}, "nope.pem");
  refused(TlsFiles{pki.pem("server.pem"), pki.pem("san.ext"), ""}, "san.ext");  // not PEM
  // The client's key is not the server certificate's.
  refused(TlsFiles{pki.pem("server.pem"), pki.pem("client.key"), ""}, "client.key");
  refused(TlsFiles{pki.pem("server.pem"), "", ""}, "--http-tls-key");
  refused(TlsFiles{"", pki.pem("server.key"), ""}, "--http-tls-cert");
}

}  // namespace
}  // namespace tessera
