#include "serve/server/llm_route_request.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace tessera {
namespace {

using nlohmann::json;

constexpr double kMaxSloMs = 3600e3;  // an hour
constexpr std::size_t kMaxSessionBytes = 256;

// One option's value as text or a JSON value, checked; the field names it in errors.
struct Options {
  std::optional<LlmPriority> priority;
  std::optional<Time> ttft_slo, tpot_slo;
  std::optional<uint64_t> session;
};

std::optional<LlmRoutingFieldError> bad(const std::string& field, const std::string& problem) {
  return LlmRoutingFieldError{fmt::format("{}: {}", field, problem), field};
}

std::optional<LlmRoutingFieldError> read_priority(std::string_view v, const std::string& field,
                                                  Options& o) {
  if (v == "critical") {
    o.priority = LlmPriority::kCritical;
  } else if (v == "sheddable") {
    o.priority = LlmPriority::kSheddable;
  } else {
    return bad(field, fmt::format("'{}' is not critical or sheddable", printable(v, 40)));
  }
  return std::nullopt;
}

std::optional<LlmRoutingFieldError> read_slo(double ms, bool parsed, const std::string& field,
                                             std::optional<Time>& slo) {
  if (!parsed || !std::isfinite(ms) || ms <= 0 || ms > kMaxSloMs) {
    return bad(field, "a number of milliseconds in (0, 3600000]");
  }
  slo = from_ms(ms);
  return std::nullopt;
}

std::optional<LlmRoutingFieldError> read_session(std::string_view v, const std::string& field,
                                                 Options& o) {
  if (v.empty() || v.size() > kMaxSessionBytes) {
    return bad(field, "a session id of 1 to 256 characters");
  }
  o.session = llm_hash(v);
  return std::nullopt;
}

std::optional<LlmRoutingFieldError> read_headers(
    const std::vector<std::pair<std::string, std::string>>& headers, Options& o) {
  std::vector<std::string_view> seen;
  for (const auto& [name, value] : headers) {
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) return bad(name, "sent twice");
    seen.push_back(name);
    std::optional<LlmRoutingFieldError> e;
    if (name == "x-tessera-priority") {
      e = read_priority(value, name, o);
    } else if (name == "x-tessera-ttft-slo-ms" || name == "x-tessera-tpot-slo-ms") {
      double ms = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
      const bool parsed = ec == std::errc() && end == value.data() + value.size();
      e = read_slo(ms, parsed, name, name == "x-tessera-ttft-slo-ms" ? o.ttft_slo : o.tpot_slo);
    } else if (name == "x-tessera-session") {
      e = read_session(value, name, o);
    } else {
      return bad(printable(name, 64),
                 "not a gateway header (x-tessera-priority, x-tessera-ttft-slo-ms, "
                 "x-tessera-tpot-slo-ms, x-tessera-session)");
    }
    if (e) return e;
  }
  return std::nullopt;
}

std::optional<LlmRoutingFieldError> read_body_options(const json& t, Options& o) {
  if (!t.is_object()) return bad("tessera", "an object");
  for (const auto& [key, value] : t.items()) {
    const std::string field = "tessera." + printable(key, 64);
    std::optional<LlmRoutingFieldError> e;
    if (key == "priority") {
      if (!value.is_string()) return bad(field, "critical or sheddable");
      e = read_priority(value.get_ref<const std::string&>(), field, o);
    } else if (key == "ttft_slo_ms" || key == "tpot_slo_ms") {
      const bool number = value.is_number();
      e = read_slo(number ? value.get<double>() : 0.0, number, field,
                   key == "ttft_slo_ms" ? o.ttft_slo : o.tpot_slo);
    } else if (key == "session") {
      if (!value.is_string()) return bad(field, "a string");
      e = read_session(value.get_ref<const std::string&>(), field, o);
    } else {
      return bad(field, "not a gateway option (priority, ttft_slo_ms, tpot_slo_ms, session)");
    }
    if (e) return e;
  }
  return std::nullopt;
}

