#include "serve/openai/llm_protocol.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "serve/openai/request_json.hpp"
#include "tokenizer/chat_template.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera {
namespace {

using nlohmann::json;
using request_json::bad;

constexpr int64_t kMaxTokensCeiling = 1 << 24;  // when the server sets no cap

// Refuses every key of `doc` not in `known`, naming it (under `prefix`, e.g. "parameters.").
void only_known(const json& doc, std::initializer_list<const char*> known,
                const std::string& prefix, const char* api) {
  for (const auto& [key, value] : doc.items()) {
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; })) {
      bad(prefix + key.substr(0, 100), prefix + key.substr(0, 100) + " is not supported by " + api +
                                           " on this server (docs/llm-serve.md lists "
                                           "the fields it implements)");
    }
  }
}

std::string model_field(const json& doc) {
  return request_json::string(doc, "model", "model").value_or("");
}

void check_prompt_size(const std::string& field, const std::string& prompt,
                       const LlmRequestLimits& limits) {
  if (prompt.empty()) bad(field, field + " is empty");
  if (prompt.size() > limits.max_prompt_bytes) {
    bad(field, field + " is " + std::to_string(prompt.size()) + " bytes; at most " +
                   std::to_string(limits.max_prompt_bytes));
  }
}

std::optional<uint32_t> max_tokens_field(const json& doc, const char* key, const std::string& name,
                                         const LlmRequestLimits& limits) {
  const int64_t cap = limits.max_new_tokens > 0 ? limits.max_new_tokens : kMaxTokensCeiling;
  const auto v = request_json::integer(doc, key, name, 1, cap);
  if (!v) return std::nullopt;
  return static_cast<uint32_t>(*v);
}

std::vector<std::string> stop_field(const json& doc, const std::string& name,
                                    const LlmRequestLimits& limits) {
  const json* v = request_json::find(doc, "stop");
  if (v == nullptr) return {};
  std::vector<std::string> out;
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    if (v->size() > limits.max_stop) {
      bad(name, name + " holds at most " + std::to_string(limits.max_stop) + " strings");
    }
    for (const json& s : *v) {
      if (!s.is_string()) bad(name, name + " must be a string or a list of strings");
      out.push_back(s.get<std::string>());
    }
  } else {
    bad(name,
        name + " must be a string or a list of strings, not a " + std::string(v->type_name()));
  }
  for (const std::string& s : out) {
    if (s.empty()) bad(name, name + " holds an empty string");
    if (s.size() > 256) bad(name, name + " holds a string of more than 256 bytes");
  }
  return out;
}

// temperature, top_p, top_k, penalties, seed, ignore_eos, stop: the same in every API
// (`prefix`: "parameters." for generate).
void sampling_fields(const json& doc, const std::string& prefix, const LlmRequestLimits& limits,
                     LlmApiRequest& r) {
  SamplingParams& s = r.sampling;
  const auto name = [&](const char* f) { return prefix + f; };
  s.temperature = request_json::number(doc, "temperature", name("temperature"), 0, 2).value_or(1);
  s.top_p = request_json::number(doc, "top_p", name("top_p"), 0, 1).value_or(1);
  if (s.top_p <= 0) bad(name("top_p"), name("top_p") + " must be in (0, 1]");
  // vLLM's top_k: -1 or 0 mean no limit.
  s.top_k = std::max<int64_t>(
      0, request_json::integer(doc, "top_k", name("top_k"), -1, int64_t{1} << 30).value_or(0));
  s.presence_penalty =
      request_json::number(doc, "presence_penalty", name("presence_penalty"), -2, 2).value_or(0);
  s.frequency_penalty =
      request_json::number(doc, "frequency_penalty", name("frequency_penalty"), -2, 2).value_or(0);
  s.seed = request_json::bits64(doc, "seed", name("seed"));
  if (auto ignore = request_json::boolean(doc, "ignore_eos", name("ignore_eos"))) {
    r.stop_at_eos = !*ignore;
  }
  r.stop = stop_field(doc, name("stop"), limits);
}

