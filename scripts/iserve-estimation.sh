#!/usr/bin/env bash
# Regenerates docs/results/iserve/estimation.md: iServe's fingerprint estimator (§5.2–5.3,
# methods L2 + M2) validated on this machine. For random-weight models of four of the
# paper's architectures, scaled to fit a 2-core CPU (true depth, smaller hidden size), it
# profiles the 1- and 2-layer fingerprints (`tessera llm profile`), estimates every
# configuration (`tessera llm estimate`), measures the full model under a set of
# configurations (`tessera llm measure`, median of REPEATS requests) and tabulates the
# latency and memory errors. Every table in the page is printed by this script.
#   scripts/iserve-estimation.sh            (about 10 minutes on 2 cores)
#   TESSERA_TORCH=build/tessera-torch scripts/iserve-estimation.sh   (skip the build)
#   ISERVE_MODELS="llama-2-7b falcon-7b" ...   (a subset of the four models)
#   TABLES_ONLY=1 ...                          (rewrite the page from out/ without measuring)
# Measurements already in out/iserve-estimation are kept (delete it to measure again), so
# an interrupted run resumes.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${TESSERA_TORCH:-}" ] && [ -z "${TABLES_ONLY:-}" ]; then
  TESSERA=$(scripts/release-build.sh)
  TESSERA_TORCH="$(dirname "$TESSERA")/tessera-torch"
fi
T=${TESSERA_TORCH:-}
OUT=out/iserve-estimation
DOC=docs/results/iserve/estimation.md
REPEATS=${REPEATS:-3}
LENGTHS=(2 16)       # output tokens after the first
PROMPT=16
mkdir -p "$OUT" "$(dirname "$DOC")"
LOAD_BEFORE=$(cut -d" " -f1-3 /proc/loadavg)
START=$(date +%s)

# name | bundled model | random-checkpoint shape flags (true depth, hidden 256, vocabulary
# 4096 so that the LM head weighs in the model about as much as in the real one)
MODELS=(
  "llama-2-7b|llama-2-7b|--hidden 256 --heads 8 --kv-heads 8 --ffn 688 --vocab 4096"
  "llama-2-70b|llama-2-70b|--hidden 256 --heads 16 --kv-heads 2 --ffn 896 --vocab 4096"
  "falcon-7b|falcon-7b|--hidden 256 --heads 8 --kv-heads 1 --ffn 1024 --vocab 4096"
  "gpt-j-6b|gpt-j-6b|--hidden 256 --heads 16 --ffn 1024 --vocab 4096"
)
# compressions validated (weights kv) and (TP PP) measured on the full model
COMPRESSIONS=("fp16 kv16" "int8 kv8")
PARALLEL=("1 1" "1 2" "1 4" "2 1" "2 2" "4 1")

SELECTED=${ISERVE_MODELS:-llama-2-7b llama-2-70b falcon-7b gpt-j-6b}
for m in "${MODELS[@]}"; do
  IFS='|' read -r name bundled shape <<<"$m"
  dir=$OUT/$name
  [[ " $SELECTED " == *" $name "* ]] || continue
  [ -z "${TABLES_ONLY:-}" ] || continue
  if [ ! -f "$dir/ckpt/config.json" ]; then
    # shellcheck disable=SC2086
    "$T" llm random-checkpoint "data/llm/$bundled" --out "$dir/ckpt" $shape --seed 7 >&2
  fi
  ws=() kvs=()
  for c in "${COMPRESSIONS[@]}"; do
    read -r w k <<<"$c"
    ws+=("$w") kvs+=("$k")
  done
  # shellcheck disable=SC2046
  [ -f "$dir/profile.json" ] || "$T" llm profile "$dir/ckpt" --out "$dir/profile.json" --work "$dir/fingerprints" \
    --weights $(printf '%s\n' "${ws[@]}" | sort -u) --kv $(printf '%s\n' "${kvs[@]}" | sort -u) \
    --tp 1 2 4 --lengths "${LENGTHS[@]}" --prompt-tokens $PROMPT --repeats "$REPEATS" >&2
  "$T" llm estimate "$dir/profile.json" --model "$dir/ckpt" --gpus 8 --out "$dir/map.json" \
    >/dev/null
  "$T" llm estimate "$dir/profile.json" --model "$dir/ckpt" --gpus 8 --clock cpu \
    --out "$dir/map-cpu.json" >/dev/null
  for c in "${COMPRESSIONS[@]}"; do
    read -r w k <<<"$c"
    for p in "${PARALLEL[@]}"; do
      read -r tp pp <<<"$p"
      [ -f "$dir/measured-tp$tp-pp$pp-$w-$k.json" ] || "$T" llm measure "$dir/ckpt" --tp "$tp" --pp "$pp" --weights "$w" --kv "$k" \
        --lengths "${LENGTHS[@]}" --prompt-tokens $PROMPT --repeats "$REPEATS" \
        --out "$dir/measured-tp$tp-pp$pp-$w-$k.json"
    done
  done
  echo "measured $name" >&2
