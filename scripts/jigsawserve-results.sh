#!/usr/bin/env bash
# Regenerates docs/results/jigsawserve.md and everything under docs/results/jigsawserve/
# Every table and every number in the page comes from this run.
#   1. Fig. 3: the largest demand of every search space (tessera plan --max-demand) for the
#      traffic app at 840 slices under four calibrations of the scaling model, the social
#      and AR apps at 840 slices, and traffic at 28 slices.
#   2. Reproducibility: the same plan alone and beside a CPU hog; traffic's A+T maximum at
#      840 slices three times.
#   3. One plan simulated (traffic, 20 req/s, 28 slices), with and without stale drops.
#   4. A day of re-planning (tessera replan) for traffic, social media and AR in A+S+T,
#      A+S, A+T and S+T; traffic without stale drops and with disruptive reconfiguration.
#   5. The steady-bin day (A+S+T) and why it misses the paper's < 1 %: bin 0's plan alone
#      under variations of slack, staleness and fan-out, then the steady day with the two
#      levers that bring bin 0 near 1 % (staleness 100 ms, slack 100 %).
#   6. report.html (every day on one page) and the page itself (scripts/jigsawserve_doc.py).
# Deterministic: fixed seeds, and the MILPs stop at node limits (a solve the wall-clock
# backstop cuts short is counted in the tables). Each section records its wall-clock time,
# and the page states their sum (the time on one core).
#   scripts/jigsawserve-results.sh            all sections, one after the other, then the page
#   scripts/jigsawserve-results.sh SECTION... only those (fig3 repro bin0s steady days), e.g. in
#                                             parallel shells; then `... page` writes the page
# TESSERA=path/to/tessera skips the build.
set -euo pipefail
cd "$(dirname "$0")/.."
T=$(scripts/release-build.sh)
OUT=out/jigsawserve
DOC=docs/results/jigsawserve
mkdir -p "$OUT" "$DOC"
SECTIONS=("$@")
[ ${#SECTIONS[@]} -eq 0 ] && SECTIONS=(fig3 repro bin0s steady days page)
START=$(date +%s)
step() { echo "==> $* ($(($(date +%s) - START)) s)" >&2; }
plan() { # plan ARGS... --out DIR: its printout in DIR.txt; exit status 3 (no plan) is a result
  "$T" plan "$@" >"$OUT/$(basename "${@: -1}").txt" || [ $? -eq 3 ]
}

jigsaw_plane() { # RUN.yaml PRESET: the run spec with its policies block replaced by PRESET
  python3 - "$1" "$2" <<'PY'
import sys
head, _, rest = open(sys.argv[1]).read().partition("\npolicies:")
lines = rest.split("\n")
i = 1
while i < len(lines) and (lines[i].startswith(" ") or not lines[i]):
    i += 1
print(f"{head}\npolicies:  # JigsawServe's data plane\n  preset: {sys.argv[2]}")
print("\n".join(lines[i:]), end="")
PY
}

fig3() {
for spec in traffic traffic_no_roofline traffic_sensitivity_mild traffic_sensitivity_h100 \
  social ar; do
  step "Fig. 3, $spec, 840 slices"
  plan "examples/plan/$spec.yaml" --max-demand --slices 840 --out "$OUT/fig3-$spec"
done
step "Fig. 3, traffic, 28 slices"
plan examples/plan/traffic.yaml --max-demand --slices 28 --out "$OUT/fig3-traffic-28"
}

# 2. Reproducibility: a plan with a busy loop on another core, and A+T's maximum thrice.
repro() {
step "the same plan alone and beside a CPU hog"
plan examples/plan/traffic.yaml --out "$OUT/repro-alone"
(while :; do :; done) &
HOG=$!
plan examples/plan/traffic.yaml --out "$OUT/repro-hog"
kill "$HOG"
for i in 1 2 3; do
  step "traffic A+T maximum at 840 slices, run $i"
  plan examples/plan/traffic.yaml --max-demand --space A+T --slices 840 --out "$OUT/repro-at-$i"
done

# 3. The plan of section 2 (20 req/s, 28 slices) simulated for 60 s under JigsawServe's data
#    plane, with and without its stale drops (the run spec the plan writes carries the data
#    plane its verification picked; here its policies block is replaced by the paper's).
step "simulating the 20 req/s plan"
jigsaw_plane "$OUT/repro-alone/run.yaml" jigsawserve >"$OUT/repro-alone/run-jigsaw.yaml"
jigsaw_plane "$OUT/repro-alone/run.yaml" '"jigsawserve:86400000"' \
  >"$OUT/repro-alone/run-nostale.yaml"
"$T" simulate "$OUT/repro-alone/run-jigsaw.yaml" --quiet --out "$OUT/sim-20" >/dev/null
"$T" simulate "$OUT/repro-alone/run-nostale.yaml" --quiet --out "$OUT/sim-20-nostale" >/dev/null
}

# 4. Days of re-planning.
days() {
for app in traffic social ar; do
  step "day: $app"
  "$T" replan "examples/replan/${app}_day.yaml" --quiet --out "$OUT/day-$app" >/dev/null
done
step "day: traffic without stale drops"
"$T" replan examples/replan/traffic_day.yaml --stale-ms 86400000 --space A+S+T --quiet \
  --out "$OUT/day-traffic-nostale" >/dev/null
step "day: traffic, disruptive reconfiguration"
"$T" replan examples/replan/traffic_day.yaml --disruptive --space A+S+T --quiet \
  --out "$OUT/day-traffic-disruptive" >/dev/null
}

# 5. The steady-bin day (A+S+T) with the paper's settings and with the two levers the bin-0
# study points to.
steady() {
step "day: traffic, steady bins"
"$T" replan examples/replan/traffic_day_steady.yaml --space A+S+T --quiet \
  --out "$OUT/day-steady" >/dev/null
step "day: traffic, steady bins, stale after L̂(t) + 100 ms"
"$T" replan examples/replan/traffic_day_steady.yaml --space A+S+T --stale-ms 100 --quiet \
  --out "$OUT/day-steady-stale100" >/dev/null
step "day: traffic, steady bins, slack 1.0"
"$T" replan examples/replan/traffic_day_steady.yaml --space A+S+T --slack 1.0 --quiet \
  --out "$OUT/day-steady-slack1.0" >/dev/null
}

# Bin 0 of the steady day alone: the controller plans it for 33.545 req/s (its own demand on
# the 5 % step grid) and the bin brings 32.217 req/s. One change at a time (seconds each).
bin0() { # bin0 NAME SLACK SED-EXPRESSION: plan bin 0 with SLACK as the controller does (no
  # verification), put JigsawServe's data plane in its run.yaml, edit it, simulate 300 s
  local dir="$OUT/bin0-$1"
  plan examples/plan/traffic.yaml --space A+S+T --demand 33.545 --slices 28 --slack "$2" \
    --no-verify --out "$dir"
  jigsaw_plane "$dir/run.yaml" jigsawserve >"$dir/run-jigsaw.yaml"
  sed "s/rate_rps: [0-9.]*}/rate_rps: 32.217}/; s/duration_s: 60/duration_s: 300/; $3" \
    "$dir/run-jigsaw.yaml" >"$dir/run.yaml"
  "$T" simulate "$dir/run.yaml" --quiet --out "$dir/sim" >/dev/null
}
bin0s() {
step "bin 0 alone, variations"
bin0 default 0.05 ''
bin0 nostale 0.05 's/preset: jigsawserve/preset: "jigsawserve:86400000"/'
for ms in 40 100 200; do bin0 "stale$ms" 0.05 "s/preset: jigsawserve/preset: \"jigsawserve:$ms\"/"; done
# The same app with a fixed fan-out (every frame brings the mean number of objects).
sed 's/fanout: poisson/fanout: fixed/' examples/plan/traffic_app.yaml >"$OUT/traffic_app_fixed.yaml"
bin0 fixedfanout 0.05 "s|app: .*|app: ../traffic_app_fixed.yaml|"
for s in 0.3 0.5 1.0; do bin0 "slack$s" "$s" ''; done
}

# 6. The report and the page.
page() {
step "report and page"
# Days that did not finish (a section cut short) keep their old chart out of the page:
# the page names them as not run.
rm -rf "$OUT/report"
mkdir -p "$OUT/report"
for app in traffic social ar; do
  rm -f "$DOC/day-$app.svg"
  if [ -f "$OUT/day-$app/summary.json" ]; then
    cp "$OUT/day-$app/day.svg" "$DOC/day-$app.svg"
    cp -r "$OUT/day-$app" "$OUT/report/day-$app"
  fi
done
rm -f "$DOC/report.html"
if [ -n "$(ls "$OUT/report")" ]; then
  "$T" report "$OUT/report" --out "$DOC/report.html" \
    --title "JigsawServe: re-planned days, one colour per search space" >&2
fi
rm -f "$DOC"/day-*.md "$DOC"/fig3-sensitivity.md
python3 scripts/jigsawserve_doc.py "$OUT" >docs/results/jigsawserve.md
step "done: docs/results/jigsawserve.md"
}

for section in "${SECTIONS[@]}"; do
  case "$section" in
  fig3 | repro | bin0s | days | steady)
    # Wall-clock and CPU seconds (the section's processes: user + system) of the section.
    rm -f "$OUT/time-$section" "$OUT/cpu-$section"
    t0=$(date +%s)
    TIMEFORMAT=%U+%S
    { time "$section" 2>&3; } 3>&2 2>"$OUT/cpu-$section.raw"
    echo $(($(date +%s) - t0)) >"$OUT/time-$section"
    python3 -c "import sys; print(round(eval(open(sys.argv[1]).read())))" \
      "$OUT/cpu-$section.raw" >"$OUT/cpu-$section"
    rm -f "$OUT/cpu-$section.raw"
    ;;
  page) page ;;
  *) echo "unknown section: $section (fig3 repro bin0s steady days page)" >&2 && exit 2 ;;
  esac
done
