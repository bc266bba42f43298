#include "supernet/accuracy_model.hpp"

#include <cmath>
#include <stdexcept>

#include "core/csv_table.hpp"

namespace tessera::supernet {

AccuracyModel::AccuracyModel(std::vector<AccuracyPoint> points) : points_(std::move(points)) {
  if (points_.empty()) throw std::invalid_argument("accuracy model: no points");
  for (std::size_t i = 0; i < points_.size(); ++i) {
    const AccuracyPoint& p = points_[i];
    if (!(p.macs_g > 0.0) || !(p.top1 > 0.0 && p.top1 <= 100.0)) {
      throw std::invalid_argument("accuracy model: point " + std::to_string(i) +
                                  " needs macs_g > 0 and 0 < top1 <= 100");
    }
    if (i > 0 && (p.macs_g <= points_[i - 1].macs_g || p.top1 < points_[i - 1].top1)) {
      throw std::invalid_argument("accuracy model: point " + std::to_string(i) +
                                  " must have more MACs and no less accuracy than the one before");
    }
  }
}

AccuracyModel AccuracyModel::load(const std::filesystem::path& csv) {
  const CsvTable table = CsvTable::read(csv, true);
  const std::size_t macs = table.column("macs_g");
  const std::size_t top1 = table.column("top1");
  const std::size_t subnet = table.column("subnet");
  const std::size_t source = table.column("source");
  std::vector<AccuracyPoint> points;
  for (const CsvTable::Row& row : table.rows()) {
    points.push_back({table.number(row, macs), table.number(row, top1), table.text(row, subnet),
                      table.text(row, source)});
  }
  try {
    return AccuracyModel(std::move(points));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(csv.string() + ": " + e.what());
  }
}

std::filesystem::path AccuracyModel::default_file() {
  const std::filesystem::path relative = "data/supernet/ofa_resnet50_accuracy.csv";
  if (std::filesystem::exists(relative)) return relative;
  return std::filesystem::path(TESSERA_SUPERNET_SOURCE_DIR) / relative;
}

double AccuracyModel::top1(double macs_g) const {
  if (macs_g <= points_.front().macs_g) return points_.front().top1;
  if (macs_g >= points_.back().macs_g) return points_.back().top1;
  std::size_t hi = 1;
  while (points_[hi].macs_g < macs_g) ++hi;
  const AccuracyPoint& a = points_[hi - 1];
  const AccuracyPoint& b = points_[hi];
  const double t = std::log(macs_g / a.macs_g) / std::log(b.macs_g / a.macs_g);
  return a.top1 + t * (b.top1 - a.top1);
}

}  // namespace tessera::supernet
