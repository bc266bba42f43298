#include "plan/milp/milp.hpp"

#include <coin/CbcEventHandler.hpp>
#include <coin/CbcModel.hpp>
#include <coin/CbcSimpleInteger.hpp>
#include <coin/CbcSolver.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/OsiClpSolverInterface.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>

namespace tessera::plan {

int MilpModel::add_var(std::string name, double lb, double ub, VarType type, double obj) {
  if (type == VarType::kBinary) {
    lb = std::max(lb, 0.0);
    ub = std::min(ub, 1.0);
  }
  if (lb > ub) throw std::invalid_argument("variable " + name + ": lower bound above upper bound");
  vars_.push_back(Var{std::move(name), lb, ub, obj, type});
  return num_vars() - 1;
}

int MilpModel::add_row(std::string name, std::vector<LinTerm> terms, double lb, double ub) {
  std::map<int, double> merged;
  for (const auto& t : terms) {
    if (t.var < 0 || t.var >= num_vars()) {
      throw std::out_of_range("row " + name + " names variable " + std::to_string(t.var));
    }
    merged[t.var] += t.coef;
  }
  std::vector<LinTerm> out;
  out.reserve(merged.size());
  for (const auto& [v, c] : merged) {
    if (c != 0.0) out.push_back(LinTerm{v, c});
  }
  rows_.push_back(Row{std::move(name), std::move(out), lb, ub});
  return num_rows() - 1;
}

void MilpModel::set_objective(int var, double coef) { vars_.at(var).obj = coef; }

void MilpModel::set_bounds(int var, double lb, double ub) {
  vars_.at(var).lb = lb;
  vars_.at(var).ub = ub;
}

int MilpModel::num_integer() const {
  int n = 0;
  for (const auto& v : vars_) n += v.type != VarType::kContinuous ? 1 : 0;
  return n;
}

const char* to_string(MilpStatus status) {
  switch (status) {
    case MilpStatus::kOptimal:
      return "optimal";
    case MilpStatus::kFeasible:
      return "feasible (solver limit)";
    case MilpStatus::kInfeasible:
      return "infeasible";
    case MilpStatus::kNoSolution:
      return "no solution (solver limit)";
  }
  return "?";
}

const char* to_string(MilpLimit limit) {
  switch (limit) {
    case MilpLimit::kNone:
      return "none";
    case MilpLimit::kNodes:
      return "node limit";
    case MilpLimit::kTime:
      return "time limit";
  }
  return "?";
}

namespace {

double clip(double x) {
  if (x >= MilpModel::kInf) return COIN_DBL_MAX;
  if (x <= -MilpModel::kInf) return -COIN_DBL_MAX;
  return x;
}

int quiet_callback(CbcModel* /*model*/, int /*where*/) { return 0; }

// Stops CBC's search at the first event past a wall-clock deadline and records that it did
// (CBC clones handlers into the models it derives: the clones share the flag).
class DeadlineHandler final : public CbcEventHandler {
 public:
  DeadlineHandler(std::chrono::steady_clock::time_point deadline, bool* hit)
      : deadline_(deadline), hit_(hit) {}
  CbcAction event(CbcEvent /*which*/) override {
    if (std::chrono::steady_clock::now() < deadline_) return noAction;
    *hit_ = true;
    return stop;
  }
  CbcEventHandler* clone() const override { return new DeadlineHandler(*this); }

