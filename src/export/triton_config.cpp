#include "export/triton_config.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

namespace tessera::exporter {
namespace {

// A protobuf text-format string literal.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string dims(const std::vector<int64_t>& shape) {
  std::string out = "[ ";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + " ]";
}

void parameter(std::string& out, const std::string& key, const std::string& value) {
  out += "parameters {\n  key: " + quoted(key) + "\n  value: { string_value: " + quoted(value) +
         " }\n}\n";
}

}  // namespace

bool triton_emulated(const ModelEntry& model) {
  return model.source != ModelEntry::Source::kTorchScript;
}

std::string triton_config_pbtxt(const PlanDir& plan, const std::string& variant,
                                const std::vector<TritonDevice>& devices,
                                const std::string& header) {
  const ModelEntry& model = plan.model(variant);
  const bool emulated = triton_emulated(model);
  int max_batch = 1;
  double delay_ms = 0.0;
  std::set<int> preferred;
  for (const TritonDevice& d : devices) {
    const InstanceKind& k = plan.kinds[static_cast<std::size_t>(d.kind)];
    max_batch = std::max(max_batch, k.max_batch);
    preferred.insert(k.max_batch);
    if (k.queue_delay_ms > 0 && (delay_ms == 0.0 || k.queue_delay_ms < delay_ms)) {
      delay_ms = k.queue_delay_ms;
    }
  }
  std::string out = "# " + header + "\n";
  out += "name: " + quoted(variant) + "\n";
  out += emulated ? "backend: \"python\"\n" : "platform: \"pytorch_libtorch\"\n";
  out += "max_batch_size: " + std::to_string(max_batch) + "\n";
  const std::vector<int64_t> output =
      emulated ? model.input : std::vector<int64_t>{-1};  // TorchScript: unknown here
  out += "input [\n  {\n    name: " + quoted(emulated ? "input" : "INPUT__0") +
         "\n    data_type: TYPE_FP32\n    dims: " + dims(model.input) + "\n  }\n]\n";
  out += "output [\n  {\n    name: " + quoted(emulated ? "output" : "OUTPUT__0") +
         "\n    data_type: TYPE_FP32\n    dims: " + dims(output) + "\n  }\n]\n";
  out += "dynamic_batching {\n";
  for (int b : preferred) out += "  preferred_batch_size: " + std::to_string(b) + "\n";
  out += "  max_queue_delay_microseconds: " +
         std::to_string(static_cast<int64_t>(delay_ms * 1000.0 + 0.5)) + "\n}\n";
  out += "instance_group [\n";
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const InstanceKind& k = plan.kinds[static_cast<std::size_t>(devices[i].kind)];
    out += fmt::format(
        "  {{\n    name: {}\n    kind: KIND_GPU\n    count: {}\n    gpus: [ {} ]\n  }}{}\n",
        quoted(fmt::format("{}_device{}", variant, devices[i].device)),
        devices[i].instances > 0 ? devices[i].instances : k.mps, devices[i].device,
        i + 1 < devices.size() ? "," : "");
  }
  out += "]\n";
  if (emulated) {
    nlohmann::json curves = nlohmann::json::object();
    for (const TritonDevice& d : devices) {
      curves[std::to_string(d.device)] = plan.kinds[static_cast<std::size_t>(d.kind)].latency_ms;
    }
    parameter(out, "tessera_emulated", "true");
    parameter(out, "tessera_latency_ms", curves.dump());
  }
  return out;
}

std::string triton_emulation_model_py(const std::string& variant) {
  return fmt::format(
      R"(# Written by `tessera export`: a profile-timed EMULATION of variant {}, not the
# real model. Each batch returns its input after the plan's profiled latency for its size
# on this instance's device (docs/export.md#triton).
import json
import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        curves = json.loads(config["parameters"]["tessera_latency_ms"]["string_value"])
        device = str(args.get("model_instance_device_id", "0"))
        self.curve = curves[device] if device in curves else next(iter(curves.values()))

    def latency_s(self, batch):
        n = len(self.curve)
        if batch <= n:
            return self.curve[max(batch, 1) - 1] / 1000.0
        return self.curve[-1] * batch / n / 1000.0

    def execute(self, requests):
        inputs = [pb_utils.get_input_tensor_by_name(r, "input").as_numpy() for r in requests]
        time.sleep(self.latency_s(sum(int(t.shape[0]) for t in inputs)))
        return [
            pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("output", t)])
            for t in inputs
        ]
)",
      variant);
}

}  // namespace tessera::exporter
