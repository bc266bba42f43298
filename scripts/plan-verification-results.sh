#!/usr/bin/env bash
# Regenerates docs/results/plan-verification.md: plans that keep their promise.
#   1. Headroom choices on the traffic example at its demand (20 req/s, 28 slices), without
#      verification: the utilisation cap and the burst-aware demand, each plan's slices and
#      its run.yaml simulated (JigsawServe's data plane), and the same plan under the best
#      data plane of the verification's short list (one round, no re-planning).
#   2. Every JigsawServe plan example at 25, 50, 75 and 100 % of its max serviceable demand
#      (tessera plan --max-demand, A+S+T): the verified plan (attainment, rounds, slices, data
#      plane) against the unverified one (no headroom, JigsawServe's data plane, simulated).
#   3. JigsawServe's steady-bin day (traffic, A+S+T) re-planned with and without
#      verification (tessera replan --verify), both with the plan spec's headroom, and with
#      verification on a data plane of the short list: the one the verification picks for the
#      day's busiest bin at its demand only (--data-plane verified --overload 1), PARD's on
#      central queues, and the one it picks with the overload probe (--data-plane verified);
#      per bin: drops per task, lateness, the verification's outcome; quarters by demand.
#   3b. The steady-bin day per search space (A+S+T, A+S, A+T, S+T), verified, on PARD's plane.
#   4. The trace-driven traffic example at its demand: verified, and the largest demand whose
#      verified plan meets the target; the 28 slices' max serviceable demand, against which the
#      page sets the trace's bursts (what an ideal server of that capacity must miss).
#   5. The M/D/c headroom model against the utilisation cap: every plan example at its spec's
#      demand, verified under each (slices, first-round and verified attainment, rounds).
# Deterministic: fixed seeds, node-limited MILPs. TESSERA=path/to/tessera skips the build.
#   scripts/plan-verification-results.sh              every section, then the page
#   scripts/plan-verification-results.sh SECTION...   only those (headroom examples day spaces
#                                                     trace mdc page), e.g. in parallel shells
set -euo pipefail
cd "$(dirname "$0")/.."
T=$(scripts/release-build.sh)
OUT=out/plan-verification
mkdir -p "$OUT"
SECTIONS=("$@")
[ ${#SECTIONS[@]} -eq 0 ] && SECTIONS=(headroom examples day spaces trace mdc page)

headroom() {
echo "==> 1. headroom choices (traffic, 20 req/s, no verification)"
rm -rf "$OUT/headroom"
mkdir -p "$OUT/headroom"
for cap in 1 0.9 0.8 0.7; do
  for delay in 0 300; do
    d="$OUT/headroom/cap${cap}_delay${delay}"
    "$T" plan examples/plan/traffic.yaml --no-verify --utilisation-cap "$cap" \
      --queue-delay-ms "$delay" --out "$d" >"$d.log" 2>&1 || true
    [ -f "$d/run.yaml" ] && "$T" simulate "$d/run.yaml" --out "$d/sim" --quiet >/dev/null 2>&1 || true
    # The same plan (one round, no re-planning) under the best data plane of the short list.
    "$T" plan examples/plan/traffic.yaml --verify-rounds 1 --verify-probes 0 \
      --utilisation-cap "$cap" --queue-delay-ms "$delay" --out "$d-best" >"$d-best.log" 2>&1 || true
  done
done

}

examples() {
echo "==> 2. every plan example at 25-100 % of its max serviceable demand"
for ex in traffic traffic_trace social ar; do
  spec=examples/plan/$ex.yaml
  rm -rf "$OUT/$ex"
  mkdir -p "$OUT/$ex"
  "$T" plan "$spec" --max-demand --space A+S+T --utilisation-cap 1 --out "$OUT/$ex/max" >"$OUT/$ex/max.log" 2>&1 ||
    true
  max=$(python3 -c "import json,sys; print(json.load(open('$OUT/$ex/max/max_demand.json'))[0]['max_demand_rps'])" 2>/dev/null || echo 0)
  echo "$max" >"$OUT/$ex/max_demand.txt"
  for pct in 25 50 75 100; do
    demand=$(python3 -c "print(round($max * $pct / 100, 4))")
    v="$OUT/$ex/p$pct/verified"
    u="$OUT/$ex/p$pct/unverified"
    mkdir -p "$OUT/$ex/p$pct"
    "$T" plan "$spec" --demand "$demand" --verify-probes 4 --out "$v" >"$v.log" 2>&1 || true
    "$T" plan "$spec" --demand "$demand" --no-verify --utilisation-cap 1 --queue-delay-ms 0 \
      --out "$u" >"$u.log" 2>&1 || true
    [ -f "$u/run.yaml" ] && "$T" simulate "$u/run.yaml" --out "$u/sim" --quiet >/dev/null 2>&1 || true
    [ -f "$v/run.yaml" ] && "$T" simulate "$v/run.yaml" --out "$v/sim" --quiet >/dev/null 2>&1 || true
    echo "    $ex $pct% ($demand req/s) done"
  done
done
}

day() {
echo "==> 3. JigsawServe's steady-bin day (traffic, A+S+T) re-planned with verification"
rm -rf "$OUT/replan"
mkdir -p "$OUT/replan"
"$T" replan examples/replan/traffic_day_steady.yaml --space A+S+T --verify --quiet \
  --out "$OUT/replan/steady-verify" >"$OUT/replan/steady-verify.log" 2>&1 || true
"$T" replan examples/replan/traffic_day_steady.yaml --space A+S+T --verify --data-plane verified \
  --overload 1 --quiet --out "$OUT/replan/steady-verify-dataplane-noprobe" \
  >"$OUT/replan/steady-verify-dataplane-noprobe.log" 2>&1 || true
"$T" replan examples/replan/traffic_day_steady.yaml --space A+S+T --verify \
  --data-plane "pard (central queues, jigsaw batching)" --quiet --out "$OUT/replan/steady-verify-pard" \
  >"$OUT/replan/steady-verify-pard.log" 2>&1 || true
"$T" replan examples/replan/traffic_day_steady.yaml --space A+S+T --verify --data-plane verified \
  --quiet --out "$OUT/replan/steady-verify-dataplane" >"$OUT/replan/steady-verify-dataplane.log" 2>&1 || true
"$T" replan examples/replan/traffic_day_steady.yaml --space A+S+T --quiet \
  --out "$OUT/replan/steady" >"$OUT/replan/steady.log" 2>&1 || true
}

spaces() {
echo "==> 3b. the steady-bin day per search space, verified, on PARD's plane"
rm -rf "$OUT/replan-spaces"
mkdir -p "$OUT/replan-spaces"
for space in A+S+T A+S A+T S+T; do
  d="$OUT/replan-spaces/$(echo "$space" | tr + _)"
  "$T" replan examples/replan/traffic_day_steady.yaml --space "$space" --verify \
    --data-plane "pard (central queues, jigsaw batching)" --quiet --out "$d" >"$d.log" 2>&1 || true
  echo "    $space done"
done
}

trace() {
echo "==> 4. the trace-driven traffic example"
rm -rf "$OUT/trace"
mkdir -p "$OUT/trace"
"$T" plan examples/plan/traffic_trace.yaml --out "$OUT/trace/plan" >"$OUT/trace/plan.log" 2>&1 || true
# The 28 slices' profiled capacity, for what the trace allows at all (the page's ideal server).
"$T" plan examples/plan/traffic_trace.yaml --max-demand --space A+S+T --utilisation-cap 1 \
  --out "$OUT/trace/max" >"$OUT/trace/max.log" 2>&1 || true
# The largest verified demand's plan, written and simulated on its own.
d=$(python3 -c "import json; print(json.load(open('$OUT/trace/plan/plan.json'))['verification'].get('largest_verified_demand_rps') or '')" 2>/dev/null || true)
if [ -n "$d" ]; then
  "$T" plan examples/plan/traffic_trace.yaml --demand "$d" --verify-probes 0 --out "$OUT/trace/largest" \
    >"$OUT/trace/largest.log" 2>&1 || true
  [ -f "$OUT/trace/largest/run.yaml" ] &&
    "$T" simulate "$OUT/trace/largest/run.yaml" --out "$OUT/trace/largest/sim" --quiet >/dev/null 2>&1 || true
fi
}

mdc() {
echo "==> 5. the M/D/c headroom model against the utilisation cap"
rm -rf "$OUT/mdc"
mkdir -p "$OUT/mdc"
for ex in traffic traffic_trace social ar; do
  "$T" plan "examples/plan/$ex.yaml" --verify-probes 0 --out "$OUT/mdc/$ex-cap" \
    >"$OUT/mdc/$ex-cap.log" 2>&1 || true
  "$T" plan "examples/plan/$ex.yaml" --verify-probes 0 --headroom-model mdc --utilisation-cap 1 \
    --out "$OUT/mdc/$ex-mdc" >"$OUT/mdc/$ex-mdc.log" 2>&1 || true
  echo "    $ex done"
done
}

for section in "${SECTIONS[@]}"; do
  case "$section" in
  headroom | examples | day | spaces | trace | mdc)
    t0=$(date +%s)
    "$section"
    echo $(($(date +%s) - t0)) >"$OUT/seconds-$section.txt"
    ;;
  page) python3 scripts/plan_verification_doc.py "$OUT" docs/results/plan-verification.md ;;
  *) echo "unknown section: $section (headroom examples day spaces trace mdc page)" >&2 && exit 2 ;;
  esac
done
