#!/usr/bin/env bash
# Regenerates docs/results/pard.md, its charts and docs/results/pard/report.html (all the
# runs on one page, tessera report): every PARD workload under every policy
# preset, a λ sweep and the fixed-instance stress test. Deterministic (fixed seeds).
# Takes about 20 minutes on this loaded 2-core machine (the burst grid runs GRID_JOBS=2
# simulations at once; about 16 of the 20 minutes).
#   scripts/pard-results.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# TESSERA=path/to/tessera skips the build and uses that binary.
T=$(scripts/release-build.sh)
OUT=out/pard
GRID_OUT=out/pard-grid  # the burst grid's runs, apart so that report.html stays small
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

ONOFF="tm-onoff lv-onoff ga-onoff da-onoff lv-azure-onoff lv-onoff-loss"
AZURE_REAL="tm-azure-real lv-azure-real ga-azure-real da-azure-real"
BURSTY="$ONOFF $AZURE_REAL"
APPS="tm lv ga da"
CAP_SCALES=0.5,0.6,0.7,0.75,0.8,0.85,0.9,0.95,1,1.05,1.1
BURST_SEEDS=1,2
BURST_POLICIES=nexus,clipper++,pard,pard-backlog-mu,pard-local-mu,pard-hbf,pard-instant
# The burst grid: streams of set burst length (s) and peak-to-mean ratio made from the real
# Azure trace (scripts/pard_burst_workloads.py), at these loads of each app's capacity.
GRID_STREAMS=b5-p2,b5-p3,b5-p4,b20-p2,b20-p3,b20-p4,b60-p2,b60-p3,b60-p4
GRID_SEEDS=1,2,3
GRID_LOADS=0.5,0.7,1
GRID_POLICIES=nexus,clipper++,pard,pard-local-mu
GRID_JOBS=${GRID_JOBS:-2}
# PARD_REUSE=1 rewrites the document from the runs already in out/pard and out/pard-grid
# (no simulation).
if [ -z "${PARD_REUSE:-}" ]; then
  for app in tm lv ga da; do
    for trace in steady bursty azure; do
      w="$app-$trace"
      echo "==> $w" >&2
      $T compare "examples/pard/$w.yaml" --out "$OUT/$w" >/dev/null 2>&1
      cp "$OUT/$w/comparison.svg" "docs/results/pard/$w.svg"
    done
  done
  echo "==> bursty (on/off) workloads" >&2
  for w in $BURSTY; do
    echo "==> $w" >&2
    $T compare "examples/pard/$w.yaml" --out "$OUT/$w" >/dev/null 2>&1
    cp "$OUT/$w/comparison.svg" "docs/results/pard/$w.svg"
  done
  echo "==> per-second arrival statistics" >&2
  for w in $BURSTY lv-azure; do
    $T simulate "examples/pard/$w.yaml" --out "$OUT/stream-$w" -q >/dev/null 2>&1
  done
  echo "==> reproducers" >&2
  $T compare examples/pard/repro/forming-batch.yaml --presets naive,nexus,nexus-e2e,pard \
    --out "$OUT/repro-forming-batch" >/dev/null 2>&1
  $T compare examples/pard/repro/lv-pose-loss.yaml \
    --presets nexus,clipper++,nexus-e2e,clipper++-predictive,pard,pard-no-purge,pard-backlog-q,pard-hbf,pard-lbf,pard-fcfs \
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
  # Capacity, measured: the largest Poisson rate (the steady workload's, scaled) at which
  # nexus or pard keeps >= 99 % attainment; then the real Azure trace scaled to 0.7 and 0.9 of it.
  echo "==> capacity per app" >&2
  for app in $APPS; do
    $T compare "examples/pard/$app-steady.yaml" --presets nexus,pard --load-scales "$CAP_SCALES" \
      --out "$OUT/capacity-$app" >/dev/null 2>&1
  done
  echo "==> bursts at 0.7 and 0.9 x capacity" >&2
  for app in $APPS; do
    scales=$(python3 scripts/pard_bursts_doc.py "$OUT" scales "$app" | tr ' ' ,)
    for seed in ${BURST_SEEDS//,/ }; do
      $T compare "examples/pard/$app-azure-real.yaml" --presets "$BURST_POLICIES" \
        --load-scales "$scales" --seed "$seed" --out "$OUT/bursts-$app-s$seed" >/dev/null 2>&1
    done
  done
  echo "==> burst grid: streams of set burst length and peak-to-mean ratio" >&2
  caps=""
  for app in $APPS; do caps="$caps $app=$(python3 scripts/pard_bursts_doc.py "$OUT" cap "$app")"; done
  # shellcheck disable=SC2086
  python3 scripts/pard_burst_workloads.py "$GRID_OUT" make "$GRID_SEEDS" $caps
  for app in $APPS; do
    for st in ${GRID_STREAMS//,/ }; do
      for seed in ${GRID_SEEDS//,/ }; do echo "$app $st-s$seed $seed"; done
    done
  done | xargs -P "$GRID_JOBS" -L 1 sh -c '"$0" compare "$1/workloads/$4-$5.yaml" --presets "$2" \
      --load-scales "$3" --seed "$6" --out "$1/grid-$4-$5" >/dev/null 2>&1' \
      "$T" "$GRID_OUT" "$GRID_POLICIES" "$GRID_LOADS"
fi

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

# The arrival stream's per-second statistics, from a PARD run's timeseries.csv over the
# workload's 240 s (capacity: the Setup table's, the lowest stage's).
capacity() { case "$1" in tm*) echo 1200 ;; lv*) echo 1120 ;; ga*) echo 390 ;; da*) echo 1000 ;; esac; }
stream_stats() {
  echo "| workload | seconds | mean (req/s) | mean / capacity | per-second CV | peak second / mean | peak second / capacity | seconds above capacity | longest run above capacity |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  for w in "$@"; do
    awk -F, -v w="$w" -v cap="$(capacity "$w")" 'NR > 1 && $1 < 240 {
        n++; s += $2; ss += $2 * $2; if ($2 > pk) pk = $2
        if ($2 > cap) { over++; run++; if (run > lr) lr = run } else run = 0 }
      END { m = s / n; sd = sqrt(ss / n - m * m)
        printf "| %s | %d | %.1f | %.2f | %.2f | %.2f | %.2f | %d | %d s |\n", w, n, m, m / cap,
          sd / m, pk / m, pk / cap, over, lr }' "$OUT/stream-$w/timeseries.csv"
  done
}

