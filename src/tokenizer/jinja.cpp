#include "tokenizer/jinja.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <ctime>
#include <functional>
#include <nlohmann/json.hpp>

#include "tokenizer/unicode_text.hpp"

namespace tessera {
namespace {

// Bounds that keep any template and input finite.
constexpr std::size_t kMaxOutputBytes = 16u << 20;
constexpr int64_t kMaxIterations = 100'000;
constexpr int kMaxDepth = 200;

}  // namespace

// ---------------------------------------------------------------------------------------
// Values

const JinjaValue* JinjaValue::Dict::find(const std::string& key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void JinjaValue::Dict::set(const std::string& key, JinjaValue value) {
  for (auto& [k, v] : items) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(key, std::move(value));
}

bool JinjaValue::truthy() const {
  if (is_undefined() || is_none()) return false;
  if (is_bool()) return as_bool();
  if (is_int()) return as_int() != 0;
  if (is_float()) return as_number() != 0.0;
  if (is_string()) return !as_string().empty();
  if (is_list()) return !list().empty();
  return !dict().items.empty();
}

namespace {

std::string float_text(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);
  std::string s(buf, end);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string python_repr(const std::string& s) {
  const char quote =
      s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    if (c == quote || c == '\\') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out + quote;
}

std::string repr(const JinjaValue& v) {
  return v.is_string() ? python_repr(v.as_string()) : v.str();
}

}  // namespace

std::string JinjaValue::str() const {
  if (is_undefined()) return "";
  if (is_none()) return "None";
  if (is_bool()) return as_bool() ? "True" : "False";
  if (is_int()) return std::to_string(as_int());
  if (is_float()) return float_text(as_number());
  if (is_string()) return as_string();
  std::string out;
  if (is_list()) {
    out = "[";
    for (std::size_t i = 0; i < list().size(); ++i) out += (i ? ", " : "") + repr(list()[i]);
    return out + "]";
  }
  out = "{";
  for (std::size_t i = 0; i < dict().items.size(); ++i) {
    out +=
        (i ? ", " : "") + python_repr(dict().items[i].first) + ": " + repr(dict().items[i].second);
  }
  return out + "}";
}

std::string JinjaValue::to_json(int indent, int depth) const {
  if (is_undefined() || is_none()) return "null";
  if (is_bool()) return as_bool() ? "true" : "false";
  if (is_int()) return std::to_string(as_int());
  if (is_float()) return nlohmann::json(as_number()).dump();
  if (is_string())
    return nlohmann::json(as_string())
        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string pad = indent > 0 ? std::string(static_cast<std::size_t>(indent), ' ') : "";
  const auto line = [&](int d) {
    std::string s = "\n";
    for (int i = 0; i < d; ++i) s += pad;
    return s;
  };
  const std::string item_sep = indent > 0 ? "," : ", ";
  std::vector<std::string> parts;
  if (is_list()) {
    for (const JinjaValue& x : list()) parts.push_back(x.to_json(indent, depth + 1));
  } else {
    for (const auto& [k, x] : dict().items) {
      parts.push_back(JinjaValue(k).to_json() + ": " + x.to_json(indent, depth + 1));
    }
  }
  const char open = is_list() ? '[' : '{', close = is_list() ? ']' : '}';
  std::string out(1, open);
  if (indent > 0 && !parts.empty()) {
    for (std::size_t i = 0; i < parts.size(); ++i)
      out += (i ? item_sep : "") + line(depth + 1) + parts[i];
    out += line(depth);
  } else {
    for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? item_sep : "") + parts[i];
  }
  return out + close;
}

bool JinjaValue::operator==(const JinjaValue& o) const {
  if (is_number() && o.is_number()) return as_number() == o.as_number();
  if (is_bool() && o.is_bool()) return as_bool() == o.as_bool();
  if (is_string() && o.is_string()) return as_string() == o.as_string();
  if ((is_none() && o.is_none()) || (is_undefined() && o.is_undefined())) return true;
  if (is_list() && o.is_list()) return list() == o.list();
  if (is_dict() && o.is_dict()) {
    if (dict().items.size() != o.dict().items.size()) return false;
    for (const auto& [k, v] : dict().items) {
      const JinjaValue* w = o.dict().find(k);
      if (w == nullptr || !(v == *w)) return false;
    }
    return true;
  }
  return false;
}

std::string JinjaValue::type_name() const {
  if (is_undefined()) return "undefined";
  if (is_none()) return "none";
  if (is_bool()) return "boolean";
  if (is_int()) return "integer";
  if (is_float()) return "float";
  if (is_string()) return "string";
  if (is_list()) return "list";
  return dict().is_namespace ? "namespace" : "dict";
}

namespace {

JinjaValue from_json(const nlohmann::ordered_json& j) {
  if (j.is_null()) return JinjaValue(JinjaValue::None{});
  if (j.is_boolean()) return JinjaValue(j.get<bool>());
  if (j.is_number_integer()) return JinjaValue(j.get<int64_t>());
  if (j.is_number()) return JinjaValue(j.get<double>());
  if (j.is_string()) return JinjaValue(j.get<std::string>());
  if (j.is_array()) {
    JinjaValue::List l;
    for (const auto& x : j) l.push_back(from_json(x));
    return JinjaValue(std::move(l));
  }
  JinjaValue::Dict d;
  for (auto it = j.begin(); it != j.end(); ++it)
    d.items.emplace_back(it.key(), from_json(it.value()));
  return JinjaValue(std::move(d));
}

}  // namespace

JinjaValue jinja_from_json(const std::string& json_text) {
  try {
    return from_json(nlohmann::ordered_json::parse(json_text));
  } catch (const nlohmann::json::exception& e) {
    throw JinjaError(std::string("not valid JSON: ") + e.what());
  }
}

// ---------------------------------------------------------------------------------------
// Syntax tree

namespace {

struct Where {
  int line = 1, column = 1;
  std::string text() const {
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
  }
};

[[noreturn]] void fail(const Where& at, const std::string& problem) {
  throw JinjaError(at.text() + ": " + problem);
}

struct Expr {
  enum Kind {
    kLiteral,
    kName,
    kList,
    kDict,
    kAttr,
    kIndex,
    kSlice,
    kCall,
    kFilter,
    kTest,
    kNot,
    kNeg,
    kBinary,
    kAnd,
    kOr,
    kCond
  };
  Kind kind;
  Where at;
  JinjaValue value;                         // kLiteral
  std::string name;                         // kName, kAttr, kFilter, kTest, kBinary (the operator)
  std::vector<std::unique_ptr<Expr>> args;  // operands / items / positional arguments
  std::vector<std::pair<std::string, std::unique_ptr<Expr>>> kwargs;
  bool negated = false;  // kTest: `is not`
};
using ExprPtr = std::unique_ptr<Expr>;

}  // namespace

struct JinjaTemplate::Node {
  enum Kind { kText, kOutput, kIf, kFor, kSet, kBreak, kContinue };
  Kind kind;
  Where at;
  std::string text;  // kText
  ExprPtr expr;      // kOutput, kSet value, kFor iterable
  // kIf: conditions[i] guards bodies[i]; a last body without a condition is the else.
  std::vector<ExprPtr> conditions;
  std::vector<std::vector<std::unique_ptr<Node>>> bodies;
  std::vector<std::string> targets;  // kFor loop names; kSet: {name} or {namespace, attribute}
  ExprPtr filter;                    // kFor: `for x in xs if cond`
};

namespace {

using Node = JinjaTemplate::Node;
using NodePtr = std::unique_ptr<Node>;

// ---------------------------------------------------------------------------------------
// Lexing: the source into text and tags, with whitespace control applied.

struct Segment {
  enum Kind { kText, kOutput, kStatement } kind;
  std::string content;
  Where at;
};

std::vector<Segment> split_source(std::string src) {
  if (!src.empty() && src.back() == '\n') src.pop_back();  // keep_trailing_newline=False
  struct Raw {
    Segment seg;
    bool strip_before = false, strip_after = false, block = false;
  };
  std::vector<Raw> raw;
  Where at;
  const auto advance = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      if (src[i] == '\n') {
        ++at.line;
        at.column = 1;
      } else {
        ++at.column;
      }
    }
  };
  std::size_t i = 0;
  while (i < src.size()) {
    std::size_t open = src.find('{', i);
    while (open != std::string::npos && open + 1 < src.size() && src[open + 1] != '{' &&
           src[open + 1] != '%' && src[open + 1] != '#') {
      open = src.find('{', open + 1);
    }
    if (open == std::string::npos || open + 1 >= src.size()) {
      raw.push_back({{Segment::kText, src.substr(i), at}});
      advance(i, src.size());
      break;
    }
    if (open > i) raw.push_back({{Segment::kText, src.substr(i, open - i), at}});
    advance(i, open);
    const Where tag_at = at;
    const char type = src[open + 1];
    const std::string close = type == '{' ? "}}" : type == '%' ? "%}" : "#}";
    std::size_t j = open + 2;
    Raw r;
    r.block = type != '{';
    if (j < src.size() && (src[j] == '-' || src[j] == '+')) {
      r.strip_before = src[j] == '-';
      ++j;
    }
    // The closing delimiter, outside string literals.
    std::size_t end = std::string::npos;
    char quote = 0;
    for (std::size_t k = j; k + 1 < src.size(); ++k) {
      if (type == '#') {
        if (src.compare(k, 2, close) == 0) {
          end = k;
          break;
        }
        continue;
      }
      const char c = src[k];
      if (quote) {
        if (c == '\\') {
          ++k;
        } else if (c == quote) {
          quote = 0;
        }
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else if (src.compare(k, 2, close) == 0) {
        end = k;
        break;
      }
    }
    if (end == std::string::npos)
      fail(tag_at, "the tag opened here is never closed with '" + close + "'");
    std::size_t content_end = end;
    if (content_end > j && (src[content_end - 1] == '-' || src[content_end - 1] == '+')) {
      r.strip_after = src[content_end - 1] == '-';
      --content_end;
    }
    if (type != '#') {
      r.seg = {type == '{' ? Segment::kOutput : Segment::kStatement, src.substr(j, content_end - j),
               tag_at};
    } else {
      r.seg = {Segment::kStatement, "", tag_at};  // a comment: whitespace rules only
    }
    advance(open, end + 2);
    i = end + 2;
    raw.push_back(std::move(r));
  }
  // Whitespace: '-' strips all whitespace on its side; lstrip_blocks removes the spaces
  // and tabs before a block tag that starts its line; trim_blocks removes the newline
  // after a block tag.
  for (std::size_t k = 0; k < raw.size(); ++k) {
    if (raw[k].seg.kind == Segment::kText) continue;
    Raw* before = k > 0 && raw[k - 1].seg.kind == Segment::kText ? &raw[k - 1] : nullptr;
    Raw* after =
        k + 1 < raw.size() && raw[k + 1].seg.kind == Segment::kText ? &raw[k + 1] : nullptr;
    if (before) {
      std::string& t = before->seg.content;
      if (raw[k].strip_before) {
        t.erase(t.find_last_not_of(" \t\r\n\f\v") + 1);
      } else if (raw[k].block) {
        const std::size_t p = t.find_last_not_of(" \t");
        if (p == std::string::npos ? k == 1 : t[p] == '\n')
          t.erase(p == std::string::npos ? 0 : p + 1);
      }
    }
    if (after) {
      std::string& t = after->seg.content;
      if (raw[k].strip_after) {
        const std::size_t p = t.find_first_not_of(" \t\r\n\f\v");
        t.erase(0, p == std::string::npos ? t.size() : p);
      } else if (raw[k].block && !t.empty() && t[0] == '\n') {
        t.erase(0, 1);
      }
    }
  }
  std::vector<Segment> out;
  for (Raw& r : raw) {
    if (r.seg.kind == Segment::kStatement && r.seg.content.empty()) continue;  // a comment
    if (r.seg.kind == Segment::kText && r.seg.content.empty()) continue;
    out.push_back(std::move(r.seg));
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Expression tokens

struct Token {
  enum Kind { kName, kString, kInt, kFloat, kOp, kEnd } kind;
  std::string text;
  Where at;
};

std::vector<Token> tokenize(const std::string& s, Where at) {
  std::vector<Token> out;
  std::size_t i = 0;
  const auto where = [&](std::size_t k) {
    Where w = at;
    for (std::size_t m = 0; m < k; ++m) {
      if (s[m] == '\n') {
        ++w.line;
        w.column = 1;
      } else {
        ++w.column;
      }
    }
    return w;
  };
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    const Where w = where(i);
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back({Token::kName, s.substr(i, j - i), w});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      std::size_t j = i;
      while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      bool is_float = false;
      if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
        is_float = true;
        ++j;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        std::size_t k = j + 1;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
        if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) {
          is_float = true;
          j = k;
          while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
        }
      }
      std::string num = s.substr(i, j - i);
      num.erase(std::remove(num.begin(), num.end(), '_'), num.end());
      out.push_back({is_float ? Token::kFloat : Token::kInt, num, w});
      i = j;
    } else if (c == '\'' || c == '"') {
      std::string value;
      std::size_t j = i + 1;
      for (; j < s.size() && s[j] != c; ++j) {
        if (s[j] != '\\' || j + 1 >= s.size()) {
          value.push_back(s[j]);
          continue;
        }
        const char e = s[++j];
        switch (e) {
          case 'n':
            value.push_back('\n');
            break;
          case 't':
            value.push_back('\t');
            break;
          case 'r':
            value.push_back('\r');
            break;
          case '\\':
            value.push_back('\\');
            break;
          case '\'':
            value.push_back('\'');
            break;
          case '"':
            value.push_back('"');
            break;
          default:
            value.push_back('\\');
            value.push_back(e);
        }
      }
      if (j >= s.size()) fail(w, "a string is never closed");
      out.push_back({Token::kString, value, w});
      i = j + 1;
    } else {
      static const char* ops[] = {"//", "**", "==", "!=", "<=", ">=", "(", ")", "[",
                                  "]",  "{",  "}",  ".",  ",",  ":",  "|", "~", "+",
                                  "-",  "*",  "/",  "%",  "<",  ">",  "="};
      bool found = false;
      for (const char* op : ops) {
        const std::size_t n = std::char_traits<char>::length(op);
        if (s.compare(i, n, op) == 0) {
          out.push_back({Token::kOp, op, w});
          i += n;
          found = true;
          break;
        }
      }
      if (!found) fail(w, std::string("unexpected character '") + c + "'");
    }
  }
  out.push_back({Token::kEnd, "", where(s.size())});
  return out;
}