// The text a message's or prompt's content gives (strings and text parts), appended.
void append_text(const json& content, std::string& text) {
  if (content.is_string()) {
    text += content.get_ref<const std::string&>();
  } else if (content.is_array()) {
    for (const json& part : content) {
      if (!part.is_object()) continue;
      auto t = part.find("text");
      if (t != part.end() && t->is_string()) text += t->get_ref<const std::string&>();
    }
  }
}

// A list of token ids as 4 bytes each (so a block of tokens is a block of bytes).
bool append_token_ids(const json& ids, std::string& text) {
  if (!ids.is_array() || ids.empty()) return false;
  for (const json& id : ids) {
    if (!id.is_number_integer()) return false;
    const auto v = static_cast<uint32_t>(id.get<int64_t>());
    for (int b = 0; b < 4; ++b) text += static_cast<char>((v >> (8 * b)) & 0xff);
  }
  return true;
}

// The prompt as the gateway sees it: a chat's messages ("role\n" + content + "\n" each), a
// completion's prompt (a string, token ids, or the first of a list of them). `tokens`: the
// estimate over all of it (every prompt of a list).
std::string prompt_text(const json& body, bool chat, uint64_t& tokens) {
  std::string text;
  tokens = 0;
  if (chat) {
    auto m = body.find("messages");
    if (m == body.end() || !m->is_array()) return text;
    for (const json& msg : *m) {
      if (!msg.is_object()) continue;
      auto role = msg.find("role");
      if (role != msg.end() && role->is_string()) text += role->get_ref<const std::string&>();
      text += '\n';
      if (auto c = msg.find("content"); c != msg.end()) append_text(*c, text);
      text += '\n';
    }
    tokens = llm_estimated_tokens(text.size());
    return text;
  }
  auto p = body.find("prompt");
  if (p == body.end()) return text;
  if (p->is_string()) {
    text = p->get<std::string>();
    tokens = llm_estimated_tokens(text.size());
  } else if (append_token_ids(*p, text)) {
    tokens = p->size();
  } else if (p->is_array()) {
    for (const json& one : *p) {
      std::string each;
      if (one.is_string()) {
        each = one.get<std::string>();
        tokens += llm_estimated_tokens(each.size());
      } else if (append_token_ids(one, each)) {
        tokens += one.size();
      }
      if (text.empty()) text = std::move(each);
    }
  }
  return text;
}

}  // namespace

std::optional<LlmRoutingFieldError> read_llm_routing(
    json& body, const std::vector<std::pair<std::string, std::string>>& headers, bool chat,
    const LlmRequestDefaults& defaults, LlmRequestRouting& out) {
  Options from_body, from_headers;
  if (auto t = body.find("tessera"); t != body.end()) {
    if (auto e = read_body_options(*t, from_body)) return e;
    body.erase(t);
  }
  if (auto e = read_headers(headers, from_headers)) return e;
  LlmRouteRequest& r = out.request;
  r.priority = from_headers.priority.value_or(from_body.priority.value_or(defaults.priority));
  r.ttft_slo = from_headers.ttft_slo.value_or(from_body.ttft_slo.value_or(defaults.ttft_slo));
  r.tpot_slo = from_headers.tpot_slo.value_or(from_body.tpot_slo.value_or(defaults.tpot_slo));
  r.session_key = from_headers.session.value_or(from_body.session.value_or(0));
  uint64_t tokens = 0;
  const std::string text = prompt_text(body, chat, tokens);
  r.prompt_tokens = static_cast<uint32_t>(std::min<uint64_t>(tokens, UINT32_MAX));
  out.prefix_hashes = llm_prefix_hashes(text, defaults.block_bytes, defaults.max_blocks);
  return std::nullopt;
}

}  // namespace tessera
