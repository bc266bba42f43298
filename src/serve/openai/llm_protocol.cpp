#include "serve/openai/llm_protocol.hpp"

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.hpp"

namespace tessera {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& field, const std::string& message) {
  throw LlmRequestError(400, field, message);
}

json parse_body(const std::string& body) {
  if (body.empty()) bad("", "the request body is empty; expected a JSON object");
  if (!valid_utf8(body)) bad("", "the request body is not valid UTF-8");
  json doc;
  try {
    doc = json::parse(body);
  } catch (const json::exception& e) {
    bad("", std::string("the request body is not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) bad("", "the request body must be a JSON object");
  return doc;
}

std::string type_name(const json& v) { return v.type_name(); }

uint32_t max_tokens_field(const json& doc, const char* field, const LlmRequestLimits& limits) {
  auto it = doc.find(field);
  if (it == doc.end() || it->is_null()) return limits.default_new_tokens;
  if (!it->is_number_integer()) {
    bad(field, std::string(field) + " must be an integer, not " + type_name(*it));
  }
  const auto v = it->get<int64_t>();
  if (v < 1 || v > static_cast<int64_t>(limits.max_new_tokens)) {
    bad(field, std::string(field) + " must be in [1, " + std::to_string(limits.max_new_tokens) +
                   "], not " + std::to_string(v));
  }
  return static_cast<uint32_t>(v);
}

bool bool_field(const json& doc, const char* field) {
  auto it = doc.find(field);
  if (it == doc.end() || it->is_null()) return false;
  if (!it->is_boolean()) bad(field, std::string(field) + " must be true or false");
  return it->get<bool>();
}

// `ignore_eos` (at `field`, its name in errors): false asks for EOS stop.
bool stop_at_eos_field(const json& doc, const std::string& field) {
  auto it = doc.find("ignore_eos");
  if (it == doc.end() || it->is_null()) return false;
  if (!it->is_boolean()) bad(field, field + " must be true or false, not " + type_name(*it));
  return !it->get<bool>();
}

std::string model_field(const json& doc) {
  auto it = doc.find("model");
  if (it == doc.end() || it->is_null()) return {};
  if (!it->is_string()) bad("model", "model must be a string, not " + type_name(*it));
  return it->get<std::string>();
}

// Sampling fields tessera reads but does not use (it decodes greedily): they must still
// have the right type; n must be 1.
void check_sampling(const json& doc) {
  for (const char* f : {"temperature", "top_p", "presence_penalty", "frequency_penalty"}) {
    auto it = doc.find(f);
    if (it != doc.end() && !it->is_null() && !it->is_number()) {
      bad(f, std::string(f) + " must be a number, not " + type_name(*it));
    }
  }
  if (auto it = doc.find("n"); it != doc.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() != 1) bad("n", "n must be 1");
  }
}

void check_prompt_size(const std::string& field, const std::string& prompt,
                       const LlmRequestLimits& limits) {
  if (prompt.empty()) bad(field, field + " is empty");
  if (prompt.size() > limits.max_prompt_bytes) {
    bad(field, field + " is " + std::to_string(prompt.size()) + " bytes; at most " +
                   std::to_string(limits.max_prompt_bytes));
  }
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json usage_json(const LlmUsage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

}  // namespace

LlmApiRequest parse_completion_request(const std::string& body, const LlmRequestLimits& limits) {
  const json doc = parse_body(body);
  LlmApiRequest r;
  r.api = LlmApi::kCompletion;
  r.model = model_field(doc);
  auto p = doc.find("prompt");
  if (p == doc.end() || p->is_null()) bad("prompt", "prompt is required");
  if (p->is_string()) {
    r.prompt = p->get<std::string>();
  } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
    r.prompt = (*p)[0].get<std::string>();
  } else if (p->is_array()) {
    bad("prompt",
        "prompt must be a string or a list of exactly one string (batched prompts "
        "are not supported)");
  } else {
    bad("prompt", "prompt must be a string, not " + type_name(*p));
  }
  check_prompt_size("prompt", r.prompt, limits);
  r.max_tokens = max_tokens_field(doc, "max_tokens", limits);
  r.stream = bool_field(doc, "stream");
  r.stop_at_eos = stop_at_eos_field(doc, "ignore_eos");
  check_sampling(doc);
  return r;
}

LlmApiRequest parse_chat_request(const std::string& body, const LlmRequestLimits& limits) {
  const json doc = parse_body(body);
  LlmApiRequest r;
  r.api = LlmApi::kChat;
  r.model = model_field(doc);
  auto m = doc.find("messages");
  if (m == doc.end() || m->is_null()) bad("messages", "messages is required");
  if (!m->is_array()) bad("messages", "messages must be a list, not " + type_name(*m));
  if (m->empty()) bad("messages", "messages is empty");
  if (m->size() > limits.max_messages) {
    bad("messages", "at most " + std::to_string(limits.max_messages) + " messages");
  }
  for (std::size_t i = 0; i < m->size(); ++i) {
    const json& msg = (*m)[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!msg.is_object()) bad(at, at + " must be an object with role and content");
    auto role = msg.find("role");
    if (role == msg.end() || !role->is_string()) bad(at + ".role", at + ".role must be a string");
    const std::string rs = role->get<std::string>();
    if (rs != "system" && rs != "user" && rs != "assistant" && rs != "developer" && rs != "tool") {
      bad(at + ".role",
          at + ".role must be system, developer, user, assistant or tool, not '" + rs + "'");
    }
    auto content = msg.find("content");
    if (content == msg.end() || !content->is_string()) {
      bad(at + ".content", at + ".content must be a string");
    }
    r.prompt += rs + ": " + content->get<std::string>() + "\n";
    if (r.prompt.size() > limits.max_prompt_bytes) {
      bad("messages",
          "the messages are more than " + std::to_string(limits.max_prompt_bytes) + " bytes");
    }
  }
  r.prompt += "assistant: ";
  r.max_tokens = max_tokens_field(
      doc, doc.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens", limits);
  r.stream = bool_field(doc, "stream");
  r.stop_at_eos = stop_at_eos_field(doc, "ignore_eos");
  check_sampling(doc);
  return r;
}

LlmApiRequest parse_generate_request(const std::string& body, bool stream,
                                     const LlmRequestLimits& limits) {
  const json doc = parse_body(body);
  LlmApiRequest r;
  r.api = LlmApi::kGenerate;
  r.stream = stream;
  auto t = doc.find("text_input");
  if (t == doc.end() || t->is_null()) bad("text_input", "text_input is required");
  if (!t->is_string()) bad("text_input", "text_input must be a string, not " + type_name(*t));
  r.prompt = t->get<std::string>();
  check_prompt_size("text_input", r.prompt, limits);
  r.max_tokens = limits.default_new_tokens;
  if (auto p = doc.find("parameters"); p != doc.end() && !p->is_null()) {
    if (!p->is_object()) bad("parameters", "parameters must be an object");
    r.max_tokens = max_tokens_field(*p, "max_tokens", limits);
    if (auto s = p->find("stream"); s != p->end() && !s->is_null() && !s->is_boolean()) {
      bad("parameters.stream", "parameters.stream must be true or false");
    }
    r.stop_at_eos = stop_at_eos_field(*p, "parameters.ignore_eos");
    check_sampling(*p);
  }
  return r;
}

std::string completion_answer(LlmApi api, const std::string& id, int64_t created,
                              const std::string& model, const std::string& text,
                              const LlmUsage& usage) {
  json choice = {{"index", 0}, {"finish_reason", usage.stopped ? "stop" : "length"}};
  if (api == LlmApi::kChat) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
    choice["logprobs"] = nullptr;
  }
  const json doc = {{"id", id},
                    {"object", api == LlmApi::kChat ? "chat.completion" : "text_completion"},
                    {"created", created},
                    {"model", model},
                    {"choices", json::array({choice})},
                    {"usage", usage_json(usage)}};
  return dump(doc);
}

std::string generate_answer(const std::string& model, const std::string& text) {
  return dump({{"model_name", model}, {"model_version", "1"}, {"text_output", text}});
}

std::string stream_event(LlmApi api, const std::string& id, int64_t created,
                         const std::string& model, const std::string& piece) {
  json doc;
  if (api == LlmApi::kGenerate) {
    doc = {{"model_name", model}, {"model_version", "1"}, {"text_output", piece}};
  } else if (api == LlmApi::kChat) {
    doc = {{"id", id},
           {"object", "chat.completion.chunk"},
           {"created", created},
           {"model", model},
           {"choices",
            json::array(
                {{{"index", 0}, {"delta", {{"content", piece}}}, {"finish_reason", nullptr}}})}};
  } else {
    doc = {{"id", id},
           {"object", "text_completion"},
           {"created", created},
           {"model", model},
           {"choices", json::array({{{"index", 0},
                                     {"text", piece},
                                     {"logprobs", nullptr},
                                     {"finish_reason", nullptr}}})}};
  }
  return "data: " + dump(doc) + "\n\n";
}

std::string stream_final_event(LlmApi api, const std::string& id, int64_t created,
                               const std::string& model, const LlmUsage& usage) {
  json choice = {{"index", 0}, {"finish_reason", usage.stopped ? "stop" : "length"}};
  if (api == LlmApi::kChat) {
    choice["delta"] = json::object();
  } else {
    choice["text"] = "";
  }
  const json doc = {{"id", id},
                    {"object", api == LlmApi::kChat ? "chat.completion.chunk" : "text_completion"},
                    {"created", created},
                    {"model", model},
                    {"choices", json::array({choice})},
                    {"usage", usage_json(usage)}};
  return "data: " + dump(doc) + "\n\n";
}

std::string stream_role_event(const std::string& id, int64_t created, const std::string& model) {
  const json doc = {{"id", id},
                    {"object", "chat.completion.chunk"},
                    {"created", created},
                    {"model", model},
                    {"choices", json::array({{{"index", 0},
                                              {"delta", {{"role", "assistant"}, {"content", ""}}},
                                              {"finish_reason", nullptr}}})}};
  return "data: " + dump(doc) + "\n\n";
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
