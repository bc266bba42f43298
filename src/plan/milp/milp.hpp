#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace tessera::plan {

// A thin model-building layer over COIN-OR CBC: variables and linear rows with names, so
// that the formulation reads like the equations and errors can name what binds. Nothing
// here knows about serving; it is a plain MILP.

enum class VarType { kContinuous, kInteger, kBinary };

struct LinTerm {
  int var = 0;
  double coef = 0.0;
};

class MilpModel {
 public:
  static constexpr double kInf = 1e30;

  // Adds a variable with bounds [lb, ub] and objective coefficient `obj`; returns its index.
  int add_var(std::string name, double lb, double ub, VarType type, double obj = 0.0);
  // Adds lb <= sum(terms) <= ub (use ±kInf for one-sided rows); returns the row index.
  // Terms naming the same variable twice are summed.
  int add_row(std::string name, std::vector<LinTerm> terms, double lb, double ub);
  void set_objective(int var, double coef);
  void set_maximize(bool maximize) { maximize_ = maximize; }
  void set_bounds(int var, double lb, double ub);

  int num_vars() const { return static_cast<int>(vars_.size()); }
  int num_rows() const { return static_cast<int>(rows_.size()); }
  int num_integer() const;
  const std::string& var_name(int var) const { return vars_.at(var).name; }
  const std::string& row_name(int row) const { return rows_.at(row).name; }
  bool maximize() const { return maximize_; }

  struct Var {
    std::string name;
    double lb, ub, obj;
    VarType type;
  };
  struct Row {
    std::string name;
    std::vector<LinTerm> terms;
    double lb, ub;
  };
  const std::vector<Var>& vars() const { return vars_; }
  const std::vector<Row>& rows() const { return rows_; }

 private:
  std::vector<Var> vars_;
  std::vector<Row> rows_;
  bool maximize_ = false;
};

enum class MilpStatus {
  kOptimal,     // proven optimal (within the gap)
  kFeasible,    // a limit (nodes or time) stopped the search with an incumbent
  kInfeasible,  // proven infeasible
  kNoSolution,  // a limit stopped the search without any incumbent
};
const char* to_string(MilpStatus status);

// What stopped a search before it finished: nothing, the node limit (deterministic: the
// same model stops at the same node on any machine) or the time limit (time_limit_s in CPU or
// wall-clock seconds, or the deadline: depends on the machine and its load).
enum class MilpLimit { kNone, kNodes, kTime };
const char* to_string(MilpLimit limit);

struct MilpOptions {
  double time_limit_s = 60.0;
  // true (the default): count time_limit_s in this process's CPU seconds (CBC's -timeMode
  // cpu), so a loaded machine stops the search at about the same node; false: wall-clock
  // seconds (CBC's -timeMode elapsed), so the call returns in time on a loaded machine.
  bool cpu_time_limit = true;
  // An outer wall-clock deadline (steady clock) for the call, on top of time_limit_s: CBC's
  // limit is cut to what is left of it, and an event handler stops the search at the first
  // node or solution event past it (CBC's own limit is not checked everywhere). A call
  // stopped by it returns its incumbent with limit kTime. None: time_limit_s alone.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // Branch-and-bound nodes before CBC stops (CBC's -maxNodes); 0: no node limit.
  long node_limit = 0;
  double relative_gap = 1e-6;
  double absolute_gap = 1e-7;  // stop when incumbent and bound differ by less
  bool log = false;            // CBC's own log on stdout
  bool preprocess = true;      // CBC's integer preprocessing (CglPreProcess)
  bool relax = false;          // solve the LP relaxation: every variable continuous
  // With relax: solve the LP with Clp alone (no CBC driver) and return the row duals too.
  bool duals = false;
  // More CBC command-line options, passed before -solve (e.g. {"-cutsOnOff", "off"}).
  std::vector<std::string> cbc_args;
  // Branching priority per variable (CBC's: lower branches first; empty: CBC's default
  // 1000 for all). Only the integer variables' entries matter.
  std::vector<int> priority;
  // A feasible solution to start from (one value per variable; empty: none): CBC's
  // incumbent before the search, so the gap is measured against it from the first node.
  // A start that violates a row or bound is ignored by CBC.
  std::vector<double> start;
};

struct MilpResult {
  MilpStatus status = MilpStatus::kNoSolution;
  double objective = 0.0;   // of the incumbent, in the model's sense (max or min)
  double best_bound = 0.0;  // CBC's bound on the optimum
  std::vector<double> values;
  std::vector<double> duals;  // row duals (model's sense), only with relax and duals
  double seconds = 0.0;
  int nodes = 0;
  MilpLimit limit = MilpLimit::kNone;  // what stopped the search, when not finished

  bool has_solution() const {
    return status == MilpStatus::kOptimal || status == MilpStatus::kFeasible;
  }
  double value(int var) const { return values.at(var); }
};

// Solves with CBC (presolve, cuts and heuristics as `cbc -solve` does). Not thread-safe:
// CBC's driver keeps static state, so solve one model at a time.
MilpResult solve_cbc(const MilpModel& model, const MilpOptions& options = {});

}  // namespace tessera::plan
