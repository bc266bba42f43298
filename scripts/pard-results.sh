#!/usr/bin/env bash
# Regenerates docs/results/pard.md, its charts and docs/results/pard/report.html (all the
# runs on one page, tessera report): every PARD workload under every policy
# preset, a λ sweep and the fixed-instance stress test. Deterministic (fixed seeds).
#   scripts/pard-results.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# TESSERA=path/to/tessera skips the build and uses that binary.
T=$(scripts/release-build.sh)
OUT=out/pard
DOC=docs/results/pard.md
mkdir -p "$OUT" docs/results/pard

section() {  # section TITLE DIR
  echo
  echo "### $1"
  echo
  cat "$2/comparison.md"
  echo
  echo "![$1](pard/$(basename "$2").svg)"
}

for app in tm lv ga da; do
  for trace in steady bursty azure; do
    w="$app-$trace"
    echo "==> $w" >&2
    $T compare "examples/pard/$w.yaml" --out "$OUT/$w" >/dev/null 2>&1
    cp "$OUT/$w/comparison.svg" "docs/results/pard/$w.svg"
  done
done
echo "==> bursty (on/off) workloads" >&2
BURSTY="tm-onoff lv-onoff ga-onoff da-onoff lv-azure-onoff lv-onoff-loss"
for w in $BURSTY; do
  echo "==> $w" >&2
  $T compare "examples/pard/$w.yaml" --out "$OUT/$w" >/dev/null 2>&1
  cp "$OUT/$w/comparison.svg" "docs/results/pard/$w.svg"
done
echo "==> issue 11 reproducers" >&2
$T compare examples/pard/repro/forming-batch.yaml --presets naive,nexus,nexus-e2e,pard \
  --out "$OUT/repro-forming-batch" >/dev/null 2>&1
$T compare examples/pard/repro/lv-pose-loss.yaml \
  --presets nexus,clipper++,nexus-e2e,clipper++-predictive,pard,pard-no-purge,pard-backlog-q \
  --out "$OUT/repro-lv-pose-loss" >/dev/null 2>&1
echo "==> λ sweeps" >&2
for w in lv-bursty lv-azure; do
  $T compare "examples/pard/$w.yaml" --lambdas 0,0.05,0.075,0.1,0.15,0.2,0.5,1 --out "$OUT/lambda-$w" >/dev/null 2>&1
  cp "$OUT/lambda-$w/comparison.svg" "docs/results/pard/lambda-$w.svg"
done
echo "==> stress test" >&2
$T compare examples/pard/lv-stress.yaml \
  --presets naive,nexus,clipper++,nexus-e2e,clipper++-predictive,pard \
  --load-scales 0.8,1.0,1.2,1.5,2.0 --out "$OUT/stress" >/dev/null 2>&1
cp "$OUT/stress/comparison.svg" docs/results/pard/stress.svg

# One row per bursty workload: PARD's ratios against the paper's baselines, from the
# comparison.csv files (drop rate here is the paper's: dropped plus late, 1 − attainment).
headline() {
  echo "| workload | PARD goodput (req/s) | × nexus | × clipper++ | drop rate (paper's: dropped + late) | ÷ nexus | ÷ clipper++ | invalid rate | ÷ nexus | ÷ clipper++ |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for w in $BURSTY; do
    awk -F, -v w="$w" 'NR > 1 { gsub(/"/, "", $1); g[$1] = $10; d[$1] = 1 - $11; v[$1] = $13 }
      function r(a, b) { return b > 0 ? sprintf("%.2f", a / b) : (a > 0 ? "∞" : "1.00") }
      END { printf "| %s | %.1f | %s | %s | %.4f | %s | %s | %.4f | %s | %s |\n", w, g["pard"],
              r(g["pard"], g["nexus"]), r(g["pard"], g["clipper++"]), d["pard"],
              r(d["nexus"], d["pard"]), r(d["clipper++"], d["pard"]), v["pard"],
              r(v["nexus"], v["pard"]), r(v["clipper++"], v["pard"]) }' "$OUT/$w/comparison.csv"
  done
}

{
  cat docs/results/pard.intro.md
  echo
  echo "## Results"
  for app in tm lv ga da; do
    echo
    echo "## $app"
    for trace in steady bursty azure; do section "$app-$trace" "$OUT/$app-$trace"; done
  done
  echo
  echo "## Bursty workloads (on/off arrivals, the paper's regime)"
  echo
  echo "PARD against the paper's baselines on every bursty workload (from the tables below):"
  echo
  headline
  for w in $BURSTY; do section "$w" "$OUT/$w"; done
  echo
  echo "## Issue 11 reproducers"
  echo
  echo "### Forming batch: one stage, yolov5m at batch 4, SLO 90 ms, Poisson 70 req/s, no noise"
  echo
  cat "$OUT/repro-forming-batch/comparison.md"
  echo
  echo "### Congested last stage: lv at 1008 req/s Poisson, 4 of 10 pose workers lost at 20 s"
  echo
  cat "$OUT/repro-lv-pose-loss/comparison.md"
  echo
  echo "## λ sweep"
  section "λ sweep on lv-bursty" "$OUT/lambda-lv-bursty"
  section "λ sweep on lv-azure" "$OUT/lambda-lv-azure"
  echo
  echo "## Stress test: fixed instances, load past capacity (lv, Poisson)"
  section "lv stress" "$OUT/stress"
} > "$DOC"
echo "wrote $DOC" >&2
$T report "$OUT" --out docs/results/pard/report.html \
  --title "PARD: every workload under every preset, λ sweeps, stress test" >&2
