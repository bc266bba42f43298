#!/usr/bin/env bash
# Regenerates the day-long runs of docs/results/jigsawserve.md: JigsawServe's controller
# re-planning every bin of a diurnal day (tessera replan, docs/replan.md) for the traffic
# (depth 2), social-media (depth 1) and AR (depth 3) apps, comparing A+S+T, A+S, A+T and
# S+T. Writes docs/results/jigsawserve/day-APP.md (the comparison table) and day-APP.svg.
# Deterministic (fixed seeds); the MILP's time limit makes plans that hit it depend on the
# machine's speed.
#   scripts/jigsawserve-results.sh [APP ...]     (default: traffic social ar)
set -euo pipefail
cd "$(dirname "$0")/.."
# TESSERA=path/to/tessera skips the build and uses that binary.
T=$(scripts/release-build.sh)
OUT=out/jigsawserve
DOC=docs/results/jigsawserve
mkdir -p "$OUT" "$DOC"
APPS=("$@")
[ ${#APPS[@]} -eq 0 ] && APPS=(traffic social ar)
for app in "${APPS[@]}"; do
  echo "==> $app" >&2
  # CBC gets 3 s per solve: a day asks for a few dozen plans per space.
  $T replan "examples/replan/${app}_day.yaml" --time-limit 3 --out "$OUT/$app" >&2
  cp "$OUT/$app/comparison.md" "$DOC/day-$app.md"
  cp "$OUT/$app/day.svg" "$DOC/day-$app.svg"
done
