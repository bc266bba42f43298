#!/usr/bin/env bash
# Sets everything up and runs the whole test suite.
#   scripts/test.sh            # the normal build
#   scripts/test.sh --sanitize # the same tests under AddressSanitizer + UBSan
# Both builds keep line tables only (-g1: stack traces name file and line) instead of full
# debug info, and the normal one optimises at -O1: the suite's build then takes about half
# the compile time of -O2 -g (docs/benchmarks.md#the-test-suites-own-time). Benchmarks and
# the release binary build elsewhere (build-rel, build-release) at full optimisation.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--sanitize" ]; then
  scripts/setup.sh build-asan -DTESSERA_SANITIZE=ON -DTESSERA_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug \
    "-DCMAKE_CXX_FLAGS_DEBUG=-g1"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
  ctest --test-dir build-asan --output-on-failure -j2
else
  scripts/setup.sh build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
  ctest --test-dir build --output-on-failure -j2
fi
