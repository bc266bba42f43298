#!/usr/bin/env bash
# Regenerates docs/results/llm-gateway.md: tessera's LLM gateway (`tessera serve` of a run
# spec with llm.backends) in front of a loopback fleet of three tessera LLM workers on this
# CPU — two of a tiny random-weight Llama-shaped model (2 layers) and one of a larger tiny
# model (6 layers, about three times slower per step): a heterogeneous fleet — with the
# Azure LLM 2023 code trace replayed by `tessera loadgen` through the gateway at loads from
# light to about twice the fleet's capacity, once per routing policy the gateway offers;
# the same run specs simulated (`tessera simulate`, each backend with the step costs
# `tessera llm step-profile` measured for its model on this machine); and the gateway's
# added TTFT against calling one worker directly. Every number on the page is printed by
# this script from the runs' summary.json files, the workers' and the gateway's /metrics,
# /proc and the step profiles' output.
#   scripts/llm-gateway-results.sh          (about 5 minutes on 2 loaded cores)
#   TESSERA=build/tessera TESSERA_TORCH=build/tessera-torch scripts/llm-gateway-results.sh
#   REPORT_ONLY=1 TESSERA=build/tessera scripts/llm-gateway-results.sh   (no new runs)
# Knobs: REQUESTS (per run, 32), PROMPT_SCALE (the trace's prompts are divided by it, 16),
# POLICIES (default: every routing policy `tessera validate` accepts).
set -euo pipefail
cd "$(dirname "$0")/.."
T=$(scripts/release-build.sh)
TT=$(TESSERA=$T scripts/release-build.sh --torch)
OUT=out/llm-gateway
DOC=docs/results/llm-gateway.md
REQUESTS=${REQUESTS:-32}
PROMPT_SCALE=${PROMPT_SCALE:-16}
BASE_PORT=${BASE_PORT:-18610}
GW_PORT=$BASE_PORT
WORKER_PORTS=($((BASE_PORT + 1)) $((BASE_PORT + 2)) $((BASE_PORT + 3)))
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
rm -rf "$OUT"/live-* "$OUT"/sim-* "$OUT"/cap-* "$OUT"/direct-* "$OUT"/runs.tsv
{ lscpu | head -8; echo "nproc: $(nproc)"; } > "$OUT/machine.txt"
echo "$PROMPT_SCALE" > "$OUT/prompt-scale.txt"
cat /proc/loadavg > "$OUT/loadavg-start.txt"

echo "==> checkpoints and step profiles" >&2
for m in fast:2:1 slow:6:2; do
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
python3 - "$OUT" "$REQUESTS" "$PROMPT_SCALE" <<'PY'
import csv, math, sys
out, n, scale = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
rows = list(csv.reader(open("data/traces/azure_llm_code_2023.csv")))
with open(f"{out}/trace.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(rows[0])
    for r in rows[1:n + 1]:
        w.writerow([r[0], max(1, math.ceil(int(r[1]) / scale)), r[2]])
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
for name, layers in (("fast", 2), ("slow", 6)):
    cost = open(f"{out}/cost-{name}.yaml").read().strip()
    open(f"{out}/worker-{name}.yaml", "w").write(
        common + llm % layers + "simulation: {seed: 1, window_s: 5, cost_model: " + cost + "}\n")
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
text = text.replace("path: trace.csv}\n", "path: trace.csv}\n  target_rate_rps: %s\n" % rate)
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
# Light load (2 requests/s) on the first (fast) worker, called directly and through a
# gateway with it as its only backend (with and without keep-alive), interleaved twice.
# The gateway with and without its backend keep-alive pool (`gateway.keep_alive`).
gateway_spec direct-spec least_outstanding 2 0 0
KEEPALIVE=false gateway_spec direct-spec-nokeep least_outstanding 2 0 0
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
print(f"{max(0.0, statistics.median(v) - statistics.median(d)):.3f}")
PY
)
echo "$HOP" > "$OUT/hop-ms.txt"

echo "==> capacity (simulated, least_outstanding)" >&2
for rate in 1 2 4 8 16 32; do
  gateway_spec "cap-$rate" least_outstanding "$rate" "$HOP"
  $NICE "$T" simulate "$OUT/cap-$rate.yaml" --out "$OUT/cap-$rate" --quiet > /dev/null
done
# Capacity: the highest rate of the grid at which at least 90 % of the requests meet both
# SLOs (goodput / offered rate) in the simulator.
CAP=$(python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
best = 1
for rate in (1, 2, 4, 8, 16, 32):
    s = json.load(open(f"{out}/cap-{rate}/summary.json"))
    if s["llm"]["goodput_rps"] >= 0.9 * s["offered_rps"]:
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
  for p in $POLICIES; do
    name="$p-$load"
    gateway_spec "gw-$name" "$p" "$rate" "$HOP"
    through_gateway "live-$name" "$OUT/gw-$name.yaml"
    $NICE "$T" simulate "$OUT/gw-$name.yaml" --out "$OUT/sim-$name" --quiet > /dev/null
  done
done
cat /proc/loadavg > "$OUT/loadavg-end.txt"
cleanup
PIDS=()
fi

python3 scripts/llm_gateway_doc.py "$OUT" > "$DOC"
echo "wrote $DOC" >&2
