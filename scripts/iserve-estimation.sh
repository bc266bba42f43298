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
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${TESSERA_TORCH:-}" ]; then
  TESSERA=$(scripts/release-build.sh)
  TESSERA_TORCH="$(dirname "$TESSERA")/tessera-torch"
fi
T=$TESSERA_TORCH
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

for m in "${MODELS[@]}"; do
  IFS='|' read -r name bundled shape <<<"$m"
  dir=$OUT/$name
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
  "$T" llm profile "$dir/ckpt" --out "$dir/profile.json" --work "$dir/fingerprints" \
    --weights $(printf '%s\n' "${ws[@]}" | sort -u) --kv $(printf '%s\n' "${kvs[@]}" | sort -u) \
    --tp 1 2 4 --lengths "${LENGTHS[@]}" --prompt-tokens $PROMPT --repeats "$REPEATS" >&2
  "$T" llm estimate "$dir/profile.json" --model "$dir/ckpt" --gpus 8 --out "$dir/map.json" \
    >/dev/null
  for c in "${COMPRESSIONS[@]}"; do
    read -r w k <<<"$c"
    for p in "${PARALLEL[@]}"; do
      read -r tp pp <<<"$p"
      "$T" llm measure "$dir/ckpt" --tp "$tp" --pp "$pp" --weights "$w" --kv "$k" \
        --lengths "${LENGTHS[@]}" --prompt-tokens $PROMPT --repeats "$REPEATS" \
        --out "$dir/measured-tp$tp-pp$pp-$w-$k.json"
    done
  done
  echo "measured $name" >&2
done

LOAD_AFTER=$(cut -d" " -f1-3 /proc/loadavg)
SECONDS_TAKEN=$(($(date +%s) - START))
python3 - "$OUT" "$DOC" "${LENGTHS[1]}" "$REPEATS" "$LOAD_BEFORE" "$LOAD_AFTER" "$SECONDS_TAKEN" "$(nproc)" <<'PY'
import glob, json, os, statistics, sys
out, doc, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
repeats, load_before, load_after, taken, cores = sys.argv[4:9]
rows, summary = [], []
for model in ["llama-2-7b", "llama-2-70b", "falcon-7b", "gpt-j-6b"]:
    d = os.path.join(out, model)
    cmap = json.load(open(os.path.join(d, "map.json")))
    est = {(c["tp"], c["pp"], c["weights"], c["kv_cache"]): c for c in cmap["configurations"]}
    lat_err, mem_err, ttft_err, tpot_err = [], [], [], []
    for f in sorted(glob.glob(os.path.join(d, "measured-*.json"))):
        m = json.load(open(f))
        e = est[(m["tp"], m["pp"], m["weights"], m["kv_cache"])]
        lat = {r["output_length"]: r["seconds"] for r in m["latency"]}
        lo, hi = min(lat), max(lat)
        tpot = (lat[hi] - lat[lo]) / (hi - lo)
        ttft = lat[lo] - lo * tpot
        e_lat = e["ttft_s"] + n * e["tpot_s"]
        le = abs(e_lat - lat[n]) / lat[n] * 100
        me = abs(e["memory_bytes"] - m["memory_bytes"]) / m["memory_bytes"] * 100
        te = abs(e["ttft_s"] - ttft) / ttft * 100
        pe = abs(e["tpot_s"] - tpot) / tpot * 100
        lat_err.append(le); mem_err.append(me); ttft_err.append(te); tpot_err.append(pe)
        rows.append(f"| {model} | {e['name']} | {1e3*e_lat:.1f} | {1e3*lat[n]:.1f} | {le:.1f} | "
                    f"{1e3*e['ttft_s']:.2f} / {1e3*ttft:.2f} | {1e3*e['tpot_s']:.2f} / {1e3*tpot:.2f} | "
                    f"{e['memory_bytes']/1e6:.1f} | {m['memory_bytes']/1e6:.1f} | {me:.1f} |")
    summary.append((model, cmap["layers"], len(lat_err), statistics.mean(lat_err),
                    max(lat_err), statistics.mean(ttft_err), statistics.mean(tpot_err),
                    statistics.mean(mem_err), max(mem_err), lat_err, mem_err))
all_lat = [x for s in summary for x in s[9]]
all_mem = [x for s in summary for x in s[10]]
with open(doc, "w") as fh:
    w = lambda s="": fh.write(s + "\n")
    w("# iServe estimation error on this machine (fingerprints → full model)")
    w()
    w("Generated by `scripts/iserve-estimation.sh`; do not edit by hand. Random-weight models of")
    w("the paper's architectures at their true depth with hidden size 256, run by tessera's")
    w("libtorch decoder on the CPU (FP32 compute, one intra-op thread per TP shard). For each")
    w("model the 1- and 2-layer fingerprints were profiled (`tessera llm profile`: memory at")
    w("(TP, PP) = (1, 1), (1, 2), (2, 1), latency at PP = 1 for TP 1, 2, 4, two output lengths),")
    w("the estimator filled the configuration map (`tessera llm estimate`, §5.2–5.3), and the full")
    w("model was measured under each configuration below (`tessera llm measure`). Latency is one")
    w(f"batch-1 request of a 16-token prompt and {n} tokens after the first (median of the")
    w("repeats); memory is the peak bytes libtorch holds while serving it. Error = |estimate −")
    w("measurement| / measurement. The paper's goal: 4.91 % mean latency error, 6.92 % mean")
    w("memory error (iServe §8.4).")
    w()
    w("## Run conditions")
    w()
    w("| cores | repeats per point | load average (1, 5, 15 min) at start | at end | script seconds |")
    w("|---|---|---|---|---|")
    w(f"| {cores} | {repeats} | {load_before} | {load_after} | {taken} |")
    w()
    w("## Summary")
    w()
    w("| model | layers | configs | mean latency error % | max % | mean TTFT error % | mean TPOT error % | mean memory error % | max % |")
    w("|---|---|---|---|---|---|---|---|---|")
    for s in summary:
        w(f"| {s[0]} | {s[1]} | {s[2]} | {s[3]:.2f} | {s[4]:.1f} | {s[5]:.2f} | {s[6]:.2f} | {s[7]:.2f} | {s[8]:.1f} |")
    w(f"| **all** | | {len(all_lat)} | **{statistics.mean(all_lat):.2f}** | {max(all_lat):.1f} | | | **{statistics.mean(all_mem):.2f}** | {max(all_mem):.1f} |")
    w()
    w("## Per configuration")
    w()
    w(f"| model | configuration | est. latency ms | measured ms | error % | TTFT ms est / meas | TPOT ms est / meas | est. memory MB | measured MB | error % |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        w(r)
PY
echo "wrote $DOC" >&2
