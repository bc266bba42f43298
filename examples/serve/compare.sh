#!/usr/bin/env bash
# Serves a run spec, replays its workload through `tessera loadgen`, simulates the same
# run, and prints goodput, drop rate and p99 latency side by side (docs/results/serve.md).
#   examples/serve/compare.sh RUN.yaml MODELS.yaml OUT_DIR [TESSERA] [PORT]
set -euo pipefail
RUN=$1 MODELS=$2 OUT=$3 TESSERA=${4:-build/tessera} PORT=${5:-18080}
mkdir -p "$OUT"
"$TESSERA" serve "$RUN" --models "$MODELS" --port "$PORT" --no-model-endpoints --max-inflight 256 \
  > "$OUT/serve.log" 2>&1 &
SERVER=$!
trap 'kill -INT $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$PORT/v2/health/ready" > /dev/null && break
  kill -0 $SERVER 2>/dev/null || { cat "$OUT/serve.log"; exit 1; }
  sleep 0.1
done
"$TESSERA" loadgen "$RUN" --url "http://127.0.0.1:$PORT" --out "$OUT/real" --connections 200 --quiet > /dev/null
curl -s "http://127.0.0.1:$PORT/metrics" > "$OUT/metrics.txt"
kill -INT $SERVER
wait $SERVER || true
trap - EXIT
"$TESSERA" simulate "$RUN" --out "$OUT/sim" --quiet > /dev/null
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
real = json.load(open(f"{out}/real/summary.json"))
sim = json.load(open(f"{out}/sim/summary.json"))
client = json.load(open(f"{out}/real/loadgen.json"))
rows = [("goodput (req/s)", "goodput_rps", None), ("drop rate", "drop_rate", None),
        ("late", "late", None), ("p50 latency (ms)", "latency_ms", "p50"),
        ("p99 latency (ms)", "latency_ms", "p99")]
print(f"{'':18} {'simulate':>10} {'serve+loadgen':>14} {'gap':>8}")
for label, key, sub in rows:
    s = sim[key][sub] if sub else sim[key]
    r = real[key][sub] if sub else real[key]
    gap = f"{100 * (r - s) / s:+.1f}%" if s else "-"
    print(f"{label:18} {s:>10.4g} {r:>14.4g} {gap:>8}")
print(f"submitted {real['submitted']} (sim {sim['submitted']}); "
      f"dropped by stage real {real['dropped_by_stage']} sim {sim['dropped_by_stage']}")
print(f"client: {client}")
PY
