#include "profile/profile_sources.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>

#include "profile/loki_import.hpp"
#include "profile/ppipe_import.hpp"
#include "profile/profile_yaml.hpp"

namespace tessera {
namespace {

ProfileTable load_loki(const SpecNode& item) {
  item.allow_only({"format", "runtimes", "segments", "column"});
  std::filesystem::path runtimes = item.at("runtimes").as_file_path(limits::kMaxTableFileBytes);
  std::map<std::string, std::string> segments;
  if (auto seg = item.get("segments")) {
    for (const auto& [accel, name] : seg->entries()) {
      std::string s = name.as_string();
      if (s.empty()) name.fail("segment name must not be empty");
      segments[accel] = s;
    }
    if (segments.empty()) seg->fail("needs at least one accelerator (or leave it out for all)");
  }
  std::string column = "avg_runtime";
  if (auto col = item.get("column")) {
    column = col->as_choice({"avg_runtime", "50th_pct", "90th_pct", "95th_pct"});
  }
  return import_loki_runtimes(runtimes, segments, column);
}

ProfileTable load_ppipe(const SpecNode& item) {
  item.allow_only({"format", "dir", "models", "mappings"});
  SpecNode dir_node = item.at("dir");
  std::filesystem::path dir = dir_node.as_dir_path();
  // PPipe's data/ folder is accepted too: its block timings sit in models/block-timing-tf32.
  std::error_code ec;
  if (std::filesystem::is_directory(dir / "models" / "block-timing-tf32", ec)) {
    dir = dir / "models" / "block-timing-tf32";
  } else if (!std::filesystem::is_directory(dir, ec)) {
    dir_node.fail("not a directory: " + printable(dir.string(), 200));
  }
  std::filesystem::path mappings;
  if (auto m = item.get("mappings")) mappings = m->as_dir_path();
  SpecNode models = item.at("models");
  std::vector<SpecNode> names = models.items();
  if (names.empty()) models.fail("needs at least one model");
  std::vector<std::string> available = list_ppipe_models(dir);
  ProfileTable table;
  for (const SpecNode& name : names) {
    std::string model = name.as_string();
    if (std::find(available.begin(), available.end(), model) == available.end()) {
      name.fail("no block-timing files " + printable(model) + "-GPU-SHARE.csv in " +
                printable(dir.string(), 200));
    }
    for (const PpipeBlockProfile& p : load_ppipe_model(dir, model, mappings)) {
      table.set_curve(ppipe_model_curve(p));
    }
  }
  return table;
}

ProfileTable load_item(const SpecNode& item) {
  item.expect_map();
  if (item.has("file")) {
    item.allow_only({"file"});
    return load_profile_yaml_file(item.at("file").as_file_path());
  }
  if (!item.has("format")) item.fail("expected either 'file' or 'format' (loki | ppipe)");
  std::string format = item.at("format").as_choice({"loki", "ppipe"});
  return format == "loki" ? load_loki(item) : load_ppipe(item);
}

}  // namespace

ProfileTable load_profiles(const SpecNode& list) {
  ProfileTable table;
  for (const SpecNode& item : list.items()) table.merge(load_item(item));
  return table;
}

}  // namespace tessera
