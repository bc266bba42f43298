#include "export/ppipe_export.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "dataplane/ppipe/plan_json.hpp"
#include "export/gpu_operator.hpp"
#include "export/kubernetes_export.hpp"
#include "export/plan_dir.hpp"
#include "export/ppipe_frontend.hpp"
#include "export/yaml_text.hpp"

namespace tessera::exporter {
bool is_ppipe_plan_dir(const std::filesystem::path& dir) {
  std::ifstream in(dir / "plan.json");
  if (!in) return false;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("dnns");
}

std::vector<std::filesystem::path> write_ppipe_manifests(const std::filesystem::path& dir,
                                                         const std::filesystem::path& out,
                                                         const PpipeExportOptions& o) {
  const ppipe::PpipePlan plan = ppipe::read_plan_file(dir / "plan.json");
  std::filesystem::create_directories(out);
  const std::string part_of = "tessera-ppipe";
  auto metadata = [&](const std::string& name, const std::string& component) {
    ojson m = {{"name", name}};
    if (!o.namespace_name.empty()) m["namespace"] = o.namespace_name;
    m["labels"] = {{"app.kubernetes.io/name", name},
                   {"app.kubernetes.io/part-of", part_of},
                   {"app.kubernetes.io/component", component},
                   {"app.kubernetes.io/managed-by", "tessera-export"}};
    return m;
  };
  auto mps_config = [](int mps) { return "tessera-ppipe-mps" + std::to_string(mps); };
  std::vector<ojson> docs;
  std::set<int> mps_levels;
  // Per pipeline its front end: the run spec's files in a ConfigMap, a Deployment of one
  // `tessera serve` pod on them and its Service (docs/deploy.md#ppipe-plans).
  std::vector<std::vector<ojson>> frontends;
  auto frontend_objects = [&](const ppipe::DnnPlan& dnn, std::size_t pipeline,
                              const std::string& name) {
    ojson data = ojson::object();
    for (const auto& [file, text] : ppipe_frontend_files(dnn, pipeline, o.frontend))
      data[file] = text;
    const std::string config = dns_label(name + "-config");
    ojson container = tessera_serve_container(o.tessera_image, "plan");
    container["readinessProbe"] = {{"httpGet", {{"path", "/v2/health/ready"}, {"port", 8000}}},
                                   {"periodSeconds", 5}};
    ojson meta = metadata(name, "frontend");
    meta["labels"]["tessera.io/dnn"] = dns_label(dnn.dnn);
    ojson pod = {
        {"containers", ojson::array({container})},
        {"volumes", ojson::array({{{"name", "plan"}, {"configMap", {{"name", config}}}}})}};
    return std::vector<ojson>{
        {{"apiVersion", "v1"},
         {"kind", "ConfigMap"},
         {"metadata", metadata(config, "frontend")},
         {"data", data}},
        {{"apiVersion", "apps/v1"},
         {"kind", "Deployment"},
         {"metadata", meta},
         {"spec",
          {{"replicas", 1},
           {"selector", {{"matchLabels", {{"app.kubernetes.io/name", name}}}}},
           {"template", {{"metadata", {{"labels", meta["labels"]}}}, {"spec", pod}}}}}},
        {{"apiVersion", "v1"},
         {"kind", "Service"},
         {"metadata", metadata(name, "frontend")},
         {"spec",
          {{"selector", {{"app.kubernetes.io/name", name}}},
           {"ports",
            ojson::array(
                {{{"name", "http"}, {"port", 8000}, {"targetPort", 8000}, {"protocol", "TCP"}}})},
           {"type", "ClusterIP"}}}}};
  };
  ojson graph = ojson::array();
  for (std::size_t d = 0; d < plan.dnns.size(); ++d) {
    const ppipe::DnnPlan& dnn = plan.dnns[d];
    ojson g = {{"dnn", dnn.dnn},
               {"slo_ms", dnn.slo_ms},
               {"weight", dnn.weight},
               {"pipelines", ojson::array()}};
    for (std::size_t pi = 0; pi < dnn.pipelines.size(); ++pi) {
      const ppipe::Pipeline& pipe = dnn.pipelines[pi];
      ojson gp = {{"batch", pipe.batch},
                  {"latency_ms", pipe.latency_ms},
                  {"throughput", pipe.throughput},
                  {"partitions", ojson::array()}};
      for (std::size_t k = 0; k < pipe.partitions.size(); ++k) {
        const ppipe::Partition& p = pipe.partitions[k];
        const std::string name = ppipe_pool_name(dnn, pi, k, p);
        const std::string model = ppipe_partition_model(dnn, p);
        const std::string setup =
            "exec tritonserver --model-repository=/models --model-control-mode=explicit "
            "--load-model='" +
            model + "'";
        ojson container = {
            {"name", "triton"},
            {"image", o.triton_image},
            {"command", {"/bin/sh", "-c", setup}},
            {"ports", ojson::array({{{"name", "http"}, {"containerPort", 8000}},
                                    {{"name", "grpc"}, {"containerPort", 8001}},
                                    {{"name", "metrics"}, {"containerPort", 8002}}})},
            {"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}},
            {"readinessProbe",
             {{"httpGet", {{"path", "/v2/models/" + model + "/ready"}, {"port", 8000}}},
              {"periodSeconds", 5}}},
            {"volumeMounts",
             ojson::array({{{"name", "models"}, {"mountPath", "/models"}, {"readOnly", true}}})}};
        ojson selector = {{"tessera.io/gpu-class", p.gpu_class}};
        if (p.mps > 1) {
          selector["nvidia.com/device-plugin.config"] = mps_config(p.mps);
          mps_levels.insert(p.mps);
        }
        ojson pod = {
            {"nodeSelector", selector},
            {"containers", ojson::array({container})},
            {"volumes",
             ojson::array({{{"name", "models"},
                            {"persistentVolumeClaim", {{"claimName", "tessera-ppipe-models"}}}}})}};
        ojson meta = metadata(name, "partition-pool");
        meta["labels"]["tessera.io/dnn"] = dns_label(dnn.dnn);
        meta["labels"]["tessera.io/gpu-class"] = dns_label(p.gpu_class);
        meta["labels"]["tessera.io/mps"] = std::to_string(p.mps);
        ojson labels = meta["labels"];
        docs.push_back({{"apiVersion", "apps/v1"},
                        {"kind", "Deployment"},
                        {"metadata", meta},
                        {"spec",
                         {{"replicas", p.vgpus},
                          {"selector", {{"matchLabels", {{"app.kubernetes.io/name", name}}}}},
                          {"template", {{"metadata", {{"labels", labels}}}, {"spec", pod}}}}}});
        ojson ports = ojson::array();
        for (const auto& [port_name, number] :
             {std::pair{"http", 8000}, std::pair{"grpc", 8001}, std::pair{"metrics", 8002}}) {
          ports.push_back(
              {{"name", port_name}, {"port", number}, {"targetPort", number}, {"protocol", "TCP"}});
        }
        docs.push_back({{"apiVersion", "v1"},
                        {"kind", "Service"},
                        {"metadata", metadata(name, "partition-pool")},
                        {"spec",
                         {{"selector", {{"app.kubernetes.io/name", name}}},
                          {"ports", ports},
                          {"type", "ClusterIP"}}}});
        gp["partitions"].push_back({{"first_block", p.first_block},
                                    {"end_block", p.end_block},
                                    {"model", model},
                                    {"service", name},
                                    {"grpc", name + ":8001"},
                                    {"gpu_class", p.gpu_class},
                                    {"mps", p.mps},
                                    {"vgpus", p.vgpus},
                                    {"infer_ms", p.infer_ms},
                                    {"transfer_in_ms", p.transfer_in_ms},
                                    {"in_bytes_per_sample", p.in_bytes_per_sample}});
      }
      gp["frontend"] =
          dns_label("tessera-ppipe-" + dnn.dnn + "-p" + std::to_string(pi) + "-frontend");
      gp["endpoint"] = ppipe_app_name(dnn, pi);
      frontends.push_back(frontend_objects(dnn, pi, gp["frontend"].get<std::string>()));
      g["pipelines"].push_back(gp);
    }
    graph.push_back(g);
  }
  std::ifstream plan_in(dir / "plan.json");
  std::ostringstream plan_text;
  plan_text << plan_in.rdbuf();
  ojson cm = {{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata", metadata("tessera-ppipe-graph", "plan")},
              {"data",
               {{"partition-graph.json", ojson{{"dnns", graph}}.dump(2) + "\n"},
                {"plan.json", plan_text.str()}}}};
  docs.insert(docs.begin(), cm);
  for (auto& objects : frontends)
    for (auto& object : objects) docs.push_back(std::move(object));
  const std::string header = "Written by `tessera export --to kubernetes` from the PPipe plan " +
                             dir.string() + " (docs/deploy.md#ppipe-plans)";
  std::vector<std::filesystem::path> files;
  write_text(out / "ppipe.yaml", yaml_documents(docs, header));
  files.push_back(out / "ppipe.yaml");
  if (!mps_levels.empty()) {
    ojson data = ojson::object();
    for (int level : mps_levels) data[mps_config(level)] = device_plugin_mps_config(level);
    ojson dp = {{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata", metadata("tessera-ppipe-device-plugin", "mps-sharing")},
                {"data", data}};
    dp["metadata"]["namespace"] = "gpu-operator";
    write_text(out / "device-plugin.yaml", yaml_documents({dp}, header));
    files.push_back(out / "device-plugin.yaml");
  }
  return files;
}

}  // namespace tessera::exporter
