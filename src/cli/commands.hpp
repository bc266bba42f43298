#pragma once

#include <CLI/CLI.hpp>

#include "core/device.hpp"

namespace tessera::cli {

// Each command registers its subcommand and options; the callback runs it.
void add_simulate_command(CLI::App& app);
void add_validate_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_replan_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_loadgen_command(CLI::App& app);
void add_profile_command(CLI::App& app);
void add_supernet_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_llm_command(CLI::App& app);
void add_llm_step_profile_command(CLI::App& llm);  // under `tessera llm`
// `--device` of the llm commands: parsed, and checked against this build and machine
// (Decoder::check_device), so an unusable device is one clear std::invalid_argument
// ("--device: ...") before any work.
DeviceSpec llm_device(const std::string& text);
void add_export_command(CLI::App& app);
void add_ppipe_simulate_command(CLI::App& app);
// iServe's config-map, deploy and simulate-cluster under `tessera llm` (iserve_command.cpp).
void add_iserve_llm_commands(CLI::App* llm);

// `--report` on the commands that write an output folder, and what it does after them:
// writes DIR/report.html and prints where it is.
void add_report_flag(CLI::App& cmd, bool& flag);
void write_report_and_tell(const std::string& dir);

}  // namespace tessera::cli