// n, best_of, stream, stream_options: the OpenAI APIs'.
void openai_fields(const json& doc, const LlmRequestLimits& limits, LlmApiRequest& r) {
  r.n = static_cast<uint32_t>(
      request_json::integer(doc, "n", "n", 1, limits.max_choices).value_or(1));
  if (auto best_of = request_json::integer(doc, "best_of", "best_of", 1, limits.max_choices);
      best_of && *best_of != r.n) {
    bad("best_of",
        "best_of other than n is not supported: this server returns every choice it generates");
  }
  r.stream = request_json::boolean(doc, "stream", "stream").value_or(false);
  if (const json* so = request_json::find(doc, "stream_options")) {
    if (!so->is_object()) bad("stream_options", "stream_options must be an object");
    only_known(*so, {"include_usage"}, "stream_options.", "this endpoint");
    if (!r.stream) bad("stream_options", "stream_options is only allowed with stream: true");
    r.include_usage =
        request_json::boolean(*so, "include_usage", "stream_options.include_usage").value_or(false);
  }
  if (r.prompts.size() * r.n > limits.max_choices) {
    bad("n", "prompts x n is " + std::to_string(r.prompts.size() * r.n) + "; at most " +
                 std::to_string(limits.max_choices));
  }
}

// A chat message's content: a string, or a list of text parts joined by newlines (as vLLM
// joins them).
std::string message_content(const json& msg, const std::string& at) {
  const json* c = request_json::find(msg, "content");
  if (c == nullptr) bad(at + ".content", at + ".content is required");
  if (c->is_string()) return c->get<std::string>();
  if (!c->is_array()) {
    bad(at + ".content", at + ".content must be a string or a list of content parts");
  }
  std::string text;
  for (std::size_t j = 0; j < c->size(); ++j) {
    const json& part = (*c)[j];
    const std::string pat = at + ".content[" + std::to_string(j) + "]";
    if (!part.is_object()) bad(pat, pat + " must be an object with type and text");
    const std::string type = request_json::string(part, "type", pat + ".type").value_or("");
    if (type != "text") {
      bad(pat + ".type", pat + ".type '" + type.substr(0, 40) +
                             "' is not supported: this server reads text parts only");
    }
    only_known(part, {"type", "text"}, pat + ".", "chat completions");
    auto t = request_json::string(part, "text", pat + ".text");
    if (!t) bad(pat + ".text", pat + ".text is required");
    if (j > 0) text += "\n";
    text += *t;
  }
  return text;
}

// The prompt of doc's `messages` through the chat template (or "role: content" lines).
std::string chat_prompt(const json& doc, const LlmRequestLimits& limits,
                        const ChatTemplate* chat_template, bool add_generation_prompt) {
  const json* m = request_json::find(doc, "messages");
  if (m == nullptr) bad("messages", "messages is required");
  if (!m->is_array())
    bad("messages", "messages must be a list, not a " + std::string(m->type_name()));
  if (m->empty()) bad("messages", "messages is empty");
  if (m->size() > limits.max_messages) {
    bad("messages", "at most " + std::to_string(limits.max_messages) + " messages");
  }
  std::vector<ChatMessage> messages;
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < m->size(); ++i) {
    const json& msg = (*m)[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!msg.is_object()) bad(at, at + " must be an object with role and content");
    only_known(msg, {"role", "content", "name"}, at + ".", "chat completions");
    const std::string role = request_json::string(msg, "role", at + ".role").value_or("");
    if (role != "system" && role != "user" && role != "assistant" && role != "developer") {
      bad(at + ".role", at + ".role must be system, developer, user or assistant, not '" +
                            role.substr(0, 40) + "'");
    }
    request_json::string(msg, "name", at + ".name");  // accepted and not used
    messages.push_back({role, message_content(msg, at)});
    bytes += messages.back().content.size();
    if (bytes > limits.max_prompt_bytes) {
      bad("messages",
          "the messages are more than " + std::to_string(limits.max_prompt_bytes) + " bytes");
    }
  }
  std::string prompt;
  if (chat_template != nullptr) {
    try {
      prompt = chat_template->apply(messages, add_generation_prompt);
    } catch (const std::exception& e) {
      bad("messages", std::string("the model's chat template refused the messages: ") + e.what());
    }
  } else {
    for (const ChatMessage& msg : messages) prompt += msg.role + ": " + msg.content + "\n";
    if (add_generation_prompt) prompt += "assistant: ";
  }
  check_prompt_size("messages", prompt, limits);
  return prompt;
}

