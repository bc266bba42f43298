#include "export/llm_gateway_export.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <map>

#include "core/error.hpp"
#include "export/kubernetes_export.hpp"
#include "export/plan_dir.hpp"
#include "export/yaml_text.hpp"

namespace tessera::exporter {
namespace {

// A deployment's `llm:` section as `tessera llm instances` wrote it (model, kv_cache, gpu,
// parallel), checked to be maps.
YAML::Node load_section(const LlmDeployment& d) {
  const std::string file = d.section_file.string();
  if (d.section_file.empty()) {
    throw SpecError(d.deployments_file.string(), "[" + std::to_string(d.index) + "].file",
                    "missing: the deployment's llm: section (tessera llm instances writes "
                    "model-<i>.yaml) is what the gateway's backends are described by");
  }
  YAML::Node section;
  try {
    section = YAML::LoadFile(file);
  } catch (const YAML::Exception& e) {
    throw SpecError(file, "", std::string("not readable YAML: ") + e.what());
  }
  if (!section.IsMap()) throw SpecError(file, "", "expected an llm: section (a map)");
  for (const char* key : {"model", "gpu", "parallel"}) {
    if (!section[key] || !section[key].IsMap()) throw SpecError(file, key, "missing (a map)");
  }
  return section;
}

// The gateway's `weights:` (a dtype) for iServe's weights: 4-bit AWQ and GPTQ checkpoints
// are int4; a pruned checkpoint is FP16.
std::string gateway_weights(const LlmDeployment& d) {
  if (d.weights == "int8") return "int8";
  if (d.weights == "int4" || d.weights == "gptq4") return "int4";
  return "fp16";
}

YAML::Node flow(YAML::Node node) {
  node.SetStyle(YAML::EmitterStyle::Flow);
  return node;
}

std::string emit(const YAML::Node& node, const std::string& comment) {
  YAML::Emitter out;
  out << node;
  return comment + std::string(out.c_str()) + "\n";
}

struct GatewayFiles {
  std::string run, app, deployment, profiles;
};

// The run spec of the gateway in front of `group` (one model's deployments).
GatewayFiles gateway_files(const std::vector<const LlmDeployment*>& group,
                           const LlmExportOptions& o) {
  const LlmDeployment& first = *group.front();
  const std::string model = first.model;
  GatewayFiles f;
  YAML::Node app;
  app["name"] = model;
  app["slo_ms"] = 60000;
  YAML::Node variant;
  variant["name"] = model;
  YAML::Node task;
  task["name"] = "llm";
  task["variants"].push_back(flow(variant));
  app["tasks"].push_back(task);
  f.app =
      emit(app,
           "# The gateway's app: one LLM task. slo_ms is the end-to-end deadline that\n"
           "# judges a request ok or late; add ttft_slo_ms / tpot_slo_ms for per-token SLOs.\n");

  const YAML::Node base = load_section(first);
  const std::string segment = base["gpu"]["name"] ? base["gpu"]["name"].as<std::string>() : "gpu";
  YAML::Node worker;
  worker["task"] = "llm";
  worker["variant"] = model;
  worker["segment"] = segment;
  worker["count"] = static_cast<int>(group.size());
  YAML::Node deployment;
  deployment["workers"].push_back(flow(worker));
  f.deployment = emit(deployment,
                      "# The vLLM Deployments behind the gateway (the gateway does not use it).\n");
  YAML::Node profile;
  profile["variant"] = model;
  profile["segment"] = segment;
  profile["latency_ms"][1] = first.tpot_ms > 0.0 ? first.tpot_ms : 1.0;
  flow(profile["latency_ms"]);
  YAML::Node profiles;
  profiles["profiles"].push_back(flow(profile));
  f.profiles = emit(profiles, "# iServe's modelled time per output token of " + model + ".\n");

  YAML::Node llm;
  YAML::Node shape = YAML::Clone(base["model"]);
  shape["name"] = model;  // the name clients send, and `vllm serve --served-model-name`
  llm["model"] = flow(shape);
  if (base["kv_cache"]) llm["kv_cache"] = flow(YAML::Clone(base["kv_cache"]));
  llm["gpu"] = flow(YAML::Clone(base["gpu"]));
  llm["parallel"] = flow(YAML::Clone(base["parallel"]));
  for (const LlmDeployment* d : group) {
    const YAML::Node own = d == &first ? base : load_section(*d);
    YAML::Node b;
    std::string host = vllm_service_name(*d);
    if (!o.namespace_name.empty()) host += "." + o.namespace_name + ".svc";
    b["url"] = "http://" + host + ":8000";
    b["model"] = d->model;
    b["gpu"] = flow(YAML::Clone(own["gpu"]));
    YAML::Node parallel = YAML::Clone(own["parallel"]);
    parallel["tp"] = d->tp;  // the Deployment's --tensor-parallel-size
    parallel["pp"] = d->pp;  // and --pipeline-parallel-size
    b["parallel"] = flow(parallel);
    b["weights"] = gateway_weights(*d);
    llm["backends"].push_back(b);
  }
  YAML::Node run;
  run["app"] = "app.yaml";
  run["deployment"] = "deployment.yaml";
  YAML::Node profiles_ref;
  profiles_ref["file"] = "profiles.yaml";
  run["profiles"].push_back(flow(profiles_ref));
  YAML::Node source;
  source["kind"] = "poisson";
  source["rate_rps"] = 1;
  source["duration_s"] = 1;
  run["workload"]["source"] = flow(source);
  run["llm"] = llm;
  f.run = emit(run, fmt::format("# Written by `tessera export --to vllm`: tessera's LLM gateway "
                                "(docs/llm-gateway.md) in front of\n# the {} vLLM Service(s) of "
                                "{}. Serve it with `tessera serve run.yaml`; the workload\n# is "
                                "not read by the gateway.\n",
                                group.size(), model));
  return f;
}

}  // namespace

std::string llm_gateway_name(const std::string& model) {
  return dns_label("tessera-llm-" + model + "-gateway");
}

std::vector<std::filesystem::path> write_llm_gateways(const std::filesystem::path& plan_dir,
                                                      const std::filesystem::path& out,
                                                      const LlmExportOptions& o) {
  const std::vector<LlmDeployment> all = load_llm_deployments(plan_dir, o);
  std::vector<std::string> order;  // models, in deployments.json's order
  std::map<std::string, std::vector<const LlmDeployment*>> by_model;
  for (const LlmDeployment& d : all) {
    if (by_model[d.model].empty()) order.push_back(d.model);
    by_model[d.model].push_back(&d);
  }
  std::vector<std::filesystem::path> files;
  std::vector<ojson> docs;
  for (const std::string& model : order) {
    const GatewayFiles g = gateway_files(by_model[model], o);
    const std::filesystem::path dir = out / "gateway" / dns_label(model);
    std::filesystem::create_directories(dir);
    const std::vector<std::pair<std::string, const std::string*>> named = {
        {"run.yaml", &g.run},
        {"app.yaml", &g.app},
        {"deployment.yaml", &g.deployment},
        {"profiles.yaml", &g.profiles}};
    ojson data = ojson::object();
    for (const auto& [file, text] : named) {
      write_text(dir / file, *text);
      data[file] = *text;
    }
    files.push_back(dir / "run.yaml");
    const std::string name = llm_gateway_name(model);
    docs.push_back({{"apiVersion", "v1"},
                    {"kind", "ConfigMap"},
                    {"metadata", llm_metadata(name, model, "gateway", o)},
                    {"data", data}});
    ojson container = tessera_serve_container(o.tessera_image, "run");
    // 503 while no backend is in service: out of the Service, not restarted.
    container["readinessProbe"] = {{"httpGet", {{"path", "/health"}, {"port", 8000}}},
                                   {"periodSeconds", 5}};
    ojson pod = {{"containers", ojson::array({container})},
                 {"volumes", ojson::array({{{"name", "run"}, {"configMap", {{"name", name}}}}})}};
    const ojson meta = llm_metadata(name, model, "gateway", o);
    docs.push_back(llm_deployment(meta, meta["labels"], pod));
    docs.push_back(llm_service(name, model, "gateway", o));
  }
  if (docs.empty()) return files;
  const auto file = out / "gateway.yaml";
  write_text(file, yaml_documents(docs,
                                  "Written by `tessera export --to vllm`: tessera's LLM "
                                  "gateway per model in front of vllm.yaml's Services "
                                  "(docs/deploy.md#iserve-deployments-on-vllm)"));
  files.insert(files.begin(), file);
  return files;
}

}  // namespace tessera::exporter
