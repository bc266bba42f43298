#!/usr/bin/env bash
# The LLM gateway's CPU per request and TTFT at 64 concurrent streams, two builds taking
# turns (docs/benchmarks.md#llm-gateway-cpu-per-request): one 2-layer worker, and in each
# round a gateway of build A, then one of build B, in front of it, each given 8 bursts of
# 64 streamed requests by `tessera loadgen` (the 64-stream section's files of
# scripts/llm-gateway-results.sh, which must have run: out/llm-gateway). The gateway's
# CPU is its /proc/PID/stat utime + stime (10 ms ticks) over the round.
#   scripts/llm-gateway-cpu-ab.sh A_DIR B_DIR [ROUNDS]   (each DIR holds tessera and tessera-torch)
set -euo pipefail
cd "$(dirname "$0")/.."
A=$1 B=$2 ROUNDS=${3:-3}
O=out/llm-gateway
for f in "$O/worker-s64.yaml" "$O/gateway-s64.yaml" "$O/model-fast"; do
  [ -e "$f" ] || { echo "llm-gateway-cpu-ab: $f is missing: run scripts/llm-gateway-results.sh first" >&2; exit 2; }
done
OMP_NUM_THREADS=1 "$B/tessera-torch" serve "$O/worker-s64.yaml" --llm-checkpoint "$O/model-fast" \
  --port 18614 --max-inflight 1000 --no-prefix-caching > /tmp/llm-gateway-ab-worker.log 2>&1 &
W=$!
trap 'kill -INT $W 2> /dev/null || true' EXIT
until curl -sf http://127.0.0.1:18614/health > /dev/null; do sleep 0.2; done
echo "build round gateway_cpu_ms_per_request requests ttft_p50_ms ttft_p99_ms"
for round in $(seq 1 "$ROUNDS"); do
  for dir in "$A" "$B"; do
    "$dir/tessera" serve "$O/gateway-s64.yaml" --port 18610 --max-inflight 1000 > /tmp/llm-gateway-ab-gw.log 2>&1 &
    G=$!
    until curl -sf http://127.0.0.1:18610/health > /dev/null; do sleep 0.2; done
    P=$(pgrep -f "gateway-s64.yaml --port 18610" | tail -1)  # the serving process
    t0=$(awk '{print $14 + $15}' "/proc/$P/stat")
    "$B/tessera" loadgen "$O/worker-s64.yaml" --url http://127.0.0.1:18610 --quiet \
      --out "/tmp/llm-gateway-ab-$round" --connections 64 --timeout 120 > /dev/null
    t1=$(awk '{print $14 + $15}' "/proc/$P/stat")
    python3 - "$dir" "$round" "$((t1 - t0))" "/tmp/llm-gateway-ab-$round/summary.json" <<'PY'
import json, os, sys
d, r, ticks, path = sys.argv[1:5]
s = json.load(open(path))
n = s["submitted"]
hz = os.sysconf("SC_CLK_TCK")
print(d, r, f"{1000 * int(ticks) / hz / n:.3f}", n, f"{s['llm']['ttft_ms']['p50']:.1f}",
      f"{s['llm']['ttft_ms']['p99']:.1f}")
PY
    kill -INT "$G"
    wait "$G" || true
  done
done
