#pragma once

// A small Jinja interpreter for chat templates (docs/llm-serve.md#chat-templates): the subset
// real templates use (Llama-2, Llama-3, Mistral, ChatML, Qwen): text with {{ }}, {% %} and
// {# #}, whitespace control (-), and trim_blocks / lstrip_blocks as transformers renders chat
// templates; if / elif / else, for (with else, loop.index / index0 / first / last / length /
// revindex, two-name unpacking, break and continue), set (names and namespace attributes);
// expressions with literals, lists, dicts, attribute and item access, slices, calls,
// filters, tests (is / is not), not / and / or, comparisons, in, arithmetic, ~ and the
// conditional expression; the globals raise_exception, namespace, range and strftime_now;
// string, dict and list methods templates call (strip, split, startswith, items, get, ...).
// Anything else (macros, includes, call blocks, unknown filters or methods) is a
// JinjaError naming the line and column. Rendering is bounded (output size, loop
// iterations, nesting) so no template or input can hang or exhaust memory.
//
// A parsed JinjaTemplate is immutable; render() may be called from several threads.

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace tessera {

class JinjaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A Jinja value: undefined, none, a boolean, an integer, a float, a string, a list or a
// dict (insertion-ordered). Lists and dicts are shared (as in Python); a namespace is a
// dict whose attributes may be set.
class JinjaValue {
 public:
  struct Undefined {};
  struct None {};
  using List = std::vector<JinjaValue>;
  struct Dict {
    std::vector<std::pair<std::string, JinjaValue>> items;
    bool is_namespace = false;
    const JinjaValue* find(const std::string& key) const;
    void set(const std::string& key, JinjaValue value);
  };

  JinjaValue() : v_(Undefined{}) {}
  JinjaValue(None) : v_(None{}) {}
  JinjaValue(bool b) : v_(b) {}
  JinjaValue(int64_t i) : v_(i) {}
  JinjaValue(int i) : v_(static_cast<int64_t>(i)) {}
  JinjaValue(double d) : v_(d) {}
  JinjaValue(std::string s) : v_(std::move(s)) {}
  JinjaValue(const char* s) : v_(std::string(s)) {}
  JinjaValue(List l) : v_(std::make_shared<List>(std::move(l))) {}
  JinjaValue(Dict d) : v_(std::make_shared<Dict>(std::move(d))) {}

  bool is_undefined() const { return std::holds_alternative<Undefined>(v_); }
  bool is_none() const { return std::holds_alternative<None>(v_); }
  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_int() const { return std::holds_alternative<int64_t>(v_); }
  bool is_float() const { return std::holds_alternative<double>(v_); }
  bool is_number() const { return is_int() || is_float(); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }
  bool is_list() const { return std::holds_alternative<std::shared_ptr<List>>(v_); }
  bool is_dict() const { return std::holds_alternative<std::shared_ptr<Dict>>(v_); }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_number() const {
    return is_int() ? static_cast<double>(as_int()) : std::get<double>(v_);
  }
  const std::string& as_string() const { return std::get<std::string>(v_); }
  List& list() const { return *std::get<std::shared_ptr<List>>(v_); }
  Dict& dict() const { return *std::get<std::shared_ptr<Dict>>(v_); }

  bool truthy() const;
  // As {{ }} prints it (Python's str(): True, None, 1.5, ['a', 1]).
  std::string str() const;
  // JSON text (the tojson filter).
  std::string to_json(int indent = -1, int depth = 0) const;
  bool operator==(const JinjaValue& o) const;
  // The type's name in messages ("string", "list", ...).
  std::string type_name() const;

 private:
  std::variant<Undefined, None, bool, int64_t, double, std::string, std::shared_ptr<List>,
               std::shared_ptr<Dict>>
      v_;
};

// A JSON document as a Jinja value (objects keep their key order).
JinjaValue jinja_from_json(const std::string& json_text);

class JinjaTemplate {
 public:
  // JinjaError ("line L, column C: problem") for a syntax error or an unsupported construct.
  explicit JinjaTemplate(const std::string& source);
  ~JinjaTemplate();
  JinjaTemplate(JinjaTemplate&&) noexcept;

  // Renders with `context` (a dict) as the global variables. JinjaError for a runtime
  // error (raise_exception's message, a type error, a limit exceeded).
  std::string render(const JinjaValue& context) const;

  struct Node;

 private:
  std::vector<std::unique_ptr<Node>> body_;
};

}  // namespace tessera
