// The spec fuzzer (docs/reliability-specs.md#the-spec-fuzzer): every shipped example spec
// (examples/**/*.yaml that is a run, plan or re-plan spec) and the files it names, copied
// into a temporary folder, mutated one input at a time and loaded in-process the way
// `tessera validate` (or `plan` / `replan` before solving) loads them.
//
// Each input must end in bounded time and memory with either success or a SpecError that
// names a file; anything else (another exception, a crash, a hang, runaway memory) is a
// finding. Deterministic: input i is generated from TESSERA_FUZZ_SEED + i alone.
//
//   TESSERA_FUZZ_ITERATIONS  inputs to try (default 3000; 300 under AddressSanitizer)
//   TESSERA_FUZZ_SEED        first seed (default 1)
//   TESSERA_FUZZ_INPUT_S     CPU-time bound of one input in seconds (default 10; 60 under
//                            ASan); its wall-clock bound is ten times that (a blocked read
//                            uses no CPU), so a loaded machine does not fail the test
//   TESSERA_FUZZ_RSS_MIB     resident-memory bound in MiB (default 2048; 6144 under ASan)
//   TESSERA_FUZZ_VERBOSE     print every input's description

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "control/replan_spec.hpp"
#include "core/error.hpp"
#include "core/spec_node.hpp"
#include "plan/jigsawserve/plan_spec.hpp"
#include "spec/run_validation.hpp"
#include "workload/workload_spec.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

uint64_t env_number(const char* name, uint64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  return std::strtoull(text, nullptr, 10);
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_text(const fs::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << text;
}

uint64_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// ---------------------------------------------------------------------------------------
// Targets: the example specs and the files each names.

enum class Kind { kRun, kPlan, kReplan };

struct Target {
  fs::path spec;
  Kind kind;
  std::vector<fs::path> files;  // the spec first, then every YAML or CSV file it names
};

bool is_name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '/' || c == '-' || c == '+';
}

// Files a YAML text names: tokens ending in .yaml or .csv that exist next to it.
void collect_files(const fs::path& file, std::set<fs::path>& seen, std::vector<fs::path>& out) {
  if (!seen.insert(fs::weakly_canonical(file)).second) return;
  out.push_back(file);
  if (file.extension() != ".yaml") return;
  const std::string text = read_text(file);
  for (std::size_t i = 0; i < text.size();) {
    if (!is_name_char(text[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < text.size() && is_name_char(text[j])) ++j;
    const std::string token = text.substr(i, j - i);
    i = j;
    const fs::path ext = fs::path(token).extension();
    if (ext != ".yaml" && ext != ".csv") continue;
    const fs::path named = file.parent_path() / token;
    std::error_code ec;
    if (fs::is_regular_file(named, ec)) collect_files(named, seen, out);
  }
}

std::vector<Target> find_targets(const fs::path& root) {
  std::vector<Target> out;
  std::vector<fs::path> specs;
  for (const auto& entry : fs::recursive_directory_iterator(root / "examples")) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") {
      specs.push_back(entry.path());
    }
  }
  std::sort(specs.begin(), specs.end());
  for (const fs::path& spec : specs) {
    const SpecNode node = SpecNode::load_file(spec);
    if (!node.is_map()) continue;
    Target t{spec, Kind::kRun, {}};
    if (node.has("whole_gpu_segment")) {
      t.kind = Kind::kPlan;
    } else if (node.has("plan") && node.has("workload")) {
      t.kind = Kind::kReplan;
    } else if (!(node.has("deployment") && node.has("workload"))) {
      continue;  // a section file (app, deployment, profiles...): mutated through its run
    }
    std::set<fs::path> seen;
    collect_files(spec, seen, t.files);
    out.push_back(std::move(t));
  }
  return out;
}

// Loads a target the way its command does before any simulation or solve.
void load_target(const Target& t) {
  switch (t.kind) {
    case Kind::kRun:
      validate_run_file(t.spec);
      break;
    case Kind::kPlan:
      plan::load_plan_spec(t.spec);
      break;
    case Kind::kReplan: {
      const control::ReplanSpec spec = control::load_replan_spec(t.spec);
      build_workload(*spec.workload, spec.sim.seed);
      break;
    }
  }
}

