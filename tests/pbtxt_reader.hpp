#pragma once

// A reader of protobuf text format (the syntax of Triton's config.pbtxt) for the export
// tests, with a schema check: each message's fields must be among the names and kinds
// the test gives (taken from Triton's ModelConfig message definition). Supports what
// text format allows for scalars, enums, nested messages (`f { }` / `f: { }`) and lists
// (`f: [a, b]`, `f [ {..}, {..} ]`), `#` comments, and repeated fields.

#include <cctype>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::testing {

struct PbMessage;
struct PbValue {
  std::string scalar;  // the literal (a string without its quotes)
  bool quoted = false;
  std::shared_ptr<PbMessage> message;  // set for a nested message
};
struct PbMessage {
  std::multimap<std::string, PbValue> fields;
  std::vector<PbValue> all(const std::string& name) const {
    std::vector<PbValue> out;
    auto [a, b] = fields.equal_range(name);
    for (auto it = a; it != b; ++it) out.push_back(it->second);
    return out;
  }
  const PbValue& one(const std::string& name) const {
    auto [a, b] = fields.equal_range(name);
    if (a == b) throw std::runtime_error("no field '" + name + "'");
    if (std::next(a) != b) throw std::runtime_error("field '" + name + "' repeated");
    return a->second;
  }
};

class PbTextReader {
 public:
  explicit PbTextReader(std::string text) : s_(std::move(text)) {}
  PbMessage parse() {
    PbMessage m = message(false);
    skip();
    if (i_ != s_.size()) fail("trailing text");
    return m;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("pbtxt at offset " + std::to_string(i_) + ": " + what);
  }
  void skip() {
    while (i_ < s_.size()) {
      if (std::isspace(static_cast<unsigned char>(s_[i_]))) {
        ++i_;
      } else if (s_[i_] == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else {
        break;
      }
    }
  }
  bool take(char c) {
    skip();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  std::string identifier() {
    skip();
    const std::size_t start = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_'))
      ++i_;
    if (start == i_) fail("expected a field name");
    return s_.substr(start, i_ - start);
  }
  PbValue scalar() {
    skip();
    PbValue v;
    if (i_ < s_.size() && s_[i_] == '"') {
      v.quoted = true;
      ++i_;
      while (i_ < s_.size() && s_[i_] != '"') {
        if (s_[i_] == '\\') {
          ++i_;
          if (i_ >= s_.size()) fail("unterminated string");
          v.scalar += s_[i_] == 'n' ? '\n' : s_[i_];
        } else {
          v.scalar += s_[i_];
        }
        ++i_;
      }
      if (!take('"')) fail("unterminated string");
      return v;
    }
    const std::size_t start = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_' ||
                              s_[i_] == '-' || s_[i_] == '.' || s_[i_] == '+'))
      ++i_;
    if (start == i_) fail("expected a value");
    v.scalar = s_.substr(start, i_ - start);
    return v;
  }
  PbValue value_or_message() {
    skip();
    if (take('{')) {
      PbValue v;
      v.message = std::make_shared<PbMessage>(message(true));
      return v;
    }
    return scalar();
  }
  PbMessage message(bool nested) {
    PbMessage m;
    while (true) {
      skip();
      if (i_ >= s_.size()) {
        if (nested) fail("unterminated message");
        return m;
      }
      if (nested && take('}')) return m;
      const std::string name = identifier();
      const bool colon = take(':');
      skip();
      if (take('[')) {
        if (!take(']')) {
          do {
            m.fields.emplace(name, value_or_message());
          } while (take(','));
          if (!take(']')) fail("expected ']' in list '" + name + "'");
        }
      } else if (take('{')) {
        PbValue v;
        v.message = std::make_shared<PbMessage>(message(true));
        m.fields.emplace(name, v);
      } else {
        if (!colon) fail("expected ':' after '" + name + "'");
        m.fields.emplace(name, scalar());
      }
      take(';');
      take(',');
    }
  }

  std::string s_;
  std::size_t i_ = 0;
};

// A message type's fields: name -> "string", "int", "enum:A|B|C", "bool" or
// "message:TypeName".
using PbSchema = std::map<std::string, std::map<std::string, std::string>>;

inline void check_pb(const PbSchema& schema, const std::string& type, const PbMessage& m,
                     const std::string& path = "") {
  const auto& fields = schema.at(type);
  for (const auto& [name, v] : m.fields) {
    const std::string where = path + name;
    auto it = fields.find(name);
    if (it == fields.end()) throw std::runtime_error(where + ": not a field of " + type);
    const std::string& kind = it->second;
    if (kind.rfind("message:", 0) == 0) {
      if (!v.message) throw std::runtime_error(where + ": must be a message");
      check_pb(schema, kind.substr(8), *v.message, where + ".");
      continue;
    }
    if (v.message) throw std::runtime_error(where + ": must be a scalar");
    if (kind == "string" && !v.quoted) throw std::runtime_error(where + ": must be a string");
    if (kind == "int") {
      std::size_t used = 0;
      (void)std::stoll(v.scalar, &used);
      if (v.quoted || used != v.scalar.size())
        throw std::runtime_error(where + ": must be an integer");
    }
    if (kind == "bool" && v.scalar != "true" && v.scalar != "false")
      throw std::runtime_error(where + ": must be true or false");
    if (kind.rfind("enum:", 0) == 0) {
      const std::string names = "|" + kind.substr(5) + "|";
      if (v.quoted || names.find("|" + v.scalar + "|") == std::string::npos)
        throw std::runtime_error(where + ": '" + v.scalar + "' is not one of " + kind.substr(5));
    }
  }
}

}  // namespace tessera::testing
