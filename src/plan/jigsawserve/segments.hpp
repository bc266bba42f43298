#pragma once

#include <string>
#include <vector>

namespace tessera::plan {

// One MIG instance profile of a GPU (H100-80GB by default): how many compute slices it
// has, how many memory slices it spans, where it may start (in memory slices, as
// `nvidia-smi mig -lgipp` lists them) and what the planner charges for it.
struct MigProfile {
  std::string name;         // "1g.10gb"
  int compute = 1;          // compute slices (of gpu_compute)
  int memory = 1;           // memory slices it spans (of gpu_memory)
  std::vector<int> starts;  // allowed first memory slice
  int cost = 1;             // slices charged in the slice budget (placement-effective)
};

// A GPU segment (JigsawServe §3.1, after ParvaGPU): a MIG instance running `mps`
// identical MPS processes of one model.
struct SegmentType {
  int mig = 0;  // index into SegmentCatalogue::mig
  int mps = 1;
  std::string name;  // "1g.10gb" for mps 1, "1g.10gb/mps2" otherwise
  int cost = 1;      // = the MIG profile's cost
};

struct SegmentCatalogue {
  std::string gpu = "H100-80GB";
  int gpu_compute = 7;
  int gpu_memory = 8;
  std::vector<MigProfile> mig;
  int mps_max = 4;
  std::vector<SegmentType> segments;  // every (mig, mps) pair, mig-major

  // Rebuilds `segments` from `mig` and `mps_max`.
  void build_segments();
  int find(const std::string& segment_name) const;  // -1 if absent
  int whole_gpu_mig() const;                        // the profile with all compute slices
  int whole_gpu_segment() const;                    // that profile at mps 1
};

std::string segment_name(const std::string& mig, int mps);

// True when the catalogue has the shape the MILP's MIG-packability rows describe
// (docs/plan.md: 7 compute and 8 memory slices; costs 1, 2, 4, and 7 for the whole GPU).
bool packing_rows_apply(const SegmentCatalogue& catalogue);

// H100-80GB: 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb with NVIDIA's placement
// rules, MPS 1..4, and the costs JigsawServe's Fig. 5 implies (1g.20gb costs 2 and 3g.40gb
// costs 4: "just as expensive to use as a 2/7 or 4/7 MIG instance").
SegmentCatalogue h100_catalogue(int mps_max = 4);

}  // namespace tessera::plan
