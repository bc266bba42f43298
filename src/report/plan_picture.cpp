#include "report/plan_picture.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace tessera::report {
namespace {

constexpr int kLabelW = 56, kRowH = 74, kGap = 12, kTop = 34;

// Memory slices of a MIG profile: plan.json's "memory", else from a name like "3g.40gb"
// (10 GB per slice, as on an 80 GB H100/A100).
int memory_of(const nlohmann::json& inst) {
  if (inst.contains("memory")) return inst["memory"].get<int>();
  int g = 0, gb = 0;
  const std::string name = inst.value("mig", std::string());
  if (std::sscanf(name.c_str(), "%dg.%dgb", &g, &gb) == 2 && gb >= 10) return gb / 10;
  return 1;
}

}  // namespace

std::string render_plan_svg(const nlohmann::json& plan, Palette& palette, int width) {
  const nlohmann::json layout = plan.value("layout", nlohmann::json::array());
  const int slices = plan.value("gpu_memory_slices", 8);
  const int gpus = static_cast<int>(layout.size());
  const double slice_w = static_cast<double>(width - kLabelW - 10) / slices;
  // Tasks in the plan's order, for the legend.
  std::vector<std::string> tasks;
  for (const auto& t : plan.value("tasks", nlohmann::json::array()))
    tasks.push_back(t.value("task", std::string()));
  std::vector<std::string> key;
  std::string body;
  for (int g = 0; g < gpus; ++g) {
    const int y = kTop + g * (kRowH + kGap);
    body += fmt::format(
        "<text x='4' y='{}' font-size='12' font-weight='bold'>GPU {}</text>\n"
        "<rect x='{}' y='{}' width='{:.1f}' height='{}' fill='#f4f4f4' stroke='#bbb'/>\n",
        y + kRowH / 2 + 4, g, kLabelW, y, slice_w * slices, kRowH);
    for (int s = 1; s < slices; ++s) {
      body += fmt::format("<line x1='{0:.1f}' x2='{0:.1f}' y1='{1}' y2='{2}' stroke='#ddd'/>\n",
                          kLabelW + s * slice_w, y, y + kRowH);
    }
    for (const auto& inst : layout[static_cast<std::size_t>(g)]) {
      const std::string task = inst.value("task", std::string());
      if (std::find(tasks.begin(), tasks.end(), task) == tasks.end()) tasks.push_back(task);
      const std::string color = palette.color_for(task);
      const int mps = std::max(1, inst.value("mps", 1));
      const double x = kLabelW + inst.value("start", 0) * slice_w + 1.5;
      const double w = memory_of(inst) * slice_w - 3;
      // The box, then its MPS shares as a row of cells under the labels.
      body += fmt::format(
          "<rect x='{:.1f}' y='{}' width='{:.1f}' height='{}' fill='{}' fill-opacity='0.28' "
          "stroke='{}' stroke-width='1.5'/>\n",
          x, y + 2, w, kRowH - 4, color, color);
      const double cell_w = (w - 8 - 3.0 * (mps - 1)) / mps;
      for (int k = 0; k < mps; ++k) {
        body += fmt::format(
            "<rect x='{:.1f}' y='{}' width='{:.1f}' height='14' fill='{}' fill-opacity='0.75'/>\n",
            x + 4 + k * (cell_w + 3), y + 38, cell_w, color);
      }
      std::string variant = inst.value("variant", std::string());
      const double room = w - 8;
      const double variant_size = text_width(variant, 11) <= room ? 11 : 9.5;
      if (text_width(variant, variant_size) > room) {
        const std::string mark = fmt::format("[{}]", key.size() + 1);
        const std::string entry = mark + " " + variant;
        auto it = std::find_if(key.begin(), key.end(), [&](const std::string& k) {
          return k.substr(k.find(' ') + 1) == variant;
        });
        variant = it == key.end() ? mark : it->substr(0, it->find(' '));
        if (it == key.end()) key.push_back(entry);
      }
      std::string detail = fmt::format("b{}", inst.value("max_batch", 0));
      if (mps > 1) detail += fmt::format(" ×{} MPS", mps);
      if (text_width(detail, 10) > room) detail = fmt::format("b{}", inst.value("max_batch", 0));
      std::string mig = inst.value("mig", std::string());
      if (text_width(mig, 9) > room) mig.clear();
      body += fmt::format(
          "<text x='{0:.1f}' y='{1}' font-size='{7}' font-weight='bold'>{2}</text>"
          "<text x='{0:.1f}' y='{3}' font-size='10'>{4}</text>"
          "<text x='{0:.1f}' y='{5}' font-size='9' fill='#444'>{6}</text>\n",
          x + 4, y + 17, xml_escape(variant), y + 31, xml_escape(detail), y + kRowH - 9,
          xml_escape(mig), variant_size);
    }
  }
  std::string legend;
  double lx = kLabelW;
  for (const auto& t : tasks) {
    legend += fmt::format(
        "<rect x='{:.1f}' y='8' width='14' height='14' fill='{}' fill-opacity='0.75' "
        "stroke='{}'/><text x='{:.1f}' y='20' font-size='12'>{}</text>\n",
        lx, palette.color_for(t), palette.color_for(t), lx + 18, xml_escape(t));
    lx += 18 + text_width(t, 12) + 22;
  }
  const int rows_h = kTop + gpus * (kRowH + kGap);
  const int height = rows_h + 14 + 15 * static_cast<int>(key.size()) + 6;
  std::string svg = fmt::format(
      "<svg xmlns='http://www.w3.org/2000/svg' width='{0}' height='{1}' viewBox='0 0 {0} {1}' "
      "font-family='sans-serif'>\n<rect width='100%' height='100%' fill='white'/>\n",
      width, height);
  svg += legend + body;
  svg += fmt::format(
      "<text x='{}' y='{}' font-size='11' fill='#333'>boxes: MIG instances across the GPU's {} "
      "memory slices; filled cells: its MPS processes; bN: max batch size</text>\n",
      kLabelW, rows_h + 4, slices);
  for (std::size_t k = 0; k < key.size(); ++k) {
    svg += fmt::format("<text x='{}' y='{}' font-size='11' fill='#333'>{}</text>\n", kLabelW,
                       rows_h + 19 + 15 * static_cast<int>(k), xml_escape(key[k]));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace tessera::report
