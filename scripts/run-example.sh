#!/usr/bin/env bash
# tessera's first run, on the bundled traffic-analysis pipeline (examples/traffic: a YOLOv5
# detector feeding a car classifier and a face classifier, driven by the Azure LLM 2023 code
# trace compressed twentyfold, 51 frames/s on average, bursts past 300):
#   1. plan a deployment for the trace's busy seconds (tessera plan: JigsawServe's MILP
#      picks variants, MIG slices, MPS shares and batch sizes on 8 H100 GPUs);
#   2. simulate that plan on the trace under four policies, a naive one the baseline
#      (tessera compare);
#   3. simulate it under the best of them (tessera simulate);
#   4. write one report of all three (tessera report) and say where to open it.
#   scripts/run-example.sh          (TESSERA=path/to/tessera skips the build)
set -euo pipefail
cd "$(dirname "$0")/.."
T=$(scripts/release-build.sh)
OUT=out/example
DEMAND=150 # frames/s: the trace's 90th-percentile second at this compression
rm -rf "$OUT"
mkdir -p "$OUT"

echo "==> 1. tessera plan: traffic_analysis for $DEMAND frames/s on 8 H100s (56 MIG slices)"
"$T" plan examples/plan/traffic.yaml --demand "$DEMAND" --slices 56 --out "$OUT/plan" |
  sed -n '/^  task .*variant/,/^$/p;/accuracy .* of the best/p'

# The plan's deployment on the real trace (paths are relative to this file).
run_spec() { # run_spec PRESET: the plan's data plane (central queues, jigsaw batching)
  cat <<YAML
app: ../../examples/plan/traffic_app.yaml
deployment: plan/deployment.yaml
profiles:
  - file: plan/profiles.yaml
workload:
  source: {kind: trace, format: azure-llm, path: ../../data/traces/azure_llm_code_2023.csv}
  time_scale: 0.05
policies: {preset: $1, dispatch: central, batching: jigsaw}
simulation: {seed: 1, window_s: 1, hop_delay_ms: 1}
YAML
}
run_spec jigsawserve >"$OUT/run.yaml"

echo "==> 2. tessera compare: the plan on the trace under four policies (baseline: naive)"
"$T" compare "$OUT/run.yaml" --presets naive,jigsawserve,clipper++,pard --out "$OUT/compare" \
  2>/dev/null | sed -n '1,/^$/p'
BEST=$(awk -F, 'NR > 1 { gsub(/"/, "", $1); if ($10 > g) { g = $10; b = $1 } } END { print b }' \
  "$OUT/compare/comparison.csv")

echo "==> 3. tessera simulate: the plan under $BEST, the best goodput above"
run_spec "$BEST" >"$OUT/best.yaml"
"$T" simulate "$OUT/best.yaml" --out "$OUT/simulate" --quiet | sed -n '2,13p'

echo "==> 4. tessera report"
"$T" report "$OUT" --title "tessera example: the traffic pipeline, planned and simulated" >/dev/null
echo "==> open $PWD/$OUT/report.html in a browser (it works offline)"