done

LOAD_AFTER=$(cut -d" " -f1-3 /proc/loadavg)
SECONDS_TAKEN=$(($(date +%s) - START))
# The run conditions belong to the measuring run: TABLES_ONLY reuses the last one's.
if [ -z "${TABLES_ONLY:-}" ]; then
  printf '%s\n%s\n%s\n' "$LOAD_BEFORE" "$LOAD_AFTER" "$SECONDS_TAKEN" > "$OUT/run-conditions.txt"
elif [ -f "$OUT/run-conditions.txt" ]; then
  { read -r LOAD_BEFORE; read -r LOAD_AFTER; read -r SECONDS_TAKEN; } < "$OUT/run-conditions.txt"
fi
python3 - "$OUT" "$DOC" "${LENGTHS[1]}" "$REPEATS" "$LOAD_BEFORE" "$LOAD_AFTER" "$SECONDS_TAKEN" "$(nproc)" <<'PY'
import glob, json, os, statistics, sys
out, doc, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
repeats, load_before, load_after, taken, cores = sys.argv[4:9]
mean = statistics.mean

def err(est, meas):
    return abs(est - meas) / meas * 100

def solve(lat):  # Eq. 1 from the two measured lengths
    lo, hi = min(lat), max(lat)
    tpot = (lat[hi] - lat[lo]) / (hi - lo)
    return lat[lo] - lo * tpot, tpot

