#include "plan/jigsawserve/segments.hpp"

namespace tessera::plan {

std::string segment_name(const std::string& mig, int mps) {
  return mps == 1 ? mig : mig + "/mps" + std::to_string(mps);
}

void SegmentCatalogue::build_segments() {
  segments.clear();
  for (int i = 0; i < static_cast<int>(mig.size()); ++i) {
    for (int k = 1; k <= mps_max; ++k) {
      const auto& p = mig[static_cast<size_t>(i)];
      segments.push_back(SegmentType{i, k, segment_name(p.name, k), p.cost});
    }
  }
}

int SegmentCatalogue::find(const std::string& segment_name_) const {
  for (int i = 0; i < static_cast<int>(segments.size()); ++i) {
    if (segments[static_cast<size_t>(i)].name == segment_name_) return i;
  }
  return -1;
}

int SegmentCatalogue::whole_gpu_mig() const {
  int best = -1;
  for (int i = 0; i < static_cast<int>(mig.size()); ++i) {
    if (mig[static_cast<size_t>(i)].compute == gpu_compute) best = i;
  }
  return best;
}

int SegmentCatalogue::whole_gpu_segment() const {
  const int m = whole_gpu_mig();
  for (int i = 0; i < static_cast<int>(segments.size()); ++i) {
    const auto& s = segments[static_cast<size_t>(i)];
    if (s.mig == m && s.mps == 1) return i;
  }
  return -1;
}

bool packing_rows_apply(const SegmentCatalogue& catalogue) {
  if (catalogue.gpu_compute != 7 || catalogue.gpu_memory != 8) return false;
  for (const auto& p : catalogue.mig) {
    const bool whole = p.compute == 7 && p.cost == 7;
    if (!whole && p.cost != 1 && p.cost != 2 && p.cost != 4) return false;
  }
  return true;
}

SegmentCatalogue h100_catalogue(int mps_max) {
  SegmentCatalogue c;
  c.mig = {
      {"1g.10gb", 1, 1, {0, 1, 2, 3, 4, 5, 6}, 1},
      {"1g.20gb", 1, 2, {0, 2, 4, 6}, 2},
      {"2g.20gb", 2, 2, {0, 2, 4}, 2},
      {"3g.40gb", 3, 4, {0, 4}, 4},
      {"4g.40gb", 4, 4, {0}, 4},
      {"7g.80gb", 7, 8, {0}, 7},
  };
  c.mps_max = mps_max;
  c.build_segments();
  return c;
}

}  // namespace tessera::plan
