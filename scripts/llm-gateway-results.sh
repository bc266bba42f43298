#!/usr/bin/env bash
# Regenerates docs/results/llm-gateway.md: tessera's LLM gateway (`tessera serve` of a run
# spec with llm.backends) in front of a loopback fleet of three tessera LLM workers on this
# CPU — two of a tiny random-weight Llama-shaped model (2 layers) and one of a larger tiny
# model (SLOW_LAYERS, 12: several times slower per step): a heterogeneous fleet — with the
# Azure LLM 2023 code trace replayed by `tessera loadgen` through the gateway at loads from
# light to about twice the fleet's capacity, once per routing policy the gateway offers;
# the same run specs simulated (`tessera simulate`, each backend with the step costs
# `tessera llm step-profile` measured for its model on this machine); and the gateway's
# added TTFT against calling one worker directly; and the same run specs simulated again with
# each backend's step costs scaled to the speed its worker's steps ran at in the live run.
# Every number on the page is printed by this script from the runs' summary.json files,
# the workers' and the gateway's /metrics, /proc and the step profiles' output. Also the
# gateway's overhead at 64 concurrent streams: bursts of 64 short streamed requests to one
# fast worker, directly and through the gateway in interleaved rounds, with the gateway's
# CPU per request from /proc.
#   scripts/llm-gateway-results.sh          (about 10 minutes on 2 loaded cores)
#   TESSERA=build/tessera TESSERA_TORCH=build/tessera-torch scripts/llm-gateway-results.sh
#   REPORT_ONLY=1 TESSERA=build/tessera scripts/llm-gateway-results.sh   (no new runs)
# Knobs: REQUESTS (per policy run at C and 2 C, 128; the first quarter of them at 0.25 C),
# PROMPT_SCALE (the trace's prompts are divided by it, 16), SLOW_LAYERS (the slow worker's
# model, 12), OVERHEAD_ROUNDS (64-stream rounds of each kind, 4), OVERHEAD_BURSTS (bursts of
# 64 per round, 8), POLICIES (default: every routing policy `tessera validate` accepts).
set -euo pipefail
cd "$(dirname "$0")/.."
T=$(scripts/release-build.sh)
TT=$(TESSERA=$T scripts/release-build.sh --torch)
OUT=out/llm-gateway
DOC=docs/results/llm-gateway.md
REQUESTS=${REQUESTS:-128}
PROMPT_SCALE=${PROMPT_SCALE:-16}
SLOW_LAYERS=${SLOW_LAYERS:-12}
OVERHEAD_ROUNDS=${OVERHEAD_ROUNDS:-4}
OVERHEAD_BURSTS=${OVERHEAD_BURSTS:-8}
LIGHT_REQUESTS=32  # the light-load overhead runs (4 requests/s)
BASE_PORT=${BASE_PORT:-18610}
GW_PORT=$BASE_PORT
WORKER_PORTS=($((BASE_PORT + 1)) $((BASE_PORT + 2)) $((BASE_PORT + 3)))
OVH_PORT=$((BASE_PORT + 4))  # the 64-stream overhead section's worker
NICE="nice -n 5"
mkdir -p "$OUT"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

wait_http() {  # URL: wait until it answers 200 (at most 60 s)
  for _ in $(seq 1 600); do
    curl -sf "$1" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "no answer from $1" >&2
  return 1
}

cpu_ticks() {  # PID...: utime + stime of each, in clock ticks
  for p in "$@"; do awk '{print $14 + $15}' "/proc/$p/stat"; done | paste -sd' '
}

if [ "${REPORT_ONLY:-0}" != 1 ]; then
rm -rf "$OUT"/live-* "$OUT"/sim-* "$OUT"/cap-* "$OUT"/direct-* "$OUT"/via-* "$OUT"/nokeep-* \
  "$OUT"/slowed-* "$OUT"/s64-* "$OUT"/runs.tsv "$OUT"/s64.tsv
{ lscpu | head -8; echo "nproc: $(nproc)"; } > "$OUT/machine.txt"
echo "$PROMPT_SCALE" > "$OUT/prompt-scale.txt"
cat /proc/loadavg > "$OUT/loadavg-start.txt"

