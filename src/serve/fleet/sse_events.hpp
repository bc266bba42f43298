#pragma once

// SseEvents: cuts the body of a server-sent event stream (text/event-stream, as OpenAI's
// streaming API and vLLM, SGLang and TGI send it) into whole events as its bytes arrive, and
// reads what the gateway needs from each: whether it is `data: [DONE]`, an error, a token
// (a choice with text, content or a finish reason), and its `usage`. The event's bytes are
// kept as they came, to be relayed unchanged.
//
// Bounds: an event longer than the limit, a data line that is neither [DONE] nor a JSON
// object, or an event after [DONE] is a broken stream (error() says why; nothing more is
// read). Work is linear in the bytes fed, however they are split: each byte is searched for
// an event's end once (a backend trickling a long event byte by byte costs no more than one
// sending it whole), and an event's JSON is read in one pass without building a document
// (one is built only for an object `usage`). One instance per stream; not thread-safe.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

struct SseEvent {
  std::string raw;       // the event's bytes as sent, its blank line included
  bool done = false;     // data: [DONE]
  bool error = false;    // a JSON object with an "error" key
  bool token = false;    // a choice with text, content, or a finish reason
  bool comment = false;  // only comment lines (": keep-alive") or no data
  std::string usage;     // the "usage" object as JSON text, when the event has one
};

class SseEvents {
 public:
  explicit SseEvents(std::size_t max_event_bytes) : max_(max_event_bytes) {}
  // Adds bytes; returns the events they completed (in order). After a broken stream,
  // returns nothing more.
  std::vector<SseEvent> feed(std::string_view bytes);
  bool broken() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  bool done() const { return done_; }
  // Bytes received and not yet part of a whole event.
  std::size_t pending() const { return buffer_.size(); }

 private:
  bool parse(std::string raw, SseEvent& out);
  std::size_t max_;
  std::string buffer_;  // between calls: the bytes after the last whole event, all searched
  std::string error_;
  bool done_ = false;
};

}  // namespace tessera
