#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/spec_node.hpp"
#include "models/remote_spec.hpp"

namespace tessera {

// How the live server turns a model's output into a fan-out count (docs/serve.md): each
// output element is passed through the logistic function and the elements above
// `threshold` are counted, at most `max` ("how many classes pass a threshold": a
// detector's objects per frame).
struct FanoutRule {
  double threshold = 0.5;
  int max = 8;
};

// Counts an output under `rule`.
int apply_fanout_rule(const FanoutRule& rule, std::span<const float> output);

// A device and where it was asked for, so that an error using it names the file and the
// field (`models.yaml`, `models[2].device`) or the flag (file "", field "--device").
struct DeviceSetting {
  DeviceSpec device;
  std::string file;
  std::string field;
};

// Which model serves one variant, and with what shapes.
struct ModelSpec {
  // kProfileTimed: no real model; an emulation whose batches take exactly their profiled
  // latency on the worker's segment (docs/serve.md#profile-timed-emulation).
  // kRemote: batches run on remote inference servers (exec/remote_spec.hpp); the server
  // module builds its client (server/remote_model.hpp), load_model() does not.
  enum class Source { kZoo, kTorchScript, kProfileTimed, kRemote };
  std::string variant;
  Source source = Source::kZoo;
  std::string arch;                  // zoo architecture (kZoo)
  std::filesystem::path file;        // TorchScript file (kTorchScript)
  std::vector<int64_t> input_shape;  // per item, no batch dimension
  // What a stage running this model takes as its input in an application
  // (docs/serve.md#stage-inputs): the request's own input (kRequest), or the output of the
  // stage before it for the same request (kParent: a partition after a cut). A root stage,
  // and the model's own single-model endpoint, always take the request's input.
  enum class StageInput { kRequest, kParent };
  StageInput stage_input = StageInput::kRequest;
  // `sleep` only: its per-item output shape (empty: its input shape). The output holds the
  // input's first values, zero-padded: a stand-in for a model whose output differs in size.
  std::vector<int64_t> output_shape;
  int64_t classes = 1000;            // zoo models' output size
  uint64_t seed = 1;                 // zoo models' random weights
  std::optional<FanoutRule> fanout;  // absent: the engine draws from the app's distribution
  double latency_ms = 0.0;           // `sleep` model: time per batch
  double per_item_ms = 0.0;          // `sleep` model: extra time per item
  // Where it runs (docs/serve.md#serving-on-gpus). Unset in a parsed file when the entry
  // has no `device`; ModelsConfig::spec_for fills in the default. Unset: the CPU.
  std::optional<DeviceSetting> device;
  RemoteSpec remote;  // kRemote
};

// The `--models` file of `tessera serve` and `tessera profile` (docs/serve.md#models).
struct ModelsConfig {
  std::vector<int64_t> default_input{3, 64, 64};
  int torch_threads = 1;  // intra-op threads per worker
  std::vector<ModelSpec> models;
  // The device of models without their own `device`: the file's top-level `device`, which
  // `--device` replaces (set_default_device); the CPU when neither is given.
  DeviceSetting device;

  // Makes `device` the default, as `tessera serve|profile --device TEXT` does; throws
  // std::invalid_argument ("--device: ...") on a malformed device.
  void set_default_device(const std::string& text);

  // The spec for a variant: the listed one, or a zoo model of that architecture name
  // with the default input; its `device` is always set. Throws std::invalid_argument if
  // neither exists.
  ModelSpec spec_for(const std::string& variant) const;
};

ModelsConfig parse_models_config(const SpecNode& node);
ModelsConfig load_models_config(const std::filesystem::path& file);

// The ModelInfo::kind of a profile-timed emulation.
inline constexpr const char* kProfileTimedKind = "profile-timed";

// Zoo architectures (model_zoo.cpp): resnet18 ... resnet152, wide_resnet50_2,
// resnext50_32x4d, mobilenet_v2, small_cnn; and two that return their input: noop, and
// sleep (waits latency_ms + per_item_ms x batch per batch: a device of known speed); and
// faulty (the fault tests' model: returns its input, throws on a batch holding an item
// whose first value is negative, and waits latency_ms on one whose first value is >= 1000).
const std::vector<std::string>& zoo_architectures();
bool is_zoo_architecture(const std::string& name);

}  // namespace tessera