 private:
  std::chrono::steady_clock::time_point deadline_;
  bool* hit_;
};

std::mutex& cbc_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

MilpResult solve_cbc(const MilpModel& model, const MilpOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const int n = model.num_vars();
  const int m = model.num_rows();

  CoinPackedMatrix matrix(false, 0, 0);  // row-ordered
  matrix.setDimensions(0, n);
  std::vector<double> row_lb(static_cast<size_t>(m)), row_ub(static_cast<size_t>(m));
  for (int r = 0; r < m; ++r) {
    const auto& row = model.rows()[static_cast<size_t>(r)];
    std::vector<int> idx;
    std::vector<double> val;
    for (const auto& t : row.terms) {
      idx.push_back(t.var);
      val.push_back(t.coef);
    }
    matrix.appendRow(static_cast<int>(idx.size()), idx.data(), val.data());
    row_lb[static_cast<size_t>(r)] = clip(row.lb);
    row_ub[static_cast<size_t>(r)] = clip(row.ub);
  }
  std::vector<double> col_lb(static_cast<size_t>(n)), col_ub(static_cast<size_t>(n)),
      obj(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) {
    const auto& v = model.vars()[static_cast<size_t>(j)];
    col_lb[static_cast<size_t>(j)] = clip(v.lb);
    col_ub[static_cast<size_t>(j)] = clip(v.ub);
    obj[static_cast<size_t>(j)] = v.obj;
  }

  std::lock_guard<std::mutex> lock(cbc_mutex());
  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  solver.loadProblem(matrix, col_lb.data(), col_ub.data(), obj.data(), row_lb.data(),
                     row_ub.data());
  for (int j = 0; j < n; ++j) {
    if (!options.relax && model.vars()[static_cast<size_t>(j)].type != VarType::kContinuous) {
      solver.setInteger(j);
    }
  }
  solver.setObjSense(model.maximize() ? -1.0 : 1.0);

  if (options.relax && options.duals) {
    // The LP alone, with its duals: Clp's dual simplex, no CBC driver.
    solver.initialSolve();
    MilpResult lp;
    if (solver.isProvenOptimal()) {
      lp.status = MilpStatus::kOptimal;
      lp.values.assign(solver.getColSolution(), solver.getColSolution() + n);
      lp.duals.assign(solver.getRowPrice(), solver.getRowPrice() + m);
      double value = 0.0;
      for (int j = 0; j < n; ++j)
        value += obj[static_cast<size_t>(j)] * lp.values[static_cast<size_t>(j)];
      lp.objective = value;
      lp.best_bound = value;
    } else {
      lp.status =
          solver.isProvenPrimalInfeasible() ? MilpStatus::kInfeasible : MilpStatus::kNoSolution;
    }
    lp.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return lp;
  }

  CbcModel cbc(solver);
  CbcSolverUsefulData data;
  data.noPrinting_ = !options.log;
  CbcMain0(cbc, data);
  cbc.setLogLevel(options.log ? 1 : 0);
  if (!options.relax && !options.priority.empty()) {
    cbc.findIntegers(false);
    for (int i = 0; i < cbc.numberObjects(); ++i) {
      auto* integer = dynamic_cast<CbcSimpleInteger*>(cbc.modifiableObject(i));
      if (integer == nullptr) continue;
      const auto col = static_cast<size_t>(integer->columnNumber());
      if (col < options.priority.size()) integer->setPriority(options.priority[col]);
    }
  }
  if (!options.relax && static_cast<int>(options.start.size()) == n) {
    double value = 0.0;
    for (int j = 0; j < n; ++j)
      value += obj[static_cast<size_t>(j)] * options.start[static_cast<size_t>(j)];
    // CBC minimizes internally: the objective in its sense.
    cbc.setBestSolution(options.start.data(), n, model.maximize() ? -value : value, true);
  }
  double limit_s = options.time_limit_s;
  bool deadline_hit = false;
  if (options.deadline) {
    const double left =
        std::chrono::duration<double>(*options.deadline - std::chrono::steady_clock::now()).count();
    // CBC needs a positive limit; a call made past the deadline stops at its first event.
    limit_s = std::clamp(left, 0.01, limit_s);
    DeadlineHandler handler(*options.deadline, &deadline_hit);
    cbc.passInEventHandler(&handler);  // CBC keeps a clone
  }
  const std::string seconds = std::to_string(limit_s);
  const std::string gap = std::to_string(options.relative_gap);
  const std::string allow = std::to_string(options.absolute_gap);
  const std::string log = options.log ? "1" : "0";
  // CPU time by default, not elapsed time: the backstop then does not depend on what else
  // the machine runs (a loaded machine cut solves short at the same elapsed limit).
  const std::string mode = options.cpu_time_limit ? "cpu" : "elapsed";
  std::vector<std::string> args = {"tessera", "-log",   log, "-timeMode", mode, "-sec",
                                   seconds,   "-ratio", gap, "-allow",    allow};
  if (options.node_limit > 0) {
    args.push_back("-maxNodes");
    args.push_back(std::to_string(options.node_limit));
  }
  if (!options.preprocess) {
    args.push_back("-preprocess");
    args.push_back("off");
  }
  args.insert(args.end(), options.cbc_args.begin(), options.cbc_args.end());
  if (const char* extra = std::getenv("TESSERA_CBC_ARGS")) {
    std::istringstream in(extra);
    for (std::string a; in >> a;) args.push_back(a);
  }
  args.push_back("-solve");
  args.push_back("-quit");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  CbcMain1(static_cast<int>(argv.size()), argv.data(), cbc, quiet_callback, data);

  MilpResult result;
  result.nodes = cbc.getNodeCount();
  if (cbc.isSecondsLimitReached() || deadline_hit) {
    result.limit = MilpLimit::kTime;
  } else if (cbc.isNodeLimitReached()) {
    result.limit = MilpLimit::kNodes;
  }
  const double* best = cbc.bestSolution();
  // Stopped on another limit with an incumbent (CBC's status 1): count it as the nodes'.
  if (best != nullptr && result.limit == MilpLimit::kNone && cbc.status() == 1) {
    result.limit = MilpLimit::kNodes;
  }
  if (best != nullptr) {
    result.values.assign(best, best + n);
    double value = 0.0;
    for (int j = 0; j < n; ++j) value += obj[static_cast<size_t>(j)] * best[j];
    result.objective = value;
    result.best_bound = cbc.getBestPossibleObjValue();  // already in the model's sense
    result.status = result.limit != MilpLimit::kNone ? MilpStatus::kFeasible : MilpStatus::kOptimal;
  } else {
    result.status =
        result.limit != MilpLimit::kNone ? MilpStatus::kNoSolution : MilpStatus::kInfeasible;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace tessera::plan
