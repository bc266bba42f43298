#include "export/gpu_operator.hpp"

#include "export/yaml_text.hpp"

namespace tessera::exporter {

std::string device_plugin_mps_config(int replicas) {
  return yaml_text({{"version", "v1"},
                    {"flags", {{"migStrategy", "mixed"}}},
                    {"sharing",
                     {{"mps",
                       {{"resources", ojson::array({{{"name", "nvidia.com/gpu"},
                                                     {"replicas", replicas}}})}}}}}});
}

}  // namespace tessera::exporter