# PARD's three headline ratios against two baselines per workload, and how many of the
# paper's six targets (goodput ≥ 1.16×, drop rate ≥ 1.6× and invalid rate ≥ 1.5× lower, against
# each baseline) hold. Drop rate is the paper's: dropped plus late, 1 − attainment.
targets() {  # targets BASE1 BASE2 WORKLOAD...
  local b1=$1 b2=$2
  shift 2
  echo "| workload | goodput × $b1 | goodput × $b2 | drop rate ÷ $b1 | drop rate ÷ $b2 | invalid rate ÷ $b1 | invalid rate ÷ $b2 | targets met (of 6) |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
  for item in "$@"; do  # WORKLOAD, or WORKLOAD@SCALE for one load scale of a --load-scales run
    local w=${item%@*} sfx="" name=$item
    [ "$item" != "$w" ] && { sfx=" ×${item#*@}"; name="$w ×${item#*@}"; }
    [ "$sfx" = " ×1" ] && sfx=""
    awk -F, -v w="$name" -v sfx="$sfx" -v b1="$b1" -v b2="$b2" 'NR > 1 { gsub(/"/, "", $1); 
        if (sfx != "") { if (!sub(sfx "$", "", $1)) next } else if ($1 ~ / ×/) next
        g[$1] = $10; d[$1] = 1 - $11; v[$1] = $13 }
      function q(a, b) { return b > 0 ? a / b : (a > 0 ? 1e9 : 1) }
      function f(x) { return x >= 1e9 ? "∞" : sprintf("%.2f", x) }
      END { r[1] = q(g["pard"], g[b1]); r[2] = q(g["pard"], g[b2]); r[3] = q(d[b1], d["pard"])
        r[4] = q(d[b2], d["pard"]); r[5] = q(v[b1], v["pard"]); r[6] = q(v[b2], v["pard"])
        t[1] = t[2] = 1.16; t[3] = t[4] = 1.6; t[5] = t[6] = 1.5; met = 0
        for (i = 1; i <= 6; i++) if (r[i] + 1e-9 >= t[i]) met++
        printf "| %s | %s | %s | %s | %s | %s | %s | %d |\n", w, f(r[1]), f(r[2]), f(r[3]), f(r[4]),
          f(r[5]), f(r[6]), met }' "$OUT/$w/comparison.csv"
  done
}

