#include "profile/ppipe_import.hpp"

#include <algorithm>
#include <charconv>
#include <set>
#include <stdexcept>

#include "core/csv_table.hpp"
#include "core/error.hpp"
#include "core/input_limits.hpp"

namespace tessera {
namespace {

bool is_gpu_name(const std::string& s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
}

// "GPU-N.csv" -> (GPU, N); false if `rest` has another form.
bool parse_gpu_share(const std::string& rest, std::string& gpu, int& share) {
  const std::string ext = ".csv";
  if (rest.size() <= ext.size() || rest.compare(rest.size() - ext.size(), ext.size(), ext) != 0) {
    return false;
  }
  std::string stem = rest.substr(0, rest.size() - ext.size());
  std::size_t dash = stem.rfind('-');
  if (dash == std::string::npos) return false;
  gpu = stem.substr(0, dash);
  std::string n = stem.substr(dash + 1);
  auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), share);
  return is_gpu_name(gpu) && !n.empty() && ec == std::errc() && end == n.data() + n.size() &&
         share >= 1;
}

std::filesystem::path find_trans_size(const std::filesystem::path& mappings_dir,
                                      const std::string& model) {
  std::filesystem::path dir = mappings_dir / model;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return {};
  std::vector<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("contraction_trans-size_", 0) == 0 && entry.path().extension() == ".csv") {
      found.push_back(entry.path());
    }
  }
  if (found.size() > 1) {
    throw SpecError(dir.string(), "", "more than one contraction_trans-size_*.csv file");
  }
  return found.empty() ? std::filesystem::path() : found.front();
}

std::vector<int64_t> load_trans_size(const std::filesystem::path& csv, int num_blocks) {
  CsvTable f = CsvTable::read(csv, false);
  if (f.num_columns() != 1) {
    throw SpecError(f.file(), "", "expected one number per line (bytes at a block boundary)");
  }
  std::vector<int64_t> bytes;
  for (const CsvTable::Row& row : f.rows()) {
    int64_t b = f.integer(row, 0);
    if (b < 0) f.fail(row, 0, "bytes must not be negative");
    bytes.push_back(b);
  }
  if (static_cast<int>(bytes.size()) != num_blocks - 1) {
    throw SpecError(f.file(), "",
                    "has " + std::to_string(bytes.size()) + " block boundaries but the model has " +
                        std::to_string(num_blocks) + " blocks");
  }
  return bytes;
}

}  // namespace

std::vector<std::string> list_ppipe_models(const std::filesystem::path& block_timing_dir) {
  std::set<std::string> models;
  std::error_code ec;
  if (!std::filesystem::is_directory(block_timing_dir, ec)) return {};
  for (const auto& entry : std::filesystem::directory_iterator(block_timing_dir)) {
    std::string name = entry.path().filename().string();
    std::size_t share_dash = name.rfind('-');
    if (share_dash == std::string::npos || share_dash == 0) continue;
    std::size_t gpu_dash = name.rfind('-', share_dash - 1);
    if (gpu_dash == std::string::npos || gpu_dash == 0) continue;
    std::string gpu;
    int share = 0;
    if (parse_gpu_share(name.substr(gpu_dash + 1), gpu, share)) {
      models.insert(name.substr(0, gpu_dash));
    }
  }
  return {models.begin(), models.end()};
}

int PpipeBlockProfile::max_batch() const {
  return block_latency_us.empty() ? 0 : static_cast<int>(block_latency_us.front().size());
}

std::string PpipeBlockProfile::segment() const { return ppipe_segment_name(gpu, mps_share); }

double PpipeBlockProfile::range_latency_us(int first, int last, int batch) const {
  if (first < 0 || last < first || last >= num_blocks()) {
    throw std::out_of_range("block range [" + std::to_string(first) + ", " + std::to_string(last) +
                            "] is outside the " + std::to_string(num_blocks()) + " blocks of " +
                            model);
  }
  if (batch < 1 || batch > max_batch()) {
    throw std::out_of_range("batch size " + std::to_string(batch) + " is not profiled for " +
                            model + " on " + segment() + " (1.." + std::to_string(max_batch()) +
                            ")");
  }
  double sum = 0.0;
  for (int b = first; b <= last; ++b) sum += block_latency_us[b][batch - 1];
  return sum;
}