json usage_json(const LlmUsage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

// Chat's logprobs entry of one token.
json chat_logprob(const LlmTokenLogprob& t) {
  json top = json::array();
  for (const auto& [tok, lp] : t.top) {
    top.push_back({{"token", tok}, {"logprob", lp}, {"bytes", bytes_of(tok)}});
  }
  return {{"token", t.token},
          {"logprob", t.logprob},
          {"bytes", bytes_of(t.token)},
          {"top_logprobs", top}};
}

// Completions' logprobs object of `tokens` (`offset`: the text offset of the first).
json completion_logprobs(const std::vector<LlmTokenLogprob>& tokens, std::size_t offset) {
  json out = {{"tokens", json::array()},
              {"token_logprobs", json::array()},
              {"top_logprobs", json::array()},
              {"text_offset", json::array()}};
  for (const LlmTokenLogprob& t : tokens) {
    out["tokens"].push_back(t.token);
    out["token_logprobs"].push_back(t.logprob);
    json top = json::object();
    for (const auto& [tok, lp] : t.top) top[tok] = lp;
    out["top_logprobs"].push_back(top);
    out["text_offset"].push_back(offset);
    offset += t.token.size();
  }
  return out;
}

const char* finish_reason(bool stopped) { return stopped ? "stop" : "length"; }

}  // namespace

LlmApiRequest parse_completion_request(const std::string& body, const LlmRequestLimits& limits) {
  const json doc = request_json::parse_object(body);
  only_known(doc,
             {"model", "prompt", "max_tokens", "temperature", "top_p", "top_k", "n", "best_of",
              "stream", "stream_options", "logprobs", "echo", "stop", "presence_penalty",
              "frequency_penalty", "seed", "ignore_eos", "user"},
             "", "completions");
  request_json::string(doc, "user", "user");  // accepted and not used (docs/llm-serve.md)
  LlmApiRequest r;
  r.api = LlmApi::kCompletion;
  r.model = model_field(doc);
  const json* p = request_json::find(doc, "prompt");
  if (p == nullptr) bad("prompt", "prompt is required");
  if (p->is_string()) {
    r.prompts.push_back(p->get<std::string>());
  } else if (p->is_array() && !p->empty() && (*p)[0].is_string()) {
    if (p->size() > limits.max_prompts) {
      bad("prompt", "prompt lists at most " + std::to_string(limits.max_prompts) + " prompts");
    }
    for (std::size_t i = 0; i < p->size(); ++i) {
      if (!(*p)[i].is_string()) {
        bad("prompt[" + std::to_string(i) + "]",
            "prompt[" + std::to_string(i) +
                "] must be a string (token-id prompts are not "
                "supported; POST /tokenize turns text into ids)");
      }
      r.prompts.push_back((*p)[i].get<std::string>());
    }
  } else {
    bad("prompt",
        "prompt must be a string or a non-empty list of strings (token-id prompts "
        "are not supported)");
  }
  for (std::size_t i = 0; i < r.prompts.size(); ++i) {
    check_prompt_size(r.prompts.size() == 1 ? "prompt" : "prompt[" + std::to_string(i) + "]",
                      r.prompts[i], limits);
  }
  r.max_tokens = max_tokens_field(doc, "max_tokens", "max_tokens", limits);
  sampling_fields(doc, "", limits, r);
  openai_fields(doc, limits, r);
  if (auto lp = request_json::integer(doc, "logprobs", "logprobs", 0, 20)) {
    r.logprobs = true;
    r.sampling.top_logprobs = static_cast<int>(*lp);
  }
  r.echo = request_json::boolean(doc, "echo", "echo").value_or(false);
  if (r.echo && r.logprobs) {
    bad("echo",
        "echo with logprobs is not supported: this server does not compute the "
        "prompt's log-probabilities");
  }
  return r;
}

LlmApiRequest parse_chat_request(const std::string& body, const LlmRequestLimits& limits,
                                 const ChatTemplate* chat_template) {
  const json doc = request_json::parse_object(body);
  only_known(doc,
             {"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p",
              "top_k", "n", "stream", "stream_options", "logprobs", "top_logprobs", "stop",
              "presence_penalty", "frequency_penalty", "seed", "ignore_eos", "user"},
             "", "chat completions");
  request_json::string(doc, "user", "user");  // accepted and not used (docs/llm-serve.md)
  LlmApiRequest r;
  r.api = LlmApi::kChat;
  r.model = model_field(doc);
  r.prompts.push_back(chat_prompt(doc, limits, chat_template, true));
  r.add_special_tokens = chat_template == nullptr;
  const bool new_name = doc.contains("max_completion_tokens");
  r.max_tokens = max_tokens_field(doc, new_name ? "max_completion_tokens" : "max_tokens",
                                  new_name ? "max_completion_tokens" : "max_tokens", limits);
  sampling_fields(doc, "", limits, r);
  openai_fields(doc, limits, r);
  r.logprobs = request_json::boolean(doc, "logprobs", "logprobs").value_or(false);
  if (auto top = request_json::integer(doc, "top_logprobs", "top_logprobs", 0, 20)) {
    if (!r.logprobs) bad("top_logprobs", "top_logprobs needs logprobs: true");
    r.sampling.top_logprobs = static_cast<int>(*top);
  }
  return r;
}

