#include "profile/loki_import.hpp"

#include <cmath>
#include <set>
#include <stdexcept>
#include <tuple>

#include "core/csv_table.hpp"
#include "core/error.hpp"
#include "core/input_limits.hpp"

namespace tessera {

ProfileTable import_loki_runtimes(const std::filesystem::path& csv,
                                  const std::map<std::string, std::string>& accel_to_segment,
                                  const std::string& column) {
  CsvTable f = CsvTable::read(csv, true);
  const std::size_t model_col = f.column("Model");
  const std::size_t accel_col = f.column("Accel");
  const std::size_t batch_col = f.column("batchsize");
  const std::size_t value_col = f.column(column);
  const std::string source = f.file() + " (" + column + ")";

  ProfileTable table;
  std::set<std::string> accels_found;
  std::map<std::tuple<std::string, std::string, int64_t>, int> first_line;
  for (const CsvTable::Row& row : f.rows()) {
    const std::string& model = f.text(row, model_col);
    const std::string& accel = f.text(row, accel_col);
    if (model.empty()) f.fail(row, model_col, "empty model name");
    accels_found.insert(accel);
    std::string segment = accel;
    if (!accel_to_segment.empty()) {
      auto it = accel_to_segment.find(accel);
      if (it == accel_to_segment.end()) continue;
      segment = it->second;
    }
    int64_t batch = f.integer(row, batch_col);
    if (batch < 1 || batch > 1'000'000) f.fail(row, batch_col, "batch size must be >= 1");
    double ms = f.number(row, value_col);
    if (!(ms > 0.0) || ms > limits::kMaxMs) {
      f.fail(row, value_col, "latency must be in (0, 86400000] ms");
    }
    auto [it, fresh] = first_line.emplace(std::make_tuple(model, accel, batch), row.line);
    if (!fresh) {
      f.fail(row, batch_col,
             "duplicate row for model '" + model + "' on '" + accel + "' at batch " +
                 std::to_string(batch) + " (first at line " + std::to_string(it->second) + ")");
    }
    table.add(model, segment, static_cast<int>(batch), ms, ProfileOrigin::kMeasured, source);
  }
  for (const auto& [accel, segment] : accel_to_segment) {
    if (accels_found.count(accel) == 0) {
      std::string list;
      for (const std::string& a : accels_found) list += (list.empty() ? "" : ", ") + a;
      throw SpecError(f.file(), "column 'Accel'",
                      "no rows for accelerator '" + accel + "' (found: " + list + ")");
    }
  }
  return table;
}

const LokiBranch& LokiBranching::at(const std::string& variant) const {
  auto it = variants.find(variant);
  if (it == variants.end()) {
    throw std::out_of_range("no branching factors for variant '" + variant + "'");
  }
  return it->second;
}

LokiBranching load_loki_branching(const std::filesystem::path& csv) {
  CsvTable f = CsvTable::read(csv, true);
  const std::size_t model_col = f.column("model");
  const std::size_t mult_col = f.column("mult_factor");
  LokiBranching out;
  std::vector<std::size_t> child_cols;
  for (std::size_t c = 0; c < f.header().size(); ++c) {
    const std::string& name = f.header()[c];
    if (c == model_col || c == mult_col || name.empty()) continue;  // empty = row index
    out.children.push_back(name);
    child_cols.push_back(c);
  }
  for (const CsvTable::Row& row : f.rows()) {
    const std::string& model = f.text(row, model_col);
    if (model.empty()) f.fail(row, model_col, "empty model name");
    LokiBranch branch;
    branch.mult_factor = f.number(row, mult_col);
    if (branch.mult_factor < 0.0) f.fail(row, mult_col, "must not be negative");
    for (std::size_t i = 0; i < child_cols.size(); ++i) {
      double share = f.number(row, child_cols[i]);
      if (share < 0.0 || share > 1.0) f.fail(row, child_cols[i], "share must be in [0, 1]");
      branch.share[out.children[i]] = share;
    }
    if (!out.variants.emplace(model, std::move(branch)).second) {
      f.fail(row, model_col, "model '" + printable(model) + "' is given twice");
    }
  }
  return out;
}

std::map<std::string, double> load_loki_accuracy(const std::filesystem::path& csv) {
  CsvTable f = CsvTable::read(csv, true);
  const std::size_t model_col = f.column("Model");
  const std::size_t acc_col = f.column("Normalized_Accuracy");
  std::map<std::string, double> out;
  std::map<std::string, int> first_line;
  for (const CsvTable::Row& row : f.rows()) {
    const std::string& model = f.text(row, model_col);
    if (model.empty()) f.fail(row, model_col, "empty model name");
    double acc = f.number(row, acc_col) / 100.0;
    if (acc < 0.0 || acc > 1.0 + 1e-9) f.fail(row, acc_col, "must be between 0 and 100");
    auto [it, fresh] = out.emplace(model, acc);
    if (fresh) {
      first_line[model] = row.line;
    } else if (std::abs(it->second - acc) > 1e-9) {
      f.fail(row, acc_col,
             "model '" + model + "' has a different accuracy at line " +
                 std::to_string(first_line[model]));
    }
  }
  return out;
}

}  // namespace tessera
