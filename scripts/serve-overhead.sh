#!/usr/bin/env bash
# The serving-overhead measurement (docs/benchmarks-history.md#serving-overhead): tessera serve with
# a no-op model against a bare echo server in the same run, over HTTP (serve_bench: a
# cpp-httplib echo) and gRPC (grpc_bench: a bare GRPCInferenceService echo).
#   scripts/serve-overhead.sh [SECONDS] [CONNECTIONS] [RUNS]   (defaults 3, 1,8,32, 1)
# With BASELINE=DIR (a directory holding serve_bench and grpc_bench built from the code to
# compare with, e.g. main before a change), every run measures that build first and this
# tree's second, back to back, each against its own echo server of the same process.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_POINT="${1:-3}"
CONNECTIONS="${2:-1,8,32}"
RUNS="${3:-1}"
cmake -S . -B build-rel -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build-rel serve_bench grpc_bench >/dev/null
builds=("this tree:build-rel/bench")
if [[ -n "${BASELINE:-}" ]]; then builds=("baseline:${BASELINE}" "${builds[@]}"); fi
for run in $(seq 1 "$RUNS"); do
  for b in "${builds[@]}"; do
    name="${b%%:*}"
    dir="${b#*:}"
    echo "== run ${run}, ${name}: HTTP (bench/serve_bench.cpp), $(date -u '+%Y-%m-%d %H:%M:%S UTC'), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
    "${dir}/serve_bench" --seconds "$SECONDS_PER_POINT" --connections "$CONNECTIONS"
  done
  for b in "${builds[@]}"; do
    name="${b%%:*}"
    dir="${b#*:}"
    echo "== run ${run}, ${name}: gRPC (bench/grpc_bench.cpp), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
    "${dir}/grpc_bench" --seconds "$SECONDS_PER_POINT" --connections "$CONNECTIONS"
  done
done
