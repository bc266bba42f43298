#!/usr/bin/env bash
# Regenerates the day-long runs of docs/results/jigsawserve.md: JigsawServe's controller
# re-planning every bin of a diurnal day (tessera replan, docs/replan.md) for the traffic
# (depth 2), social-media (depth 1) and AR (depth 3) apps, comparing A+S+T, A+S, A+T and
# S+T. Writes docs/results/jigsawserve/day-APP.md (the comparison table), day-APP.svg and
# report.html (every day on one page).
# Deterministic (fixed seeds); the MILP's time limit makes plans that hit it depend on the
# machine's speed.
# Then two sensitivity runs of the traffic app: without stale drops, and with disruptive
# reconfiguration (day-traffic-nostale.md, day-traffic-disruptive.md).
# Then the steady-bin day (traffic, A+S+T) and bin 0's plan alone (day-traffic-steady.md),
# and Fig. 3 under three calibrations of the scaling model (fig3-sensitivity.md);
# `scripts/jigsawserve-results.sh steady` runs only those parts.
#   scripts/jigsawserve-results.sh [APP ...]     (default: traffic social ar, then the rest)
set -euo pipefail
cd "$(dirname "$0")/.."
# TESSERA=path/to/tessera skips the build and uses that binary.
T=$(scripts/release-build.sh)
OUT=out/jigsawserve
DOC=docs/results/jigsawserve
mkdir -p "$OUT" "$DOC"
APPS=("$@")
SENSITIVITY=0
STEADY=0
[ ${#APPS[@]} -eq 0 ] && APPS=(traffic social ar) && SENSITIVITY=1 && STEADY=1
[ "${APPS[*]}" = steady ] && APPS=() && STEADY=1
for app in "${APPS[@]}"; do
  echo "==> $app" >&2
  # CBC gets at most 3 s per solve (they take 0.05-1 s): a day asks for ~30 plans per space.
  $T replan "examples/replan/${app}_day.yaml" --out "$OUT/$app" >&2
  cp "$OUT/$app/comparison.md" "$DOC/day-$app.md"
  cp "$OUT/$app/day.svg" "$DOC/day-$app.svg"
done
if [ "$SENSITIVITY" = 1 ]; then
  echo "==> traffic without stale drops" >&2
  $T replan examples/replan/traffic_day.yaml --stale-ms 1e9 \
    --out "$OUT/traffic-nostale" >&2
  cp "$OUT/traffic-nostale/comparison.md" "$DOC/day-traffic-nostale.md"
  echo "==> traffic, disruptive reconfiguration" >&2
  $T replan examples/replan/traffic_day.yaml --disruptive --space A+S+T \
    --out "$OUT/traffic-disruptive" >&2
  cp "$OUT/traffic-disruptive/comparison.md" "$DOC/day-traffic-disruptive.md"
fi
if [ "$STEADY" = 1 ]; then
  # The steady-bin day (issue 11): every 5-minute bin's demand held steady, A+S+T only.
  echo "==> traffic, steady bins" >&2
  $T replan examples/replan/traffic_day_steady.yaml --space A+S+T --out "$OUT/traffic-steady" >&2
  # Today's modulated day, A+S+T, for the same code and columns.
  $T replan examples/replan/traffic_day.yaml --space A+S+T --out "$OUT/traffic-modulated" >&2
  # One bin in isolation: the plan for bin 0 (33.545 req/s, what the controller planned)
  # simulated for 300 s at bin 0's demand (32.217 req/s), with its drops by task and reason.
  $T plan examples/plan/traffic.yaml --space A+S+T --demand 33.545 --slices 28 \
    --out "$OUT/steady-bin0" >&2
  sed -i 's/rate_rps: 33.545}/rate_rps: 32.217}/; s/duration_s: 60/duration_s: 300/' \
    "$OUT/steady-bin0/run.yaml"
  $T simulate "$OUT/steady-bin0/run.yaml" --out "$OUT/steady-bin0/sim" >&2
  python3 - "$OUT" > "$DOC/day-traffic-steady.md" <<'PY'
import csv, json, sys
out = sys.argv[1]
days = [("steady bins", "traffic-steady"), ("modulated (today's)", "traffic-modulated")]
for i, (name, run) in enumerate(days):
    lines = open(f"{out}/{run}/comparison.md").read().rstrip().splitlines()
    if i == 0:
        print("| day " + lines[0])
        print("|---" + lines[1])
    for line in lines[2:]:
        print(f"| {name} " + line)
print("\n| day | mean demand (req/s) | peak bin (req/s) | mean / peak | mean slices used (of 28) |")
print("|---|---:|---:|---:|---:|")
for name, run in days:
    rows = list(csv.DictReader(open(f"{out}/{run}/A+S+T/bins.csv")))
    demand = [float(r["demand_rps"]) for r in rows]
    slices = [float(r["slices"]) for r in rows]
    print(f"| {name} | {sum(demand) / len(demand):.1f} | {max(demand):.1f} | "
          f"{sum(demand) / len(demand) / max(demand):.3f} | {sum(slices) / len(slices) / 28:.3f} |")
print("\nBin 0's plan (`tessera plan` at 33.545 req/s, the controller's plan for bin 0), its "
      "instances:\n")
print("| task | variant | segment | max batch | count | batching timeout L̂(t) (ms) |")
print("|---|---|---|---:|---:|---:|")
import re
for line in open(f"{out}/steady-bin0/deployment.yaml"):
    m = dict(re.findall(r'(\w+): "?([^,"}]+)"?', line))
    if "task" in m:
        print(f"| {m['task']} | {m['variant']} | {m['segment']} | {m['max_batch']} | "
              f"{m['count']} | {float(m['batch_timeout_ms']):.1f} |")
s = json.load(open(f"{out}/steady-bin0/sim/summary.json"))
print("\nThat plan alone, 300 s at bin 0's demand of 32.217 req/s (`tessera simulate`):\n")
print("| requests | ok | dropped | sub-request violations | drops by reason | drops by task |")
print("|---:|---:|---:|---:|---|---|")
reasons = ", ".join(f"{k}: {v}" for k, v in s["dropped_by_reason"].items())
tasks = ", ".join(f"{k}: {v}" for k, v in s["dropped_by_stage"].items())
print(f"| {s['submitted']} | {s['ok']} | {s['dropped']} | "
      f"{100 * s['subrequests']['violation_rate']:.2f} % | {reasons} | {tasks} |")
PY
fi
if [ "$STEADY" = 1 ]; then
  # Fig. 3 under three calibrations of the scaling model (issue 11): the default (derived
  # MIG/MPS curves, gamma 0.5, roofline, delta fitted on PPipe) and two sensitivity studies.
  for spec in traffic traffic_sensitivity_mild traffic_sensitivity_h100; do
    echo "==> Fig. 3, $spec" >&2
    $T plan "examples/plan/$spec.yaml" --max-demand --slices 840 --out "$OUT/fig3-$spec" >&2
  done
  python3 - "$OUT" > "$DOC/fig3-sensitivity.md" <<'PY'
import json, sys
out = sys.argv[1]
paper = {"Unopt": 1.0, "T": 1.1, "A": 1.6, "A+T": 1.9, "S": 5.25, "S+T": 7.8, "A+S": 12,
         "A+S+T": 21.6}
runs = [("traffic", "default (γ 0.5, roofline, δ 0.994)"),
        ("traffic_sensitivity_mild", "sensitivity: γ 0.35, no roofline, δ 0.75"),
        ("traffic_sensitivity_h100", "sensitivity: γ 0.2, no roofline, δ 0.5")]
res = {}
for spec, _ in runs:
    rows = json.load(open(f"{out}/fig3-{spec}/max_demand.json"))
    res[spec] = {r["search_space"]: r for r in rows}
print("| space | paper (× Unopt) | " + " | ".join(f"{name}: × Unopt (req/s)" for _, name in runs) + " |")
print("|---|---:|" + "---:|" * len(runs))
for space, p in paper.items():
    cells = []
    for spec, _ in runs:
        r = res[spec][space]
        unopt = res[spec]["Unopt"]["max_demand_rps"]
        flag = "" if r["status"] == "optimal" else " (" + r["status"] + ")"
        cells.append(f"{r['max_demand_rps'] / unopt:.2f} ({r['max_demand_rps']:,.0f}){flag}")
    print(f"| {space} | {p} | " + " | ".join(cells) + " |")
PY
fi
# Every day run so far on one page (tessera report); not for the steady part alone, whose
# out/ folder may lack the other days.
[ ${#APPS[@]} -eq 0 ] && [ "$SENSITIVITY" = 0 ] && exit 0
$T report "$OUT" --out "$DOC/report.html" \
  --title "JigsawServe: re-planned days, one colour per search space" >&2
