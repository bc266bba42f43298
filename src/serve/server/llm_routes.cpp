#include "serve/server/llm_routes.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.hpp"

namespace tessera {
namespace {

using nlohmann::json;

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One generation's answer, shared by the endpoint's callbacks (tokens on the instance's
// thread, the end on the loop; never at once). Holds its request in flight (its admission
// ticket) until it is answered.
struct Call {
  Responder respond;
  std::shared_ptr<const Tokenizer> tokenizer;
  LlmServeMetrics* metrics = nullptr;
  Admission::Ticket ticket;
  LlmApi api = LlmApi::kCompletion;
  bool stream = false;
  std::string id;
  int64_t created = 0;
  std::string model;
  std::vector<int64_t> out;
  std::unique_ptr<TextStream> pieces;  // streamed text: whole UTF-8 characters only
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
    // One event per token; a token that ends inside a character carries no text yet (a
    // character still incomplete at the end is not sent: the whole answer shows U+FFFD).
    if (!pieces) pieces = std::make_unique<TextStream>(*tokenizer);
    return sse->write(stream_event(api, id, created, model, pieces->push(token)));
  }

  void on_end(const LlmRequestEnd& r) {
    answer(r);
    ticket.release();  // answered: no longer in flight
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

// The routes' shared state: what they were given, and the completion ids' counter.
struct LlmRoutesState {
  LlmRoutes k;
  std::atomic<uint64_t> next_id{1};

  explicit LlmRoutesState(LlmRoutes routes) : k(std::move(routes)) {}
  HttpResponse error(LlmApi api, int status, const std::string& message, const std::string& param,
                     const char* type = "invalid_request_error") {
    if (status >= 400) k.metrics.http_error(status);
    return HttpResponse{status, api == LlmApi::kGenerate ? kserve_error(message)
                                                         : openai_error(message, type, param)};
  }
  void generate(const HttpRequest& req, LlmApi api, bool stream, const Responder& respond);
  void model_get(const std::string& name, const Responder& respond);
};

void LlmRoutesState::generate(const HttpRequest& req, LlmApi api, bool stream,
                              const Responder& respond) {
  LlmApiRequest parsed;
  try {
    parsed = api == LlmApi::kCompletion ? parse_completion_request(req.body, k.limits)
             : api == LlmApi::kChat     ? parse_chat_request(req.body, k.limits)
                                        : parse_generate_request(req.body, stream, k.limits);
  } catch (const LlmRequestError& e) {
    return respond(error(api, e.status(), e.what(), e.field()));
  }
  if (api != LlmApi::kGenerate) stream = parsed.stream;
  if (!parsed.model.empty() && parsed.model != k.model) {
    return respond(error(api, 404,
                         fmt::format("model '{}' is not served; GET /v1/models lists '{}'",
                                     parsed.model.substr(0, 200), k.model),
                         "model", "not_found_error"));
  }
  if (k.admission.draining()) {
    HttpResponse r = error(api, 503, "the server is shutting down", "", "server_error");
    r.headers.emplace_back("Retry-After", "1");
    return respond(std::move(r));
  }
  std::vector<int64_t> ids = k.tokenizer->encode(parsed.prompt);
  const char* prompt_field = api == LlmApi::kGenerate ? "text_input"
                             : api == LlmApi::kChat   ? "messages"
                                                      : "prompt";
  if (ids.empty()) return respond(error(api, 400, "the prompt has no tokens", prompt_field));
  if (ids.size() > k.max_prompt_tokens) {
    return respond(
        error(api, 400,
              fmt::format("the prompt is {} tokens; at most {}", ids.size(), k.max_prompt_tokens),
              prompt_field));
  }
  if (ids.size() + parsed.max_tokens > k.max_positions) {
    return respond(error(
        api, 400,
        fmt::format("the prompt ({} tokens) plus max_tokens ({}) exceed the model's {} positions",
                    ids.size(), parsed.max_tokens, k.max_positions),
        api == LlmApi::kGenerate ? "parameters.max_tokens" : "max_tokens"));
  }
  Admission::Ticket ticket = k.admission.enter(1);
  if (ticket.over_limit()) {
    k.metrics.rejected();
    HttpResponse r = error(
        api, 429,
        fmt::format("too many requests in flight ({}); retry later", k.admission.max_in_flight()),
        "", "rate_limit_error");
    r.headers.emplace_back("Retry-After", "1");
    return respond(std::move(r));
  }
  auto call = std::make_shared<Call>(respond);
  call->tokenizer = k.tokenizer;
  call->metrics = &k.metrics;
  call->api = api;
  call->stream = stream;
  call->id = fmt::format("{}-{}", api == LlmApi::kChat ? "chatcmpl" : "cmpl", next_id++);
  call->created = unix_now();
  call->model = k.model;
  if (parsed.stop_at_eos && k.eos_token < 0) {
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
  if (parsed.stop_at_eos) g.stop_token = k.eos_token;
  call->ticket = std::move(ticket);
  LlmCallbacks cb;
  cb.on_token = [call](int64_t t) { return call->on_token(t); };
  cb.on_end = [call](const LlmRequestEnd& r) { call->on_end(r); };
  k.endpoint.submit(std::move(g), std::move(cb));
}

void LlmRoutesState::model_get(const std::string& name, const Responder& respond) {
  if (name != k.model) {
    k.metrics.http_error(404);
    return respond(HttpResponse{
        404, kserve_error(fmt::format("model '{}' is not served; this server serves '{}'",
                                      name.substr(0, 200), k.model))});
  }
  const json doc = {
      {"name", k.model},
      {"versions", json::array({"1"})},
      {"platform", "tessera-llm"},
      {"inputs", json::array({{{"name", "text_input"}, {"datatype", "BYTES"}, {"shape", {1}}}})},
      {"outputs", json::array({{{"name", "text_output"}, {"datatype", "BYTES"}, {"shape", {1}}}})}};
  respond(HttpResponse{200, doc.dump()});
}

LlmServeMetrics::Gauges llm_gauges(const LlmEndpointStats& s) {
  LlmServeMetrics::Gauges g;
  g.kv_used = s.kv_used;
  g.kv_total = s.kv_total;
  g.waiting = s.waiting;
  g.running = s.running;
  g.preemptions = s.preemptions;
  for (const LlmInstanceStats& i : s.instances) g.instance_steps.push_back(i.steps);
  return g;
}

void add_llm_routes(HttpRouter& router, LlmRoutes routes) {
  auto st = std::make_shared<LlmRoutesState>(std::move(routes));
  router.add("GET", "/metrics", [st](HttpRequest&&, const Responder& respond, auto&) {
    respond(HttpResponse{200, st->k.metrics.render(llm_gauges(st->k.endpoint.stats())),
                         "text/plain; version=0.0.4; charset=utf-8"});
  });
  router.add("", "/v2/health/live", [](HttpRequest&&, const Responder& respond, auto&) {
    respond(HttpResponse{200, "{\"live\":true}"});
  });
  router.add("", "/v2/health/ready", [st](HttpRequest&&, const Responder& respond, auto&) {
    const bool ready = !st->k.admission.draining();
    respond(HttpResponse{ready ? 200 : 503, ready ? "{\"ready\":true}" : "{\"ready\":false}"});
  });
  router.add("GET", "/v1/models", [st](HttpRequest&&, const Responder& respond, auto&) {
    const json doc = {{"object", "list"},
                      {"data", json::array({{{"id", st->k.model},
                                             {"object", "model"},
                                             {"created", st->k.started_at},
                                             {"owned_by", "tessera"}}})}};
    respond(HttpResponse{200, doc.dump()});
  });
  router.add("POST", "/v1/completions", [st](HttpRequest&& req, const Responder& respond, auto&) {
    st->generate(req, LlmApi::kCompletion, false, respond);
  });
  router.add("POST", "/v1/chat/completions",
             [st](HttpRequest&& req, const Responder& respond, auto&) {
               st->generate(req, LlmApi::kChat, false, respond);
             });
  // /v2/models/{m}/...: the model's name may hold slashes ("org/model").
  for (const bool stream : {true, false}) {
    router.add("POST", stream ? "/v2/models/{...}/generate_stream" : "/v2/models/{...}/generate",
               [st, stream](HttpRequest&& req, const Responder& respond, const RouteParams& p) {
                 if (p[0] != st->k.model) return st->model_get(p[0], respond);  // 404
                 st->generate(req, LlmApi::kGenerate, stream, respond);
               });
  }
  for (const char* pattern : {"/v2/models/{...}/ready", "/v2/models/{...}"}) {
    router.add("GET", pattern, [st](HttpRequest&&, const Responder& respond, const RouteParams& p) {
      st->model_get(p[0], respond);
    });
  }
  router.set_wrong_method(
      [st](HttpRequest&& req, const Responder& respond, const std::string& allowed) {
        st->k.metrics.http_error(405);
        HttpResponse r{405, kserve_error(fmt::format("{} {}: use {}", req.method.substr(0, 16),
                                                     req.path.substr(0, 200), allowed))};
        r.headers.emplace_back("Allow", allowed);
        respond(std::move(r));
      });
  router.set_fallback([st](HttpRequest&& req, const Responder& respond) {
    st->k.metrics.http_error(404);
    respond(HttpResponse{
        404, kserve_error(fmt::format(
                 "no route for {} {}; LLM endpoints: /v1/completions, /v1/chat/completions, "
                 "/v1/models, /v2/models/{}/generate[_stream]",
                 req.method.substr(0, 16), req.path.substr(0, 200), st->k.model))});
  });
}

}  // namespace tessera
