#pragma once

// Triton's own schema for config.pbtxt (tests/data/triton/model_config.proto, loaded at run
// time with protobuf's compiler, no code generated): parse_triton_config parses a
// config.pbtxt with protobuf's text format into inference.ModelConfig and returns "" or the
// parser's errors (an unknown field, a wrong type, an enum value Triton lacks).

#include <google/protobuf/compiler/importer.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/text_format.h>

#include <memory>
#include <string>

namespace tessera::testing {

class TritonConfigSchema {
 public:
  TritonConfigSchema() : importer_(&tree_, &errors_) {
    tree_.MapPath("", std::string(TESSERA_SOURCE_DIR) + "/tests/data/triton");
    file_ = importer_.Import("model_config.proto");
    if (file_ != nullptr) type_ = importer_.pool()->FindMessageTypeByName("inference.ModelConfig");
  }
  bool loaded() const { return type_ != nullptr; }

  std::string parse(const std::string& pbtxt) {
    if (!loaded()) return "model_config.proto did not load: " + errors_.text;
    std::unique_ptr<google::protobuf::Message> m(factory_.GetPrototype(type_)->New());
    Collector collector;
    google::protobuf::TextFormat::Parser parser;
    parser.RecordErrorsTo(&collector);
    if (!parser.ParseFromString(pbtxt, m.get()) && collector.text.empty())
      collector.text = "parse failed";
    return collector.text;
  }

 private:
  struct Errors : google::protobuf::compiler::MultiFileErrorCollector {
    void AddError(const std::string& file, int line, int, const std::string& message) override {
      text += file + ":" + std::to_string(line) + ": " + message + "\n";
    }
    std::string text;
  };
  struct Collector : google::protobuf::io::ErrorCollector {
    void AddError(int line, google::protobuf::io::ColumnNumber column,
                  const std::string& message) override {
      text += std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message + "\n";
    }
    std::string text;
  };
  google::protobuf::compiler::DiskSourceTree tree_;
  Errors errors_;
  google::protobuf::compiler::Importer importer_;
  const google::protobuf::FileDescriptor* file_ = nullptr;
  const google::protobuf::Descriptor* type_ = nullptr;
  google::protobuf::DynamicMessageFactory factory_;
};

}  // namespace tessera::testing
