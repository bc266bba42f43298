#include "export/kubernetes_export.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "export/gpu_operator.hpp"
#include "export/triton_config.hpp"
#include "export/yaml_text.hpp"

namespace tessera::exporter {
namespace {

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Names {
  std::string app;      // dns label of the app
  std::string part_of;  // tessera-<app>
};

ojson metadata(const std::string& name, const Names& n, const std::string& component,
               const KubernetesOptions& o) {
  ojson m = {{"name", name}};
  if (!o.namespace_name.empty()) m["namespace"] = o.namespace_name;
  m["labels"] = {{"app.kubernetes.io/name", name},
                 {"app.kubernetes.io/part-of", n.part_of},
                 {"app.kubernetes.io/component", component},
                 {"app.kubernetes.io/managed-by", "tessera-export"}};
  return m;
}

ojson probe(const std::string& path, int port) {
  return {{"httpGet", {{"path", path}, {"port", port}}}, {"periodSeconds", 5}};
}

ojson deployment(const std::string& name, const Names& n, const std::string& component,
                 int replicas, ojson pod_spec, const KubernetesOptions& o) {
  ojson meta = metadata(name, n, component, o);
  ojson labels = meta["labels"];
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", meta},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", {{"app.kubernetes.io/name", name}}}}},
            {"template", {{"metadata", {{"labels", labels}}}, {"spec", std::move(pod_spec)}}}}}};
}

ojson service(const std::string& name, const Names& n, const std::string& component, ojson ports,
              const KubernetesOptions& o) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", metadata(name, n, component, o)},
          {"spec",
           {{"selector", {{"app.kubernetes.io/name", name}}},
            {"ports", std::move(ports)},
            {"type", "ClusterIP"}}}};
}

ojson port(const std::string& name, int number) {
  return {{"name", name}, {"port", number}, {"targetPort", number}, {"protocol", "TCP"}};
}

// run.yaml for the front end's ConfigMap: the app and models beside it; a workload file
// (the server does not read it) replaced by a one-second Poisson stream.
std::string frontend_run_yaml(const PlanDir& plan) {
  YAML::Node run = YAML::LoadFile((plan.dir / "run.yaml").string());
  if (run["app"].IsScalar()) run["app"] = "app.yaml";
  run["models"] = "models.yaml";
  if (run["workload"].IsScalar()) {
    YAML::Node w;
    w["source"]["kind"] = "poisson";
    w["source"]["rate_rps"] = 1;
    w["duration_s"] = 1;
    run["workload"] = w;
  }
  YAML::Emitter out;
  out << run;
  return "# The plan's run spec, as `tessera export` mounts it for the front end.\n" +
         std::string(out.c_str()) + "\n";
}

std::string kind_name(const Names& n, const InstanceKind& k) {
  std::string name = "tessera-" + n.app + "-" + k.variant + "-" + k.mig;
  if (k.mps > 1) name += "-mps" + std::to_string(k.mps);
  name += "-b" + std::to_string(k.max_batch);
  return dns_label(name);
}

// The backend model's input: INPUT__0 for a TorchScript model on Triton's PyTorch backend,
// `input` for the Python-backend emulation.
std::string triton_input_name(const ModelEntry& m) {
  return triton_emulated(m) ? "input" : "INPUT__0";
}

