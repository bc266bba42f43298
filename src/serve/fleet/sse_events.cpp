#include "serve/fleet/sse_events.hpp"

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace tessera {
namespace {

// Where the blank line that ends an event ends (just past it), or npos. Lines end in
// "\n", "\r\n" or "\r" (the SSE grammar); "\n\n" and "\r\n\r\n" are what servers send.
std::size_t event_end(const std::string& s) {
  const auto lf = s.find("\n\n");
  const auto crlf = s.find("\r\n\r\n");
  if (lf == std::string::npos && crlf == std::string::npos) return std::string::npos;
  if (crlf == std::string::npos || (lf != std::string::npos && lf < crlf)) return lf + 2;
  return crlf + 4;
}

bool has_token(const nlohmann::json& doc) {
  auto choices = doc.find("choices");
  if (choices == doc.end() || !choices->is_array()) return false;
  for (const auto& c : *choices) {
    if (!c.is_object()) continue;
    auto finish = c.find("finish_reason");
    if (finish != c.end() && !finish->is_null()) return true;
    auto text = c.find("text");
    if (text != c.end() && text->is_string() && !text->get_ref<const std::string&>().empty()) {
      return true;
    }
    auto delta = c.find("delta");
    if (delta != c.end() && delta->is_object()) {
      auto content = delta->find("content");
      if (content != delta->end() && content->is_string() &&
          !content->get_ref<const std::string&>().empty()) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

std::vector<SseEvent> SseEvents::feed(std::string_view bytes) {
  std::vector<SseEvent> out;
  if (broken()) return out;
  buffer_.append(bytes);
  for (;;) {
    const auto end = event_end(buffer_);
    if (end == std::string::npos) {
      if (buffer_.size() > max_) error_ = "an event longer than " + std::to_string(max_) + " bytes";
      return out;
    }
    if (end > max_) {
      error_ = "an event longer than " + std::to_string(max_) + " bytes";
      return out;
    }
    SseEvent event;
    std::string raw = buffer_.substr(0, end);
    buffer_.erase(0, end);
    if (!parse(std::move(raw), event)) return out;
    out.push_back(std::move(event));
  }
}

bool SseEvents::parse(std::string raw, SseEvent& out) {
  if (done_) {
    error_ = "an event after data: [DONE]";
    return false;
  }
  std::string data;
  bool has_data = false;
  std::size_t at = 0;
  while (at < raw.size()) {
    auto nl = raw.find_first_of("\r\n", at);
    if (nl == std::string::npos) nl = raw.size();
    const std::string_view line(raw.data() + at, nl - at);
    at = nl + (raw.compare(nl, 2, "\r\n") == 0 ? 2 : 1);
    if (line.empty() || line.front() == ':') continue;  // comment
    const auto colon = line.find(':');
    const std::string_view field = line.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (field == "data") {
      if (has_data) data += '\n';
      data.append(value);
      has_data = true;
    } else if (field != "event" && field != "id" && field != "retry") {
      error_ = "a line that is not a server-sent event field: '" + printable(line) + "'";
      return false;
    }
  }
  out.raw = std::move(raw);
  if (!has_data) {
    out.comment = true;
    return true;
  }
  if (data == "[DONE]") {
    out.done = done_ = true;
    return true;
  }
  nlohmann::json doc = nlohmann::json::parse(data, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    error_ = "data that is neither [DONE] nor a JSON object: '" + data.substr(0, 60) + "'";
    return false;
  }
  out.error = doc.contains("error");
  out.token = has_token(doc);
  auto usage = doc.find("usage");
  if (usage != doc.end() && usage->is_object()) out.usage = usage->dump();
  return true;
}

}  // namespace tessera