LlmApiRequest parse_generate_request(const std::string& body, bool stream,
                                     const LlmRequestLimits& limits) {
  const json doc = request_json::parse_object(body);
  only_known(doc, {"text_input", "parameters", "id"}, "", "generate");
  LlmApiRequest r;
  r.api = LlmApi::kGenerate;
  r.stream = stream;
  auto t = request_json::string(doc, "text_input", "text_input");
  if (!t) bad("text_input", "text_input is required");
  r.prompts.push_back(std::move(*t));
  check_prompt_size("text_input", r.prompts.front(), limits);
  if (const json* p = request_json::find(doc, "parameters")) {
    if (!p->is_object()) bad("parameters", "parameters must be an object");
    only_known(*p,
               {"max_tokens", "stream", "ignore_eos", "temperature", "top_p", "top_k", "seed",
                "stop", "presence_penalty", "frequency_penalty"},
               "parameters.", "generate");
    r.max_tokens = max_tokens_field(*p, "max_tokens", "parameters.max_tokens", limits);
    request_json::boolean(*p, "stream", "parameters.stream");  // the path decides
    sampling_fields(*p, "parameters.", limits, r);
  }
  return r;
}

LlmTokenizeRequest parse_tokenize_request(const std::string& body, const LlmRequestLimits& limits,
                                          const ChatTemplate* chat_template) {
  const json doc = request_json::parse_object(body);
  LlmTokenizeRequest r;
  r.model = model_field(doc);
  r.return_token_strs =
      request_json::boolean(doc, "return_token_strs", "return_token_strs").value_or(false);
  if (doc.contains("messages")) {
    only_known(
        doc,
        {"model", "messages", "add_generation_prompt", "add_special_tokens", "return_token_strs"},
        "", "tokenize");
    const bool generation =
        request_json::boolean(doc, "add_generation_prompt", "add_generation_prompt").value_or(true);
    r.text = chat_prompt(doc, limits, chat_template, generation);
    r.add_special_tokens =
        request_json::boolean(doc, "add_special_tokens", "add_special_tokens").value_or(false);
    return r;
  }
  only_known(doc, {"model", "prompt", "add_special_tokens", "return_token_strs"}, "", "tokenize");
  auto prompt = request_json::string(doc, "prompt", "prompt");
  if (!prompt) bad("prompt", "prompt (a string) or messages is required");
  if (prompt->size() > limits.max_prompt_bytes) {
    bad("prompt", "prompt is more than " + std::to_string(limits.max_prompt_bytes) + " bytes");
  }
  r.text = std::move(*prompt);
  r.add_special_tokens =
      request_json::boolean(doc, "add_special_tokens", "add_special_tokens").value_or(true);
  return r;
}

LlmDetokenizeRequest parse_detokenize_request(const std::string& body, int64_t vocab) {
  const json doc = request_json::parse_object(body);
  only_known(doc, {"model", "tokens"}, "", "detokenize");
  LlmDetokenizeRequest r;
  r.model = model_field(doc);
  const json* t = request_json::find(doc, "tokens");
  if (t == nullptr || !t->is_array()) bad("tokens", "tokens (a list of token ids) is required");
  if (t->size() > (1u << 20)) bad("tokens", "tokens holds more than 2^20 ids");
  for (std::size_t i = 0; i < t->size(); ++i) {
    const std::string at = "tokens[" + std::to_string(i) + "]";
    const json& v = (*t)[i];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= vocab ||
        (v.is_number_unsigned() && v.get<uint64_t>() >= static_cast<uint64_t>(vocab))) {
      bad(at, at + " must be a token id in [0, " + std::to_string(vocab) + "), not " +
                  v.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 40));
    }
    r.tokens.push_back(v.get<int64_t>());
  }
  return r;
}

