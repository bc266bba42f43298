#!/usr/bin/env bash
# A fleet on loopback (docs/results/serve.md#a-fleet-on-loopback): two `tessera serve
# --worker` processes and a front end whose models are `remote:` over them; `tessera
# loadgen` replays run.yaml's workload against the front end: `steady` (undisturbed),
# `hop` (undisturbed, but the front end predicts from profiles measured through the fleet
# first: `tessera profile --models models.yaml --concurrent 2`, the hop included, instead
# of the `sleep` profiles), `kill` (worker 2 killed with SIGKILL 3 s in and restarted 12 s
# later); and, as the baseline, `local`: run-local.yaml (the same models in the front
# end's own process). Prints markdown tables of goodput, outcomes and the backends'
# counters, with the load average, and of the two profiles the front end predicted from.
#   examples/fleet/run.sh [OUT_DIR] [TESSERA]        RUNS="local steady hop kill" (default)
set -euo pipefail
OUT=${1:-out/fleet} TESSERA=${2:-build/tessera}
RUNS=${RUNS:-local steady hop kill}
HERE=$(cd "$(dirname "$0")" && pwd)
P0=19100 P1=19101 P2=19102
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

wait_ready() {
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$1/v2/health/ready" > /dev/null && return 0
    sleep 0.1
  done
  echo "port $1 never became ready" >&2
  return 1
}
start_worker() {  # PORT LOG -> WORKER_PID
  "$TESSERA" serve --worker "$HERE/worker.yaml" --port "$1" --no-warmup --drain-timeout 1 \
    >> "$2" 2>&1 &
  WORKER_PID=$!
  PIDS+=("$WORKER_PID")
}

# hop: run.yaml with its paths absolute and its profiles those measured through the fleet.
hop_run_spec() {  # DIR
  sed -e 's#file: \.\./serve/profiles/sleep\.yaml#file: profiles.yaml#' \
      -e "s#^\(app\|deployment\|models\): \([^ ]*\)#\1: $HERE/\2#" \
      -e "s#path: \.\./#path: $HERE/../#" "$HERE/run.yaml" > "$1/run.yaml"
}

one_run() {  # MODE (local | steady | hop | kill)
  local mode=$1 dir=$OUT/$1 run=$HERE/run.yaml w1=0 w2=0
  rm -rf "$dir" && mkdir -p "$dir"
  if [ "$mode" = local ]; then
    run=$HERE/run-local.yaml
  else
    start_worker $P1 "$dir/worker1.log"; w1=$WORKER_PID
    start_worker $P2 "$dir/worker2.log"; w2=$WORKER_PID
    wait_ready $P1 && wait_ready $P2
  fi
  if [ "$mode" = hop ]; then
    # Two instances at once per model, as the front end's two instances per stage.
    cat /proc/loadavg > "$dir/loadavg_profile.txt"
    "$TESSERA" profile --models "$HERE/models.yaml" --batches 1,2,4,8 --concurrent 2 \
      --out "$dir/profiles.yaml" > "$dir/profile.log" 2>&1
    hop_run_spec "$dir"
    run=$dir/run.yaml
  fi
  "$TESSERA" serve "$run" --port $P0 --max-inflight 256 --no-model-endpoints \
    > "$dir/front.log" 2>&1 &
  local fe=$!
  PIDS+=("$fe")
  wait_ready $P0
  cat /proc/loadavg > "$dir/loadavg_start.txt"
  "$TESSERA" loadgen "$run" --url "http://127.0.0.1:$P0" --out "$dir/real" \
    --connections 200 --quiet > /dev/null &
  local lg=$!
  if [ "$mode" = kill ]; then
    sleep 3  # inside the trace's opening burst (it is quiet from 8 s to 24 s)
    kill -9 "$w2"
    echo "killed worker 2 at $(date +%T)" >> "$dir/events.txt"
    sleep 12
    start_worker $P2 "$dir/worker2.log"; w2=$WORKER_PID
    echo "restarted worker 2 at $(date +%T)" >> "$dir/events.txt"
  fi
  wait $lg
  cat /proc/loadavg > "$dir/loadavg_end.txt"
  sleep 1  # one health-check period, so the restarted worker shows up again
  curl -s "http://127.0.0.1:$P0/metrics" > "$dir/metrics.txt"
  kill -INT "$fe" 2>/dev/null || true
  [ "$w1" = 0 ] || kill -INT "$w1" "$w2" 2>/dev/null || true
  wait 2>/dev/null || true
}

