#!/usr/bin/env bash
# Peak memory of `tessera simulate` as simulated time grows: the traffic example's app,
# cluster and deployment under Poisson arrivals at 150 req/s (1 s windows), at 100 k, 1 M
# and 10 M requests (11 minutes to 18.5 hours of simulated time, 667 to 66,667 windows).
#
#   scripts/memory-flat.sh [TESSERA] [BASE_TESSERA] [SIZES]
#
# Prints one row per size and binary: requests, windows, peak RSS (MB), CPU seconds. With a
# BASE_TESSERA it also checks that both wrote the same timeseries.csv and summary.json.
# SIZES defaults to "100000 1000000 10000000". Runs pinned to CPU ${CPU:-1}.
set -euo pipefail
cd "$(dirname "$0")/.."

T="${1:-build/tessera}"
B="${2:-}"
SIZES="${3:-100000 1000000 10000000}"
CPU="${CPU:-1}"
OUT="${OUT:-out/memory-flat}"
mkdir -p "$OUT"
ex="$(pwd)/examples/traffic"

echo "| binary | requests | windows | peak RSS (MB) | CPU s |"
echo "|---|---:|---:|---:|---:|"
for n in $SIZES; do
  spec="$OUT/run-$n.yaml"
  cat >"$spec" <<EOF
app: $ex/app.yaml
cluster: $ex/cluster.yaml
deployment: $ex/deployment.yaml
profiles:
  - format: loki
    runtimes: $(pwd)/data/profiles/loki/simulator_runtimes.csv
    segments: {onnxruntime_gpu_ampere: gpu-ampere}
    column: 50th_pct
workload:
  source: {kind: poisson, rate_rps: 150, limit: $n}
policies: {dispatch: least_loaded, queue: fifo, batching: eager, dropping: expired}
simulation: {seed: 1, window_s: 1, hop_delay_ms: 1}
EOF
  for side in new base; do
    bin="$T"
    if [ "$side" = base ]; then
      [ -n "$B" ] || continue
      bin="$B"
    fi
    dir="$OUT/$side-$n"
    /usr/bin/time -f "%M %U %S" -o "$dir.time" taskset -c "$CPU" "$bin" simulate "$spec" -o "$dir" -q \
      >/dev/null
    read -r kb user sys <"$dir.time"
    windows=$(($(wc -l <"$dir/timeseries.csv") - 1))
    printf "| %s | %s | %s | %.1f | %.2f |\n" "$side" "$n" "$windows" "$(echo "$kb / 1024" | bc -l)" \
      "$(echo "$user + $sys" | bc -l)"
  done
  if [ -n "$B" ]; then
    for f in timeseries.csv summary.json; do
      cmp -s "$OUT/new-$n/$f" "$OUT/base-$n/$f" && echo "  $n: $f identical" ||
        echo "  $n: $f DIFFERS"
    done
  fi
done
