#include "serve/server/llm_server.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.hpp"
#include "llm_serve/tokenizer.hpp"
#include "llm_torch/decoder.hpp"
#include "llm_torch/host_memory.hpp"
#include "serve/http/http_frontend.hpp"
#include "serve/metrics/llm_metrics.hpp"
#include "serve/runtime/event_loop.hpp"
#include "serve/runtime/step_log.hpp"
#include "spec/run_spec.hpp"

namespace tessera {

namespace {

// The endpoint's steps and ends, into the server's metrics.
class MetricsObserver final : public LlmObserver {
 public:
  explicit MetricsObserver(LlmServeMetrics& metrics) : metrics_(metrics) {}
  void on_llm_step(WorkerId, const LlmStepStats& stats, Time measured_s) override {
    metrics_.step(stats, measured_s);
  }
  void on_llm_end(const LlmRequestEnd& end) override {
    metrics_.request_ended(end.record, end.prompt_tokens, end.output_tokens);
  }

 private:
  LlmServeMetrics& metrics_;
};

}  // namespace

struct LlmServer::Impl {
  std::shared_ptr<const Decoder> decoder;  // the first instance's: the model's shape
  std::shared_ptr<const Tokenizer> tokenizer;
  std::string model;
  LlmServeOptions options;
  uint32_t max_prompt_tokens = 0;
  uint32_t max_positions = 0;
  LlmServeMetrics metrics;
  MetricsObserver observer{metrics};
  std::unique_ptr<LlmStepLog> step_log;  // before the endpoint: it outlives its threads
  SteadyClock clock;
  EventLoop loop{clock};
  std::unique_ptr<LlmEndpoint> endpoint;
  std::unique_ptr<HttpFrontEnd> http;
  std::atomic<bool> draining{false};
  std::atomic<std::size_t> in_flight{0};
  std::atomic<uint64_t> next_id{1};
  bool started = false;
  bool stopped = false;

  Impl(std::shared_ptr<const Decoder> d, std::shared_ptr<const Tokenizer> t, std::string name,
       LlmServeOptions o)
      : decoder(std::move(d)),
        tokenizer(std::move(t)),
        model(std::move(name)),
        options(std::move(o)),
        metrics(model) {}
  LlmServeMetrics::Gauges gauges() const;