rows, summary, layer_rows, by_group = [], [], [], {}
for model in ["llama-2-7b", "llama-2-70b", "falcon-7b", "gpt-j-6b"]:
    d = os.path.join(out, model)
    if not glob.glob(os.path.join(d, "measured-*.json")):
        continue  # not selected or not measured yet
    maps = {}
    for clock, f in (("wall", "map.json"), ("cpu", "map-cpu.json")):
        cmap = json.load(open(os.path.join(d, f)))
        maps[clock] = {(c["tp"], c["pp"], c["weights"], c["kv_cache"]): c for c in cmap["entries"]}
    e_ = {k: [] for k in ("wall", "cpu", "ttft", "tpot", "mem")}
    for f in sorted(glob.glob(os.path.join(d, "measured-*.json"))):
        m = json.load(open(f))
        key = (m["tp"], m["pp"], m["weights"], m["kv_cache"])
        ew, ec = maps["wall"][key], maps["cpu"][key]
        wall = {r["output_length"]: r["seconds"] for r in m["latency"]}
        cpu = {r["output_length"]: r["cpu_seconds"] for r in m["latency"]}
        ttft, tpot = solve(wall)
        est_w = ew["ttft_s"] + n * ew["tpot_s"]
        est_c = ec["ttft_s"] + n * ec["tpot_s"]
        le, ce = err(est_w, wall[n]), err(est_c, cpu[n])
        te, pe = err(ew["ttft_s"], ttft), err(ew["tpot_s"], tpot)
        me = err(ew["memory_bytes"], m["memory_bytes"])
        for k, v in zip(("wall", "cpu", "ttft", "tpot", "mem"), (le, ce, te, pe, me)):
            e_[k].append(v)
        group = (m["weights"], "TP 1" if m["tp"] == 1 else "TP > 1")
        by_group.setdefault(group, []).append(me)
        rows.append(f"| {model} | {ew['config']} | {1e3*est_w:.0f} / {1e3*wall[n]:.0f} | {le:.1f} | "
                    f"{1e3*est_c:.0f} / {1e3*cpu[n]:.0f} | {ce:.1f} | "
                    f"{ew['memory_bytes']/1e6:.2f} / {m['memory_bytes']/1e6:.2f} | {me:.2f} |")
    layers = json.load(open(os.path.join(d, "map.json")))["entries"][0]["layers"]
    summary.append((model, layers, e_))
    # Per-layer decode cost: the fingerprints' (2-layer minus 1-layer) against what the full
    # model implies ((its TPOT - the fingerprints' TPOT_other) / layers), TP 1, PP 1, CPU time.
    prof = json.load(open(os.path.join(d, "profile.json")))
    for comp in prof["compressions"]:
        f = os.path.join(d, f"measured-tp1-pp1-{comp['weights']}-{comp['kv_cache']}.json")
        if not os.path.exists(f):
            continue
        fp = {}
        for k in (1, 2):
            fp[k] = solve({r["output_length"]: r["cpu_seconds"] for r in comp["latency"]
                           if r["fingerprint_layers"] == k and r["tp"] == 1})[1]
        per_layer_fp, other = fp[2] - fp[1], 2 * fp[1] - fp[2]
        full = json.load(open(f))
        full_tpot = solve({r["output_length"]: r["cpu_seconds"] for r in full["latency"]})[1]
        per_layer_full = (full_tpot - other) / layers
        mem = {(r["fingerprint_layers"]): r["bytes"] for r in comp["memory"] if r["tp"] == 1 and r["pp"] == 1}
        layer_rows.append(f"| {model} | {comp['weights']}-{comp['kv_cache']} | {(mem[2]-mem[1])/1e6:.2f} | "
                          f"{1e3*other:.3f} | {1e3*per_layer_fp:.3f} | {1e3*per_layer_full:.3f} | "
                          f"{per_layer_full/per_layer_fp:.2f} |")