// ---------------------------------------------------------------------------------------
// Mutations.

const std::vector<std::string>& hostile_scalars() {
  static const std::vector<std::string> values = {"-1",
                                                  "0",
                                                  "1",
                                                  "2",
                                                  "-0",
                                                  "0.0",
                                                  "1.5",
                                                  "1e3",
                                                  "65536",
                                                  "4097",
                                                  "1e7",
                                                  "1e8",
                                                  "100000001",
                                                  "2147483647",
                                                  "2147483648",
                                                  "-2147483649",
                                                  "4294967296",
                                                  "4294967297",
                                                  "9223372036854775807",
                                                  "9223372036854775808",
                                                  "-9223372036854775809",
                                                  "18446744073709551616",
                                                  "1e12",
                                                  "1e300",
                                                  "1e308",
                                                  "1e309",
                                                  "-1e308",
                                                  "1e-9",
                                                  "1e-300",
                                                  "4.9e-324",
                                                  "-1e-9",
                                                  "nan",
                                                  ".nan",
                                                  "NaN",
                                                  "inf",
                                                  ".inf",
                                                  "-.inf",
                                                  "Infinity",
                                                  "0x10",
                                                  "1_000",
                                                  "true",
                                                  "\"\"",
                                                  "''",
                                                  "~",
                                                  "null",
                                                  std::string(400, '9'),
                                                  "\"\\xff\"",
                                                  "\"\\0\"",
                                                  "\"a\\u0000b\"",
                                                  "yolov5s",
                                                  "gpu-ampere",
                                                  "clipper+:nope",
                                                  "slackfit:-5",
                                                  "jigsawserve:-100",
                                                  "infaas:nan",
                                                  "pard",
                                                  "jigsawserve",
                                                  "slackfit:1e9",
                                                  "*undefined",
                                                  "&anchor",
                                                  "!!binary AAAA",
                                                  "!custom x",
                                                  "? complex",
                                                  "|",
                                                  ">",
                                                  "- ",
                                                  "{",
                                                  "[",
                                                  "}",
                                                  "]",
                                                  ": ",
                                                  "#",
                                                  "%YAML 1.2",
                                                  "---",
                                                  "...",
                                                  "@",
                                                  "`"};
  return values;
}

const std::vector<std::string>& hostile_paths(const fs::path& root) {
  static const std::vector<std::string> values = {"/dev/zero",
                                                  "/dev/urandom",
                                                  "/dev/null",
                                                  "/dev/stdin",
                                                  "/proc/self/mem",
                                                  "/proc/self/status",
                                                  "/proc/self/fd/0",
                                                  "/proc/self/environ",
                                                  "/",
                                                  ".",
                                                  "..",
                                                  "\"\"",
                                                  (root / "hostile" / "fifo.yaml").string(),
                                                  (root / "hostile" / "zero.csv").string(),
                                                  (root / "hostile" / "folder.yaml").string(),
                                                  (root / "hostile" / "loop.yaml").string(),
                                                  (root / "hostile" / "missing.csv").string(),
                                                  std::string(300, 'a') + ".yaml",
                                                  std::string(5000, 'b') + ".csv",
                                                  "\"\\0.yaml\""};
  return values;
}

struct Token {
  std::size_t pos;
  std::size_t len;
};

std::vector<Token> tokens_of(const std::string& text, bool csv) {
  std::vector<Token> out;
  auto separator = [csv](char c) {
    if (csv) return c == ',' || c == '\n' || c == '\r';
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ':' || c == ',' || c == '[' ||
           c == ']' || c == '{' || c == '}' || c == '#' || c == '"' || c == '\'';
  };
  for (std::size_t i = 0; i < text.size();) {
    if (separator(text[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < text.size() && !separator(text[j])) ++j;
    out.push_back({i, j - i});
    i = j;
  }
  return out;
}

std::vector<std::size_t> line_starts(const std::string& text) {
  std::vector<std::size_t> out{0};
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' && i + 1 < text.size()) out.push_back(i + 1);
  }
  return out;
}

std::size_t line_end(const std::string& text, std::size_t start) {
  const std::size_t nl = text.find('\n', start);
  return nl == std::string::npos ? text.size() : nl + 1;
}

template <typename T>
const T& pick(const std::vector<T>& v, std::mt19937_64& rng) {
  return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)];
}

