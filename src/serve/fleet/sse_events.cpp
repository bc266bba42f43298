#include "serve/fleet/sse_events.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace tessera {
namespace {

// Where the first blank line at or after `from` that ends an event ends (just past it), or
// npos. Lines end in "\n", "\r\n" or "\r" (the SSE grammar); "\n\n" and "\r\n\r\n" are
// what servers send, and the one that starts first ends the event. One pass over the line
// feeds: "\r\n\r\n" starting at p - 1 begins before "\n\n" starting at p.
std::size_t event_end(const std::string& s, std::size_t from) {
  const char* const base = s.data();
  const std::size_t n = s.size();
  std::size_t p = from;
  while (p < n) {
    const void* hit = std::memchr(base + p, '\n', n - p);
    if (hit == nullptr) return std::string::npos;
    p = static_cast<std::size_t>(static_cast<const char*>(hit) - base);
    if (p > from && base[p - 1] == '\r' && p + 2 < n && base[p + 1] == '\r' && base[p + 2] == '\n')
      return p + 3;
    if (p + 1 < n && base[p + 1] == '\n') return p + 2;
    ++p;
  }
  return std::string::npos;
}

// What the gateway reads of an event's JSON, in one pass of nlohmann's SAX parser (no
// document): whether the top level is an object, has an "error" key, or a token in
// "choices" (a choice object with a non-null "finish_reason", a non-empty "text" string,
// or a "delta" object with a non-empty "content" string), and whether its "usage" is an
// object. It reads what a document of the data says (`choices` an array of objects, `delta`
// an object), but for a key given twice: a document keeps its last value, the reader
// counts a token in any of them (tests/sse_events_test.cpp checks the two agree).
class EventReader {
 public:
  using json = nlohmann::json;
  bool object = false;        // the top level is an object
  bool error = false;         // ... with an "error" key
  bool token = false;         // ... with a token in "choices"
  bool usage_object = false;  // ... whose "usage" is an object

