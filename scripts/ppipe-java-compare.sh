#!/usr/bin/env bash
# `tessera ppipe-simulate` beside PPipe's own Java cluster simulator on the same plan and
# the same number of requests: CPU seconds of each (pinned to one core, taking turns) and
# each one's SLO attainment.
#
#   scripts/ppipe-java-compare.sh [RUNS]        (default 3 runs of each, interleaved)
#
# Environment:
#   TESSERA=build-rel/tessera   the binary to time (and TESSERA_BASE=... to time a second
#                               one, e.g. main's, in the same interleaved loop)
#   PPIPE_JAVA=/work/ppipe-java/build   where scripts/ppipe-java-build.sh put the Java
#                               simulator (its `classpath` file); without it only tessera runs
#   PPIPE_PLAN=FILE             a plan in PPipe's JSON format (default: the 3-partition
#                               pipeline of PPipe's convnext_large L4-T4 ablation plan, below)
#   REQUESTS=1000000  CPU=1  OUT=out/ppipe-java-compare
#
# The plan: PPipe's artifact plans convnext_large on 25 L4 + 75 T4 at 10 Gbit/s
# (data/plans/ablation/convnext_large_L4-T4_25-75_bw-gbps-10_sla-multiplier-5_v4.json); its
# third pipeline cuts the model into 3 partitions on pools of 25 T4, 21 L4 and 39 T4 (85
# vGPUs, batch 2, 4,169.6 req/s planned). Both simulators get that pipeline alone, Poisson
# arrivals at its planned rate for REQUESTS / rate seconds, the plan's SLO (53.2 ms), the
# block timings of data/profiles/ppipe (the artifact's), and links of the plan's 10 Gbit/s.
# tessera runs with the first-look rule (--first-look 0.95), as PPipe's simulator does
# (its scheduler tries only sizes >= round(0.95 x planned) the first time a request heads
# the queue); without it attainment differs (0.86 against 0.99 here).
# The Java side prints nothing; its attainment is read from its request logs (a second run
# with --logdir, not timed). Its arrivals are unseeded, so attainment differs a little
# from run to run. The two network models differ in detail: PPipe's simulator keeps one
# "reserved until" time per worker and per link, tessera a table of intervals.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS="${1:-3}"
TESSERA="${TESSERA:-build-rel/tessera}"
TESSERA_BASE="${TESSERA_BASE:-}"
PPIPE_JAVA="${PPIPE_JAVA:-/work/ppipe-java/build}"
REQUESTS="${REQUESTS:-1000000}"
CPU="${CPU:-1}"
OUT="${OUT:-out/ppipe-java-compare}"
DATA=data/profiles/ppipe
mkdir -p "$OUT"

[ -x "$TESSERA" ] || { echo "no tessera binary at $TESSERA (set TESSERA=)" >&2; exit 1; }

# The plan in PPipe's format (default: the artifact's pipeline, written out here from the
# numbers the artifact's plan holds) and the same plan as tessera's plan.json.
PLAN_JAVA="$OUT/plan-ppipe.json"
if [ -n "${PPIPE_PLAN:-}" ]; then
  cp "$PPIPE_PLAN" "$PLAN_JAVA"
else
  cat >"$PLAN_JAVA" <<'EOF'
[{"xput": 4169.562195969496, "sla": 53228.65572033898,
  "config": {"dnn_name": "convnext_large", "gpu_name_arr": ["L4", "T4"], "bw_gbps": 10,
             "num_gpu_per_server_arr": [4, 2]},
  "pipelines": [{"xput": 4169.562195969496, "partitions": [
    {"dnn": "convnext_large", "layers": [0, 4], "gpu": "T4", "mps": 0, "bs": 2,
     "num_gpu_per_server": 2, "num_gpu": 25.0, "lat_infer": 11964.0,
     "lat_trans": 550.5024000000001, "xput": 4179.204279505182},
    {"dnn": "convnext_large", "layers": [4, 8], "gpu": "L4", "mps": 0, "bs": 2,
     "num_gpu_per_server": 4, "num_gpu": 21.0, "lat_infer": 10073.0,
     "lat_trans": 550.5024000000001, "xput": 4169.562195969424},
    {"dnn": "convnext_large", "layers": [8, 10], "gpu": "T4", "mps": 0, "bs": 2,
     "num_gpu_per_server": 2, "num_gpu": 39.0, "lat_infer": 18685.0, "lat_trans": 0.0,
     "xput": 4174.471501204174}
  ]}]}]