std::size_t below(std::size_t n, std::mt19937_64& rng) {
  return n == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
}

std::string nested(std::size_t depth, bool map) {
  std::string out;
  for (std::size_t i = 0; i < depth; ++i) out += map ? "{a: " : "[";
  out += "1";
  for (std::size_t i = 0; i < depth; ++i) out += map ? "}" : "]";
  return out;
}

// A "billion laughs" prefix: nine levels of ten aliases, 10^9 nodes when expanded.
std::string alias_bomb() {
  std::string out = "x0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  for (int i = 1; i < 9; ++i) {
    out += "x" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) out += (k ? ", *a" : "*a") + std::to_string(i - 1);
    out += "]\n";
  }
  return out;
}

// Applies one mutation to `text`; returns its name.
std::string mutate_once(std::string& text, bool csv, const fs::path& root, std::mt19937_64& rng) {
  const std::vector<Token> tokens = tokens_of(text, csv);
  const std::vector<std::size_t> lines = line_starts(text);
  auto replace_token = [&](const std::string& with) {
    if (tokens.empty()) {
      text += with;
      return;
    }
    const Token& t = pick(tokens, rng);
    text.replace(t.pos, t.len, with);
  };
  // Weighted choice: the slow mutations (huge text, deep nesting, alias bombs, each 0.1 s or
  // more to reject) are rare so that 10^4 inputs stay within about a minute.
  static const std::vector<int> yaml_weights = {30, 10, 10, 5, 8, 7, 2, 8, 2, 10, 1, 7};
  static const std::vector<int> csv_weights = {40, 15, 15, 5, 8, 10, 2};
  const auto& weights = csv ? csv_weights : yaml_weights;
  std::discrete_distribution<int> choose(weights.begin(), weights.end());
  static const int kind_of[] = {0, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
  switch (kind_of[choose(rng)]) {
    case 0:
      replace_token(pick(hostile_scalars(), rng));
      return "hostile scalar";
    case 3: {  // duplicate a line (a duplicate key or list item)
      const std::size_t s = pick(lines, rng);
      text.insert(s, text.substr(s, line_end(text, s) - s));
      return "duplicate line";
    }
    case 4: {
      const std::size_t s = pick(lines, rng);
      text.erase(s, line_end(text, s) - s);
      return "delete line";
    }
    case 5:
      text.resize(below(text.size() + 1, rng));
      return "truncate";
    case 6: {
      static const std::vector<std::string> bytes = {
          "\xff", "\xc3\x28", "\xed\xa0\x80", std::string(1, '\0'), "\r", "\t", "\x1b"};
      text.insert(below(text.size() + 1, rng), pick(bytes, rng));
      return "invalid bytes";
    }
    case 7: {  // move a line elsewhere (out-of-order rows, misplaced keys)
      const std::size_t s = pick(lines, rng);
      const std::string line = text.substr(s, line_end(text, s) - s);
      text.erase(s, line.size());
      const std::size_t at = text.empty() ? 0 : pick(line_starts(text), rng);
      text.insert(at, line);
      return "move line";
    }
    case 8:
      if (csv) {
        replace_token(below(2, rng) ? std::string(200'000, ',') : std::string(1'000'000, '7'));
        return "huge cell";
      }
      replace_token(std::string(1'000'000, 'x'));
      return "huge string";
    case 9: {
      static const std::vector<std::string> shapes = {"[1, 2]", "{a: 1}",          "[]",  "{}",
                                                      "[[]]",   "{kind: poisson}", "[{}]"};
      replace_token(pick(shapes, rng));
      return "wrong shape";
    }
    case 10:
      replace_token(nested(below(2, rng) ? 70 : 3000, below(2, rng) == 1));
      return "deep nesting";
    case 11: {  // a hostile file name where a file is named, else anywhere
      std::vector<Token> names;
      for (const Token& t : tokens) {
        const std::string s = text.substr(t.pos, t.len);
        if (s.size() > 5 && (s.ends_with(".yaml") || s.ends_with(".csv"))) names.push_back(t);
      }
      const std::string& with = pick(hostile_paths(root), rng);
      if (names.empty()) {
        replace_token(with);
      } else {
        const Token& t = pick(names, rng);
        text.replace(t.pos, t.len, with);
      }
      return "hostile path";
    }
    case 12:
      text = alias_bomb() + text;
      return "alias bomb";
    default: {  // re-indent a line
      const std::size_t s = pick(lines, rng);
      if (below(2, rng) && text.compare(s, 2, "  ") == 0) {
        text.erase(s, 2);
      } else {
        text.insert(s, "  ");
      }
      return "re-indent";
    }
  }
}

// ---------------------------------------------------------------------------------------
// The watchdog: aborts, naming the input, if one input runs too long or memory runs away.

class Watchdog {
 public:
  Watchdog(double input_limit_s, uint64_t rss_limit)
      : input_limit_s_(input_limit_s), rss_limit_(rss_limit), thread_([this] { run(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  // Called by the thread that runs the input: its CPU clock is the one watched.
  void start(const std::string& description) {
    std::lock_guard<std::mutex> lock(mutex_);
    description_ = description;
    started_ = std::chrono::steady_clock::now();
    pthread_getcpuclockid(pthread_self(), &cpu_clock_);
    cpu_started_ = cpu_seconds();
    busy_ = true;
  }
  void finish() {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_ = false;
  }
  uint64_t peak_rss() const { return peak_rss_.load(); }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      wake_.wait_for(lock, std::chrono::milliseconds(20));
      const uint64_t rss = rss_bytes();
      if (rss > peak_rss_.load()) peak_rss_ = rss;
      if (!busy_) continue;
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
      const double cpu = cpu_seconds() - cpu_started_;
      const bool too_long = cpu > input_limit_s_ || elapsed > 10 * input_limit_s_;
      if (too_long || rss > rss_limit_) {
        std::fprintf(stderr,
                     "spec fuzzer: %s on input: %s (after %.1f s, %.1f s of CPU, RSS %llu MiB)\n",
                     too_long ? "TIME LIMIT" : "MEMORY LIMIT", description_.c_str(), elapsed, cpu,
                     static_cast<unsigned long long>(rss >> 20));
        std::fflush(stderr);
        std::abort();
      }
    }
  }

  double cpu_seconds() const {
    timespec ts{};
    clock_gettime(cpu_clock_, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }

  double input_limit_s_;
  clockid_t cpu_clock_{};
  double cpu_started_ = 0;
  uint64_t rss_limit_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string description_;
  std::chrono::steady_clock::time_point started_;
  bool busy_ = false;
  bool stop_ = false;
  std::atomic<uint64_t> peak_rss_{0};
  std::thread thread_;
};

// ---------------------------------------------------------------------------------------

class SpecFuzz : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("tessera-spec-fuzz-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    const fs::path source(TESSERA_SOURCE_DIR);
    fs::copy(source / "examples", root_ / "examples", fs::copy_options::recursive);
    fs::copy(source / "data", root_ / "data", fs::copy_options::recursive);
    const fs::path hostile = root_ / "hostile";
    fs::create_directories(hostile / "folder.yaml");
    ASSERT_EQ(::mkfifo((hostile / "fifo.yaml").c_str(), 0600), 0);
    fs::create_symlink("/dev/zero", hostile / "zero.csv");
    fs::create_symlink(hostile / "loop.yaml", hostile / "loop.yaml");
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path root_;
};

TEST_F(SpecFuzz, MutatedExamplesLoadOrFailWithASpecErrorInBoundedTimeAndMemory) {
  const uint64_t iterations = env_number("TESSERA_FUZZ_ITERATIONS", kSanitized ? 300 : 3000);
  const uint64_t seed = env_number("TESSERA_FUZZ_SEED", 1);
  const double input_limit =
      static_cast<double>(env_number("TESSERA_FUZZ_INPUT_S", kSanitized ? 60 : 10));
  const uint64_t rss_limit = env_number("TESSERA_FUZZ_RSS_MIB", kSanitized ? 6144 : 2048) << 20;
  const bool verbose = env_number("TESSERA_FUZZ_VERBOSE", 0) != 0;

  const std::vector<Target> targets = find_targets(root_);
  ASSERT_GE(targets.size(), 10u) << "expected the shipped examples under " << root_;

  // Every unmutated example must load: the fuzzer starts from valid inputs.
  std::size_t files = 0;
  for (const Target& t : targets) {
    files += t.files.size();
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_NO_THROW(load_target(t)) << t.spec;
    if (verbose) {
      std::cerr << fs::relative(t.spec, root_).string() << " loads in "
                << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
                << " s\n";
    }
  }

  Watchdog watchdog(input_limit, rss_limit);
  uint64_t ok = 0, rejected = 0;
  double slowest = 0;
  std::string slowest_input;
  std::vector<std::string> findings;
  std::size_t reported = 0;
  const auto begin = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < iterations; ++i) {
    std::mt19937_64 rng(seed + i);
    const Target& target = pick(targets, rng);
    const fs::path& file = below(2, rng) == 0 || target.files.size() == 1
                               ? target.files.front()
                               : target.files[1 + below(target.files.size() - 1, rng)];
    const std::string original = read_text(file);
    std::string text = original;
    const bool csv = file.extension() == ".csv";
    std::string description = "seed " + std::to_string(seed + i) + ": " +
                              fs::relative(target.spec, root_).string() + ", mutated " +
                              fs::relative(file, root_).string() + ":";
    const std::size_t count = 1 + below(3, rng);
    for (std::size_t m = 0; m < count; ++m) description += " " + mutate_once(text, csv, root_, rng);
    write_text(file, text);
    if (verbose) std::cerr << description << "\n";

    watchdog.start(description);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      load_target(target);
      ++ok;
    } catch (const SpecError& e) {
      ++rejected;
      if (e.file().empty() || e.problem().empty()) {
        findings.push_back(description + " -> SpecError without a file or problem: " + e.what());
      }
      // Messages quote input text only through printable(): short, printable ASCII.
      const std::string message = e.what();
      if (verbose) std::cerr << "  -> " << message.substr(0, 300) << "\n";
      const bool printable_ascii = std::all_of(message.begin(), message.end(), [](char c) {
        return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f;
      });
      if (!printable_ascii || message.size() > 2000) {
        findings.push_back(description + " -> SpecError message not short printable ASCII: " +
                           printable(message, 300));
      }
    } catch (const std::exception& e) {
      findings.push_back(description + " -> " + typeid(e).name() + ": " + printable(e.what(), 300));
    } catch (...) {
      findings.push_back(description + " -> unknown exception");
    }
    if (findings.size() > reported) {  // as they happen: a long run may be cut short
      std::fprintf(stderr, "spec fuzzer: FINDING %s\n", findings.back().c_str());
      reported = findings.size();
    }
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    watchdog.finish();
    if (took > slowest) {
      slowest = took;
      slowest_input = description;
    }
    write_text(file, original);
    if ((i + 1) % 10000 == 0 && i + 1 < iterations) {
      std::printf("spec fuzzer: %llu inputs (seeds %llu..%llu), %zu findings, %.0f s\n",
                  static_cast<unsigned long long>(i + 1), static_cast<unsigned long long>(seed),
                  static_cast<unsigned long long>(seed + i), findings.size(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
      std::fflush(stdout);
    }
  }
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();

  std::printf(
      "spec fuzzer: %llu inputs from %zu example specs (%zu files) in %.1f s: %llu loaded, %llu "
      "rejected with a SpecError, %zu findings; slowest input %.3f s (%s); peak RSS %llu MiB\n",
      static_cast<unsigned long long>(iterations), targets.size(), files, total,
      static_cast<unsigned long long>(ok), static_cast<unsigned long long>(rejected),
      findings.size(), slowest, slowest_input.c_str(),
      static_cast<unsigned long long>(watchdog.peak_rss() >> 20));
  for (std::size_t i = 0; i < findings.size() && i < 30; ++i) ADD_FAILURE() << findings[i];
  EXPECT_TRUE(findings.empty()) << findings.size() << " findings";
}

}  // namespace
}  // namespace tessera
