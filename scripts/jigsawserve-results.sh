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
#   scripts/jigsawserve-results.sh [APP ...]     (default: traffic social ar, then both)
set -euo pipefail
cd "$(dirname "$0")/.."
# TESSERA=path/to/tessera skips the build and uses that binary.
T=$(scripts/release-build.sh)
OUT=out/jigsawserve
DOC=docs/results/jigsawserve
mkdir -p "$OUT" "$DOC"
APPS=("$@")
SENSITIVITY=0
[ ${#APPS[@]} -eq 0 ] && APPS=(traffic social ar) && SENSITIVITY=1
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
# Every day run so far on one page (tessera report).
$T report "$OUT" --out "$DOC/report.html" \
  --title "JigsawServe: re-planned days, one colour per search space" >&2
