#!/usr/bin/env bash
# Sets everything up and runs the whole test suite.
#   scripts/test.sh            # the normal build
#   scripts/test.sh --sanitize # the same tests under AddressSanitizer + UBSan
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--sanitize" ]; then
  scripts/setup.sh build-asan -DTESSERA_SANITIZE=ON -DTESSERA_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
  ctest --test-dir build-asan --output-on-failure -j2
else
  scripts/setup.sh build
  ctest --test-dir build --output-on-failure -j2
fi