std::string completion_answer(LlmApi api, const std::string& id, int64_t created,
                              const std::string& model, const std::vector<LlmChoice>& choices,
                              bool logprobs, const LlmUsage& usage) {
  json list = json::array();
  for (const LlmChoice& c : choices) {
    json choice = {{"index", c.index}, {"finish_reason", finish_reason(c.stopped)}};
    if (api == LlmApi::kChat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
      choice["logprobs"] = nullptr;
      if (logprobs) {
        json content = json::array();
        for (const LlmTokenLogprob& t : c.logprobs) content.push_back(chat_logprob(t));
        choice["logprobs"] = {{"content", content}, {"refusal", nullptr}};
      }
    } else {
      choice["text"] = c.text;
      // The tokens' offsets start after an echoed prompt: the text before the first token.
      const std::size_t generated = [&] {
        std::size_t n = 0;
        for (const LlmTokenLogprob& t : c.logprobs) n += t.token.size();
        return n;
      }();
      choice["logprobs"] =
          logprobs ? completion_logprobs(c.logprobs,
                                         c.text.size() > generated ? c.text.size() - generated : 0)
                   : json(nullptr);
    }
    list.push_back(std::move(choice));
  }
  const json doc = {{"id", id},
                    {"object", api == LlmApi::kChat ? "chat.completion" : "text_completion"},
                    {"created", created},
                    {"model", model},
                    {"choices", list},
                    {"usage", usage_json(usage)}};
  return dump(doc);
}

std::string generate_answer(const std::string& model, const std::string& text) {
  return dump({{"model_name", model}, {"model_version", "1"}, {"text_output", text}});
}

namespace {

json chunk(LlmApi api, const std::string& id, int64_t created, const std::string& model,
           json choices) {
  return {{"id", id},
          {"object", api == LlmApi::kChat ? "chat.completion.chunk" : "text_completion"},
          {"created", created},
          {"model", model},
          {"choices", std::move(choices)}};
}

std::string event(const json& doc) { return "data: " + dump(doc) + "\n\n"; }

}  // namespace

std::string stream_event(LlmApi api, const std::string& id, int64_t created,
                         const std::string& model, uint32_t index, const std::string& piece,
                         const LlmTokenLogprob* lp) {
  if (api == LlmApi::kGenerate) {
    return event({{"model_name", model}, {"model_version", "1"}, {"text_output", piece}});
  }
  json choice = {{"index", index}, {"finish_reason", nullptr}, {"logprobs", nullptr}};
  if (api == LlmApi::kChat) {
    choice["delta"] = {{"content", piece}};
    if (lp != nullptr) {
      choice["logprobs"] = {{"content", json::array({chat_logprob(*lp)})}, {"refusal", nullptr}};
    }
  } else {
    choice["text"] = piece;
    if (lp != nullptr) choice["logprobs"] = completion_logprobs({*lp}, 0);
  }
  return event(chunk(api, id, created, model, json::array({choice})));
}

std::string stream_final_event(LlmApi api, const std::string& id, int64_t created,
                               const std::string& model, uint32_t index, bool stopped,
                               const std::string& rest) {
  json choice = {
      {"index", index}, {"finish_reason", finish_reason(stopped)}, {"logprobs", nullptr}};
  if (api == LlmApi::kChat) {
    choice["delta"] = rest.empty() ? json::object() : json{{"content", rest}};
  } else {
    choice["text"] = rest;
  }
  return event(chunk(api, id, created, model, json::array({choice})));
}

std::string stream_usage_event(LlmApi api, const std::string& id, int64_t created,
                               const std::string& model, const LlmUsage& usage) {
  json doc = chunk(api, id, created, model, json::array());
  doc["usage"] = usage_json(usage);
  return event(doc);
}

std::string stream_role_event(const std::string& id, int64_t created, const std::string& model,
                              uint32_t index) {
  return event(chunk(LlmApi::kChat, id, created, model,
                     json::array({{{"index", index},
                                   {"delta", {{"role", "assistant"}, {"content", ""}}},
                                   {"logprobs", nullptr},
                                   {"finish_reason", nullptr}}})));
}

std::string openai_error(const std::string& message, const std::string& type,
                         const std::string& param) {
  return dump({{"error",
                {{"message", message},
                 {"type", type},
                 {"param", param.empty() ? json(nullptr) : json(param)},
                 {"code", nullptr}}}});
}

std::string kserve_error(const std::string& message) { return dump({{"error", message}}); }

std::string sse_error_event(LlmApi api, const std::string& message) {
  const std::string body =
      api == LlmApi::kGenerate ? kserve_error(message) : openai_error(message, "server_error", "");
  return "data: " + body + "\n\n";
}

}  // namespace tessera
