#!/usr/bin/env bash
# Runs every example run spec under examples/ through two tessera binaries and compares
# what they write: `simulate` (summary.json, timeseries.csv, latency_histogram.csv) on every
# spec with a workload, and `ppipe-simulate` (its per-point CSV and summary.json) on the
# plan `tessera plan examples/plan/ppipe_hc1_g1.yaml` makes, and `replan` (every CSV and
# JSON it writes) on the replanning specs. For checking that a change
# meant to be invisible (speed, memory) changes no result.
#
#   scripts/examples-identical.sh BASE_TESSERA NEW_TESSERA [OUT_DIR]
#
# Prints one line per example (same / DIFFERS / both fail) and exits non-zero when any
# output differs. A spec that fails the same way under both binaries (one that is not a
# simulate spec, or needs a server) is reported and skipped.
set -uo pipefail
cd "$(dirname "$0")/.."

BASE="${1:?usage: examples-identical.sh BASE_TESSERA NEW_TESSERA [OUT_DIR]}"
NEW="${2:?usage: examples-identical.sh BASE_TESSERA NEW_TESSERA [OUT_DIR]}"
OUT="${3:-out/examples-identical}"
rm -rf "$OUT"
mkdir -p "$OUT"

differs=0
compare_dirs() {  # name, base dir, new dir, files...
  local name="$1" a="$2" b="$3"
  shift 3
  local bad=""
  for f in "$@"; do
    if ! cmp -s "$a/$f" "$b/$f"; then bad="$bad $f"; fi
  done
  if [ -z "$bad" ]; then
    echo "same      $name"
  else
    echo "DIFFERS   $name:$bad"
    differs=1
  fi
}

run_both() {  # command (simulate | replan), spec, name: both binaries, exit codes in rb, rn
  local cmd="$1" spec="$2" name="$3" side bin
  for side in base new; do
    bin="$BASE"
    [ "$side" = new ] && bin="$NEW"
    rm -rf "$OUT/$side/$name"
    mkdir -p "$OUT/$side/$name"
    "$bin" "$cmd" "$spec" -o "$OUT/$side/$name" -q >"$OUT/$side/$name.log" 2>&1
    echo $? >"$OUT/$side/$name.rc"
  done
  rb=$(cat "$OUT/base/$name.rc")
  rn=$(cat "$OUT/new/$name.rc")
}

for spec in $(grep -l '^workload:' -r examples --include='*.yaml' | sort); do
  name="${spec#examples/}"
  name="${name%.yaml}"
  run_both simulate "$spec" "$name"
  if [ "$rb" != 0 ] && [ "$rn" != 0 ] && grep -q 'plan: unknown field' "$OUT/new/$name.log"; then
    # A replanning spec (`plan:` section): `tessera replan` runs it, every CSV and JSON
    # it writes is compared. Slow (a day of arrivals, millions of requests and a planner
    # solve per bin: tens of minutes each), so only with REPLAN=1.
    if [ "${REPLAN:-0}" != 1 ]; then
      echo "skipped   $name (replan spec: REPLAN=1 runs it)"
      continue
    fi
    run_both replan "$spec" "$name"
    if [ "$rb" != "$rn" ]; then
      echo "DIFFERS   $name (replan): exit $rb vs $rn"
      differs=1
      continue
    fi
    compare_dirs "$name (replan)" "$OUT/base/$name" "$OUT/new/$name" \
      $(cd "$OUT/base/$name" && find . -name '*.csv' -o -name '*.json' | sort)
    continue
  fi
  if [ "$rb" != 0 ] && [ "$rn" != 0 ]; then
    echo "both fail $name ($(grep -m1 -i 'error' "$OUT/new/$name.log" | cut -c1-100))"
    continue
  fi
  if [ "$rb" != "$rn" ]; then
    echo "DIFFERS   $name: exit $rb vs $rn"
    differs=1
    continue
  fi
  compare_dirs "$name" "$OUT/base/$name" "$OUT/new/$name" summary.json timeseries.csv \
    latency_histogram.csv
done

# PPipe's data plane: one plan, every DNN at three loads.
plan_dir="$OUT/ppipe-plan"
if "$NEW" plan examples/plan/ppipe_hc1_g1.yaml -o "$plan_dir" >"$OUT/ppipe-plan.log" 2>&1; then
  for side in base new; do
    bin="$BASE"
    [ "$side" = new ] && bin="$NEW"
    "$bin" ppipe-simulate "$plan_dir/plan.json" --loads 1.1,0.9 --duration 20 \
      --csv "$OUT/$side/ppipe.csv" -o "$OUT/$side/ppipe" >"$OUT/$side/ppipe.log" 2>&1 ||
      echo "ppipe-simulate failed ($side)"
  done
  (cd "$OUT/base/ppipe" && find . -name summary.json | sort) >"$OUT/ppipe-files.txt"
  compare_dirs "ppipe-simulate $plan_dir/plan.json" "$OUT/base" "$OUT/new" ppipe.csv \
    $(sed 's|^\./|ppipe/|' "$OUT/ppipe-files.txt")
else
  echo "both fail ppipe plan (see $OUT/ppipe-plan.log)"
fi
exit $differs
