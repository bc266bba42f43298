#!/usr/bin/env bash
# Regenerates docs/results/superserve.md (and docs/results/superserve/report.html, every run
# on one page): SuperServe's policy grids (Figs. 9, 10, 11c), the
# worker-loss run (Fig. 11a), a per-minute-counts trace and the long-burst traces, on the
# supernet profile that `tessera supernet profile` measured (examples/superserve/), and
# MaxBatch against SlackFit on a synthetic GPU-like profile (examples/superserve-gpu/).
# Deterministic (fixed seeds).
#   scripts/superserve-results.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# TESSERA=path/to/tessera skips the build and uses that binary.
T=$(scripts/release-build.sh)
OUT=out/superserve
DOC=docs/results/superserve.md
mkdir -p "$OUT" docs/results/superserve
# Clipper+ at three accuracy points (76.4, 78.6, 79.5 % top-1), as the paper's versions.
PRESETS="slackfit,slackfit-drain,maxbatch,maxacc,infaas,clipper+:d00000-e210011001111001100-w210000"
PRESETS="$PRESETS,clipper+:d02100-e222211001222001200-w210000,clipper+:d22222-e222222222222222222-w220000"

# Long bursts: SlackFit (the default reading: early dropping and the rate fallback) and its
# other readings of the no-fit case (slackfit-drain: serve late with the fastest subnet at
# batch 16; slackfit-drop: dropping only; slackfit-early: dropping and the fit fallback,
# with 5, 8 and the default 10 buckets) and the baselines with and without the same dropping.
LONG="slackfit,slackfit-drain,slackfit-drop,slackfit-early,slackfit-early:8,slackfit-early:5,infaas"
LONG="$LONG,infaas-early,maxbatch,maxbatch-early"
# MaxBatch against SlackFit on the synthetic GPU-like profile (examples/superserve-gpu).
GPU="slackfit,slackfit-drain,slackfit-drop,slackfit-early,maxbatch,maxbatch-early,maxacc,infaas"

run() {  # run NAME [FOLDER] [PRESETS]
  echo "==> $1" >&2
  local dir=${2:-superserve}
  $T compare "examples/$dir/$1.yaml" --presets "${3:-$PRESETS}" --out "$OUT/$1" >/dev/null 2>&1
  cp "$OUT/$1/comparison.svg" "docs/results/superserve/$1.svg"
}
section() {  # section NAME TITLE
  echo
  echo "### $2"
  echo
  head -2 "$OUT/$1/comparison.md"
  grep '^| [a-z]' "$OUT/$1/comparison.md" | grep -v '^| policy' || true
  echo
  echo "![$2](superserve/$1.svg)"
}

for v in 745 1225 1385; do for cv in 2 4 8; do run "burst-v$v-cv$cv"; done; done
for to in 1200 1700 1950; do for tau in 62.5 125 1250; do run "ramp-to$to-tau$tau"; done; done
run faults
run maf
for s in 1 2 3; do run "long-bursts-s$s" superserve "$LONG"; done
for v in 4440 5550; do for cv in 2 4 8; do run "gpu-v$v-cv$cv" superserve-gpu "$GPU"; done; done

{
  cat docs/results/superserve.intro.md
  echo
  echo "## Fig. 9 grid: burstiness (base 375 req/s + Gamma stream)"
  for v in 745 1225 1385; do for cv in 2 4 8; do
    section "burst-v$v-cv$cv" "λ_v = $v req/s, CV² = $cv"
  done; done
  echo
  echo "## Fig. 10 grid: ramps from 625 req/s"
  for to in 1200 1700 1950; do for tau in 62.5 125 1250; do
    section "ramp-to$to-tau$tau" "to $to req/s at τ = $tau req/s²"
  done; done
  echo
  echo "## Fig. 11a: losing a worker every 12 s down to half"
  section faults "875 req/s, CV² = 2, workers 0–3 lost at 12, 24, 36, 48 s"
  echo
  echo "## Per-minute counts, compressed"
  section maf "functions_sample.csv at 0.8 × C_min"
  echo
  echo "## Long bursts: per-second CV ≈ 0.8, bursts of 15–35 s, mean 0.5 × C_min"
  for s in 1 2 3; do
    section "long-bursts-s$s" "long_bursts_s$s.csv (290 s)"
  done
  echo
  echo "## GPU-like profile: MaxBatch against SlackFit (Fig. 11c), SLO 36 ms"
  for v in 4440 5550; do for cv in 2 4 8; do
    section "gpu-v$v-cv$cv" "base $((v == 5550 ? 1500 : 1200)) + Gamma $v req/s, CV² = $cv"
  done; done
} > "$DOC"
echo "wrote $DOC" >&2
$T report "$OUT" --out docs/results/superserve/report.html \
  --title "SuperServe: SlackFit and baselines on burst, ramp, worker-loss and MAF traces" >&2