echo "==> checkpoints and step profiles" >&2
echo "$SLOW_LAYERS" > "$OUT/slow-layers.txt"
for m in fast:2:1 slow:$SLOW_LAYERS:2; do
  IFS=: read -r name layers seed <<< "$m"
  rm -rf "$OUT/model-$name"
  $NICE "$TT" llm random-checkpoint data/llm/llama-2-7b --out "$OUT/model-$name" \
    --layers "$layers" --hidden 64 --heads 4 --kv-heads 2 --ffn 128 --vocab 260 --dtype F32 \
    --seed "$seed" --max-positions 4096 >&2
  OMP_NUM_THREADS=1 $NICE "$TT" llm step-profile "$OUT/model-$name" \
    --out "$OUT/profiles-$name.yaml" --variant tiny-llama --segment cpu --context 1024 \
    --max-batch 8 --repeats 3 --max-tokens 1024 --cost-model-out "$OUT/cost-$name.yaml" \
    > "$OUT/step-profile-$name.txt" 2>&1
done

echo "==> trace and run specs" >&2
python3 - "$OUT" "$REQUESTS" "$PROMPT_SCALE" "$SLOW_LAYERS" "$LIGHT_REQUESTS" \
  "$OVERHEAD_BURSTS" <<'PY'
import csv, datetime, math, sys
out, n, scale, slow_layers = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
light, bursts = int(sys.argv[5]), int(sys.argv[6])
rows = list(csv.reader(open("data/traces/azure_llm_code_2023.csv")))
for name, count in (("trace.csv", n), ("trace-light.csv", light), ("trace-quarter.csv", n // 4)):
    with open(f"{out}/{name}", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(rows[0])
        for r in rows[1:count + 1]:
            w.writerow([r[0], max(1, math.ceil(int(r[1]) / scale)), r[2]])
# The 64-stream overhead trace: bursts of 64 requests at once (16 prompt tokens, 4 output
# tokens each), one every 0.4 s.
t0 = datetime.datetime(2023, 11, 16, 18, 0, 0)
with open(f"{out}/trace-s64.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(rows[0])
    for b in range(bursts):
        at = (t0 + datetime.timedelta(seconds=0.4 * b)).strftime("%Y-%m-%d %H:%M:%S.%f") + "0"
        for _ in range(64):
            w.writerow([at, 16, 4])
open(f"{out}/app.yaml", "w").write(
    "# The LLM gateway's results (scripts/llm-gateway-results.sh): a code-completion LLM\n"
    "name: gateway_code\nslo_ms: 60000\nttft_slo_ms: 1000\ntpot_slo_ms: 50\n"
    "tasks:\n  - name: llm\n    variants:\n      - {name: tiny-llama}\n")
open(f"{out}/deployment.yaml", "w").write(
    "workers:\n  - {task: llm, variant: tiny-llama, segment: cpu, count: 1}\n")
open(f"{out}/profiles.yaml", "w").write(
    "profiles:\n  - {variant: tiny-llama, segment: cpu, latency_ms: {1: 1.0}}\n")
gpu = "{name: cpu, memory_gb: 0.02, memory_utilization: 0.9, bandwidth_gbs: 10, tflops: 0.1}"
common = ("app: app.yaml\ndeployment: deployment.yaml\nprofiles: [{file: profiles.yaml}]\n"
          "workload:\n  source: {kind: trace, format: azure-llm, path: trace.csv}\n")
llm = ("llm:\n  model: {name: tiny-llama, layers: %d, kv_heads: 2, head_dim: 16, "
       "params_b: 0.0001, weights: fp16}\n  kv_cache: {dtype: fp16, block_tokens: 16}\n"
       "  gpu: " + gpu + "\n"
       "  scheduler: {policy: continuous, max_seqs: 16, token_budget: 4096, prefix_caching: false}\n")
for name, layers in (("fast", 2), ("slow", slow_layers)):
    cost = open(f"{out}/cost-{name}.yaml").read().strip()
    open(f"{out}/worker-{name}.yaml", "w").write(
        common + llm % layers + "simulation: {seed: 1, window_s: 5, cost_model: " + cost + "}\n")
# The 64-stream overhead worker (the 2-layer model, all 64 streams in one batch).
open(f"{out}/worker-s64.yaml", "w").write(
    common.replace("trace.csv", "trace-s64.csv") +
    (llm % 2).replace("max_seqs: 16", "max_seqs: 64"))
PY
# Its gateway: that worker as the only backend.
python3 - "$OUT" "$OVH_PORT" <<'PY'
import sys
out, port = sys.argv[1], sys.argv[2]
text = open(f"{out}/worker-s64.yaml").read()
cost = open(f"{out}/cost-fast.yaml").read().strip()
text += (f"  backends:\n    - url: \"http://127.0.0.1:{port}\"\n      cost_model: {cost}\n"
         "  gateway: {routing: least_outstanding, health_interval_ms: 200, timeout_ms: 60000}\n")
open(f"{out}/gateway-s64.yaml", "w").write(text)
PY

echo "==> workers" >&2
WORKER_PIDS=()
i=0
for name in fast fast slow; do
  port=${WORKER_PORTS[$i]}
  OMP_NUM_THREADS=1 $NICE "$TT" serve "$OUT/worker-$name.yaml" --llm-checkpoint "$OUT/model-$name" \
    --port "$port" --max-inflight 1000 --no-prefix-caching > "$OUT/worker-$i.log" 2>&1 &
  PIDS+=($!)
  WORKER_PIDS+=($!)
  i=$((i + 1))
done
for port in "${WORKER_PORTS[@]}"; do wait_http "http://127.0.0.1:$port/health"; done

# gateway_spec NAME ROUTING RATE HOP_MS [BACKENDS...]: a gateway run spec over the backends
# (indexes into the fleet; default all three) at RATE requests/s.
gateway_spec() {
  local name=$1 routing=$2 rate=$3 hop=$4
  shift 4
  python3 - "$OUT" "$name" "$routing" "$rate" "$hop" "${WORKER_PORTS[*]}" "$@" <<'PY'
import os, sys
out, name, routing, rate, hop, ports = sys.argv[1:7]
chosen = [int(i) for i in sys.argv[7:]] or [0, 1, 2]
ports = ports.split()
kinds = ["fast", "fast", "slow"]
text = open(f"{out}/worker-fast.yaml").read()
trace = os.environ.get("TRACE", "trace.csv")
text = text.replace("path: trace.csv}\n", "path: %s}\n  target_rate_rps: %s\n" % (trace, rate))
text = text[:text.index("simulation:")]
text += "  backends:\n"
for i in chosen:
    cost = open(f"{out}/cost-{kinds[i]}.yaml").read().strip()
    text += f"    - url: \"http://127.0.0.1:{ports[i]}\"\n      cost_model: {cost}\n"
keep = os.environ.get("KEEPALIVE", "true")
text += ("  gateway: {routing: %s, health_interval_ms: 200, timeout_ms: 60000, keep_alive: %s}\n"
         % (routing, keep))
text += ("simulation: {seed: 1, window_s: 5, gateway_hop_ms: %s, gateway_bytes_per_token: 1}\n"
         % hop)
open(f"{out}/{name}.yaml", "w").write(text)
PY
}

# live RUN_DIR SPEC URL: loadgen of SPEC against URL, with the CPU the workers got.
live() {
  local dir=$1 spec=$2 url=$3
  local before after t0 t1
  before=$(cpu_ticks "${WORKER_PIDS[@]}")
  for w in 0 1 2; do
    curl -sf "http://127.0.0.1:${WORKER_PORTS[$w]}/metrics" > "$OUT/$dir.w$w.before.txt"
  done
  t0=$(date +%s.%N)
  $NICE "$T" loadgen "$spec" --url "$url" --out "$OUT/$dir" --quiet --connections 64 \
    --timeout 600 > /dev/null
  t1=$(date +%s.%N)
  after=$(cpu_ticks "${WORKER_PIDS[@]}")
  for w in 0 1 2; do
    curl -sf "http://127.0.0.1:${WORKER_PORTS[$w]}/metrics" > "$OUT/$dir.w$w.after.txt"
  done
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$dir" "$t0" "$t1" "$before" "$after" \
    "$(cut -d' ' -f1 /proc/loadavg)" >> "$OUT/runs.tsv"
}

# through_gateway RUN_DIR SPEC: `tessera serve` SPEC as the gateway, then live().
through_gateway() {
  local dir=$1 spec=$2
  $NICE "$T" serve "$spec" --port "$GW_PORT" --max-inflight 1000 > "$OUT/$dir.gateway.log" 2>&1 &
  local gw=$!
  PIDS+=($gw)
  wait_http "http://127.0.0.1:$GW_PORT/health"
  live "$dir" "$spec" "http://127.0.0.1:$GW_PORT"
  curl -sf "http://127.0.0.1:$GW_PORT/metrics" > "$OUT/$dir.gateway-metrics.txt"
  kill -INT "$gw"
  wait "$gw" || true
}

echo "==> the gateway's overhead: one worker directly and through the gateway" >&2
# Light load (4 requests/s) on the first (fast) worker, called directly and through a
# gateway with it as its only backend (with and without keep-alive), interleaved twice.
# The gateway with and without its backend keep-alive pool (`gateway.keep_alive`).
TRACE=trace-light.csv gateway_spec direct-spec least_outstanding 4 0 0
TRACE=trace-light.csv KEEPALIVE=false gateway_spec direct-spec-nokeep least_outstanding 4 0 0
for round in 1 2; do
  live "direct-$round" "$OUT/direct-spec.yaml" "http://127.0.0.1:${WORKER_PORTS[0]}"
  through_gateway "via-$round" "$OUT/direct-spec.yaml"
  through_gateway "nokeep-$round" "$OUT/direct-spec-nokeep.yaml"
done
HOP=$(python3 - "$OUT" <<'PY'
import json, sys, statistics
out = sys.argv[1]
d = [json.load(open(f"{out}/direct-{r}/summary.json"))["llm"]["ttft_ms"]["p50"] for r in (1, 2)]
v = [json.load(open(f"{out}/via-{r}/summary.json"))["llm"]["ttft_ms"]["p50"] for r in (1, 2)]
# The hop the simulator adds: the measured p50 difference only where it clears the noise
# floor (the direct rounds' spread); within the noise, none (0).
added, spread = statistics.median(v) - statistics.median(d), abs(d[0] - d[1])
print(f"{max(0.0, added) if added > spread else 0.0:.3f}")
PY
)
echo "$HOP" > "$OUT/hop-ms.txt"

echo "==> the gateway's overhead at 64 concurrent streams" >&2
# One more 2-layer worker (all 64 streams in one batch), the gateway in front of it; rounds
# of OVERHEAD_BURSTS bursts of 64 streams each, interleaved: direct, gateway, direct, ...
# The gateway runs through all rounds; its CPU (utime + stime) is read around each.
OMP_NUM_THREADS=1 $NICE "$TT" serve "$OUT/worker-s64.yaml" --llm-checkpoint "$OUT/model-fast" \
  --port "$OVH_PORT" --max-inflight 1000 --no-prefix-caching > "$OUT/worker-s64.log" 2>&1 &
S64_WORKER=$!
PIDS+=($S64_WORKER)
wait_http "http://127.0.0.1:$OVH_PORT/health"
$NICE "$T" serve "$OUT/gateway-s64.yaml" --port "$GW_PORT" --max-inflight 1000 \
  > "$OUT/gateway-s64.log" 2>&1 &
S64_GW=$!
PIDS+=($S64_GW)
wait_http "http://127.0.0.1:$GW_PORT/health"
for round in $(seq 1 "$OVERHEAD_ROUNDS"); do
  for kind in direct gateway; do
    port=$OVH_PORT
    [ "$kind" = gateway ] && port=$GW_PORT
    gw0=$(cpu_ticks "$S64_GW")
    w0=$(cpu_ticks "$S64_WORKER")
    t0=$(date +%s.%N)
    $NICE "$T" loadgen "$OUT/worker-s64.yaml" --url "http://127.0.0.1:$port" \
      --out "$OUT/s64-$kind-$round" --quiet --connections 64 --timeout 120 > /dev/null
    t1=$(date +%s.%N)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "s64-$kind-$round" "$t0" "$t1" "$gw0" \
      "$(cpu_ticks "$S64_GW")" "$w0" "$(cpu_ticks "$S64_WORKER")" >> "$OUT/s64.tsv"
  done
done
kill -INT "$S64_GW" "$S64_WORKER"
wait "$S64_GW" "$S64_WORKER" || true

echo "==> capacity (simulated, least_outstanding)" >&2
CAP_GRID="1 2 3 4 6 8 12 16 24 32 48"
echo "$CAP_GRID" > "$OUT/capacity-grid.txt"
for rate in $CAP_GRID; do
  gateway_spec "cap-$rate" least_outstanding "$rate" "$HOP"
  $NICE "$T" simulate "$OUT/cap-$rate.yaml" --out "$OUT/cap-$rate" --quiet > /dev/null
done
# Capacity: the highest rate of the grid up to which the share of requests meeting both SLOs
# (goodput / offered rate) in the simulator stays at least 90 % of its share at the grid's
# lowest rate (a slow backend makes some requests miss even at light load).
CAP=$(python3 - "$OUT" $CAP_GRID <<'PY'
import json, sys
out = sys.argv[1]
grid = [int(r) for r in sys.argv[2:]]
share = {}
for rate in grid:
    s = json.load(open(f"{out}/cap-{rate}/summary.json"))
    share[rate] = s["llm"]["goodput_rps"] / s["offered_rps"]
best = grid[0]
for rate in grid:
    if share[rate] < 0.9 * share[grid[0]]:
        break
    best = rate
print(best)
PY
)
echo "$CAP" > "$OUT/capacity.txt"

POLICIES=${POLICIES:-}
if [ -z "$POLICIES" ]; then
  for p in round_robin least_outstanding kv_load prefix_affinity slo_aware; do
    gateway_spec probe "$p" 1 "$HOP"
    "$T" validate "$OUT/probe.yaml" > /dev/null 2>&1 && POLICIES="$POLICIES $p"
  done
fi
echo "$POLICIES" > "$OUT/policies.txt"

echo "==> policies x loads (live and simulated)" >&2
for load in 0.25 1 2; do
  rate=$(python3 -c "print(round($CAP * $load, 3))")
  # At 0.25 C the first REQUESTS / 4 requests, so that a run lasts as long as one at C.
  trace=trace.csv
  [ "$load" = 0.25 ] && trace=trace-quarter.csv
  for p in $POLICIES; do
    name="$p-$load"
    TRACE=$trace gateway_spec "gw-$name" "$p" "$rate" "$HOP"
    through_gateway "live-$name" "$OUT/gw-$name.yaml"
    $NICE "$T" simulate "$OUT/gw-$name.yaml" --out "$OUT/sim-$name" --quiet > /dev/null
  done
done
cat /proc/loadavg > "$OUT/loadavg-end.txt"
cleanup
PIDS=()

echo "==> simulated again at the live runs' step speeds" >&2
# Each backend's step costs multiplied by what its worker's steps took in that live run
# over what its cost model predicts for the same steps (its /metrics before and after):
# the simulator at the speed the shared CPU gave each worker in that run.
for load in 0.25 1 2; do
  for p in $POLICIES; do
    name="$p-$load"
    python3 - "$OUT" "$name" <<'PY'
import re, sys
sys.path.insert(0, "scripts")
from prometheus_text import metric
out, name = sys.argv[1], sys.argv[2]
ratios = []
for w in range(3):  # the backends of gw-NAME.yaml are the workers 0, 1, 2 in that order
    pre = open(f"{out}/live-{name}.w{w}.before.txt").read()
    post = open(f"{out}/live-{name}.w{w}.after.txt").read()
    live = metric(post, "tessera_llm_step_seconds_total") - metric(pre, "tessera_llm_step_seconds_total")
    model = (metric(post, "tessera_llm_step_predicted_seconds_total") -
             metric(pre, "tessera_llm_step_predicted_seconds_total"))
    ratios.append(live / model if model > 0 else 1.0)
number = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
lines, backend = [], 0
for line in open(f"{out}/gw-{name}.yaml"):
    if "cost_model:" in line:  # scale its prefill and decode `ms:` tables only
        r = ratios[backend]
        backend += 1
        line = re.sub(r"ms: \[\[.*?\]\]|ms: \[[^\[\]]*\]",
                      lambda m: number.sub(lambda n: f"{float(n.group(0)) * r:.4f}", m.group(0)), line)
    lines.append(line)
open(f"{out}/slowed-{name}.yaml", "w").write("".join(lines))
PY
    $NICE "$T" simulate "$OUT/slowed-$name.yaml" --out "$OUT/slowed-$name" --quiet > /dev/null
  done
done
fi

python3 scripts/llm_gateway_doc.py "$OUT" > "$DOC"
echo "wrote $DOC" >&2
