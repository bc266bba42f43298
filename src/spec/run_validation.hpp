#pragma once

// `tessera validate RUN.yaml` as a function: loads and cross-checks a run spec and
// everything it names, builds its arrival stream (without reading it) and returns the
// summary the command prints. Any problem is a SpecError naming the file, the field and
// the problem. Bounded in time and memory on any input (docs/reliability-specs.md): the
// spec fuzzer (tests/robustness/spec_fuzz_test.cpp) calls it in-process.

#include <filesystem>
#include <string>

namespace tessera {

std::string validate_run_file(const std::filesystem::path& file);

}  // namespace tessera
