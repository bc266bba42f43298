#!/usr/bin/env bash
# Builds the release `tessera` command (installing what it needs) and prints its path.
# With TESSERA=path/to/tessera set, builds nothing and prints that path.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${TESSERA:-}" ]; then
  scripts/setup.sh build-release -DCMAKE_BUILD_TYPE=Release -DTESSERA_BUILD_TESTS=OFF \
    -DTESSERA_BUILD_BENCH=OFF >&2
  echo "$PWD/build-release/tessera"
else
  echo "$TESSERA"
fi
