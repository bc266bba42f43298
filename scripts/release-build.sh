#!/usr/bin/env bash
# Builds the release `tessera` command (installing what it needs) and prints its path.
# With TESSERA=path/to/tessera set, builds nothing and prints that path.
# With --torch, prints the path of `tessera-torch` beside it instead (the libtorch commands);
# TESSERA_TORCH=path/to/tessera-torch set then builds nothing and prints that path.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --torch ] && [ -n "${TESSERA_TORCH:-}" ]; then
  echo "$TESSERA_TORCH"
  exit 0
fi
if [ -z "${TESSERA:-}" ]; then
  scripts/setup.sh build-release -DCMAKE_BUILD_TYPE=Release -DTESSERA_BUILD_TESTS=OFF \
    -DTESSERA_BUILD_BENCH=OFF >&2
  tessera="$PWD/build-release/tessera"
else
  tessera="$TESSERA"
fi
if [ "${1:-}" = --torch ]; then
  echo "$(dirname "$tessera")/tessera-torch"
else
  echo "$tessera"
fi