  void handle(HttpRequest&& req, const Responder& respond);
  void generate(const HttpRequest& req, LlmApi api, bool stream, const Responder& respond);
  HttpResponse error(LlmApi api, int status, const std::string& message, const std::string& param,
                     const char* type = "invalid_request_error") {
    if (status >= 400) metrics.http_error(status);
    HttpResponse r{status, api == LlmApi::kGenerate ? kserve_error(message)
                                                    : openai_error(message, type, param)};
    return r;
  }
};

namespace {

// The checkpoint's config.json `eos_token_id` (an id, or a list whose first is used); -1
// when it has none. An id outside [0, vocab) is a SpecError naming the file and field.
int64_t eos_token_of(const std::filesystem::path& config, int64_t vocab) {
  std::ifstream in(config);
  if (!in) return -1;
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return -1;  // Decoder::load judged the file
  auto it = doc.find("eos_token_id");
  if (it == doc.end() || it->is_null()) return -1;
  const nlohmann::json& id = it->is_array() && !it->empty() ? (*it)[0] : *it;
  if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= vocab) {
    throw SpecError(
        config.string(), "eos_token_id",
        "must be a token id in [0, " + std::to_string(vocab) + "), not " + id.dump().substr(0, 40));
  }
  return id.get<int64_t>();
}

using nlohmann::json;

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One generation's answer, shared by the endpoint's callbacks (tokens on the instance's
// thread, the end on the loop; never at once). Holds its request in flight until it ends.
struct Call {
  Responder respond;
  std::shared_ptr<const Tokenizer> tokenizer;
  LlmServeMetrics* metrics = nullptr;
  std::atomic<std::size_t>* in_flight = nullptr;
  LlmApi api = LlmApi::kCompletion;
  bool stream = false;
  std::string id;
  int64_t created = 0;
  std::string model;
  std::vector<int64_t> out;
  std::unique_ptr<ResponseStream> sse;
  bool broken = false;

  explicit Call(Responder r) : respond(std::move(r)) {}

  bool on_token(int64_t token) {
    out.push_back(token);
    if (!stream) return true;
    if (!sse) {
      HttpResponse head{200, "", "text/event-stream"};
      head.headers.emplace_back("Cache-Control", "no-cache");
      sse = respond.stream(std::move(head));
      if (!sse) return false;
      if (api == LlmApi::kChat) sse->write(stream_role_event(id, created, model));
    }
    return sse->write(stream_event(api, id, created, model, tokenizer->decode_token(token)));
  }

  void on_end(const LlmRequestEnd& r) {
    answer(r);
    if (in_flight != nullptr) in_flight->fetch_sub(1);  // answered: no longer in flight
    in_flight = nullptr;
  }

  void answer(const LlmRequestEnd& r) {
    LlmUsage usage{r.prompt_tokens, r.output_tokens};
    usage.stopped = r.stopped;
    const Outcome outcome = r.record.outcome;
    if (outcome == Outcome::kOk || outcome == Outcome::kLate) {
      if (stream && sse) {
        if (api != LlmApi::kGenerate) {
          sse->write(stream_final_event(api, id, created, model, usage));
          sse->write(kSseDone);
        }
        sse->close();
        return;
      }
      const std::string text = tokenizer->decode(out);
      respond(HttpResponse{200, api == LlmApi::kGenerate
                                    ? generate_answer(model, text)
                                    : completion_answer(api, id, created, model, text, usage)});
      return;
    }
    std::string message;
    int status = 503;
    if (r.cancelled()) {
      message = "request cancelled: the client went away";
    } else if (outcome == Outcome::kDropped) {
      message = fmt::format("request dropped: {}", drop_reason_name(r.record.reason));
    } else {
      message = r.error;
      status = r.error == kShuttingDown ? 503 : 500;
    }
    if (sse) {
      sse->write(sse_error_event(api, message));
      if (api != LlmApi::kGenerate) sse->write(kSseDone);
      sse->close();
      return;
    }
    if (metrics != nullptr) metrics->http_error(status);
    HttpResponse resp{status, api == LlmApi::kGenerate ? kserve_error(message)
                                                       : openai_error(message, "server_error", "")};
    if (status == 503) resp.headers.emplace_back("Retry-After", "1");
    respond(std::move(resp));
  }
};

}  // namespace

void LlmServer::Impl::handle(HttpRequest&& req, const Responder& respond) {
  const std::string& p = req.path;
  const bool get = req.method == "GET";
  const bool post = req.method == "POST";
  auto method_not_allowed = [&](const char* allowed) {
    metrics.http_error(405);
    HttpResponse r{405, kserve_error(fmt::format("{} {}: use {}", req.method, p, allowed))};
    r.headers.emplace_back("Allow", allowed);
    respond(std::move(r));
  };
  if (p == "/metrics") {
    if (!get) return method_not_allowed("GET");
    return respond(
        HttpResponse{200, metrics.render(gauges()), "text/plain; version=0.0.4; charset=utf-8"});
  }
  if (p == "/v2/health/live") return respond(HttpResponse{200, "{\"live\":true}"});
  if (p == "/v2/health/ready") {
    const bool ready = !draining.load();
    return respond(
        HttpResponse{ready ? 200 : 503, ready ? "{\"ready\":true}" : "{\"ready\":false}"});
  }
  if (p == "/v1/models") {
    if (!get) return method_not_allowed("GET");
    const json doc = {
        {"object", "list"},
        {"data",
         json::array(
             {{{"id", model}, {"object", "model"}, {"created", 0}, {"owned_by", "tessera"}}})}};
    return respond(HttpResponse{200, doc.dump()});
  }
  if (p == "/v1/completions" || p == "/v1/chat/completions") {
    if (!post) return method_not_allowed("POST");
    return generate(req, p == "/v1/completions" ? LlmApi::kCompletion : LlmApi::kChat, false,
                    respond);
  }
  if (starts_with(p, "/v2/models/")) {
    std::string rest = p.substr(11);
    bool stream = false;
    bool gen = false;
    if (ends_with(rest, "/generate_stream")) {
      rest.resize(rest.size() - 16);
      stream = gen = true;
    } else if (ends_with(rest, "/generate")) {
      rest.resize(rest.size() - 9);
      gen = true;
    } else if (ends_with(rest, "/ready")) {
      rest.resize(rest.size() - 6);
    }
    if (rest != model) {
      metrics.http_error(404);
      return respond(HttpResponse{
          404, kserve_error(fmt::format("model '{}' is not served; this server serves '{}'",
                                        rest.substr(0, 200), model))});
    }
    if (!gen) {
      if (!get) return method_not_allowed("GET");
      const json doc = {
          {"name", model},
          {"versions", json::array({"1"})},
          {"platform", "tessera-llm"},
          {"inputs",
           json::array({{{"name", "text_input"}, {"datatype", "BYTES"}, {"shape", {1}}}})},
          {"outputs",
           json::array({{{"name", "text_output"}, {"datatype", "BYTES"}, {"shape", {1}}}})}};
      return respond(HttpResponse{200, doc.dump()});
    }
    if (!post) return method_not_allowed("POST");
    return generate(req, LlmApi::kGenerate, stream, respond);
  }
  metrics.http_error(404);
  respond(HttpResponse{404, kserve_error(fmt::format(
                                "no route for {} {}; LLM endpoints: /v1/completions, "
                                "/v1/chat/completions, /v1/models, /v2/models/{}/generate[_stream]",
                                req.method.substr(0, 16), p.substr(0, 200), model))});
}

void LlmServer::Impl::generate(const HttpRequest& req, LlmApi api, bool stream,
                               const Responder& respond) {
  LlmApiRequest parsed;
  try {
    parsed = api == LlmApi::kCompletion ? parse_completion_request(req.body, options.limits)
             : api == LlmApi::kChat     ? parse_chat_request(req.body, options.limits)
                                        : parse_generate_request(req.body, stream, options.limits);
  } catch (const LlmRequestError& e) {
    return respond(error(api, e.status(), e.what(), e.field()));
  }
  if (api != LlmApi::kGenerate) stream = parsed.stream;
  if (!parsed.model.empty() && parsed.model != model) {
    return respond(error(api, 404,
                         fmt::format("model '{}' is not served; GET /v1/models lists '{}'",
                                     parsed.model.substr(0, 200), model),
                         "model", "not_found_error"));
  }
  if (draining.load()) {
    HttpResponse r = error(api, 503, "the server is shutting down", "", "server_error");
    r.headers.emplace_back("Retry-After", "1");
    return respond(std::move(r));
  }
  std::vector<int64_t> ids = tokenizer->encode(parsed.prompt);
  const char* prompt_field = api == LlmApi::kGenerate ? "text_input"
                             : api == LlmApi::kChat   ? "messages"
                                                      : "prompt";
  if (ids.empty()) return respond(error(api, 400, "the prompt has no tokens", prompt_field));
  if (ids.size() > max_prompt_tokens) {
    return respond(error(
        api, 400, fmt::format("the prompt is {} tokens; at most {}", ids.size(), max_prompt_tokens),
        prompt_field));
  }
  if (ids.size() + parsed.max_tokens > max_positions) {
    return respond(error(
        api, 400,
        fmt::format("the prompt ({} tokens) plus max_tokens ({}) exceed the model's {} positions",
                    ids.size(), parsed.max_tokens, max_positions),
        api == LlmApi::kGenerate ? "parameters.max_tokens" : "max_tokens"));
  }
  if (in_flight.load() >= static_cast<std::size_t>(options.max_inflight)) {
    metrics.rejected();
    HttpResponse r =
        error(api, 429,
              fmt::format("too many requests in flight ({}); retry later", options.max_inflight),
              "", "rate_limit_error");
    r.headers.emplace_back("Retry-After", "1");
    return respond(std::move(r));
  }
  auto call = std::make_shared<Call>(respond);
  call->tokenizer = tokenizer;
  call->metrics = &metrics;
  call->api = api;
  call->stream = stream;
  call->id = fmt::format("{}-{}", api == LlmApi::kChat ? "chatcmpl" : "cmpl", next_id++);
  call->created = unix_now();
  call->model = model;
  if (parsed.stop_at_eos && options.eos_token < 0) {
    const std::string field = api == LlmApi::kGenerate ? "parameters.ignore_eos" : "ignore_eos";
    return respond(error(api, 400,
                         field +
                             ": false asks to stop at the end-of-sequence token, but this model "
                             "has none (no eos_token_id in its config.json)",
                         field));
  }
  LlmRequest g;
  g.prompt = std::move(ids);
  g.max_tokens = parsed.max_tokens;
  if (parsed.stop_at_eos) g.stop_token = options.eos_token;
  in_flight.fetch_add(1);
  call->in_flight = &in_flight;
  LlmCallbacks cb;
  cb.on_token = [call](int64_t t) { return call->on_token(t); };
  cb.on_end = [call](const LlmRequestEnd& r) { call->on_end(r); };
  endpoint->submit(std::move(g), std::move(cb));
}

LlmServeMetrics::Gauges LlmServer::Impl::gauges() const {
  const LlmEndpointStats s = endpoint->stats();
  LlmServeMetrics::Gauges g;
  g.kv_used = s.kv_used;
  g.kv_total = s.kv_total;
  g.waiting = s.waiting;
  g.running = s.running;
  g.preemptions = s.preemptions;
  for (const LlmInstanceStats& i : s.instances) g.instance_steps.push_back(i.steps);
  return g;
}

LlmServer::LlmServer(const RunSpec& run, std::vector<std::shared_ptr<const Decoder>> decoders,
                     std::shared_ptr<const Tokenizer> tokenizer, LlmServeOptions options) {
  if (!run.llm) {
    throw SpecError(run.file.string(), "llm", "an LLM server needs the run spec's llm: section");
  }
  if (decoders.empty() || decoders.front() == nullptr) {
    throw std::invalid_argument("an LLM server needs a decoder");
  }
  impl_ = std::make_unique<Impl>(decoders.front(), std::move(tokenizer), run.llm->model.name,
                                 std::move(options));
  Impl& s = *impl_;
  const auto positions = s.decoder->architecture().max_positions;
  s.max_positions =
      positions > 0 ? static_cast<uint32_t>(std::min<int64_t>(positions, 1 << 24)) : (1u << 16);
  s.max_prompt_tokens = s.options.max_prompt_tokens > 0
                            ? std::min(s.options.max_prompt_tokens, s.max_positions - 1)
                            : s.max_positions - 1;
  LlmObserver* observer = &s.observer;
  if (!s.options.step_log.empty()) {
    s.step_log = std::make_unique<LlmStepLog>(s.options.step_log, s.observer);
    observer = s.step_log.get();
  }
  s.endpoint = std::make_unique<LlmEndpoint>(run, std::move(decoders), s.clock, s.loop, observer);
}

std::unique_ptr<LlmServer> LlmServer::from_run(const RunSpec& run,
                                               const std::filesystem::path& checkpoint,
                                               LlmServeOptions options) {
  if (!run.llm) {
    throw SpecError(run.file.string(), "llm", "an LLM server needs the run spec's llm: section");
  }
  host_memory::hold_freed_host_memory();  // as a GPU's caching allocator: steady requests
  DecoderOptions decoder_options;
  decoder_options.device = options.device;
  // Each instance holds its own weights, as the replicas of a deployment do, so that the
  // instances' steps run at once.
  std::vector<std::shared_ptr<const Decoder>> decoders;
  const int instances = std::max(1, run.deployment.total_workers());
  for (int i = 0; i < instances; ++i) {
    decoders.push_back(Decoder::load(checkpoint, decoder_options));
  }
  const int64_t vocab = decoders.front()->architecture().vocab;
  std::shared_ptr<const Tokenizer> tokenizer = load_tokenizer(checkpoint, vocab);
  if (options.eos_token < 0) options.eos_token = eos_token_of(checkpoint / "config.json", vocab);
  return std::make_unique<LlmServer>(run, std::move(decoders), std::move(tokenizer),
                                     std::move(options));
}

LlmServer::~LlmServer() { shutdown(); }

int LlmServer::start() {
  Impl& s = *impl_;
  if (s.started) return s.options.port;
  HttpLimits limits;
  limits.max_connections = s.options.max_connections;
  limits.body_limit = s.options.max_body_bytes;
  limits.read_timeout_s = s.options.read_timeout_s;
  limits.write_timeout_s = s.options.write_timeout_s;
  limits.threads = std::max(1, s.options.http_threads);
  Impl* self = impl_.get();
  s.http = std::make_unique<HttpFrontEnd>(
      limits, [self](HttpRequest&& r, Responder respond) { self->handle(std::move(r), respond); },
      [self](int status) { self->metrics.http_error(status); },
      [](const std::string& message) { return kserve_error(message); });
  s.loop.start();
  s.options.port = s.http->start(s.options.host, s.options.port);
  s.started = true;
  return s.options.port;
}

void LlmServer::shutdown() {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  s.draining.store(true);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(s.options.drain_timeout_s);
  while (s.in_flight.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  s.endpoint->shutdown();  // ends the rest as failed (503)
  s.loop.stop();
  if (s.http) s.http->stop(1.0);
}

const std::string& LlmServer::model_name() const { return impl_->model; }
std::string LlmServer::tokenizer_name() const { return impl_->tokenizer->name(); }
LlmEndpointStats LlmServer::stats() const { return impl_->endpoint->stats(); }
std::size_t LlmServer::in_flight() const { return impl_->in_flight.load(); }

}  // namespace tessera