std::string ppipe_segment_name(const std::string& gpu, int mps_share) {
  return mps_share == 1 ? gpu : gpu + "/mps" + std::to_string(mps_share);
}

std::string ppipe_range_variant(const std::string& model, int first, int last) {
  return model + "[" + std::to_string(first) + ":" + std::to_string(last) + "]";
}

PpipeBlockProfile load_ppipe_block_profile(const std::filesystem::path& timing_csv,
                                           const std::string& model, const std::string& gpu,
                                           int mps_share,
                                           const std::filesystem::path& trans_size_csv) {
  if (mps_share < 1) throw std::invalid_argument("MPS share must be >= 1");
  CsvTable f = CsvTable::read(timing_csv, false);
  PpipeBlockProfile p;
  p.model = model;
  p.gpu = gpu;
  p.mps_share = mps_share;
  p.source = f.file();
  for (const CsvTable::Row& row : f.rows()) {
    std::vector<double> per_batch;
    for (std::size_t c = 0; c < row.cells.size(); ++c) {
      double us = f.number(row, c);
      if (!(us > 0.0) || us > limits::kMaxMs * 1e3) {
        f.fail(row, c, "latency must be in (0, 8.64e10] us");
      }
      per_batch.push_back(us);
    }
    p.block_latency_us.push_back(std::move(per_batch));
  }
  if (!trans_size_csv.empty()) p.transfer_bytes = load_trans_size(trans_size_csv, p.num_blocks());
  return p;
}

std::vector<PpipeBlockProfile> load_ppipe_model(const std::filesystem::path& block_timing_dir,
                                                const std::string& model,
                                                const std::filesystem::path& mappings_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(block_timing_dir, ec)) {
    throw SpecError(block_timing_dir.string(), "", "not a directory");
  }
  struct Found {
    std::string gpu;
    int share;
    std::filesystem::path path;
  };
  std::vector<Found> found;
  const std::string prefix = model + "-";
  for (const auto& entry : std::filesystem::directory_iterator(block_timing_dir)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    Found f{"", 0, entry.path()};
    if (parse_gpu_share(name.substr(prefix.size()), f.gpu, f.share)) found.push_back(f);
  }
  if (found.empty()) {
    throw SpecError(block_timing_dir.string(), "",
                    "no block-timing files " + model + "-GPU-SHARE.csv for model '" + model + "'");
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return a.gpu != b.gpu ? a.gpu < b.gpu : a.share < b.share;
  });
  std::filesystem::path mappings = mappings_dir.empty()
                                       ? block_timing_dir / ".." / ".." / "prepartition_mappings"
                                       : mappings_dir;
  std::filesystem::path trans = find_trans_size(mappings, model);
  std::vector<PpipeBlockProfile> out;
  for (const Found& f : found) {
    out.push_back(load_ppipe_block_profile(f.path, model, f.gpu, f.share, trans));
  }
  return out;
}

ProfileCurve ppipe_range_curve(const PpipeBlockProfile& p, int first, int last) {
  ProfileCurve c;
  c.variant = ppipe_range_variant(p.model, first, last);
  c.segment = p.segment();
  c.origin = ProfileOrigin::kMeasured;
  c.source = p.source;
  for (int batch = 1; batch <= p.max_batch(); ++batch) {
    c.points.push_back(ProfilePoint{batch, p.range_latency_us(first, last, batch) / 1000.0});
  }
  return c;
}

ProfileCurve ppipe_model_curve(const PpipeBlockProfile& p) {
  ProfileCurve c = ppipe_range_curve(p, 0, p.num_blocks() - 1);
  c.variant = p.model;
  return c;
}

ProfileTable import_ppipe_model(const std::filesystem::path& block_timing_dir,
                                const std::string& model) {
  ProfileTable table;
  for (const PpipeBlockProfile& p : load_ppipe_model(block_timing_dir, model)) {
    table.set_curve(ppipe_model_curve(p));
  }
  return table;
}

}  // namespace tessera
