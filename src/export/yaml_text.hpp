#pragma once

// YAML text of a JSON value, for the exported manifests (docs/export.md).
//
// Contract: the output parses back (YAML 1.1 or 1.2) to the same value: every string is
// double-quoted (so "8000", "yes" or "1.0" stay strings), strings holding a newline are
// literal blocks, object keys keep their order. Several values become one multi-document
// stream with yaml_documents.

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace tessera::exporter {

using ojson = nlohmann::ordered_json;

std::string yaml_text(const ojson& value);
std::string yaml_documents(const std::vector<ojson>& documents, const std::string& header);

// Writes `text` to `file` (replacing it); throws std::runtime_error naming the file when it
// cannot be written.
void write_text(const std::filesystem::path& file, const std::string& text);

}  // namespace tessera::exporter