EOF
fi
PLAN_TESSERA="$OUT/plan.json"
read -r RATE DURATION_S < <(python3 - "$PLAN_JAVA" "$PLAN_TESSERA" "$REQUESTS" <<'EOF'
import json, sys
src, dst, requests = sys.argv[1], sys.argv[2], int(sys.argv[3])
dnn = json.load(open(src))[0]
cfg = dnn["config"]
per_server = dict(zip(cfg["gpu_name_arr"], cfg["num_gpu_per_server_arr"]))
counts = {}
pipes = []
for p in dnn["pipelines"]:
    parts = []
    for k, q in enumerate(p["partitions"]):
        mps = q["mps"] + 1
        vgpus = round(q["num_gpu"] * mps)
        counts[q["gpu"]] = counts.get(q["gpu"], 0) + -(-vgpus // mps)
        parts.append({"first_block": q["layers"][0], "end_block": q["layers"][1],
                      "gpu_class": q["gpu"], "mps": mps, "vgpus": vgpus,
                      "infer_ms": q["lat_infer"] / 1e3,
                      # PPipe's lat_trans is a partition's outgoing transfer
                      "transfer_in_ms": p["partitions"][k - 1]["lat_trans"] / 1e3 if k else 0.0,
                      "in_bytes_per_sample": 0.0,  # from the profiles' trans-size file
                      "throughput": q.get("xput", p["xput"])})
    pipes.append({"batch": p["partitions"][0]["bs"], "latency_ms": 0.0,
                  "throughput": p["xput"], "partitions": parts})
rate = sum(p["xput"] for p in dnn["pipelines"])
plan = {"method": "ppipe", "slo_margin": 0.0,
        # bw_gbps is already the effective bandwidth: fraction 1
        "cluster": {"bandwidth_fraction": 1.0,
                    "classes": [{"name": c, "count": n, "gpus_per_server": per_server.get(c, 1),
                                 "nic_gbps": cfg["bw_gbps"], "max_mps": 4}
                                for c, n in sorted(counts.items())]},
        "dnns": [{"dnn": cfg["dnn_name"], "weight": 1.0, "slo_ms": dnn["sla"] / 1e3,
                  "throughput": rate, "pipelines": pipes}],
        "solve": {"status": "feasible (LIMIT)", "seconds": 0.0, "gap": 0.0, "templates": 0}}
json.dump(plan, open(dst, "w"), indent=1)
print(rate, requests / rate)
EOF
)
DURATION_US=$(python3 -c "print(int(round($DURATION_S * 1e6)))")
LOAD_QPS=$(python3 -c "print(int(round($RATE)))")
echo "plan: $PLAN_TESSERA (rate $RATE req/s, $DURATION_S s for $REQUESTS requests)"

JAVA_OK=0
if [ -f "$PPIPE_JAVA/classpath" ] && command -v java >/dev/null; then
  JAVA_OK=1
else
  echo "PPipe's Java simulator is NOT available (no $PPIPE_JAVA/classpath or no java):"
  echo "  build it with scripts/ppipe-java-build.sh PPIPE_CHECKOUT/cluster-sim $PPIPE_JAVA;"
  echo "  timing tessera only."
fi

cpu_of() {  # the user + system CPU seconds of a command, from /usr/bin/time
  local f="$1"; shift
  /usr/bin/time -f "%U %S %M" -o "$f" taskset -c "$CPU" "$@" >/dev/null 2>"$f.err" ||
    { echo "FAILED: $*" >&2; cat "$f.err" >&2; exit 1; }
  awk '{printf "%.3f %d\n", $1 + $2, $3}' "$f"
}
tessera_run() {
  "$1" ppipe-simulate "$PLAN_TESSERA" --profiles "$DATA" --loads 1.0 --duration "$DURATION_S" \
    --seed 1 --first-look 0.95 --csv "$2"
}
java_run() {
  java -ea -cp "$(cat "$PPIPE_JAVA/classpath")" edu.purdue.dsnl.clustersim.Main ilp_partitioned \
    --json-plan-path "$PLAN_JAVA" --latency-root "$DATA/models/block-timing-tf32" \
    --mapping-root "$DATA/prepartition_mappings" -t "$LOAD_QPS" -d "$DURATION_US" "$@"
}
export -f tessera_run java_run
export PLAN_TESSERA PLAN_JAVA DATA DURATION_S DURATION_US LOAD_QPS PPIPE_JAVA

RESULTS="$OUT/times.csv"
echo "run,side,cpu_s,peak_rss_kb" >"$RESULTS"
for i in $(seq 1 "$RUNS"); do
  read -r t m < <(cpu_of "$OUT/t.time" bash -c "tessera_run $TESSERA $OUT/tessera.csv")
  echo "$i,tessera,$t,$m" >>"$RESULTS"
  if [ -n "$TESSERA_BASE" ]; then
    read -r t m < <(cpu_of "$OUT/b.time" bash -c "tessera_run $TESSERA_BASE $OUT/base.csv")
    echo "$i,tessera-base,$t,$m" >>"$RESULTS"
  fi
  if [ "$JAVA_OK" = 1 ]; then
    read -r t m < <(cpu_of "$OUT/j.time" bash -c "java_run")
    echo "$i,ppipe-java,$t,$m" >>"$RESULTS"
  fi
  echo "run $i: $(tail -n +2 "$RESULTS" | grep "^$i," | cut -d, -f2,3 | tr '\n' ' ')"
done

JAVA_ATT=""
if [ "$JAVA_OK" = 1 ]; then
  rm -rf "$OUT/java-log"
  java_run --logdir "$OUT/java-log" >/dev/null 2>&1
  # The last forwarding stage's log holds each served request with its last batch's
  # completion time; master.csv every request that entered (dispatched or dropped).
  JAVA_ATT=$(python3 - "$OUT/java-log" <<'EOF'
import csv, glob, os, sys
d = sys.argv[1]
total = sum(1 for _ in open(os.path.join(d, "master.csv"))) - 1
last = sorted(glob.glob(os.path.join(d, "0-*.csv")))[-1]
ok = 0
with open(last) as f:
    for r in csv.DictReader(f):
        ok += int(r["timeComplete"]) <= int(r["deadline"])
print(f"{ok / total:.6f} {total}")
EOF
)
fi

python3 - "$RESULTS" "$OUT/tessera.csv" "$JAVA_ATT" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
sides = {}
for r in rows:
    sides.setdefault(r["side"], []).append(float(r["cpu_s"]))
tess = next(csv.DictReader(open(sys.argv[2])))
print()
print("| simulator | runs | CPU s (median) | CPU s (all) | requests | SLO attainment |")
print("|---|---:|---:|---:|---:|---:|")
for side, ts in sides.items():
    att, n = "", ""
    if side.startswith("tessera"):
        att, n = f'{float(tess["slo_attainment"]):.4f}', f'{int(float(tess["submitted"])):,}'
    elif sys.argv[3]:
        a, total = sys.argv[3].split()
        att, n = f"{float(a):.4f}", f"{int(total):,}"
    print(f"| {side} | {len(ts)} | {statistics.median(ts):.2f} | "
          f"{' / '.join(f'{t:.2f}' for t in ts)} | {n} | {att} |")
if "ppipe-java" in sides:
    tm = statistics.median(sides["tessera"])
    jm = statistics.median(sides["ppipe-java"])
    ratios = [j / t for t, j in zip(sides["tessera"], sides["ppipe-java"])]
    print(f"\nPPipe's Java / tessera CPU time: {jm / tm:.1f}x (medians); "
          f"pairwise {statistics.median(ratios):.1f}x (median of {len(ratios)} runs)")
if "tessera-base" in sides:
    print(f"base / tessera CPU time: "
          f"{statistics.median(sides['tessera-base']) / statistics.median(sides['tessera']):.2f}x")
EOF