# Where each policy's requests are lost: the share of its dropped requests dropped at the
# first stage, the middle stages and the last stage, and its dropped and late rates.
drop_places() {  # drop_places DIR POLICY...
  local dir=$1
  shift
  for p in "$@"; do
    awk -F, -v p="$p" -v w="$(basename "$dir")" 'NR > 1 { gsub(/"/, "", $1) } NR > 1 && $1 == p {
        mid = 0; for (i = 17; i < NF; i++) mid += $i
        dr = $8 > 0 ? 100 / $8 : 0
        printf "| %s | %s | %.4f | %.4f | %.0f %% | %.0f %% | %.0f %% |\n", w, p, $8 / $5, $7 / $5,
          $16 * dr, mid * dr, $NF * dr }' "$dir/comparison.csv"
  done
}
drop_places_table() {  # drop_places_table POLICIES WORKLOAD...
  local policies=$1
  shift
  echo "| workload | policy | dropped | late | drops at the first stage | at the middle stages | at the last stage |"
  echo "|---|---|---:|---:|---:|---:|---:|"
  for w in "$@"; do
    # shellcheck disable=SC2086
    drop_places "$OUT/$w" $policies
  done
}

# PARD's parts, taken out one at a time: each ablation's goodput over the whole run and in
# the overload windows, over PARD's (the overload column of comparison.md).
ABLATIONS="pard-instant pard-hbf pard-lbf pard-fcfs pard-lower pard-upper pard-sf pard-back pard-split pard-no-purge pard-backlog-q"
ablation_table() {  # ablation_table overload|whole WORKLOAD...
  local kind=$1
  shift
  printf "| workload | pard"
  for a in $ABLATIONS; do printf " | %s" "${a#pard-}"; done
  echo " |"
  printf "|---|---:"
  for a in $ABLATIONS; do printf "|---:"; done
  echo "|"
  for w in "$@"; do
    awk -F'|' -v w="$w" -v kind="$kind" -v abl="$ABLATIONS" '
      /^\| policy / || /^Drops by stage/ { t++ } t == 1 && /^\| [a-z]/ && !/^\| policy / {
        gsub(/ /, "", $2); split($4, o, " "); x[$2] = kind == "overload" ? o[1] : $3 + 0 }
      END { n = split(abl, a, " "); fmt = kind == "overload" ? "%.3f" : "%.1f"
        printf "| %s | " fmt, w, x["pard"]
        for (i = 1; i <= n; i++) printf " | %.2f", (x["pard"] > 0 ? x[a[i]] / x["pard"] : 0)
        print " |" }' "$OUT/$w/comparison.md"
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
  echo "## Bursty workloads (on/off arrivals and the real Azure trace, the paper's regime)"
  echo
  echo "Per-second arrival rate of each bursty workload's stream (240 s; lv-azure, the older"
  echo "compressed Azure workload, for comparison):"
  echo
  stream_stats $BURSTY lv-azure
  echo
  echo "PARD against the paper's baselines on every bursty workload (from the tables below):"
  echo
  headline
  echo
  echo "### The paper's expected ratios"
  echo
  echo "PARD's goodput, drop-rate (dropped + late) and invalid-rate ratios against the paper's"
  echo "baselines, and how many of the six expected ratios (goodput ≥ 1.16×, drop rate ≥ 1.6× and"
  echo "invalid rate ≥ 1.5× lower, against each) hold:"
  echo
  targets nexus clipper++ $BURSTY
  echo
  echo "The same against tessera's earlier readings, \`nexus-e2e\` and \`clipper++-predictive\`:"
  echo
  targets nexus-e2e clipper++-predictive $BURSTY
  echo
  echo "### Where the requests are lost"
  echo
  echo "Share of each policy's dropped requests dropped at the first, middle and last stages"
  echo "(dropped and late as fractions of all requests):"
  echo
  drop_places_table "nexus clipper++ pard pard-hbf" $BURSTY
  echo
  echo "### PARD's parts, one at a time"
  echo
  echo "Each ablation's goodput over PARD's (the pard column is PARD's own, req/s): instant ="
  echo "no ε band (HBF when μ > 1), hbf / lbf / fcfs = one fixed queue order, lower / upper ="
  echo "λ = 0 / 1, sf = L_sub without queueing or batch wait, back = L_sub = 0, split = the"
  echo "proportional SLO split, no-purge = no purge of hopeless requests, backlog-q = q_i from"
  echo "the backlog:"
  echo
  ablation_table whole $BURSTY
  echo
  echo "The same in the overload windows (the seconds whose arrivals exceed capacity; the"
  echo "pard column is PARD's overload goodput as a fraction):"
  echo
  ablation_table overload $BURSTY
  for w in $BURSTY; do section "$w" "$OUT/$w"; done
  echo
  echo "## Bursts at 0.7 and 0.9 × measured capacity (the real Azure trace, two seeds)"
  echo
  echo "Capacity per app, measured: the largest Poisson rate (the steady workload's rate times"
  echo "a load scale, SLO 1.8 × Σ d) at which \`nexus\` or \`pard\` keeps ≥ 99 % SLO attainment. The \`*-azure-real\`"
  echo "workloads (SLO 2.5 × Σ d) are then scaled (seeded replication of the trace's arrivals)"
  echo "so that their 240-s mean is 0.7 and 0.9 × that capacity:"
  echo
  python3 scripts/pard_bursts_doc.py "$OUT" capacity $APPS
  echo
  python3 scripts/pard_bursts_doc.py "$OUT" tables "$BURST_SEEDS" $APPS
  echo
  echo "## Bursts of set length and peak-to-mean ratio (the burst grid)"
  echo
  echo "Streams made by \`scripts/pard_burst_workloads.py\` from the real Azure LLM code trace"
  echo "(\`data/traces/azure_llm_code_2023.csv\`, 8,819 arrivals over 3,436 s):"
  echo
  echo "- the trace replayed 10× faster (343.6 s, 25.7 req/s) is one *copy*; K copies, each"
  echo "  started at its own seeded uniform offset and wrapped around, are superposed (the"
  echo "  aggregate of K independent groups of the service's users), so every arrival is one of"
  echo "  the trace's own, shifted in time, and the variation inside a second is the trace's;"
  echo "- a square-wave envelope over 300 s with period 5B sets the bursts: each period is quiet"
  echo "  for 2B s, bursts for B s (the burst length) and is quiet for 2B s again. The burst level"
  echo "  is P × the mean (the peak-to-mean ratio) and the quiet level (1 − 0.2 P) / 0.8 × the"
  echo "  mean, so the 300-s mean is the mean; a level x switches on copies 0 … round(47 x) − 1"
  echo "  (47 copies make the mean, about 1,200 req/s);"
  echo "- each app's workload file thins the stream (\`rate_scale\`, seeded) to its measured"
  echo "  capacity (the table above) and keeps the app's \`*-azure-real\` SLO and deployment;"
  echo "  each run (\`tessera compare … --load-scales $GRID_LOADS --seed S\`) thins it further to"
  echo "  0.5, 0.7 and 1.0 × capacity. Seeds $GRID_SEEDS: the stream's copy offsets and the"
  echo "  simulation's seed."
  echo
  echo "Per-second statistics of each stream (300 s, before thinning):"
  echo
  python3 scripts/pard_burst_workloads.py "$GRID_OUT" stats "$GRID_SEEDS"
  echo
  python3 scripts/pard_burst_grid_doc.py "$GRID_OUT" "$GRID_SEEDS" "$GRID_STREAMS" $APPS
  echo
  echo "## Reproducers"
  echo
  echo "### Forming batch: one stage, yolov5m at batch 4, SLO 90 ms, Poisson 70 req/s, no noise"
  echo
  cat "$OUT/repro-forming-batch/comparison.md"
  echo
  echo "### Congested last stage: lv at 1008 req/s Poisson, 4 of 10 pose workers lost at 20 s"
  echo
  cat "$OUT/repro-lv-pose-loss/comparison.md"
  echo
  echo "Where each policy's requests are lost on this reproducer:"
  echo
  echo "| workload | policy | dropped | late | drops at the first stage | at the middle stages | at the last stage |"
  echo "|---|---|---:|---:|---:|---:|---:|"
  drop_places "$OUT/repro-lv-pose-loss" nexus clipper++ nexus-e2e clipper++-predictive pard \
    pard-no-purge pard-backlog-q pard-hbf pard-lbf pard-fcfs
  echo
  echo "## λ sweep"
  section "λ sweep on lv-bursty" "$OUT/lambda-lv-bursty"
  section "λ sweep on lv-azure" "$OUT/lambda-lv-azure"
  echo
  echo "## Stress test: fixed instances, load past capacity (lv, Poisson)"
  echo
  echo "The paper's expected ratios at each load scale (as in \"The paper's expected ratios\"):"
  echo
  targets nexus clipper++ stress@0.8 stress@1 stress@1.2 stress@1.5 stress@2
  section "lv stress" "$OUT/stress"
} > "$DOC"
echo "wrote $DOC" >&2
$T report "$OUT" --out docs/results/pard/report.html \
  --title "PARD: every workload under every preset, λ sweeps, stress test" >&2