  bool null() { return scalar(false); }
  bool boolean(bool) { return scalar(true); }
  bool number_integer(json::number_integer_t) { return scalar(true); }
  bool number_unsigned(json::number_unsigned_t) { return scalar(true); }
  bool number_float(json::number_float_t, const json::string_t&) { return scalar(true); }
  bool binary(json::binary_t&) { return scalar(true); }
  bool string(json::string_t& s) {
    if (frames_.empty()) return false;
    const Frame& at = frames_.back();
    if ((at.role == Role::kChoice && at.key == Key::kText && !s.empty()) ||
        (at.role == Role::kDelta && at.key == Key::kContent && !s.empty()) ||
        (at.role == Role::kChoice && at.key == Key::kFinishReason)) {
      token = true;
    }
    return true;
  }
  bool start_object(std::size_t) {
    if (frames_.empty()) {
      object = true;
      frames_.push_back({Role::kTop, Key::kOther});
      return true;
    }
    const Frame& at = frames_.back();
    Role role = Role::kOther;
    if (at.role == Role::kChoices) {
      role = Role::kChoice;
    } else if (at.role == Role::kChoice && at.key == Key::kDelta) {
      role = Role::kDelta;
    } else if (at.role == Role::kChoice && at.key == Key::kFinishReason) {
      token = true;
    } else if (at.role == Role::kTop && at.key == Key::kUsage) {
      usage_object = true;
    }
    frames_.push_back({role, Key::kOther});
    return true;
  }
  bool start_array(std::size_t) {
    if (frames_.empty()) return false;  // the top level is not an object
    const Frame& at = frames_.back();
    if (at.role == Role::kChoice && at.key == Key::kFinishReason) token = true;
    const bool choices = at.role == Role::kTop && at.key == Key::kChoices;
    frames_.push_back({choices ? Role::kChoices : Role::kOther, Key::kOther});
    return true;
  }
  bool end_object() { return pop(); }
  bool end_array() { return pop(); }
  bool key(json::string_t& k) {
    Frame& at = frames_.back();
    at.key = Key::kOther;
    if (at.role == Role::kTop) {
      if (k == "error") error = true;
      if (k == "choices") at.key = Key::kChoices;
      if (k == "usage") at.key = Key::kUsage;
    } else if (at.role == Role::kChoice) {
      if (k == "finish_reason") at.key = Key::kFinishReason;
      if (k == "text") at.key = Key::kText;
      if (k == "delta") at.key = Key::kDelta;
    } else if (at.role == Role::kDelta && k == "content") {
      at.key = Key::kContent;
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }

 private:
  enum class Role : uint8_t { kTop, kChoices, kChoice, kDelta, kOther };
  enum class Key : uint8_t { kOther, kChoices, kUsage, kFinishReason, kText, kDelta, kContent };
  struct Frame {
    Role role;
    Key key;  // an object's last key (what its next value is)
  };
  // A number, boolean or null; `not_null`: a finish reason of this value is one.
  bool scalar(bool not_null) {
    if (frames_.empty()) return false;  // the top level is not an object
    const Frame& at = frames_.back();
    if (not_null && at.role == Role::kChoice && at.key == Key::kFinishReason) token = true;
    return true;
  }
  bool pop() {
    frames_.pop_back();
    return true;
  }
  std::vector<Frame> frames_;
};

}  // namespace

std::vector<SseEvent> SseEvents::feed(std::string_view bytes) {
  std::vector<SseEvent> out;
  if (broken()) return out;
  // What the buffer holds between calls was all searched: no event ends within it, but one
  // may end in its last three bytes ("\r\n\r" + "\n").
  const std::size_t searched = buffer_.size();
  buffer_.append(bytes);
  std::size_t from = searched > 3 ? searched - 3 : 0;
  std::size_t begin = 0;  // the first byte not yet part of an event
  for (;;) {
    const auto end = event_end(buffer_, from);
    if (end == std::string::npos) {
      if (buffer_.size() - begin > max_)
        error_ = "an event longer than " + std::to_string(max_) + " bytes";
      break;
    }
    if (end - begin > max_) {
      error_ = "an event longer than " + std::to_string(max_) + " bytes";
      return out;
    }
    SseEvent event;
    if (!parse(buffer_.substr(begin, end - begin), event)) return out;
    out.push_back(std::move(event));
    begin = from = end;
  }
  buffer_.erase(0, begin);
  return out;
}

bool SseEvents::parse(std::string raw, SseEvent& out) {
  if (done_) {
    error_ = "an event after data: [DONE]";
    return false;
  }
  // The data lines' values, joined by "\n": a view of the one line most events have.
  std::string_view data;
  std::string joined;
  int data_lines = 0;
  std::size_t at = 0;
  while (at < raw.size()) {
    // (find_first_of("\r\n") would search its set once per byte.)
    const std::size_t nl = static_cast<std::size_t>(
        std::find_if(raw.begin() + static_cast<std::ptrdiff_t>(at), raw.end(),
                     [](char c) { return c == '\r' || c == '\n'; }) -
        raw.begin());
    const std::string_view line(raw.data() + at, nl - at);
    at = nl + (raw.compare(nl, 2, "\r\n") == 0 ? 2 : 1);
    if (line.empty() || line.front() == ':') continue;  // comment
    const auto colon = line.find(':');
    const std::string_view field = line.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (field == "data") {
      if (++data_lines == 1) {
        data = value;
      } else {
        if (data_lines == 2) joined = data;
        joined += '\n';
        joined.append(value);
        data = joined;
      }
    } else if (field != "event" && field != "id" && field != "retry") {
      error_ = "a line that is not a server-sent event field: '" + printable(line) + "'";
      return false;
    }
  }
  if (data_lines == 0) {
    out.raw = std::move(raw);
    out.comment = true;
    return true;
  }
  if (data == "[DONE]") {
    out.raw = std::move(raw);
    out.done = done_ = true;
    return true;
  }
  EventReader reader;
  if (!nlohmann::json::sax_parse(data, &reader) || !reader.object) {
    error_ =
        "data that is neither [DONE] nor a JSON object: '" + std::string(data.substr(0, 60)) + "'";
    return false;
  }
  out.error = reader.error;
  out.token = reader.token;
  if (reader.usage_object) {  // once a stream, in its last event: read as a document
    const nlohmann::json doc = nlohmann::json::parse(data, nullptr, false);
    auto usage = doc.find("usage");
    if (usage != doc.end() && usage->is_object()) out.usage = usage->dump();
  }
  out.raw = std::move(raw);
  return true;
}

}  // namespace tessera