// ---------------------------------------------------------------------------------------
// Expression parser

class ExprParser {
 public:
  explicit ExprParser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  ExprPtr expression() {
    if (++depth_ > kMaxDepth) fail(peek().at, "the expression nests too deeply");
    ExprPtr e = conditional();
    --depth_;
    return e;
  }
  const Token& peek(std::size_t k = 0) const { return t_[std::min(pos_ + k, t_.size() - 1)]; }
  bool at_end() const { return peek().kind == Token::kEnd; }
  bool is_op(const char* op, std::size_t k = 0) const {
    return peek(k).kind == Token::kOp && peek(k).text == op;
  }
  bool is_name(const char* n, std::size_t k = 0) const {
    return peek(k).kind == Token::kName && peek(k).text == n;
  }
  const Token& next() { return t_[std::min(pos_++, t_.size() - 1)]; }
  void expect_op(const char* op) {
    if (!is_op(op)) fail(peek().at, std::string("expected '") + op + "'" + found());
    ++pos_;
  }
  std::string expect_name() {
    if (peek().kind != Token::kName) fail(peek().at, "expected a name" + found());
    return next().text;
  }
  void expect_end() {
    if (!at_end()) fail(peek().at, "unexpected" + found());
  }
  std::string found() const {
    return peek().kind == Token::kEnd ? " (found the end of the tag)"
                                      : " (found '" + peek().text + "')";
  }

