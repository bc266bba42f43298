#include "cli/run_main.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace tessera::cli {
namespace {

constexpr const char* kModelCommands[][2] = {
    {"serve", "serve a run's application over HTTP on real models (runs in tessera-torch)"},
    {"profile", "measure models' latency by batch size on this machine (runs in tessera-torch)"},
    {"supernet", "SubNetAct supernet: profile and memory (runs in tessera-torch)"},
    {"llm",
     "LLMs: architectures, iServe configurations, checkpoints, fingerprints, generation "
     "(runs in tessera-torch)"},
};

}  // namespace

void setup_logging() {
  spdlog::set_default_logger(spdlog::stderr_color_mt("tessera"));
  spdlog::set_pattern("[%H:%M:%S] %v");
}

int run_main(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const tessera::SpecError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

int hand_over_model_commands(int argc, char** argv) {
  if (argc < 2) return -1;
  bool model_command = false;
  for (const auto& command : kModelCommands) model_command |= std::strcmp(argv[1], command[0]) == 0;
  if (!model_command) return -1;
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path torch =
      (ec ? std::filesystem::path(argv[0]).parent_path() : self.parent_path()) / "tessera-torch";
  // argv[0] stays the user's `tessera`, so usage lines read as they typed them.
  std::vector<char*> args(argv, argv + argc);
  const std::string path = torch.string();
  args.push_back(nullptr);
  ::execv(path.c_str(), args.data());
  std::cerr << "error: 'tessera " << argv[1] << "' runs in " << path
            << ", which could not be started (" << std::strerror(errno)
            << "); build it with `ninja tessera-torch` next to tessera\n";
  return 1;
}

void add_model_command_stubs(CLI::App& app) {
  for (const auto& command : kModelCommands) {
    // Never parsed: hand_over_model_commands replaced the process before.
    app.add_subcommand(command[0], command[1])->allow_extras();
  }
}

}  // namespace tessera::cli
