#include "export/yaml_text.hpp"

#include <fstream>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

namespace tessera::exporter {
namespace {

void emit(YAML::Emitter& out, const ojson& v) {
  switch (v.type()) {
    case ojson::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [key, value] : v.items()) {
        out << YAML::Key << key << YAML::Value;
        emit(out, value);
      }
      out << YAML::EndMap;
      break;
    case ojson::value_t::array:
      out << YAML::BeginSeq;
      for (const auto& item : v) emit(out, item);
      out << YAML::EndSeq;
      break;
    case ojson::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      if (s.find('\n') != std::string::npos) {
        out << YAML::Literal << s;
      } else {
        out << YAML::DoubleQuoted << s;
      }
      break;
    }
    case ojson::value_t::boolean:
      out << (v.get<bool>() ? "true" : "false");
      break;
    case ojson::value_t::null:
      out << YAML::Null;
      break;
    default:  // numbers
      out << v.dump();
  }
}

}  // namespace

std::string yaml_text(const ojson& value) {
  YAML::Emitter out;
  emit(out, value);
  return std::string(out.c_str()) + "\n";
}

std::string yaml_documents(const std::vector<ojson>& documents, const std::string& header) {
  std::string text = "# " + header + "\n";
  for (const ojson& d : documents) text += "---\n" + yaml_text(d);
  return text;
}

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::ofstream out(file);
  if (!out) throw std::runtime_error("cannot write " + file.string());
  out << text;
}

}  // namespace tessera::exporter
