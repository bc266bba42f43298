#!/usr/bin/env bash
# The serving-overhead measurement (docs/benchmarks.md#serving-overhead): tessera serve with
# a no-op model against a bare echo server in the same run, over HTTP (serve_bench: a
# cpp-httplib echo) and gRPC (grpc_bench: a bare GRPCInferenceService echo).
#   scripts/serve-overhead.sh [SECONDS] [CONNECTIONS]   (defaults 3, 1,8,32)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_POINT="${1:-3}"
CONNECTIONS="${2:-1,8,32}"
cmake -S . -B build-rel -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build-rel serve_bench grpc_bench >/dev/null
echo "== HTTP (bench/serve_bench.cpp), $(date -u '+%Y-%m-%d %H:%M UTC'), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
build-rel/bench/serve_bench --seconds "$SECONDS_PER_POINT" --connections "$CONNECTIONS"
echo "== gRPC (bench/grpc_bench.cpp), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
build-rel/bench/grpc_bench --seconds "$SECONDS_PER_POINT" --connections "$CONNECTIONS"