allk = {k: [x for s in summary for x in s[2][k]] for k in ("wall", "cpu", "ttft", "tpot", "mem")}
with open(doc, "w") as fh:
    w = lambda s="": fh.write(s + "\n")
    w("# iServe estimation error on this machine (fingerprints → full model)")
    w()
    w("Generated by `scripts/iserve-estimation.sh`; do not edit by hand. Random-weight models of")
    w("the paper's architectures at their true depth with hidden size 256 and a 4096-token")
    w("vocabulary, run by tessera's libtorch decoder on the CPU (FP32 compute, one intra-op")
    w("thread per TP shard). For each model the 1- and 2-layer fingerprints were profiled")
    w("(`tessera llm profile`: memory at (TP, PP) = (1, 1), (1, 2), (2, 1), latency at PP = 1")
    w("for TP 1, 2, 4 at two output lengths), the estimator filled the configuration map")
    w("(`tessera llm estimate`, §5.2–5.3), and the full model was measured under each")
    w("configuration below (`tessera llm measure`). Latency is one batch-1 request of a")
    w(f"16-token prompt and {n} tokens after the first, median of the repeats, on two clocks:")
    w("the wall clock (what iServe measures) and the CPU time of the process (all shards'")
    w("threads; it does not count time spent waiting for the cores that other work holds, and")
    w("with TP > 1 it sums the shards' work instead of overlapping it). Memory is the peak")
    w("bytes libtorch holds while serving the request. Error = |estimate − measurement| /")
    w("measurement. The paper's averages: 4.91 % latency error, 6.92 % memory error (§8.4).")
    w()
    w("## Run conditions")
    w()
    w("| cores | repeats per point | load average (1, 5, 15 min) at start | at end | script seconds |")
    w("|---|---|---|---|---|")
    w(f"| {cores} | {repeats} | {load_before} | {load_after} | {taken} |")
    w()
    w("## Summary (mean errors, %)")
    w()
    w("| model | layers | configs | latency, wall clock | max | TTFT, wall | TPOT, wall | latency, CPU time | max | memory | max |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    for model, layers, e in summary + [("**all**", "", allk)]:
        w(f"| {model} | {layers} | {len(e['wall'])} | {mean(e['wall']):.2f} | {max(e['wall']):.1f} | "
          f"{mean(e['ttft']):.1f} | {mean(e['tpot']):.1f} | {mean(e['cpu']):.2f} | {max(e['cpu']):.1f} | "
          f"{mean(e['mem']):.2f} | {max(e['mem']):.2f} |")
    w()
    mw, mc, mm = mean(allk["wall"]), mean(allk["cpu"]), mean(allk["mem"])
    ratios = [float(r.split("|")[-2]) for r in layer_rows]
    w("## Findings")
    w()
    w(f"- Memory: the mean error over all {len(allk['mem'])} configurations is {mm:.2f} % "
      f"(goal ≤ 7 %, paper 6.92 %): {'met' if mm <= 7 else 'missed'} (summary table).")
    w(f"- Latency on the wall clock: mean error {mw:.2f} % (goal ≤ 5 %, paper 4.91 %): "
      f"{'met' if mw <= 5 else 'missed'}. " +
      (f"The run-conditions table gives the load average ({load_before} at start) on {cores} "
       "cores: other work held the cores, so a request's wall time mostly measures how long it "
       "waited for one, and the fingerprints' sub-second requests and the full model's longer "
       "ones wait differently."
       if float(load_before.split()[0]) > float(cores) else
       f"The run-conditions table gives the load average ({load_before} at start) on {cores} "
       "cores: the machine was not otherwise busy, and the CPU-time error below is as large, so "
       "the error is the extrapolation's own (the per-layer table)."))
    w(f"- Latency on the process CPU time: mean error {mc:.2f} % ({'met' if mc <= 5 else 'missed'} "
      "against the 5 % goal; summary table).")
    worst = max(by_group, key=lambda g: mean(by_group[g]))
    best = min(by_group, key=lambda g: mean(by_group[g]))
    w(f"- The memory-error table shows where the memory error lies: {mean(by_group[worst]):.2f} % "
      f"mean for {worst[0]} weights at {worst[1]} against {mean(by_group[best]):.2f} % for "
      f"{best[0]} at {best[1]}. A likely cause, not isolated by an experiment here: quantised "
      "weights are expanded to FP32 at each call, in each shard; with TP > 1 the shards' "
      "expansions overlap or not depending on how their threads are scheduled, so a "
      "fingerprint's peak need not be linear in its layers, and the extrapolation multiplies "
      "the 2-layer − 1-layer difference by L − 1.")
    if ratios:
        w(f"- The per-layer table shows the full model's decode cost per layer at "
          f"{min(ratios):.2f}–{max(ratios):.2f}× the fingerprints' (CPU time, TP 1): where this "
          "ratio is above 1, the linear extrapolation of Eqs. 2–3 under-estimates the full model, "
          "below 1 it over-estimates. The per-layer cost is the difference of two sub-second "
          "fingerprint measurements, multiplied by L − 1 in the estimate, so their noise (the "
          "same ratio differs between compressions of one model) carries into the latency error.")
    w()
    w("## Memory error by weights and TP (mean %)")
    w()
    w("| weights | TP | configs | mean memory error % | max % |")
    w("|---|---|---|---|---|")
    for g in sorted(by_group):
        w(f"| {g[0]} | {g[1]} | {len(by_group[g])} | {mean(by_group[g]):.2f} | {max(by_group[g]):.2f} |")
    w()
    w("## Per-layer decode cost: fingerprints against the full model (TP 1, PP 1, CPU time)")
    w()
    w("| model | compression | layer memory MB (fp2 − fp1) | TPOT_other ms (fingerprints) | TPOT per layer ms, fingerprints | implied by the full model | ratio |")
    w("|---|---|---|---|---|---|---|")
    for r in layer_rows:
        w(r)
    w()
    w("## Per configuration")
    w()
    w(f"| model | configuration | wall ms, est. / measured | error % | CPU ms, est. / measured | error % | memory MB, est. / measured | error % |")
    w("|---|---|---|---|---|---|---|---|")
    for r in rows:
        w(r)
PY
echo "wrote $DOC" >&2
