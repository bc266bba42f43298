#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "models/model.hpp"
#include "models/model_spec.hpp"

namespace tessera {

// The loaded models by variant name, shared by every worker (and endpoint) that runs them.
struct LoadedModel {
  ModelSpec spec;
  std::shared_ptr<Model> model;
};

class ModelRegistry {
 public:
  void add(ModelSpec spec, std::shared_ptr<Model> model) {
    const std::string name = spec.variant;
    models_[name] = LoadedModel{std::move(spec), std::move(model)};
  }
  bool has(const std::string& variant) const { return models_.count(variant) != 0; }
  const LoadedModel& at(const std::string& variant) const {
    auto it = models_.find(variant);
    if (it == models_.end())
      throw std::out_of_range("no model loaded for variant '" + variant + "'");
    return it->second;
  }
  const std::map<std::string, LoadedModel>& all() const { return models_; }

 private:
  std::map<std::string, LoadedModel> models_;
};

}  // namespace tessera
