#include "serve/server/llm_routes.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>

#include "serve/server/llm_call.hpp"
#include "tokenizer/chat_template.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera {
namespace {

using nlohmann::json;

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

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
  void model_get(const std::string& name, const std::string* version, bool ready,
                 const Responder& respond);
  void tokenize(const HttpRequest& req, const Responder& respond);
  void detokenize(const HttpRequest& req, const Responder& respond);
};

void LlmRoutesState::generate(const HttpRequest& req, LlmApi api, bool stream,
                              const Responder& respond) {
  LlmApiRequest parsed;
  try {
    parsed = api == LlmApi::kCompletion ? parse_completion_request(req.body, k.limits)
             : api == LlmApi::kChat ? parse_chat_request(req.body, k.limits, k.chat_template.get())
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
  // Each prompt's tokens and max_tokens, checked against the model's positions.
  const std::string max_field = api == LlmApi::kGenerate ? "parameters.max_tokens" : "max_tokens";
  std::vector<std::vector<int64_t>> prompts;
  std::vector<uint32_t> max_tokens;
  for (std::size_t i = 0; i < parsed.prompts.size(); ++i) {
    const std::string field = api == LlmApi::kGenerate     ? "text_input"
                              : api == LlmApi::kChat       ? "messages"
                              : parsed.prompts.size() == 1 ? "prompt"
                                                           : fmt::format("prompt[{}]", i);
    std::vector<int64_t> ids = k.tokenizer->encode(parsed.prompts[i], parsed.add_special_tokens);
    if (ids.empty()) return respond(error(api, 400, field + " has no tokens", field));
    if (ids.size() > k.max_prompt_tokens) {
      return respond(error(api, 400,
                           fmt::format("{} is {} tokens; this server takes at most {} (the "
                                       "model's {} positions less one, or --max-prompt-tokens)",
                                       field, ids.size(), k.max_prompt_tokens, k.max_positions),
                           field));
    }
    const uint32_t room = k.max_positions - static_cast<uint32_t>(ids.size());
    uint32_t n = 0;
    if (parsed.max_tokens) {
      n = *parsed.max_tokens;
      if (n > room) {
        return respond(
            error(api, 400,
                  fmt::format("{} ({} tokens) plus {} ({}) exceed the model's {} positions", field,
                              ids.size(), max_field, n, k.max_positions),
                  max_field));
      }
    } else {
      // OpenAI's defaults: 16 for completions, the rest of the context for chat.
      n = api == LlmApi::kChat ? room : std::min(room, k.limits.default_new_tokens);
      if (k.limits.max_new_tokens > 0) n = std::min(n, k.limits.max_new_tokens);
    }
    prompts.push_back(std::move(ids));
    max_tokens.push_back(n);
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
  LlmCall::Options o;
  o.api = api;
  o.stream = stream;
  o.include_usage = parsed.include_usage;
  o.logprobs = parsed.logprobs;
  o.id = fmt::format("{}-{}", api == LlmApi::kChat ? "chatcmpl" : "cmpl", next_id++);
  o.created = unix_now();
  o.model = k.model;
  o.stop = parsed.stop;
  auto call =
      std::make_shared<LlmCall>(respond, k.tokenizer, k.metrics, std::move(ticket), std::move(o));
  // Choice p * n + j: prompt p's j-th; a seed gives each choice its own stream (seed + index).
  std::vector<std::pair<LlmRequest, LlmCallbacks>> requests;
  for (std::size_t p = 0; p < prompts.size(); ++p) {
    for (uint32_t j = 0; j < parsed.n; ++j) {
      LlmRequest g;
      g.prompt = prompts[p];
      g.max_tokens = max_tokens[p];
      g.sampling = parsed.sampling;
      if (g.sampling.seed) *g.sampling.seed += requests.size();
      if (parsed.stop_at_eos) g.stop_token = k.eos_token;  // none: max_tokens
      LlmCallbacks cb = call->add_choice(static_cast<uint32_t>(prompts[p].size()),
                                         parsed.echo ? parsed.prompts[p] : std::string(), j == 0);
      requests.emplace_back(std::move(g), std::move(cb));
    }
  }
  for (auto& [g, cb] : requests) k.endpoint.submit(std::move(g), std::move(cb));
}

// GET /v2/models/{m}[/versions/{v}][/ready]: the KServe v2 model metadata or readiness.
void LlmRoutesState::model_get(const std::string& name, const std::string* version, bool ready,
                               const Responder& respond) {
  if (name != k.model) {
    k.metrics.http_error(404);
    return respond(HttpResponse{
        404, kserve_error(fmt::format("model '{}' is not served; this server serves '{}'",
                                      name.substr(0, 200), k.model))});
  }
  if (version != nullptr && *version != "1") {
    k.metrics.http_error(404);
    return respond(HttpResponse{404, kserve_error(fmt::format("model '{}' has no version '{}' "
                                                              "(versions: 1)",
                                                              k.model, version->substr(0, 40)))});
  }
  if (ready) {
    // The protocol's readiness: 200 ready, 400 not (draining).
    const bool is_ready = !k.admission.draining();
    return respond(
        HttpResponse{is_ready ? 200 : 400, json{{"name", k.model}, {"ready", is_ready}}.dump()});
  }
  const json doc = {
      {"name", k.model},
      {"versions", json::array({"1"})},
      {"platform", "tessera-llm"},
      {"inputs", json::array({{{"name", "text_input"}, {"datatype", "BYTES"}, {"shape", {1}}}})},
      {"outputs", json::array({{{"name", "text_output"}, {"datatype", "BYTES"}, {"shape", {1}}}})}};
  respond(HttpResponse{200, doc.dump()});
}

// /tokenize and /detokenize: parses the body with `parse` (LlmRequestError: 400), checks
// its model, and answers `answer(parsed)`.
template <typename Parse, typename Answer>
void token_route(LlmRoutesState& st, const HttpRequest& req, const Responder& respond, Parse parse,
                 Answer answer) {
  decltype(parse(req.body)) r;
  try {
    r = parse(req.body);
  } catch (const LlmRequestError& e) {
    return respond(st.error(LlmApi::kCompletion, e.status(), e.what(), e.field()));
  }
  if (!r.model.empty() && r.model != st.k.model) {
    return respond(st.error(LlmApi::kCompletion, 404,
                            fmt::format("model '{}' is not served", r.model.substr(0, 200)),
                            "model", "not_found_error"));
  }
  respond(HttpResponse{200, answer(r).dump(-1, ' ', false, json::error_handler_t::replace)});
}

void LlmRoutesState::tokenize(const HttpRequest& req, const Responder& respond) {
  token_route(
      *this, req, respond,
      [this](const std::string& body) {
        return parse_tokenize_request(body, k.limits, k.chat_template.get());
      },
      [this](const LlmTokenizeRequest& r) {
        const std::vector<int64_t> ids = k.tokenizer->encode(r.text, r.add_special_tokens);
        json doc = {{"count", ids.size()}, {"max_model_len", k.max_positions}, {"tokens", ids}};
        doc["token_strs"] = nullptr;
        if (r.return_token_strs) {
          doc["token_strs"] = json::array();
          for (int64_t id : ids) doc["token_strs"].push_back(k.tokenizer->decode_token(id));
        }
        return doc;
      });
}

void LlmRoutesState::detokenize(const HttpRequest& req, const Responder& respond) {
  token_route(
      *this, req, respond,
      [this](const std::string& body) {
        return parse_detokenize_request(body, k.tokenizer->vocab_size());
      },
      [this](const LlmDetokenizeRequest& r) {
        return json{{"prompt", k.tokenizer->decode(r.tokens)}};
      });
}

LlmServeMetrics::Gauges llm_gauges(const LlmEndpointStats& s) {
  LlmServeMetrics::Gauges g;
  g.kv_used = s.kv_used;
  g.kv_total = s.kv_total;
  g.waiting = s.waiting;
  g.running = s.running;
  g.preemptions = s.preemptions;
  g.prefix_cache_queries = s.prefix_queries;
  g.prefix_cache_hits = s.prefix_hits;
  for (const LlmInstanceStats& i : s.instances) g.instance_steps.push_back(i.steps);
  return g;
}

void add_llm_routes(HttpRouter& router, LlmRoutes routes) {
  auto st = std::make_shared<LlmRoutesState>(std::move(routes));
  router.add("GET", "/metrics", [st](HttpRequest&&, const Responder& respond, auto&) {
    respond(HttpResponse{200, st->k.metrics.render(llm_gauges(st->k.endpoint.stats())),
                         "text/plain; version=0.0.4; charset=utf-8"});
  });
  router.add("", "/v2/health/live", RouteAccess::kOpen,
             [](HttpRequest&&, const Responder& respond, auto&) {
               respond(HttpResponse{200, "{\"live\":true}"});
             });
  router.add(
      "", "/v2/health/ready", RouteAccess::kOpen,
      [st](HttpRequest&&, const Responder& respond, auto&) {
        const bool ready = !st->k.admission.draining();
        respond(HttpResponse{ready ? 200 : 503, ready ? "{\"ready\":true}" : "{\"ready\":false}"});
      });
  // vLLM's (and SGLang's, TGI's) health check: 200 while serving, 503 while draining.
  router.add("GET", "/health", RouteAccess::kOpen,
             [st](HttpRequest&&, const Responder& respond, auto&) {
               respond(HttpResponse{st->k.admission.draining() ? 503 : 200, ""});
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
  router.add("POST", "/tokenize", [st](HttpRequest&& req, const Responder& respond, auto&) {
    st->tokenize(req, respond);
  });
  router.add("POST", "/detokenize", [st](HttpRequest&& req, const Responder& respond, auto&) {
    st->detokenize(req, respond);
  });
  // KServe v2: the server's metadata and its models.
  router.add("GET", "/v2", [](HttpRequest&&, const Responder& respond, auto&) {
    respond(HttpResponse{
        200, json{{"name", "tessera"}, {"version", "0.1.0"}, {"extensions", {"generate"}}}.dump()});
  });
  router.add("GET", "/v2/models", [st](HttpRequest&&, const Responder& respond, auto&) {
    respond(HttpResponse{200, json{{"models", json::array({st->k.model})}}.dump()});
  });
  // /v2/models/{m}[/versions/{v}]/...: the model's name may hold slashes ("org/model"); the
  // versioned patterns come first (the first match decides).
  for (const bool stream : {true, false}) {
    const std::string action = stream ? "/generate_stream" : "/generate";
    router.add("POST", "/v2/models/{...}/versions/{}" + action,
               [st, stream](HttpRequest&& req, const Responder& respond, const RouteParams& p) {
                 if (p[0] != st->k.model || p[1] != "1") {
                   return st->model_get(p[0], &p[1], false, respond);  // 404
                 }
                 st->generate(req, LlmApi::kGenerate, stream, respond);
               });
    router.add("POST", "/v2/models/{...}" + action,
               [st, stream](HttpRequest&& req, const Responder& respond, const RouteParams& p) {
                 if (p[0] != st->k.model) return st->model_get(p[0], nullptr, false, respond);
                 st->generate(req, LlmApi::kGenerate, stream, respond);
               });
  }
  for (const bool ready : {true, false}) {
    const std::string action = ready ? "/ready" : "";
    router.add("GET", "/v2/models/{...}/versions/{}" + action,
               [st, ready](HttpRequest&&, const Responder& respond, const RouteParams& p) {
                 st->model_get(p[0], &p[1], ready, respond);
               });
    router.add("GET", "/v2/models/{...}" + action,
               [st, ready](HttpRequest&&, const Responder& respond, const RouteParams& p) {
                 st->model_get(p[0], nullptr, ready, respond);
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
                 "/v1/models, /tokenize, /detokenize, /v2/models/{}/generate[_stream]",
                 req.method.substr(0, 16), req.path.substr(0, 200), st->k.model))});
  });
}

}  // namespace tessera
