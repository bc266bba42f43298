#!/usr/bin/env bash
# Regenerates docs/results/iserve.md: the analytic GPU model's calibration against
# microsoft/vidur's public timings, Llama-2-70B's 180-configuration ranges beside iServe's
# Fig. 1, the intent comparisons against max-PP, max-TP and the AlpaServe-like planner
# (examples/iserve/large-models.yaml at three rate scales) and the placement study
# (examples/iserve/placement.yaml). Deterministic (fixed seeds); about ten seconds after
# the build. If scripts/iserve-estimation.sh exists (the fingerprint estimator's results),
# it runs too, at both its scales, and the page links docs/results/iserve/estimation.md and
# estimation-wide.md.
#   scripts/iserve-results.sh          (TESSERA=path/to/tessera or tessera-torch skips the build)
set -euo pipefail
cd "$(dirname "$0")/.."
T=$(scripts/release-build.sh)
OUT=out/iserve
mkdir -p "$OUT" docs/results/iserve
python3 scripts/iserve-calibrate.py data/gpu > "$OUT/calibration.md"
for gpu in a6000 h100-80g; do
  $T llm config-map data/llm/llama-2-70b --gpu "$gpu" --gpus 8 --ranges > "$OUT/ranges-$gpu.md"
done
$T llm config-map data/llm/llama-2-70b --gpu a6000 --gpus 8 --out "$OUT/llama-2-70b-a6000.json" >&2
for r in 0.1 0.2 0.4; do
  sed "s/^rate_scale: .*/rate_scale: $r/" examples/iserve/large-models.yaml > "examples/iserve/.rate-$r.yaml"
  $T llm simulate-cluster "examples/iserve/.rate-$r.yaml" > "$OUT/large-$r.md"
  rm -f "examples/iserve/.rate-$r.yaml"
done
$T llm simulate-cluster examples/iserve/placement.yaml > "$OUT/placement.md"
ESTIMATION=0
if [ -x scripts/iserve-estimation.sh ]; then
  scripts/iserve-estimation.sh >&2 && ISERVE_SCALE=wide scripts/iserve-estimation.sh >&2 && ESTIMATION=1
fi
python3 scripts/iserve-results.py "$OUT" "$ESTIMATION" > docs/results/iserve.md
echo "wrote docs/results/iserve.md" >&2
