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
echo "==> λ sweeps" >&2
for w in lv-bursty lv-azure; do
  $T compare "examples/pard/$w.yaml" --lambdas 0,0.05,0.075,0.1,0.15,0.2,0.5,1 --out "$OUT/lambda-$w" >/dev/null 2>&1
  cp "$OUT/lambda-$w/comparison.svg" "docs/results/pard/lambda-$w.svg"
done
echo "==> stress test" >&2
$T compare examples/pard/lv-stress.yaml --presets naive,nexus,clipper++,pard \
  --load-scales 0.8,1.0,1.2,1.5,2.0 --out "$OUT/stress" >/dev/null 2>&1
cp "$OUT/stress/comparison.svg" docs/results/pard/stress.svg

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
