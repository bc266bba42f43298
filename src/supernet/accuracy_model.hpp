#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace tessera::supernet {

// One published (MACs, ImageNet top-1) point (data/supernet/SOURCE.md).
struct AccuracyPoint {
  double macs_g = 0.0;  // giga multiply-accumulates per image
  double top1 = 0.0;    // percent
  std::string subnet;   // subnet name when the point is attributed to one, else empty
  std::string source;
};

// Top-1 accuracy of an OFA-ResNet50 subnet as a function of its MACs at 224x224: piecewise
// linear in log(MACs) between the published points, clamped to the first and last point
// outside them. The points must have strictly increasing MACs and non-decreasing accuracy, so
// the model is monotone (non-decreasing) in MACs.
class AccuracyModel {
 public:
  explicit AccuracyModel(std::vector<AccuracyPoint> points);
  // Reads the CSV (columns macs_g, top1, subnet, source); errors name the file and line.
  static AccuracyModel load(const std::filesystem::path& csv);
  // data/supernet/ofa_resnet50_accuracy.csv: under the working directory when it is there,
  // else in the source tree this was built from.
  static std::filesystem::path default_file();

  double top1(double macs_g) const;
  const std::vector<AccuracyPoint>& points() const { return points_; }

 private:
  std::vector<AccuracyPoint> points_;
};

}  // namespace tessera::supernet
