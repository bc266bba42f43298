#include "tokenizer/chat_template.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.hpp"

namespace tessera {

std::optional<ChatTemplate> ChatTemplate::load(const std::filesystem::path& file) {
  if (!std::filesystem::exists(file)) return std::nullopt;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw SpecError(file.string(), "", "cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text.str());
  } catch (const std::exception& e) {
    throw SpecError(file.string(), "", std::string("not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) throw SpecError(file.string(), "", "must be a JSON object");
  auto t = doc.find("chat_template");
  if (t == doc.end() || t->is_null()) return std::nullopt;
  std::string source;
  if (t->is_string()) {
    source = t->get<std::string>();
  } else if (t->is_array()) {  // named templates: the "default" one
    for (const auto& named : *t) {
      if (named.is_object() && named.value("name", "") == "default" && named.contains("template") &&
          named["template"].is_string()) {
        source = named["template"].get<std::string>();
      }
    }
    if (source.empty())
      throw SpecError(file.string(), "chat_template", "has no template named 'default'");
  } else {
    throw SpecError(file.string(), "chat_template",
                    "must be a string or a list of named templates");
  }
  JinjaValue::Dict specials;
  for (const char* name : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
    auto s = doc.find(name);
    if (s == doc.end()) continue;
    if (s->is_string()) {
      specials.set(name, JinjaValue(s->get<std::string>()));
    } else if (s->is_object() && s->contains("content") && (*s)["content"].is_string()) {
      specials.set(name, JinjaValue((*s)["content"].get<std::string>()));
    }
  }
  try {
    return ChatTemplate(source, JinjaValue(std::move(specials)));
  } catch (const JinjaError& e) {
    throw SpecError(file.string(), "chat_template", e.what());
  }
}

ChatTemplate::ChatTemplate(const std::string& source, JinjaValue special_tokens)
    : template_(std::make_shared<JinjaTemplate>(source)),
      special_tokens_(special_tokens.is_dict() ? special_tokens : JinjaValue(JinjaValue::Dict{})) {}

std::string ChatTemplate::render(const JinjaValue& messages, bool add_generation_prompt,
                                 const JinjaValue& extra) const {
  JinjaValue::Dict context;
  for (const auto& [k, v] : special_tokens_.dict().items) context.set(k, v);
  context.set("messages", messages);
  context.set("add_generation_prompt", JinjaValue(add_generation_prompt));
  if (extra.is_dict()) {
    for (const auto& [k, v] : extra.dict().items) context.set(k, v);
  }
  return template_->render(JinjaValue(std::move(context)));
}

std::string ChatTemplate::apply(const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt) const {
  JinjaValue::List list;
  for (const ChatMessage& m : messages) {
    JinjaValue::Dict d;
    d.set("role", JinjaValue(m.role));
    d.set("content", JinjaValue(m.content));
    list.push_back(JinjaValue(std::move(d)));
  }
  return render(JinjaValue(std::move(list)), add_generation_prompt);
}

std::string ChatTemplate::special_token(const std::string& name) const {
  const JinjaValue* v = special_tokens_.dict().find(name);
  return v != nullptr && v->is_string() ? v->as_string() : std::string();
}

}  // namespace tessera