 private:
  static ExprPtr make(Expr::Kind kind, Where at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->at = at;
    return e;
  }
  static ExprPtr binary(Expr::Kind kind, const std::string& op, ExprPtr a, ExprPtr b) {
    auto e = make(kind, a->at);
    e->name = op;
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  ExprPtr conditional() {
    ExprPtr e = or_expr();
    if (is_name("if")) {
      ++pos_;
      auto c = make(Expr::kCond, e->at);
      c->args.push_back(std::move(e));
      c->args.push_back(or_expr());
      if (is_name("else")) {
        ++pos_;
        c->args.push_back(conditional());
      }
      return c;
    }
    return e;
  }
  ExprPtr or_expr() {
    ExprPtr e = and_expr();
    while (is_name("or")) {
      ++pos_;
      e = binary(Expr::kOr, "or", std::move(e), and_expr());
    }
    return e;
  }
  ExprPtr and_expr() {
    ExprPtr e = not_expr();
    while (is_name("and")) {
      ++pos_;
      e = binary(Expr::kAnd, "and", std::move(e), not_expr());
    }
    return e;
  }
  ExprPtr not_expr() {
    if (is_name("not")) {
      const Where at = next().at;
      auto e = make(Expr::kNot, at);
      e->args.push_back(not_expr());
      return e;
    }
    return compare();
  }
  ExprPtr compare() {
    ExprPtr e = math1();
    for (;;) {
      std::string op;
      if (peek().kind == Token::kOp &&
          (peek().text == "==" || peek().text == "!=" || peek().text == "<" ||
           peek().text == "<=" || peek().text == ">" || peek().text == ">=")) {
        op = next().text;
      } else if (is_name("in")) {
        ++pos_;
        op = "in";
      } else if (is_name("not") && is_name("in", 1)) {
        pos_ += 2;
        op = "not in";
      } else {
        return e;
      }
      e = binary(Expr::kBinary, op, std::move(e), math1());
    }
  }
  ExprPtr math1() {
    ExprPtr e = concat();
    while (is_op("+") || is_op("-")) {
      const std::string op = next().text;
      e = binary(Expr::kBinary, op, std::move(e), concat());
    }
    return e;
  }
  ExprPtr concat() {
    ExprPtr e = math2();
    while (is_op("~")) {
      ++pos_;
      e = binary(Expr::kBinary, "~", std::move(e), math2());
    }
    return e;
  }
  ExprPtr math2() {
    ExprPtr e = power();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string op = next().text;
      e = binary(Expr::kBinary, op, std::move(e), power());
    }
    return e;
  }
  ExprPtr power() {
    ExprPtr e = unary(true);
    while (is_op("**")) {
      ++pos_;
      e = binary(Expr::kBinary, "**", std::move(e), unary(true));
    }
    return e;
  }
  ExprPtr unary(bool with_filter) {
    if (++depth_ > kMaxDepth) fail(peek().at, "the expression nests too deeply");
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const Token op = next();
      auto n = make(Expr::kNeg, op.at);
      n->name = op.text;
      n->args.push_back(unary(false));
      e = std::move(n);
    } else {
      e = postfix(primary());
    }
    if (with_filter) e = filters(std::move(e));
    --depth_;
    return e;
  }
  ExprPtr primary() {
    const Token& tok = peek();
    switch (tok.kind) {
      case Token::kName: {
        ++pos_;
        auto e = make(Expr::kLiteral, tok.at);
        if (tok.text == "true" || tok.text == "True") {
          e->value = JinjaValue(true);
        } else if (tok.text == "false" || tok.text == "False") {
          e->value = JinjaValue(false);
        } else if (tok.text == "none" || tok.text == "None") {
          e->value = JinjaValue(JinjaValue::None{});
        } else {
          e->kind = Expr::kName;
          e->name = tok.text;
        }
        return e;
      }
      case Token::kString: {
        auto e = make(Expr::kLiteral, tok.at);
        std::string s;
        while (peek().kind == Token::kString) s += next().text;  // adjacent literals join
        e->value = JinjaValue(s);
        return e;
      }
      case Token::kInt: {
        ++pos_;
        auto e = make(Expr::kLiteral, tok.at);
        int64_t v = 0;
        auto [p, ec] = std::from_chars(tok.text.data(), tok.text.data() + tok.text.size(), v);
        if (ec != std::errc()) fail(tok.at, "the integer " + tok.text + " is out of range");
        e->value = JinjaValue(v);
        return e;
      }
      case Token::kFloat: {
        ++pos_;
        auto e = make(Expr::kLiteral, tok.at);
        e->value = JinjaValue(std::strtod(tok.text.c_str(), nullptr));
        return e;
      }
      case Token::kOp:
        if (tok.text == "(") {
          ++pos_;
          ExprPtr e = expression();
          if (is_op(",")) {  // a tuple: a list here
            auto l = make(Expr::kList, e->at);
            l->args.push_back(std::move(e));
            while (is_op(",")) {
              ++pos_;
              if (is_op(")")) break;
              l->args.push_back(expression());
            }
            e = std::move(l);
          }
          expect_op(")");
          return e;
        }
        if (tok.text == "[") {
          ++pos_;
          auto l = make(Expr::kList, tok.at);
          while (!is_op("]")) {
            l->args.push_back(expression());
            if (!is_op(",")) break;
            ++pos_;
          }
          expect_op("]");
          return l;
        }
        if (tok.text == "{") {
          ++pos_;
          auto d = make(Expr::kDict, tok.at);
          while (!is_op("}")) {
            d->args.push_back(expression());
            expect_op(":");
            d->args.push_back(expression());
            if (!is_op(",")) break;
            ++pos_;
          }
          expect_op("}");
          return d;
        }
        break;
      default:
        break;
    }
    fail(tok.at, "expected a value" + found());
  }
  void call_args(Expr& call) {
    expect_op("(");
    while (!is_op(")")) {
      if (peek().kind == Token::kName && is_op("=", 1)) {
        std::string key = next().text;
        ++pos_;
        call.kwargs.emplace_back(std::move(key), expression());
      } else {
        call.args.push_back(expression());
      }
      if (!is_op(",")) break;
      ++pos_;
    }
    expect_op(")");
  }
  ExprPtr postfix(ExprPtr e) {
    for (;;) {
      if (is_op(".")) {
        const Where at = next().at;
        auto a = make(Expr::kAttr, at);
        if (peek().kind == Token::kInt) {  // x.0
          a->kind = Expr::kIndex;
          auto idx = make(Expr::kLiteral, at);
          idx->value = JinjaValue(static_cast<int64_t>(std::stoll(next().text)));
          a->args.push_back(std::move(e));
          a->args.push_back(std::move(idx));
        } else {
          a->name = expect_name();
          a->args.push_back(std::move(e));
        }
        e = std::move(a);
      } else if (is_op("[")) {
        const Where at = next().at;
        ExprPtr parts[3];
        bool slice = false;
        int part = 0;
        while (!is_op("]")) {
          if (is_op(":")) {
            ++pos_;
            slice = true;
            if (++part > 2) fail(at, "a slice has at most three parts");
            continue;
          }
          if (parts[part]) fail(peek().at, "expected ':' or ']'" + found());
          parts[part] = expression();
        }
        ++pos_;
        auto s = make(slice ? Expr::kSlice : Expr::kIndex, at);
        s->args.push_back(std::move(e));
        if (!slice) {
          if (!parts[0]) fail(at, "an empty subscript");
          s->args.push_back(std::move(parts[0]));
        } else {
          for (auto& p : parts) s->args.push_back(std::move(p));  // null: omitted
        }
        e = std::move(s);
      } else if (is_op("(")) {
        auto c = make(Expr::kCall, peek().at);
        c->args.push_back(std::move(e));
        call_args(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }
  ExprPtr filters(ExprPtr e) {
    for (;;) {
      if (is_op("|")) {
        const Where at = next().at;
        auto f = make(Expr::kFilter, at);
        f->name = expect_name();
        f->args.push_back(std::move(e));
        if (is_op("(")) call_args(*f);
        e = std::move(f);
      } else if (is_name("is")) {
        const Where at = next().at;
        auto t = make(Expr::kTest, at);
        if (is_name("not")) {
          ++pos_;
          t->negated = true;
        }
        if (is_name("none") || is_name("None") || is_name("true") || is_name("false") ||
            is_name("True") || is_name("False")) {
          std::string n = next().text;
          std::transform(n.begin(), n.end(), n.begin(), ::tolower);
          t->name = n;
        } else {
          t->name = expect_name();
        }
        t->args.push_back(std::move(e));
        if (is_op("(")) {
          call_args(*t);
        } else if (peek().kind == Token::kString || peek().kind == Token::kInt ||
                   (peek().kind == Token::kName && !is_name("and") && !is_name("or") &&
                    !is_name("if") && !is_name("else") && !is_name("in") && !is_name("not"))) {
          t->args.push_back(primary());  // `is equalto 3`, `is sameas x`
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }

  std::vector<Token> t_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

// ---------------------------------------------------------------------------------------
// Statement parser

class TemplateParser {
 public:
  explicit TemplateParser(std::vector<Segment> segs) : segs_(std::move(segs)) {}

  std::vector<NodePtr> parse() {
    std::vector<NodePtr> body = block({});
    if (pos_ < segs_.size()) fail(segs_[pos_].at, "unexpected '" + keyword(segs_[pos_]) + "'");
    return body;
  }

 private:
  static std::string keyword(const Segment& s) {
    std::size_t i = s.content.find_first_not_of(" \t\r\n");
    if (i == std::string::npos) return "";
    std::size_t j = i;
    while (j < s.content.size() &&
           (std::isalnum(static_cast<unsigned char>(s.content[j])) || s.content[j] == '_'))
      ++j;
    return s.content.substr(i, j - i);
  }

  // Statements until one of `stops` (a statement keyword), which is left unconsumed.
  std::vector<NodePtr> block(const std::vector<std::string>& stops) {
    std::vector<NodePtr> out;
    while (pos_ < segs_.size()) {
      const Segment& s = segs_[pos_];
      if (s.kind == Segment::kText) {
        auto n = std::make_unique<Node>();
        n->kind = Node::kText;
        n->at = s.at;
        n->text = s.content;
        out.push_back(std::move(n));
        ++pos_;
        continue;
      }
      if (s.kind == Segment::kOutput) {
        ExprParser p(tokenize(s.content, s.at));
        auto n = std::make_unique<Node>();
        n->kind = Node::kOutput;
        n->at = s.at;
        n->expr = p.expression();
        p.expect_end();
        out.push_back(std::move(n));
        ++pos_;
        continue;
      }
      const std::string kw = keyword(s);
      if (std::find(stops.begin(), stops.end(), kw) != stops.end()) return out;
      if (++depth_ > kMaxDepth) fail(s.at, "blocks nest too deeply");
      out.push_back(statement(s, kw));
      --depth_;
    }
    if (!stops.empty()) {
      fail(segs_.empty() ? Where{} : segs_.back().at, "missing '{% " + stops.back() + " %}'");
    }
    return out;
  }

  NodePtr statement(const Segment& s, const std::string& kw) {
    ExprParser p(tokenize(s.content, s.at));
    p.next();  // the keyword
    auto n = std::make_unique<Node>();
    n->at = s.at;
    if (kw == "if") {
      n->kind = Node::kIf;
      n->conditions.push_back(p.expression());
      p.expect_end();
      ++pos_;
      for (;;) {
        n->bodies.push_back(block({"elif", "else", "endif"}));
        const Segment& t = segs_[pos_];
        const std::string tk = keyword(t);
        ExprParser q(tokenize(t.content, t.at));
        q.next();
        ++pos_;
        if (tk == "elif") {
          n->conditions.push_back(q.expression());
          q.expect_end();
        } else if (tk == "else") {
          q.expect_end();
          n->bodies.push_back(block({"endif"}));
          ExprParser r(tokenize(segs_[pos_].content, segs_[pos_].at));
          r.next();
          r.expect_end();
          ++pos_;
          break;
        } else {
          q.expect_end();
          break;
        }
      }
      return n;
    }
    if (kw == "for") {
      n->kind = Node::kFor;
      n->targets.push_back(p.expect_name());
      while (p.is_op(",")) {
        p.next();
        n->targets.push_back(p.expect_name());
      }
      if (!p.is_name("in")) fail(p.peek().at, "expected 'in'" + p.found());
      p.next();
      // The iterable stops before a trailing `if` (a loop filter) or `recursive`.
      n->expr = p.expression();
      if (n->expr->kind == Expr::kCond && n->expr->args.size() == 2) {
        n->filter = std::move(n->expr->args[1]);
        n->expr = std::move(n->expr->args[0]);
      }
      if (p.is_name("recursive")) fail(p.peek().at, "recursive loops are not supported");
      p.expect_end();
      ++pos_;
      n->bodies.push_back(block({"else", "endfor"}));
      const std::string tk = keyword(segs_[pos_]);
      ++pos_;
      if (tk == "else") {
        n->bodies.push_back(block({"endfor"}));
        ++pos_;
      }
      return n;
    }
    if (kw == "set") {
      n->kind = Node::kSet;
      n->targets.push_back(p.expect_name());
      if (p.is_op(".")) {
        p.next();
        n->targets.push_back(p.expect_name());
      }
      if (!p.is_op("="))
        fail(p.peek().at, "block assignments ({% set x %}...{% endset %}) are not supported");
      p.next();
      n->expr = p.expression();
      if (p.is_op(",")) fail(p.peek().at, "tuple assignments are not supported");
      p.expect_end();
      ++pos_;
      return n;
    }
    if (kw == "break" || kw == "continue") {
      n->kind = kw == "break" ? Node::kBreak : Node::kContinue;
      p.expect_end();
      ++pos_;
      return n;
    }
    if (kw == "generation" || kw == "endgeneration") {  // transformers' assistant marker
      n->kind = Node::kText;
      ++pos_;
      return n;
    }
    if (kw.empty()) fail(s.at, "an empty statement");
    fail(s.at, "'{% " + kw +
                   " %}' is not supported in chat templates (tessera implements if, "
                   "for, set, break, continue)");
  }

  std::vector<Segment> segs_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

// ---------------------------------------------------------------------------------------
// Evaluation

struct Flow {
  enum Kind { kNormal, kBreak, kContinue } kind = kNormal;
};

std::string strip_chars(const std::string& s, const std::string& chars, bool left, bool right) {
  std::size_t b = 0, e = s.size();
  if (left) {
    while (b < e && chars.find(s[b]) != std::string::npos) ++b;
  }
  if (right) {
    while (e > b && chars.find(s[e - 1]) != std::string::npos) --e;
  }
  return s.substr(b, e - b);
}

const std::string kWhitespace = " \t\n\r\f\v";

std::string to_upper(const std::string& s) { return unicode_upper(s); }
std::string to_lower(const std::string& s) { return unicode_lower(s); }

class Renderer {
 public:
  explicit Renderer(const JinjaValue& context) {
    scopes_.emplace_back();
    if (context.is_dict()) {
      for (const auto& [k, v] : context.dict().items) scopes_.back()[k] = v;
    }
  }

  Flow run(const std::vector<NodePtr>& body) {
    for (const NodePtr& n : body) {
      const Flow f = run(*n);
      if (f.kind != Flow::kNormal) return f;
    }
    return {};
  }

  std::string take() { return std::move(text_); }

 private:
  Flow run(const Node& n) {
    switch (n.kind) {
      case Node::kText:
        emit(n.text, n.at);
        return {};
      case Node::kOutput:
        emit(eval(*n.expr).str(), n.at);
        return {};
      case Node::kIf:
        for (std::size_t i = 0; i < n.bodies.size(); ++i) {
          if (i >= n.conditions.size() || eval(*n.conditions[i]).truthy()) return run(n.bodies[i]);
        }
        return {};
      case Node::kSet: {
        JinjaValue v = eval(*n.expr);
        if (n.targets.size() == 1) {
          scopes_.back()[n.targets[0]] = std::move(v);
        } else {
          JinjaValue ns = lookup(n.targets[0]);
          if (!ns.is_dict() || !ns.dict().is_namespace) {
            fail(n.at, "'" + n.targets[0] +
                           "' is not a namespace (attributes can be set only on "
                           "namespace() objects)");
          }
          ns.dict().set(n.targets[1], std::move(v));
        }
        return {};
      }
      case Node::kBreak:
        return {Flow::kBreak};
      case Node::kContinue:
        return {Flow::kContinue};
      case Node::kFor:
        return run_for(n);
    }
    return {};
  }

  Flow run_for(const Node& n) {
    const JinjaValue seq = eval(*n.expr);
    std::vector<JinjaValue> items;
    if (seq.is_list()) {
      items = seq.list();
    } else if (seq.is_dict()) {
      for (const auto& [k, v] : seq.dict().items) items.push_back(JinjaValue(k));
    } else if (seq.is_string()) {
      for (std::string_view ch : utf8_chars(seq.as_string()))
        items.push_back(JinjaValue(std::string(ch)));
    } else if (!seq.is_undefined() && !seq.is_none()) {
      fail(n.at, "cannot loop over a " + seq.type_name());
    }
    if (n.filter) {
      std::vector<JinjaValue> kept;
      for (const JinjaValue& item : items) {
        scopes_.emplace_back();
        bind(n, item);
        if (eval(*n.filter).truthy()) kept.push_back(item);
        scopes_.pop_back();
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      if (n.bodies.size() > 1) return run(n.bodies[1]);
      return {};
    }
    const auto len = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < len; ++i) {
      if (++iterations_ > kMaxIterations) fail(n.at, "the template loops too long");
      scopes_.emplace_back();
      bind(n, items[static_cast<std::size_t>(i)]);
      JinjaValue::Dict loop;
      loop.items = {
          {"index", JinjaValue(i + 1)},
          {"index0", JinjaValue(i)},
          {"revindex", JinjaValue(len - i)},
          {"revindex0", JinjaValue(len - i - 1)},
          {"first", JinjaValue(i == 0)},
          {"last", JinjaValue(i == len - 1)},
          {"length", JinjaValue(len)},
          {"previtem", i > 0 ? items[static_cast<std::size_t>(i - 1)] : JinjaValue()},
          {"nextitem", i + 1 < len ? items[static_cast<std::size_t>(i + 1)] : JinjaValue()}};
      scopes_.back()["loop"] = JinjaValue(std::move(loop));
      const Flow f = run(n.bodies[0]);
      scopes_.pop_back();
      if (f.kind == Flow::kBreak) break;
    }
    return {};
  }

  void bind(const Node& n, const JinjaValue& item) {
    if (n.targets.size() == 1) {
      scopes_.back()[n.targets[0]] = item;
      return;
    }
    if (!item.is_list() || item.list().size() != n.targets.size()) {
      fail(n.at, "cannot unpack a " + item.type_name() + " into " +
                     std::to_string(n.targets.size()) + " names");
    }
    for (std::size_t k = 0; k < n.targets.size(); ++k)
      scopes_.back()[n.targets[k]] = item.list()[k];
  }

  void emit(const std::string& s, const Where& at) {
    text_ += s;
    if (text_.size() > kMaxOutputBytes) fail(at, "the rendered text exceeds 16 MiB");
  }

  JinjaValue lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return f->second;
    }
    return JinjaValue();
  }

  JinjaValue eval(const Expr& e) {
    switch (e.kind) {
      case Expr::kLiteral:
        return e.value;
      case Expr::kName:
        return lookup(e.name);
      case Expr::kList: {
        JinjaValue::List l;
        for (const auto& a : e.args) l.push_back(eval(*a));
        return JinjaValue(std::move(l));
      }
      case Expr::kDict: {
        JinjaValue::Dict d;
        for (std::size_t i = 0; i + 1 < e.args.size(); i += 2) {
          const JinjaValue k = eval(*e.args[i]);
          if (!k.is_string()) fail(e.at, "dict keys must be strings");
          d.set(k.as_string(), eval(*e.args[i + 1]));
        }
        return JinjaValue(std::move(d));
      }
      case Expr::kAttr:
        return member(eval(*e.args[0]), JinjaValue(e.name));
      case Expr::kIndex:
        return member(eval(*e.args[0]), eval(*e.args[1]));
      case Expr::kSlice:
        return slice(e);
      case Expr::kCall:
        return call(e);
      case Expr::kFilter:
        return filter(e);
      case Expr::kTest: {
        const bool r = test(e);
        return JinjaValue(e.negated ? !r : r);
      }
      case Expr::kNot:
        return JinjaValue(!eval(*e.args[0]).truthy());
      case Expr::kNeg: {
        const JinjaValue v = eval(*e.args[0]);
        if (!v.is_number())
          fail(e.at, "unary " + e.name + " needs a number, not a " + v.type_name());
        if (e.name == "+") return v;
        return v.is_int() ? JinjaValue(-v.as_int()) : JinjaValue(-v.as_number());
      }
      case Expr::kAnd: {
        JinjaValue a = eval(*e.args[0]);
        return a.truthy() ? eval(*e.args[1]) : a;
      }
      case Expr::kOr: {
        JinjaValue a = eval(*e.args[0]);
        return a.truthy() ? a : eval(*e.args[1]);
      }
      case Expr::kCond:
        if (eval(*e.args[1]).truthy()) return eval(*e.args[0]);
        return e.args.size() > 2 ? eval(*e.args[2]) : JinjaValue();
      case Expr::kBinary:
        return binary(e, eval(*e.args[0]), eval(*e.args[1]));
    }
    return JinjaValue();
  }

  static int64_t normalize_index(int64_t i, int64_t n) { return i < 0 ? i + n : i; }

  JinjaValue member(const JinjaValue& obj, const JinjaValue& key) {
    if (obj.is_dict()) {
      if (key.is_string()) {
        if (const JinjaValue* v = obj.dict().find(key.as_string())) return *v;
      }
      return JinjaValue();
    }
    if (obj.is_list() && key.is_int()) {
      const auto n = static_cast<int64_t>(obj.list().size());
      const int64_t i = normalize_index(key.as_int(), n);
      return i >= 0 && i < n ? obj.list()[static_cast<std::size_t>(i)] : JinjaValue();
    }
    if (obj.is_string() && key.is_int()) {
      const auto chars = utf8_chars(obj.as_string());
      const auto n = static_cast<int64_t>(chars.size());
      const int64_t i = normalize_index(key.as_int(), n);
      return i >= 0 && i < n ? JinjaValue(std::string(chars[static_cast<std::size_t>(i)]))
                             : JinjaValue();
    }
    return JinjaValue();
  }

  JinjaValue slice(const Expr& e) {
    const JinjaValue obj = eval(*e.args[0]);
    const auto part = [&](std::size_t k) -> std::optional<int64_t> {
      if (!e.args[k]) return std::nullopt;
      const JinjaValue v = eval(*e.args[k]);
      if (v.is_none()) return std::nullopt;
      if (!v.is_int()) fail(e.at, "slice bounds must be integers");
      return v.as_int();
    };
    const std::optional<int64_t> start = part(1), stop = part(2), step_opt = part(3);
    const int64_t step = step_opt.value_or(1);
    if (step == 0) fail(e.at, "a slice step cannot be zero");
    std::vector<JinjaValue> items;
    const bool is_str = obj.is_string();
    if (obj.is_list()) {
      items = obj.list();
    } else if (is_str) {
      for (std::string_view ch : utf8_chars(obj.as_string()))
        items.push_back(JinjaValue(std::string(ch)));
    } else {
      fail(e.at, "cannot slice a " + obj.type_name());
    }
    const auto n = static_cast<int64_t>(items.size());
    const auto clamp = [&](std::optional<int64_t> v, int64_t fallback, int64_t lo, int64_t hi) {
      if (!v) return fallback;
      int64_t x = *v < 0 ? *v + n : *v;
      return std::clamp(x, lo, hi);
    };
    std::vector<JinjaValue> picked;
    if (step > 0) {
      const int64_t b = clamp(start, 0, 0, n), en = clamp(stop, n, 0, n);
      for (int64_t i = b; i < en; i += step) picked.push_back(items[static_cast<std::size_t>(i)]);
    } else {
      const int64_t b = clamp(start, n - 1, -1, n - 1), en = clamp(stop, -1, -1, n - 1);
      for (int64_t i = b; i > en; i += step) picked.push_back(items[static_cast<std::size_t>(i)]);
    }
    if (!is_str) return JinjaValue(std::move(picked));
    std::string s;
    for (const JinjaValue& v : picked) s += v.as_string();
    return JinjaValue(s);
  }

  std::vector<JinjaValue> positional(const Expr& e, std::size_t first) {
    std::vector<JinjaValue> out;
    for (std::size_t i = first; i < e.args.size(); ++i) out.push_back(eval(*e.args[i]));
    return out;
  }
  JinjaValue kwarg(const Expr& e, const char* name) {
    for (const auto& [k, v] : e.kwargs) {
      if (k == name) return eval(*v);
    }
    return JinjaValue();
  }

  static std::string need_string(const Expr& e, const JinjaValue& v, const std::string& what) {
    if (!v.is_string()) fail(e.at, what + " needs a string, not a " + v.type_name());
    return v.as_string();
  }

  JinjaValue call(const Expr& e) {
    const Expr& callee = *e.args[0];
    const std::vector<JinjaValue> args = positional(e, 1);
    if (callee.kind == Expr::kAttr) return method(e, eval(*callee.args[0]), callee.name, args);
    if (callee.kind != Expr::kName) fail(e.at, "only named functions and methods can be called");
    const std::string& f = callee.name;
    if (f == "raise_exception") {
      throw JinjaError("the template raised an exception: " +
                       (args.empty() ? std::string() : args[0].str()));
    }
    if (f == "namespace") {
      JinjaValue::Dict d;
      d.is_namespace = true;
      for (const auto& [k, v] : e.kwargs) d.set(k, eval(*v));
      return JinjaValue(std::move(d));
    }
    if (f == "range") {
      int64_t start = 0, stop = 0, step = 1;
      for (const JinjaValue& a : args) {
        if (!a.is_int()) fail(e.at, "range() takes integers");
      }
      if (args.size() == 1) {
        stop = args[0].as_int();
      } else if (args.size() >= 2) {
        start = args[0].as_int();
        stop = args[1].as_int();
        if (args.size() > 2) step = args[2].as_int();
      }
      if (step == 0) fail(e.at, "range() step cannot be zero");
      JinjaValue::List l;
      for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        if (static_cast<int64_t>(l.size()) >= kMaxIterations) fail(e.at, "range() is too long");
        l.push_back(JinjaValue(i));
      }
      return JinjaValue(std::move(l));
    }
    if (f == "strftime_now") {
      const std::string fmt =
          args.empty() ? std::string("%Y-%m-%d") : need_string(e, args[0], "strftime_now");
      const std::time_t now =
          std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
      std::tm tm{};
      localtime_r(&now, &tm);
      char buf[256];
      const std::size_t n = std::strftime(buf, sizeof(buf), fmt.c_str(), &tm);
      return JinjaValue(std::string(buf, n));
    }
    const JinjaValue v = lookup(f);
    if (v.is_undefined()) fail(e.at, "'" + f + "' is not a function tessera's templates know");
    fail(e.at, "'" + f + "' is a " + v.type_name() + ", not a function");
  }

  JinjaValue method(const Expr& e, const JinjaValue& obj, const std::string& m,
                    const std::vector<JinjaValue>& args) {
    if (obj.is_string()) {
      const std::string& s = obj.as_string();
      const auto chars_arg = [&](std::size_t i) {
        return args.size() > i && !args[i].is_none() ? need_string(e, args[i], m) : kWhitespace;
      };
      if (m == "strip") return JinjaValue(strip_chars(s, chars_arg(0), true, true));
      if (m == "lstrip") return JinjaValue(strip_chars(s, chars_arg(0), true, false));
      if (m == "rstrip") return JinjaValue(strip_chars(s, chars_arg(0), false, true));
      if (m == "upper") return JinjaValue(to_upper(s));
      if (m == "lower") return JinjaValue(to_lower(s));
      if (m == "title" || m == "capitalize") return JinjaValue(capitalize(s, m == "title"));
      if (m == "startswith" || m == "endswith") {
        const std::string x = args.empty() ? "" : need_string(e, args[0], m);
        const bool r = m == "startswith" ? s.compare(0, x.size(), x) == 0
                                         : s.size() >= x.size() &&
                                               s.compare(s.size() - x.size(), x.size(), x) == 0;
        return JinjaValue(r);
      }
      if (m == "split") return split(e, s, args);
      if (m == "replace") {
        if (args.size() < 2) fail(e.at, "replace() needs two arguments");
        return JinjaValue(replace(s, need_string(e, args[0], m), need_string(e, args[1], m)));
      }
      if (m == "join") {
        if (args.empty() || !args[0].is_list()) fail(e.at, "join() needs a list");
        std::string out;
        for (std::size_t i = 0; i < args[0].list().size(); ++i)
          out += (i ? s : "") + args[0].list()[i].str();
        return JinjaValue(out);
      }
    } else if (obj.is_dict()) {
      const auto& d = obj.dict();
      if (m == "items") {
        JinjaValue::List l;
        for (const auto& [k, v] : d.items)
          l.push_back(JinjaValue(JinjaValue::List{JinjaValue(k), v}));
        return JinjaValue(std::move(l));
      }
      if (m == "keys" || m == "values") {
        JinjaValue::List l;
        for (const auto& [k, v] : d.items) l.push_back(m == "keys" ? JinjaValue(k) : v);
        return JinjaValue(std::move(l));
      }
      if (m == "get") {
        if (args.empty()) fail(e.at, "get() needs a key");
        const JinjaValue v = member(obj, args[0]);
        return v.is_undefined() ? (args.size() > 1 ? args[1] : JinjaValue(JinjaValue::None{})) : v;
      }
    } else if (obj.is_list()) {
      if (m == "append") {
        if (args.size() != 1) fail(e.at, "append() takes one argument");
        obj.list().push_back(args[0]);
        return JinjaValue(JinjaValue::None{});
      }
    }
    fail(e.at, "the " + obj.type_name() + " method '" + m + "' is not supported");
  }

  static std::string capitalize(const std::string& s, bool every_word) {
    std::string out = to_lower(s);
    bool start = true;
    for (char& c : out) {
      if (start && std::isalpha(static_cast<unsigned char>(c)))
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      start = every_word ? !std::isalnum(static_cast<unsigned char>(c)) : false;
    }
    return out;
  }

  static std::string replace(const std::string& s, const std::string& from, const std::string& to) {
    if (from.empty()) return s;
    std::string out;
    std::size_t at = 0;
    for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, at)) {
      out += s.substr(at, p - at) + to;
      at = p + from.size();
    }
    return out + s.substr(at);
  }

  JinjaValue split(const Expr& e, const std::string& s, const std::vector<JinjaValue>& args) {
    JinjaValue::List parts;
    const bool by_space = args.empty() || args[0].is_none();
    int64_t max = args.size() > 1 && args[1].is_int() ? args[1].as_int() : -1;
    if (by_space) {
      std::size_t i = 0;
      while (i < s.size()) {
        i = s.find_first_not_of(kWhitespace, i);
        if (i == std::string::npos) break;
        if (max == 0) {
          parts.push_back(JinjaValue(strip_chars(s.substr(i), kWhitespace, false, true)));
          break;
        }
        const std::size_t j = std::min(s.find_first_of(kWhitespace, i), s.size());
        parts.push_back(JinjaValue(s.substr(i, j - i)));
        --max;
        i = j;
      }
      return JinjaValue(std::move(parts));
    }
    const std::string sep = need_string(e, args[0], "split");
    if (sep.empty()) fail(e.at, "split() separator is empty");
    std::size_t at = 0;
    for (std::size_t p = s.find(sep); p != std::string::npos && max != 0;
         p = s.find(sep, at), --max) {
      parts.push_back(JinjaValue(s.substr(at, p - at)));
      at = p + sep.size();
    }
    parts.push_back(JinjaValue(s.substr(at)));
    return JinjaValue(std::move(parts));
  }

  JinjaValue filter(const Expr& e) {
    const JinjaValue v = eval(*e.args[0]);
    const std::vector<JinjaValue> args = positional(e, 1);
    const std::string& f = e.name;
    if (f == "trim") {
      return JinjaValue(strip_chars(v.is_string() ? v.as_string() : v.str(),
                                    args.empty() ? kWhitespace : need_string(e, args[0], "trim"),
                                    true, true));
    }
    if (f == "length" || f == "count") {
      if (v.is_string()) return JinjaValue(static_cast<int64_t>(utf8_chars(v.as_string()).size()));
      if (v.is_list()) return JinjaValue(static_cast<int64_t>(v.list().size()));
      if (v.is_dict()) return JinjaValue(static_cast<int64_t>(v.dict().items.size()));
      if (v.is_undefined()) return JinjaValue(int64_t{0});
      fail(e.at, "a " + v.type_name() + " has no length");
    }
    if (f == "tojson") {
      const JinjaValue indent = args.empty() ? kwarg(e, "indent") : args[0];
      return JinjaValue(v.to_json(indent.is_int() ? static_cast<int>(indent.as_int()) : -1));
    }
    if (f == "string") return JinjaValue(v.str());
    if (f == "upper") return JinjaValue(to_upper(v.str()));
    if (f == "lower") return JinjaValue(to_lower(v.str()));
    if (f == "capitalize" || f == "title") return JinjaValue(capitalize(v.str(), f == "title"));
    if (f == "default" || f == "d") {
      const bool boolean = (args.size() > 1 && args[1].truthy()) || kwarg(e, "boolean").truthy();
      if (v.is_undefined() || (boolean && !v.truthy()))
        return args.empty() ? JinjaValue("") : args[0];
      return v;
    }
    if (f == "join") {
      if (!v.is_list()) fail(e.at, "join needs a list, not a " + v.type_name());
      const std::string sep = args.empty() ? "" : need_string(e, args[0], "join");
      std::string out;
      for (std::size_t i = 0; i < v.list().size(); ++i) out += (i ? sep : "") + v.list()[i].str();
      return JinjaValue(out);
    }
    if (f == "first" || f == "last") {
      if (v.is_list()) {
        if (v.list().empty()) return JinjaValue();
        return f == "first" ? v.list().front() : v.list().back();
      }
      if (v.is_string()) return member(v, JinjaValue(int64_t{f == "first" ? 0 : -1}));
      fail(e.at, f + " needs a list or a string");
    }
    if (f == "reverse") {
      if (v.is_list()) {
        JinjaValue::List l = v.list();
        std::reverse(l.begin(), l.end());
        return JinjaValue(std::move(l));
      }
      if (v.is_string()) {
        auto chars = utf8_chars(v.as_string());
        std::string s;
        for (auto it = chars.rbegin(); it != chars.rend(); ++it) s += *it;
        return JinjaValue(s);
      }
      fail(e.at, "reverse needs a list or a string");
    }
    if (f == "list") {
      if (v.is_list()) return v;
      if (v.is_string()) {
        JinjaValue::List l;
        for (std::string_view ch : utf8_chars(v.as_string()))
          l.push_back(JinjaValue(std::string(ch)));
        return JinjaValue(std::move(l));
      }
      if (v.is_dict()) return method(e, v, "keys", {});
      fail(e.at, "list needs a list, string or dict");
    }
    if (f == "int") {
      if (v.is_number()) return JinjaValue(static_cast<int64_t>(v.as_number()));
      if (v.is_string())
        return JinjaValue(static_cast<int64_t>(std::strtoll(v.as_string().c_str(), nullptr, 10)));
      return JinjaValue(int64_t{0});
    }
    if (f == "float") {
      if (v.is_number()) return JinjaValue(v.as_number());
      if (v.is_string()) return JinjaValue(std::strtod(v.as_string().c_str(), nullptr));
      return JinjaValue(0.0);
    }
    if (f == "abs") {
      if (!v.is_number()) fail(e.at, "abs needs a number");
      return v.is_int() ? JinjaValue(v.as_int() < 0 ? -v.as_int() : v.as_int())
                        : JinjaValue(std::fabs(v.as_number()));
    }
    if (f == "replace") {
      if (args.size() < 2) fail(e.at, "replace needs two arguments");
      return JinjaValue(
          replace(v.str(), need_string(e, args[0], "replace"), need_string(e, args[1], "replace")));
    }
    if (f == "items") return method(e, v, "items", {});
    if (f == "selectattr" || f == "rejectattr") {
      if (!v.is_list()) fail(e.at, f + " needs a list");
      if (args.empty()) fail(e.at, f + " needs an attribute name");
      JinjaValue::List kept;
      for (const JinjaValue& item : v.list()) {
        const JinjaValue attr = member(item, args[0]);
        const bool pass = args.size() > 1
                              ? run_test(e, need_string(e, args[1], f), attr,
                                         std::vector<JinjaValue>(args.begin() + 2, args.end()))
                              : attr.truthy();
        if (pass == (f == "selectattr")) kept.push_back(item);
      }
      return JinjaValue(std::move(kept));
    }
    if (f == "map") {
      if (!v.is_list()) fail(e.at, "map needs a list");
      const JinjaValue attr = kwarg(e, "attribute");
      if (attr.is_undefined()) fail(e.at, "map is supported with attribute= only");
      JinjaValue::List out;
      for (const JinjaValue& item : v.list()) out.push_back(member(item, attr));
      return JinjaValue(std::move(out));
    }
    if (f == "indent") {
      const int64_t width = !args.empty() && args[0].is_int() ? args[0].as_int() : 4;
      const std::string pad(static_cast<std::size_t>(std::clamp<int64_t>(width, 0, 64)), ' ');
      return JinjaValue(replace(v.str(), "\n", "\n" + pad));
    }
    fail(e.at, "the filter '" + f + "' is not supported");
  }

  bool run_test(const Expr& e, const std::string& t, const JinjaValue& v,
                const std::vector<JinjaValue>& args) {
    if (t == "defined") return !v.is_undefined();
    if (t == "undefined") return v.is_undefined();
    if (t == "none") return v.is_none();
    if (t == "string") return v.is_string();
    if (t == "number") return v.is_number();
    if (t == "integer") return v.is_int();
    if (t == "float") return v.is_float();
    if (t == "boolean") return v.is_bool();
    if (t == "true") return v.is_bool() && v.as_bool();
    if (t == "false") return v.is_bool() && !v.as_bool();
    if (t == "mapping") return v.is_dict();
    if (t == "sequence" || t == "iterable") return v.is_list() || v.is_string() || v.is_dict();
    if (t == "equalto" || t == "eq" || t == "sameas" || t == "==")
      return !args.empty() && v == args[0];
    if (t == "ne" || t == "!=") return !args.empty() && !(v == args[0]);
    if (t == "odd" || t == "even") {
      if (!v.is_int()) fail(e.at, t + " needs an integer");
      return (v.as_int() % 2 != 0) == (t == "odd");
    }
    if (t == "in") return !args.empty() && contains(e, args[0], v);
    fail(e.at, "the test '" + t + "' is not supported");
  }

  bool test(const Expr& e) { return run_test(e, e.name, eval(*e.args[0]), positional(e, 1)); }

  bool contains(const Expr& e, const JinjaValue& hay, const JinjaValue& needle) {
    if (hay.is_string())
      return hay.as_string().find(need_string(e, needle, "in")) != std::string::npos;
    if (hay.is_list())
      return std::find(hay.list().begin(), hay.list().end(), needle) != hay.list().end();
    if (hay.is_dict()) return needle.is_string() && hay.dict().find(needle.as_string()) != nullptr;
    if (hay.is_undefined()) return false;
    fail(e.at, "'in' needs a string, list or dict, not a " + hay.type_name());
  }

  JinjaValue binary(const Expr& e, const JinjaValue& a, const JinjaValue& b) {
    const std::string& op = e.name;
    if (op == "==") return JinjaValue(a == b);
    if (op == "!=") return JinjaValue(!(a == b));
    if (op == "in") return JinjaValue(contains(e, b, a));
    if (op == "not in") return JinjaValue(!contains(e, b, a));
    if (op == "~") return JinjaValue(a.str() + b.str());
    if (op == "<" || op == "<=" || op == ">" || op == ">=") {
      int c = 0;
      if (a.is_number() && b.is_number()) {
        c = a.as_number() < b.as_number() ? -1 : a.as_number() > b.as_number() ? 1 : 0;
      } else if (a.is_string() && b.is_string()) {
        c = a.as_string().compare(b.as_string());
      } else {
        fail(e.at, "cannot compare a " + a.type_name() + " with a " + b.type_name());
      }
      return JinjaValue(op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0);
    }
    if (op == "+") {
      if (a.is_string() && b.is_string()) {
        if (a.as_string().size() + b.as_string().size() > kMaxOutputBytes)
          fail(e.at, "a string exceeds 16 MiB");
        return JinjaValue(a.as_string() + b.as_string());
      }
      if (a.is_list() && b.is_list()) {
        JinjaValue::List l = a.list();
        l.insert(l.end(), b.list().begin(), b.list().end());
        return JinjaValue(std::move(l));
      }
    }
    if (a.is_number() && b.is_number()) {
      const bool ints = a.is_int() && b.is_int();
      if (op == "+")
        return ints ? JinjaValue(a.as_int() + b.as_int())
                    : JinjaValue(a.as_number() + b.as_number());
      if (op == "-")
        return ints ? JinjaValue(a.as_int() - b.as_int())
                    : JinjaValue(a.as_number() - b.as_number());
      if (op == "*")
        return ints ? JinjaValue(a.as_int() * b.as_int())
                    : JinjaValue(a.as_number() * b.as_number());
      if (op == "/") {
        if (b.as_number() == 0) fail(e.at, "division by zero");
        return JinjaValue(a.as_number() / b.as_number());
      }
      if (op == "//" || op == "%") {
        if (b.as_number() == 0) fail(e.at, "division by zero");
        if (ints) {
          const int64_t x = a.as_int(), y = b.as_int();
          int64_t q = x / y, r = x % y;
          if (r != 0 && ((r < 0) != (y < 0))) {
            --q;
            r += y;
          }
          return JinjaValue(op == "//" ? q : r);
        }
        const double q = std::floor(a.as_number() / b.as_number());
        return op == "//" ? JinjaValue(q) : JinjaValue(a.as_number() - q * b.as_number());
      }
      if (op == "**") return JinjaValue(std::pow(a.as_number(), b.as_number()));
    }
    if (op == "*" && a.is_string() && b.is_int()) {
      std::string s;
      for (int64_t i = 0; i < b.as_int() && s.size() <= kMaxOutputBytes; ++i) s += a.as_string();
      return JinjaValue(s);
    }
    fail(e.at, "cannot apply '" + op + "' to a " + a.type_name() + " and a " + b.type_name());
  }

  std::vector<std::map<std::string, JinjaValue>> scopes_;
  int64_t iterations_ = 0;
  std::string text_;  // the output so far
};

}  // namespace

JinjaTemplate::JinjaTemplate(const std::string& source)
    : body_(TemplateParser(split_source(source)).parse()) {}
JinjaTemplate::~JinjaTemplate() = default;
JinjaTemplate::JinjaTemplate(JinjaTemplate&&) noexcept = default;

std::string JinjaTemplate::render(const JinjaValue& context) const {
  Renderer r(context);
  r.run(body_);
  return r.take();
}

}  // namespace tessera