// The front end's models.yaml: every variant runs on its Triton Services over KServe v2 gRPC
// (`remote:`), one endpoint per instance kind of the variant (each Service spreads calls
// over its pods); the plan's per-variant `fanout` rule is kept. The front end's deployment
// (batch sizes, queue delays, instances) and policies stay the plan's.
std::string routing_models_yaml(const PlanDir& plan, const Names& n) {
  const YAML::Node models = YAML::LoadFile(plan.run.models_file.string());
  YAML::Node out_models(YAML::NodeType::Sequence);
  for (const YAML::Node& m : models["models"]) {
    const std::string variant = m["variant"].as<std::string>();
    const ModelEntry& model = plan.model(variant);
    YAML::Node entry;
    entry["variant"] = variant;
    for (int64_t d : model.input) entry["input"].push_back(d);
    entry["input"].SetStyle(YAML::EmitterStyle::Flow);
    if (m["fanout"]) entry["fanout"] = m["fanout"];
    YAML::Node remote;
    for (const InstanceKind& k : plan.kinds) {
      if (k.variant == variant) remote["endpoints"].push_back(kind_name(n, k) + ":8001");
    }
    remote["protocol"] = "grpc";
    remote["model"] = variant;
    remote["input_name"] = triton_input_name(model);  // the model's one output is taken
    if (triton_emulated(model)) {                     // the emulation returns its input
      for (int64_t d : model.input) remote["output"].push_back(d);
      remote["output"].SetStyle(YAML::EmitterStyle::Flow);
    }
    entry["remote"] = remote;
    out_models.push_back(entry);
  }
  YAML::Node root;
  root["models"] = out_models;
  YAML::Emitter out;
  out << root;
  return "# Written by `tessera export --to kubernetes`: every variant runs on its Triton\n"
         "# Services (KServe v2 gRPC); tessera batches, drops and routes in front.\n" +
         std::string(out.c_str()) + "\n";
}

// The device plugin configuration that shares each whole GPU among `mps` MPS clients.
std::string mps_config_name(const Names& n, int mps) {
  return dns_label(n.part_of + "-mps" + std::to_string(mps));
}

std::string mig_parted_config(const PlanDir& plan, const std::string& config_name) {
  ojson devices = ojson::array();
  for (int g = 0; g < plan.gpus; ++g) {
    ojson d = {{"devices", ojson::array({g})}};
    if (plan.whole_gpu(g)) {
      d["mig-enabled"] = false;
    } else {
      d["mig-enabled"] = true;
      std::map<std::string, int> counts;
      for (const SlicePlacement& p : plan.placements) {
        if (p.gpu == g) ++counts[p.mig];
      }
      ojson mig = ojson::object();
      for (const auto& [profile, count] : counts) mig[profile] = count;
      d["mig-devices"] = mig;
    }
    devices.push_back(d);
  }
  return yaml_text(ojson{{"version", "v1"}, {"mig-configs", {{config_name, devices}}}});
}

}  // namespace

ojson tessera_serve_container(const std::string& image, const std::string& volume) {
  return {{"name", "tessera"},
          {"image", image},
          {"command",
           {"tessera", "serve", "/etc/tessera/run.yaml", "--host", "0.0.0.0", "--port", "8000"}},
          {"ports", ojson::array({{{"name", "http"}, {"containerPort", 8000}}})},
          {"volumeMounts", ojson::array({{{"name", volume}, {"mountPath", "/etc/tessera"}}})}};
}

std::string backend_service_name(const PlanDir& plan, const InstanceKind& kind) {
  Names n;
  n.app = dns_label(plan.run.app.name);
  n.part_of = "tessera-" + n.app;
  return kind_name(n, kind);
}