for mode in $RUNS; do one_run "$mode"; done
python3 - "$OUT" "$HERE/../serve/profiles/sleep.yaml" $RUNS <<'PY'
import json, os, re, sys
out, sleep_profile, runs = sys.argv[1], sys.argv[2], sys.argv[3:]
print("| run | submitted | ok | late | dropped | failed | goodput (req/s) | p50 (ms) | p99 (ms) | "
      "backend 2 up at end | failures b1 / b2 | re-dispatches b1 / b2 | load avg (start → end) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for mode in runs:
    d = f"{out}/{mode}"
    s = json.load(open(f"{d}/real/summary.json"))
    c = json.load(open(f"{d}/real/loadgen.json"))
    m = open(f"{d}/metrics.txt").read()
    def total(name, port):
        return int(sum(float(v) for v in re.findall(
            rf'^{name}{{model="[^"]+",backend="http://127.0.0.1:{port}"}} (\S+)$', m, re.M)))
    up = re.findall(r'^tessera_backend_up{model="[^"]+",backend="http://127.0.0.1:19102"} (\S+)$', m, re.M)
    outcomes = s.get("outcomes", {})
    la0 = open(f"{d}/loadavg_start.txt").read().split()[0]
    la1 = open(f"{d}/loadavg_end.txt").read().split()[0]
    print(f"| {mode} | {s['submitted']} | {s.get('ok', '-')} | {s.get('late', '-')} | "
          f"{s.get('dropped', '-')} | {s.get('failed', '-')} | {s['goodput_rps']:.2f} | "
          f"{s['latency_ms']['p50']:.1f} | {s['latency_ms']['p99']:.1f} | {'/'.join(up) or '-'} | "
          f"{total('tessera_backend_failures_total', 19101)} / {total('tessera_backend_failures_total', 19102)} | "
          f"{total('tessera_backend_redispatches_total', 19101)} / {total('tessera_backend_redispatches_total', 19102)} | "
          f"{la0} → {la1} |")
    print(f"<!-- {mode}: client {json.dumps(c)} -->")

def curves(path):  # variant -> {batch: ms} of a tessera profile file
    got, variant = {}, None
    for line in open(path):
        m = re.match(r'\s*- variant: (\S+)', line)
        if m:
            variant = m.group(1)
        m = re.match(r'\s*latency_ms: \{(.*)\}', line)
        if m and variant:
            got[variant] = {int(k): float(v) for k, v in
                            (kv.split(':') for kv in m.group(1).split(','))}
    return got
hop_file = f"{out}/hop/profiles.yaml"
if "hop" in runs and os.path.exists(hop_file):
    sleep, hop = curves(sleep_profile), curves(hop_file)
    la = open(f"{out}/hop/loadavg_profile.txt").read().split()[0]
    print()
    print(f"Profiles the front end predicted from (median ms; hop: measured through the fleet "
          f"by the hop run, 2 at once, load avg {la}):")
    print()
    print("| variant | batch | sleep profile (ms) | through the fleet (ms) | hop (ms) |")
    print("|---|---|---|---|---|")
    for v in sleep:
        for b in sorted(sleep[v]):
            if v in hop and b in hop[v]:
                print(f"| {v} | {b} | {sleep[v][b]:.2f} | {hop[v][b]:.2f} | "
                      f"{hop[v][b] - sleep[v][b]:+.2f} |")
PY
