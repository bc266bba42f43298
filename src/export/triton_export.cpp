#include "export/triton_export.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>

#include "export/triton_config.hpp"
#include "export/yaml_text.hpp"

namespace tessera::exporter {
std::vector<std::string> write_triton_repository(const PlanDir& plan,
                                                 const std::filesystem::path& out) {
  std::filesystem::create_directories(out);
  // Device d is the plan's d-th slice (GPU-major, by start slice): the order the Triton
  // process must see them in (CUDA_VISIBLE_DEVICES).
  nlohmann::json devices = nlohmann::json::array();
  std::vector<std::string> variants;
  for (std::size_t d = 0; d < plan.placements.size(); ++d) {
    const SlicePlacement& p = plan.placements[d];
    const InstanceKind& k = plan.kinds[static_cast<std::size_t>(p.kind)];
    devices.push_back({{"device", d},
                       {"gpu", p.gpu},
                       {"mig", plan.whole_gpu(p.gpu) ? "none (whole GPU)" : p.mig},
                       {"start_slice", p.start},
                       {"task", k.task},
                       {"variant", k.variant},
                       {"mps", k.mps}});
    bool seen = false;
    for (const auto& v : variants) seen = seen || v == k.variant;
    if (!seen) variants.push_back(k.variant);
  }
  const std::string header = "Written by `tessera export --to triton` from " + plan.dir.string() +
                             " (docs/export.md#triton)";
  for (const std::string& variant : variants) {
    std::vector<TritonDevice> mine;
    for (std::size_t d = 0; d < plan.placements.size(); ++d) {
      const SlicePlacement& p = plan.placements[d];
      if (plan.kinds[static_cast<std::size_t>(p.kind)].variant == variant) {
        mine.push_back(TritonDevice{static_cast<int>(d), p.kind});
      }
    }
    const std::filesystem::path dir = out / variant;
    std::filesystem::create_directories(dir / "1");
    write_text(dir / "config.pbtxt", triton_config_pbtxt(plan, variant, mine, header));
    const ModelEntry& model = plan.model(variant);
    if (triton_emulated(model)) {
      write_text(dir / "1" / "model.py", triton_emulation_model_py(variant));
    } else {
      std::filesystem::copy_file(model.torchscript, dir / "1" / "model.pt",
                                 std::filesystem::copy_options::overwrite_existing);
    }
  }
  write_text(out / "devices.json", devices.dump(2) + "\n");
  return variants;
}

}  // namespace tessera::exporter