std::vector<std::filesystem::path> write_kubernetes_manifests(const PlanDir& plan,
                                                              const std::filesystem::path& out,
                                                              const KubernetesOptions& o) {
  std::filesystem::create_directories(out);
  Names n;
  n.app = dns_label(plan.run.app.name);
  n.part_of = "tessera-" + n.app;
  const std::string mig_config = n.part_of;
  const std::string header = "Written by `tessera export --to kubernetes` from " +
                             plan.dir.string() + " (docs/export.md#kubernetes)";
  std::vector<std::filesystem::path> files;

  // The front end.
  {
    const std::string name = dns_label(n.part_of + "-frontend");
    ojson data = {{"run.yaml", frontend_run_yaml(plan)},
                  {"deployment.yaml", read_text(plan.dir / "deployment.yaml")},
                  {"profiles.yaml", read_text(plan.dir / "profiles.yaml")},
                  {"models.yaml", routing_models_yaml(plan, n)}};
    if (!plan.app_file.empty()) data["app.yaml"] = read_text(plan.app_file);
    const std::string config = dns_label(n.part_of + "-plan");
    ojson config_map = {{"apiVersion", "v1"},
                        {"kind", "ConfigMap"},
                        {"metadata", metadata(config, n, "plan", o)},
                        {"data", data}};
    ojson container = tessera_serve_container(o.tessera_image, "plan");
    container["readinessProbe"] = probe("/v2/health/ready", 8000);
    container["livenessProbe"] = probe("/v2/health/live", 8000);
    ojson volumes = ojson::array({{{"name", "plan"}, {"configMap", {{"name", config}}}}});
    ojson pod = {{"containers", ojson::array({container})}, {"volumes", volumes}};
    ojson ports = ojson::array({port("http", 8000), port("metrics", 8000)});
    ports[1]["port"] = 9000;  // the same /metrics, under the name the ServiceMonitor scrapes
    const auto file = out / "frontend.yaml";
    write_text(file, yaml_documents({config_map, deployment(name, n, "frontend", 1, pod, o),
                                     service(name, n, "frontend", ports, o)},
                                    header));
    files.push_back(file);
  }

  // One Deployment of Triton pods per instance kind.
  std::set<int> mps_levels;  // of whole GPUs shared by MPS pods
  {
    std::vector<ojson> docs;
    for (std::size_t i = 0; i < plan.kinds.size(); ++i) {
      const InstanceKind& k = plan.kinds[i];
      const ModelEntry& model = plan.model(k.variant);
      const std::string name = kind_name(n, k);
      // A whole GPU shared by MPS: one pod (one Triton process) per MPS share, each asking
      // the device plugin's MPS sharing for one replica of nvidia.com/gpu. A MIG slice
      // cannot be shared that way (the device plugin's MPS sharing serves nvidia.com/gpu
      // only): its MPS level becomes Triton instances in the slice's one pod.
      const bool mps_pods = k.whole_gpu && k.mps > 1;
      const std::string pbtxt = triton_config_pbtxt(
          plan, k.variant, {TritonDevice{0, static_cast<int>(i), mps_pods ? 1 : 0}},
          "Written by `tessera export --to kubernetes`: " + k.variant + " on one " +
              (mps_pods      ? "MPS share of a GPU"
               : k.whole_gpu ? "GPU"
                             : k.mig + " MIG slice"));
      ojson data = {{"config.pbtxt", pbtxt}};
      const bool emulated = triton_emulated(model);
      if (emulated) data["model.py"] = triton_emulation_model_py(k.variant);
      ojson config_map = {{"apiVersion", "v1"},
                          {"kind", "ConfigMap"},
                          {"metadata", metadata(name + "-model", n, "model", o)},
                          {"data", data}};
      config_map["metadata"]["name"] = dns_label(name + "-model");
      const std::string repo = "/models/" + k.variant;
      std::string setup =
          "mkdir -p '" + repo + "/1' && cp /config/config.pbtxt '" + repo + "/' && ";
      setup += emulated ? "cp /config/model.py '" + repo + "/1/'"
                        : "cp '/torchscript/" + model.torchscript.filename().string() + "' '" +
                              repo + "/1/model.pt'";
      setup += " && exec tritonserver --model-repository=/models";
      const std::string resource = k.whole_gpu ? "nvidia.com/gpu" : "nvidia.com/mig-" + k.mig;
      ojson mounts = ojson::array({{{"name", "model-config"}, {"mountPath", "/config"}},
                                   {{"name", "repository"}, {"mountPath", "/models"}}});
      ojson volumes = ojson::array(
          {{{"name", "model-config"}, {"configMap", {{"name", config_map["metadata"]["name"]}}}},
           {{"name", "repository"}, {"emptyDir", ojson::object()}}});
      if (!emulated) {
        mounts.push_back(
            {{"name", "torchscript"}, {"mountPath", "/torchscript"}, {"readOnly", true}});
        volumes.push_back({{"name", "torchscript"},
                           {"persistentVolumeClaim", {{"claimName", n.part_of + "-torchscript"}}}});
      }
      ojson container = {{"name", "triton"},
                         {"image", o.triton_image},
                         {"command", {"/bin/sh", "-c", setup}},
                         {"ports", ojson::array({{{"name", "http"}, {"containerPort", 8000}},
                                                 {{"name", "grpc"}, {"containerPort", 8001}},
                                                 {{"name", "metrics"}, {"containerPort", 8002}}})},
                         {"resources", {{"limits", {{resource, 1}}}}},
                         {"readinessProbe", probe("/v2/health/ready", 8000)},
                         {"volumeMounts", mounts}};
      ojson selector = {{"nvidia.com/mig.config", mig_config}};
      if (mps_pods) selector["nvidia.com/device-plugin.config"] = mps_config_name(n, k.mps);
      ojson pod = {{"nodeSelector", selector},
                   {"containers", ojson::array({container})},
                   {"volumes", volumes}};
      ojson dep = deployment(name, n, "backend", mps_pods ? k.count * k.mps : k.count, pod, o);
      for (ojson* labels :
           {&dep["metadata"]["labels"], &dep["spec"]["template"]["metadata"]["labels"]}) {
        (*labels)["tessera.io/task"] = dns_label(k.task);
        (*labels)["tessera.io/variant"] = dns_label(k.variant);
        (*labels)["tessera.io/mig"] = k.whole_gpu ? "whole-gpu" : k.mig;
        (*labels)["tessera.io/emulated"] = emulated ? "true" : "false";
        (*labels)["tessera.io/mps"] = std::to_string(k.mps);
        (*labels)["tessera.io/mps-sharing"] =
            k.mps == 1 ? "none" : (mps_pods ? "device-plugin" : "triton-instances");
      }
      if (mps_pods) mps_levels.insert(k.mps);
      docs.push_back(config_map);
      docs.push_back(dep);
      docs.push_back(service(
          name, n, "backend",
          ojson::array({port("http", 8000), port("grpc", 8001), port("metrics", 8002)}), o));
    }
    const auto file = out / "backends.yaml";
    write_text(file, yaml_documents(docs, header));
    files.push_back(file);
  }

  // The MIG layout, for the GPU operator's MIG manager (label the nodes
  // nvidia.com/mig.config=<mig_config>).
  {
    ojson cm = {{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata", metadata(dns_label(n.part_of + "-mig-parted"), n, "mig-layout", o)},
                {"data", {{"config.yaml", mig_parted_config(plan, mig_config)}}}};
    cm["metadata"]["namespace"] = "gpu-operator";
    const auto file = out / "mig-parted.yaml";
    write_text(file, yaml_documents({cm}, header));
    files.push_back(file);
  }

  // MPS sharing of whole GPUs: the device plugin's configuration, one entry per MPS level
  // (label a node nvidia.com/device-plugin.config=<entry>).
  if (!mps_levels.empty()) {
    ojson data = ojson::object();
    for (int level : mps_levels) {
      data[mps_config_name(n, level)] = device_plugin_mps_config(level);
    }
    ojson cm = {
        {"apiVersion", "v1"},
        {"kind", "ConfigMap"},
        {"metadata", metadata(dns_label(n.part_of + "-device-plugin"), n, "mps-sharing", o)},
        {"data", data}};
    cm["metadata"]["namespace"] = "gpu-operator";
    const auto file = out / "device-plugin.yaml";
    write_text(file, yaml_documents({cm}, header));
    files.push_back(file);
  }

  // Prometheus: every Service of the plan by its `metrics` port.
  {
    ojson sm = {
        {"apiVersion", "monitoring.coreos.com/v1"},
        {"kind", "ServiceMonitor"},
        {"metadata", metadata(n.part_of, n, "monitoring", o)},
        {"spec",
         {{"selector", {{"matchLabels", {{"app.kubernetes.io/part-of", n.part_of}}}}},
          {"endpoints",
           ojson::array({{{"port", "metrics"}, {"path", "/metrics"}, {"interval", "15s"}}})}}}};
    const auto file = out / "servicemonitor.yaml";
    write_text(file, yaml_documents({sm}, header));
    files.push_back(file);
  }
  return files;
}

}  // namespace tessera::exporter
