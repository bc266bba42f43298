#!/usr/bin/env bash
# Regenerates docs/results/iserve/estimation.md: iServe's fingerprint estimator (§5.2–5.3,
# methods L2 + M2) validated on this machine. For random-weight models of four of the
# paper's architectures, scaled to fit a 2-core CPU (true depth, smaller hidden size), it
# profiles the 1- and 2-layer fingerprints (`tessera llm profile`; the paper's method,
# `iserve`) and the 4- and 8-layer ones (the variant `iserve-deep`, same extrapolation),
# estimates every configuration from each (`tessera llm estimate`), measures the full
# model under a set of configurations (`tessera llm measure`: WARMUPS untimed requests,
# then the median of REPEATS, the two output lengths taking turns), measures the decode
# cost per layer against depth (fingerprints of 1..L layers of one model) and tabulates
# the latency (wall clock and process CPU time) and memory errors. Every table in the page
# is printed by this script.
#   scripts/iserve-estimation.sh            (about 15 minutes on 2 quiet cores)
#   TESSERA_TORCH=build/tessera-torch scripts/iserve-estimation.sh   (skip the build)
#   ISERVE_MODELS="llama-2-7b falcon-7b" ...   (a subset of the four models)
#   TABLES_ONLY=1 ...                          (rewrite the page from out/ without measuring)
#   REPEATS=5 FP_REPEATS=9 ...                 (timed requests per point: full model, fingerprints)
#   FP_LENGTHS='2 16' ...                      (the fingerprints' two output lengths)
#   PAIRED=0 ...                               (skip the paired check: the full model measured
#                                                again with its fingerprints timed alongside)
# Measurements already in out/iserve-estimation are kept (delete it to measure again), so
# an interrupted run resumes.
set -euo pipefail
cd "$(dirname "$0")/.."
T=${TESSERA_TORCH:-}
[ -n "$T" ] || [ -n "${TABLES_ONLY:-}" ] || T=$(scripts/release-build.sh --torch)
# Two scales of the same validation (ISERVE_SCALE):
#   narrow (default): the true depth at hidden size 256. One layer's FP32 weights (3–4 MB)
#     fit in a core's L2 cache, so a 1- or 2-layer fingerprint runs from cache while the
#     full model streams its weights: this is where the per-layer cost grows with depth.
#   wide: hidden size 1024 (one layer's FP32 weights 50–60 MB: more than a core's L2 cache,
#     as a real layer's weights exceed a GPU's caches, where the paper measured; this
#     machine's L3, 480 MiB shared with other tenants, may still hold a fingerprint) at
#     reduced depth, 8 layers (Llama-2-70B's shape 16), so that it runs in minutes on 2 cores.
SCALE=${ISERVE_SCALE:-narrow}
DEPTH_MODEL=${DEPTH_MODEL:-llama-2-7b}   # the model of the per-layer cost against depth
PROMPT=16
case "$SCALE" in
  narrow)
    OUT=out/iserve-estimation
    DOC=docs/results/iserve/estimation.md
    REPEATS=${REPEATS:-5}
    FP_REPEATS=${FP_REPEATS:-$REPEATS}   # the fingerprints' (cheap: more steady medians)
    WARMUPS=${WARMUPS:-2}
    DEEP=(4 8)        # the iserve-deep variant's fingerprint layers
    LENGTHS=(2 16)    # output tokens after the first
    read -r -a FP_LENGTHS <<<"${FP_LENGTHS:-${LENGTHS[*]}}"   # the fingerprints'
    # name | bundled model | random-checkpoint shape flags (true depth, hidden 256, vocabulary
    # 4096 so that the LM head weighs in the model about as much as in the real one)
    MODELS=(
      "llama-2-7b|llama-2-7b|--hidden 256 --heads 8 --kv-heads 8 --ffn 688 --vocab 4096"
      "falcon-7b|falcon-7b|--hidden 256 --heads 8 --kv-heads 1 --ffn 1024 --vocab 4096"
      "gpt-j-6b|gpt-j-6b|--hidden 256 --heads 16 --ffn 1024 --vocab 4096"
      "llama-2-70b|llama-2-70b|--hidden 256 --heads 16 --kv-heads 2 --ffn 896 --vocab 4096"
    ) ;;
  wide)
    OUT=out/iserve-estimation-wide
    DOC=docs/results/iserve/estimation-wide.md
    REPEATS=${REPEATS:-3}
    FP_REPEATS=${FP_REPEATS:-5}
    WARMUPS=${WARMUPS:-1}
    DEEP=(2 4)
    LENGTHS=(2 8)
    # The fingerprints' lengths (FP_LENGTHS="2 16": prefill costs about seven decode steps
    # here, so the TPOT, a difference of two lengths, is steadier from a longer one, which
    # the cheap fingerprints afford; the estimate is compared with the full model at
    # LENGTHS[1] either way). The page in docs/ was measured with the default.
    read -r -a FP_LENGTHS <<<"${FP_LENGTHS:-2 8}"
    # the same FFN / hidden ratios as the real models, hidden 1024
    MODELS=(
      "llama-2-7b|llama-2-7b|--layers 8 --hidden 1024 --heads 8 --kv-heads 8 --ffn 2752 --vocab 4096"
      "falcon-7b|falcon-7b|--layers 8 --hidden 1024 --heads 8 --kv-heads 1 --ffn 4096 --vocab 4096"
      "gpt-j-6b|gpt-j-6b|--layers 8 --hidden 1024 --heads 16 --ffn 4096 --vocab 4096"
      "llama-2-70b|llama-2-70b|--layers 16 --hidden 1024 --heads 16 --kv-heads 2 --ffn 3584 --vocab 4096"
    ) ;;
  *)
    echo "scripts/iserve-estimation.sh: ISERVE_SCALE must be narrow or wide, not '$SCALE'" >&2
    exit 2 ;;
esac
mkdir -p "$OUT" "$(dirname "$DOC")"
LOAD_BEFORE=$(cut -d" " -f1-3 /proc/loadavg)
START=$(date +%s)
# The load average is sampled after every measurement (the page gives min / mean / max;
# kept across resumed runs like the measurements).
MEASURED=
sample_load() { MEASURED=1; cut -d" " -f1 /proc/loadavg >> "$OUT/load-samples.txt"; }
CACHES=$(lscpu 2>/dev/null | awk -F: '/^L2 cache|^L3 cache/ {gsub(/^ +/, "", $2); printf "%s%s: %s", sep, $1, $2; sep="; "}')

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
  # iserve: the 1- and 2-layer fingerprints; iserve-deep: the DEEP ones (same method).
  for variant in iserve iserve-deep; do
    if [ "$variant" = iserve ]; then layers_fp=(1 2) suffix=""; else layers_fp=("${DEEP[@]}") suffix="-deep"; fi
    # shellcheck disable=SC2046
    [ -f "$dir/profile$suffix.json" ] || { "$T" llm profile "$dir/ckpt" --out "$dir/profile$suffix.json" \
      --work "$dir/fingerprints$suffix" --fingerprint-layers "${layers_fp[@]}" \
      --weights $(printf '%s\n' "${ws[@]}" | sort -u) --kv $(printf '%s\n' "${kvs[@]}" | sort -u) \
      --tp 1 2 4 --lengths "${FP_LENGTHS[@]}" --prompt-tokens $PROMPT --repeats "$FP_REPEATS" \
      --warmups "$WARMUPS" >&2; sample_load; }
    "$T" llm estimate "$dir/profile$suffix.json" --model "$dir/ckpt" --gpus 8 \
      --out "$dir/map$suffix.json" >/dev/null
    "$T" llm estimate "$dir/profile$suffix.json" --model "$dir/ckpt" --gpus 8 --clock cpu \
      --out "$dir/map$suffix-cpu.json" >/dev/null
  done
  for c in "${COMPRESSIONS[@]}"; do
    read -r w k <<<"$c"
    for p in "${PARALLEL[@]}"; do
      read -r tp pp <<<"$p"
      [ -f "$dir/measured-tp$tp-pp$pp-$w-$k.json" ] || { "$T" llm measure "$dir/ckpt" --tp "$tp" --pp "$pp" --weights "$w" --kv "$k" \
        --lengths "${LENGTHS[@]}" --prompt-tokens $PROMPT --repeats "$REPEATS" --warmups "$WARMUPS" \
        --out "$dir/measured-tp$tp-pp$pp-$w-$k.json"; sample_load; }
    done
  done
  # Decode cost per layer against depth: the first k layers of the model (k = 1, 2, 4, ...),
  # TP 1, PP 1; the full depth is the tp1-pp1 measurement above.
  if [ "$name" = "$DEPTH_MODEL" ]; then
    full_layers=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['num_hidden_layers'])" "$dir/ckpt/config.json" 2>/dev/null || echo 32)
    for ((k = 1; k < full_layers; k *= 2)); do
      [ -d "$dir/depth/fp$k" ] || "$T" llm fingerprint "$dir/ckpt" --layers "$k" --out "$dir/depth/fp$k" >/dev/null
      for c in "${COMPRESSIONS[@]}"; do
        read -r w kv <<<"$c"
        [ -f "$dir/depth/measured-$k-$w-$kv.json" ] || { "$T" llm measure "$dir/depth/fp$k" --weights "$w" --kv "$kv" \
          --lengths "${LENGTHS[@]}" --prompt-tokens $PROMPT --repeats "$REPEATS" --warmups "$WARMUPS" \
          --out "$dir/depth/measured-$k-$w-$kv.json"; sample_load; }
      done
    done
  fi
  echo "measured $name" >&2
done

LOAD_AFTER=$(cut -d" " -f1-3 /proc/loadavg)
SECONDS_TAKEN=$(($(date +%s) - START))

# Paired (PAIRED=0 skips it): each configuration's full model measured again with the 1- and
# 2-layer fingerprints timed in the same loop (`tessera llm measure --alongside`, the
# fingerprints at PP 1 with the configuration's TP and compression), and the estimate made
# by the same estimator from a copy of the profile whose latencies for that TP and
# compression are the ones timed alongside. The estimate's inputs and the measurement it is
# compared with then see the same machine: what it runs meanwhile, and what its caches hold
# (each request follows another model's).
PAIRED_START=$(date +%s) PAIRED_LOAD_BEFORE=$(cut -d" " -f1-3 /proc/loadavg) PAIRED_MEASURED=
for m in "${MODELS[@]}"; do
  IFS='|' read -r name _ _ <<<"$m"
  dir=$OUT/$name
  [[ " $SELECTED " == *" $name "* ]] || continue
  [ -z "${TABLES_ONLY:-}" ] && [ "${PAIRED:-1}" != 0 ] || continue
  [ -f "$dir/profile.json" ] || continue
  for c in "${COMPRESSIONS[@]}"; do
    read -r w k <<<"$c"
    for p in "${PARALLEL[@]}"; do
      read -r tp pp <<<"$p"
      cfg=tp$tp-pp$pp-$w-$k
      if [ ! -f "$dir/paired/measured-$cfg.json" ]; then
        mkdir -p "$dir/paired"
        "$T" llm measure "$dir/ckpt" --tp "$tp" --pp "$pp" --weights "$w" --kv "$k" \
          --lengths "${LENGTHS[@]}" --prompt-tokens $PROMPT --repeats "$REPEATS" --warmups "$WARMUPS" \
          --alongside "$dir/fingerprints/fp1" "$dir/fingerprints/fp2" \
          --out "$dir/paired/measured-$cfg.json"
        PAIRED_MEASURED=1
      fi
      # The profile with this TP's and compression's latencies replaced by the paired ones.
      python3 - "$dir/profile.json" "$dir/paired/measured-$cfg.json" "$dir/paired/profile-$cfg.json" <<'PATCH'
import json, sys
prof, meas = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
depth = {1: meas["alongside"][0], 2: meas["alongside"][1]}
for comp in prof["compressions"]:
    if (comp["weights"], comp["kv_cache"]) != (meas["weights"], meas["kv_cache"]):
        continue
    comp["latency"] = [r for r in comp["latency"] if r["tp"] != meas["tp"]] + [
        {"fingerprint_layers": layers, "tp": meas["tp"], "output_length": x["output_length"],
         "seconds": x["seconds"], "cpu_seconds": x["cpu_seconds"]}
        for layers, a in depth.items() for x in a["latency"]]
json.dump(prof, open(sys.argv[3], "w"), indent=1)
PATCH
      for clock in wall cpu; do
        "$T" llm estimate "$dir/paired/profile-$cfg.json" --model "$dir/ckpt" --gpus 8 \
          --clock $clock --out "$dir/paired/map-$cfg-$clock.json" >/dev/null
      done
    done
  done
  echo "paired $name" >&2
done
if [ -n "$PAIRED_MEASURED" ]; then
  printf '%s\n%s\n%s\n' "$PAIRED_LOAD_BEFORE" "$(cut -d" " -f1-3 /proc/loadavg)" \
    $(($(date +%s) - PAIRED_START)) > "$OUT/paired-conditions.txt"
fi
# The run conditions belong to the measuring run: a run that measured nothing (TABLES_ONLY,
# or everything already measured) reuses the last one's.
if [ -n "$MEASURED" ] || [ ! -f "$OUT/run-conditions.txt" ]; then
  printf '%s\n%s\n%s\n%s\n' "$LOAD_BEFORE" "$LOAD_AFTER" "$SECONDS_TAKEN" "$CACHES" > "$OUT/run-conditions.txt"
elif [ -f "$OUT/run-conditions.txt" ]; then
  { read -r LOAD_BEFORE; read -r LOAD_AFTER; read -r SECONDS_TAKEN; read -r CACHES; } < "$OUT/run-conditions.txt"
fi
python3 - "$OUT" "$DOC" "${LENGTHS[1]}" "$REPEATS" "$LOAD_BEFORE" "$LOAD_AFTER" "$SECONDS_TAKEN" "$(nproc)" \
  "$WARMUPS" "$CACHES" "${DEEP[0]}" "${DEEP[1]}" "$DEPTH_MODEL" "$SCALE" "$FP_REPEATS" <<'PY'
import glob, json, os, statistics, sys
out, doc, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
repeats, load_before, load_after, taken, cores, warmups, caches = sys.argv[4:11]
deep_a, deep_b, depth_model = int(sys.argv[11]), int(sys.argv[12]), sys.argv[13]
wide = sys.argv[14] == "wide"
fp_repeats = sys.argv[15]
fp_lengths = set()  # the fingerprints' output lengths, as the profiles record them
host_memory = set()  # what each measuring process did with freed host memory, as recorded
mean = statistics.mean
METHODS = (("iserve", ""), ("iserve-deep", "-deep"))
CLOCKS = ("wall", "cpu")

def err(est, meas):
    return abs(est - meas) / meas * 100

def solve(lat):  # Eq. 1 from the two measured lengths
    lo, hi = min(lat), max(lat)
    tpot = (lat[hi] - lat[lo]) / (hi - lo)
    return lat[lo] - lo * tpot, tpot

def config_key(x):  # a configuration-map entry's or a measurement's (TP, PP, weights, KV)
    return (x["tp"], x["pp"], x["weights"], x["kv_cache"])

def entries_by_config(path):
    return {config_key(c): c for c in json.load(open(path))["entries"]}

def by_len(m, key):
    return {r["output_length"]: r[key] for r in m["latency"]}

samples = []
if os.path.exists(os.path.join(out, "load-samples.txt")):
    samples = [float(x) for x in open(os.path.join(out, "load-samples.txt")) if x.strip()]

rows, summary, layer_rows, by_group, same_work = [], [], [], {}, {}
paired_rows, paired_summary = [], []
for model in ["llama-2-7b", "llama-2-70b", "falcon-7b", "gpt-j-6b"]:
    d = os.path.join(out, model)
    if not glob.glob(os.path.join(d, "measured-*.json")):
        continue  # not selected or not measured yet
    maps = {}
    for meth, suf in METHODS:
        for clock in CLOCKS:
            f = os.path.join(d, f"map{suf}{'-cpu' if clock == 'cpu' else ''}.json")
            if not os.path.exists(f):
                continue
            maps[(meth, clock)] = entries_by_config(f)
    e_ = {}
    for f in sorted(glob.glob(os.path.join(d, "measured-*.json"))):
        m = json.load(open(f))
        host_memory.add(m.get("host_memory", "not recorded"))
        key = config_key(m)
        meas = {"wall": by_len(m, "seconds")[n], "cpu": by_len(m, "cpu_seconds")[n]}
        cells = {}
        for meth, _ in METHODS:
            if (meth, "wall") not in maps:
                continue
            for clock in CLOCKS:
                e = maps[(meth, clock)][key]
                est = e["ttft_s"] + n * e["tpot_s"]
                cells[(meth, clock)] = (est, err(est, meas[clock]))
                e_.setdefault((meth, clock), []).append(err(est, meas[clock]))
            em = maps[(meth, "wall")][key]["memory_bytes"]
            cells[(meth, "mem")] = (em, err(em, m["memory_bytes"]))
            e_.setdefault((meth, "mem"), []).append(err(em, m["memory_bytes"]))
        same_work.setdefault((model, m["tp"], m["weights"], m["kv_cache"]), []).append(
            (m["pp"], meas["cpu"]))
        group = (m["weights"], "TP 1" if m["tp"] == 1 else "TP > 1")
        by_group.setdefault(group, []).append(cells[("iserve", "mem")][1])
        name = maps[("iserve", "wall")][key]["config"]
        r = f"| {model} | {name} | {1e3*meas['cpu']:.1f}"
        for meth, _ in METHODS:
            if (meth, "cpu") in cells:
                r += f" | {1e3*cells[(meth, 'cpu')][0]:.1f} ({cells[(meth, 'cpu')][1]:.1f})"
            else:
                r += " | –"
        r += f" | {1e3*meas['wall']:.1f}"
        for meth, _ in METHODS:
            r += (f" | {1e3*cells[(meth, 'wall')][0]:.1f} ({cells[(meth, 'wall')][1]:.1f})"
                  if (meth, "wall") in cells else " | –")
        r += f" | {m['memory_bytes']/1e6:.2f}"
        for meth, _ in METHODS:
            r += (f" | {cells[(meth, 'mem')][0]/1e6:.2f} ({cells[(meth, 'mem')][1]:.2f})"
                  if (meth, "mem") in cells else " | –")
        rows.append(r + " |")
    layers = json.load(open(os.path.join(d, "map.json")))["entries"][0]["layers"]
    summary.append((model, layers, e_))
    # Paired: the full model measured again beside its 1- and 2-layer fingerprints.
    pe = {"cpu": [], "wall": []}
    for f in sorted(glob.glob(os.path.join(d, "paired", "measured-*.json"))):
        m = json.load(open(f))
        cfg = os.path.basename(f)[len("measured-"):-len(".json")]
        key = config_key(m)
        clocks = (("cpu", "cpu_seconds"), ("wall", "seconds"))
        maps_ = {c: os.path.join(d, "paired", f"map-{cfg}-{c}.json") for c, _ in clocks}
        if not all(os.path.exists(f) for f in maps_.values()):
            continue  # measured, not estimated yet
        cells = []
        for clock, field in clocks:
            e = entries_by_config(maps_[clock])[key]
            est, meas = e["ttft_s"] + n * e["tpot_s"], by_len(m, field)[n]
            pe[clock].append(err(est, meas))
            cells.append(f"{1e3*meas:.1f} | {1e3*est:.1f} ({err(est, meas):.1f})")
        paired_rows.append(f"| {model} | {e['config']} | " + " | ".join(cells) + " |")
    if pe["cpu"]:
        paired_summary.append((model, layers, pe, e_.get(("iserve", "cpu"), []),
                               e_.get(("iserve", "wall"), [])))
    # Per-layer decode cost: the fingerprints' ((b-layer minus a-layer) / (b - a)) against
    # what the full model implies ((its TPOT - the fingerprints' TPOT_other) / layers), TP 1,
    # PP 1, CPU time.
    for meth, suf in METHODS:
        pf = os.path.join(d, f"profile{suf}.json")
        if not os.path.exists(pf):
            continue
        prof = json.load(open(pf))
        fp_lengths.update(r["output_length"] for c in prof["compressions"] for r in c["latency"])
        host_memory.add("held" if "freed host memory held" in prof.get("device", "")
                        else "returned or not recorded")
        a, b = prof.get("fingerprint_depths", [1, 2])
        for comp in prof["compressions"]:
            f = os.path.join(d, f"measured-tp1-pp1-{comp['weights']}-{comp['kv_cache']}.json")
            if not os.path.exists(f):
                continue
            fp = {}
            for k in (a, b):
                fp[k] = solve({r["output_length"]: r["cpu_seconds"] for r in comp["latency"]
                               if r["fingerprint_layers"] == k and r["tp"] == 1})[1]
            per_layer_fp = (fp[b] - fp[a]) / (b - a)
            other = fp[a] - a * per_layer_fp
            full_tpot = solve(by_len(json.load(open(f)), "cpu_seconds"))[1]
            per_layer_full = (full_tpot - other) / layers
            layer_rows.append(f"| {model} | {comp['weights']}-{comp['kv_cache']} | {meth} ({a}, {b}) | "
                              f"{1e3*other:.3f} | {1e3*per_layer_fp:.3f} | {1e3*per_layer_full:.3f} | "
                              f"{per_layer_full/per_layer_fp:.2f} |")

# Decode cost per layer against depth (DEPTH_MODEL, TP 1, PP 1).
depth_rows, depth_marg, layer_mb = [], {}, 0.0
dd = os.path.join(out, depth_model)
if os.path.isdir(os.path.join(dd, "depth")):
    layers_full = json.load(open(os.path.join(dd, "map.json")))["entries"][0]["layers"]
    for comp in ("fp16-kv16", "int8-kv8"):
        pts = []
        for f in glob.glob(os.path.join(dd, "depth", f"measured-*-{comp}.json")):
            k = int(os.path.basename(f).split("-")[1])
            pts.append((k, json.load(open(f))))
        full = os.path.join(dd, f"measured-tp1-pp1-{comp}.json")
        if os.path.exists(full):
            pts.append((layers_full, json.load(open(full))))
        pts.sort(key=lambda x: x[0])
        prev = None
        for k, m in pts:
            tc = solve(by_len(m, "cpu_seconds"))[1]
            tw = solve(by_len(m, "seconds"))[1]
            marg_c = marg_w = None
            if prev:
                marg_c = (tc - prev[1]) / (k - prev[0])
                marg_w = (tw - prev[2]) / (k - prev[0])
                depth_marg.setdefault(comp, []).append((prev[0], k, marg_c))
            if prev and comp == "fp16-kv16" and k == pts[-1][0]:
                layer_mb = (m["memory_bytes"] - pts[0][1]["memory_bytes"]) / (k - pts[0][0]) / 1e6
            depth_rows.append(f"| {comp} | {k} | {m['memory_bytes']/1e6:.1f} | {1e3*tc:.3f} | "
                              f"{'' if marg_c is None else f'{1e3*marg_c:.3f}'} | {1e3*tw:.3f} | "
                              f"{'' if marg_w is None else f'{1e3*marg_w:.3f}'} |")
            prev = (k, tc, tw)

def allk(meth, k):
    return [x for s in summary for x in s[2].get((meth, k), [])]

with open(doc, "w") as fh:
    w = lambda s="": fh.write(s + "\n")
    w("# iServe estimation error on this machine (fingerprints → full model)")
    w()
    w("Generated by `scripts/iserve-estimation.sh`; do not edit by hand. Random-weight models of")
    if wide:
        w("the paper's architectures with hidden size 1024 (so that one layer's FP32 weights, 50–60")
        w("MB, exceed a core's L2 cache as a real layer's exceed a GPU's caches, where the paper")
        w("measured; an L3 as large as the run-conditions table's, shared with whatever else the")
        w("host runs, can still hold a fingerprint's weights, or an INT8 model's) at")
        w("reduced depth (8 layers; Llama-2-70B's shape 16) and a 4096-token vocabulary; the narrow")
        w("scale (true depth, hidden size 256) is in [estimation.md](estimation.md). Run by")
    else:
        w("the paper's architectures at their true depth with hidden size 256 and a 4096-token")
        w("vocabulary (one layer's weights fit in a core's L2 cache; the wide scale, where they do")
        w("not, is in [estimation-wide.md](estimation-wide.md)), run by")
    w("tessera's libtorch decoder on the CPU (FP32 compute, one intra-op")
    w("thread per TP shard). Two estimates per configuration, by the same estimator")
    w("(`tessera llm estimate`, §5.2–5.3: linear extrapolation over layers, the 3×3 memory")
    w("solve, Eqs. 1–3): **iserve** from the 1- and 2-layer fingerprints (the paper's method)")
    w(f"and **iserve-deep** from the {deep_a}- and {deep_b}-layer fingerprints (a variant: the same")
    w("extrapolation, per layer = (x_b − x_a)/(b − a), from deeper fingerprints" +
      (")." if wide else " whose weights exceed"))
    if not wide:
        w("the CPU's L2 cache as the full model's do).")
    w("Each profile (`tessera llm profile`) holds")
    w("memory at (TP, PP) = (1, 1), (1, 2), (2, 1) and latency at PP = 1 for TP 1, 2, 4 at two")
    w(f"output lengths ({' and '.join(str(x) for x in sorted(fp_lengths))} tokens after the first);")
    w("the full model was measured under each configuration below (`tessera")
    w(f"llm measure`). Latency is one batch-1 request of a 16-token prompt and {n} tokens after")
    w(f"the first: {warmups} untimed requests, then the median of {repeats} per length (the two")
    w(f"lengths taking turns; {fp_repeats} for the fingerprints, which the profiler loads together and")
    w("times in turn, every length on both in each repeat, so that a slower spell of the machine")
    w("falls on both depths alike instead of being multiplied by the extrapolation over layers),")
    w("on two clocks: the wall clock (what iServe measures) and the CPU")
    w("time of the process (all shards' threads; it does not count time spent waiting for the")
    w("cores other work holds, and with TP > 1 it sums the shards' work instead of overlapping")
    w("it). Memory is the peak bytes libtorch holds while serving the request, each TP rank")
    w("metered as its own device (the sum of the ranks' peaks). Error = |estimate −")
    w("measurement| / measurement. The paper's averages: 4.91 % latency error, 6.92 % memory")
    w("error (§8.4).")
    if host_memory == {"held"}:
        w("Every measuring process held the host memory libtorch frees (the profiles and")
        w("measurements record it; `src/llm_torch/host_memory.hpp`), as a GPU's caching allocator")
        w("does, so a request's buffers do not depend on what ran before it; what glibc's")
        w("defaults did to the estimate is in [host-memory.md](host-memory.md).")
    else:
        w("Freed host memory (`src/llm_torch/host_memory.hpp`), as the profiles and measurements")
        w(f"record it: {', '.join(sorted(host_memory))} (measured before tessera held it, or with")
        w("`TESSERA_HOST_MEMORY=return`: glibc's defaults; [host-memory.md](host-memory.md)).")
    w()
    w("## Run conditions")
    w()
    w("| cores | caches | warm-ups | repeats per point | load average (1, 5, 15 min) at start | at end | 1-min load during the run, min / mean / max (samples) | script seconds |")
    w("|---|---|---|---|---|---|---|---|")
    ls = (f"{min(samples):.1f} / {mean(samples):.1f} / {max(samples):.1f} ({len(samples)})"
          if samples else "–")
    w(f"| {cores} | {caches} | {warmups} | {repeats} (fingerprints {fp_repeats}) | {load_before} | {load_after} | {ls} | {taken} |")
    w()
    w("## Summary (mean errors, %)")
    w()
    w("| model | layers | configs | method | latency, CPU time | max | latency, wall clock | max | memory | max |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    for model, layers, e in summary + [("**all**", "", {(mt, k): allk(mt, k) for mt, _ in METHODS
                                                       for k in ("cpu", "wall", "mem")})]:
        for meth, _ in METHODS:
            if not e.get((meth, "cpu")):
                continue
            w(f"| {model} | {layers} | {len(e[(meth, 'cpu')])} | {meth} | {mean(e[(meth, 'cpu')]):.2f} | "
              f"{max(e[(meth, 'cpu')]):.1f} | {mean(e[(meth, 'wall')]):.2f} | {max(e[(meth, 'wall')]):.1f} | "
              f"{mean(e[(meth, 'mem')]):.2f} | {max(e[(meth, 'mem')]):.2f} |")
    w()
    w("## Findings")
    w()
    mload = mean(samples) if samples else float(load_before.split()[0])
    busy = mload > float(cores)
    for meth, _ in METHODS:
        if not allk(meth, "cpu"):
            continue
        mc, mw, mm = mean(allk(meth, "cpu")), mean(allk(meth, "wall")), mean(allk(meth, "mem"))
        w(f"- {meth}: mean latency error {mc:.2f} % on the CPU-time clock and {mw:.2f} % on the wall "
          f"clock (goal ≤ 5 %: {'met' if mc <= 5 else 'missed'} on CPU time, "
          f"{'met' if mw <= 5 else 'missed'} on the wall clock); mean memory error {mm:.2f} % "
          f"(goal ≤ 7 %: {'met' if mm <= 7 else 'missed'}); summary table, {len(allk(meth, 'cpu'))} "
          "configurations.")
    w(f"- The run-conditions table gives a mean 1-minute load average of {mload:.1f} on {cores} cores "
      "during the run. " + ("Other work held the cores, so a request's wall time mostly measures how "
      "long it waited for one; CPU time is the primary metric of this page, and the wall-clock "
      "columns are shown for completeness." if busy else "The machine was not otherwise busy, so "
      "the wall clock and CPU time should agree (the summary table)."))
    if by_group:
        worst = max(by_group, key=lambda g: mean(by_group[g]))
        w(f"- Memory by weights and TP (iserve; its table): the largest mean error is "
          f"{mean(by_group[worst]):.2f} % for {worst[0]} weights at {worst[1]}. Each TP rank is "
          "metered as its own device, so the peak of INT8 at TP > 1 no longer depends on how the "
          "shards' threads interleave (their FP32 expansions of the INT8 weights used to overlap or "
          "not with thread timing; llm_profiler_test asserts equal peaks from run to run).")
    for comp, marg in depth_marg.items():
        first, last = marg[0], marg[-1]
        growth = last[2] / first[2]
        w(f"- Per-layer decode cost against depth ({depth_model}, {comp}, CPU time; the depth table): "
          f"adding layers {first[0]}→{first[1]} costs {1e3*first[2]:.3f} ms per layer and token, "
          f"adding layers {last[0]}→{last[1]} {1e3*last[2]:.3f} ms ({growth:.2f}×)" +
          (f"; one layer's FP32 weights take {layer_mb:.1f} MB (the fp16 rows' memory step per "
           f"layer) against the caches of the run-conditions table ({caches}), consistent with "
           "the 1- and 2-layer fingerprints re-reading their weights from a core's L2 cache at "
           "every decode step while the full model's stream from L3 or memory; the paper's "
           "extrapolation from 1 and 2 layers carries the cached cost to every layer."
           if growth > 1.3 else
           f"; one layer's FP32 weights take {layer_mb:.1f} MB, more than a core's L2 cache "
           f"({caches}), and the cost of a layer hardly depends on how many there are (the "
           "premise of the paper's linear extrapolation, which holds on a GPU where a real layer's "
           "weights exceed the caches)."
           if wide and 0.9 <= growth <= 1.1 else
           f"; one layer's FP32 weights take {layer_mb:.1f} MB, more than a core's L2 cache "
           f"({caches}), yet the cost of "
           f"one more layer differs by {growth:.2f}× between the two ends of the depth table: at "
           "this scale a layer's cost moves by that much with depth (the same-work table gives "
           "the measurement noise of one configuration for comparison), and the paper's "
           "extrapolation from 1 and 2 layers carries the shallow end's cost to every layer."
           if wide else
           ". In this run the cost per layer grows by less than 1.3× with depth (the per-layer "
           "table gives the fingerprints' ratio per model)."
           if not busy else
           f". In this run the cost per layer grows little with depth although one layer's FP32 "
           f"weights take {layer_mb:.1f} MB (the fp16 rows' memory step per layer) against the "
           f"caches of the run-conditions table ({caches}): under the load that table gives, the "
           "core's caches are shared by the time slices of other processes, so a fingerprint's "
           "weights do not stay cached between its decode steps either, and the cache advantage "
           "of a 1- or 2-layer fingerprint is not visible."))
    if rows:
        amp = {}
        for model, layers, _ in summary:
            amp[model] = (layers - 1, (layers - deep_a) / (deep_b - deep_a))
        a1 = ", ".join(f"{m} {v[0]}×" for m, v in amp.items())
        a2 = ", ".join(f"{m} {v[1]:.1f}×" for m, v in amp.items())
        w(f"- Both methods multiply the difference of two fingerprint measurements by the layers "
          f"beyond the first fingerprint's over the fingerprints' depth difference (the summary "
          f"table's layers column): iserve by L − 1 ({a1}), iserve-deep by (L − {deep_a}) / "
          f"{deep_b - deep_a} ({a2}), so a fingerprint's measurement noise weighs that many times "
          "less in iserve-deep's estimate; its fingerprints' weights also exceed L2 as the full "
          "model's do.")
    if layer_rows:
        ratios = {}
        for r in layer_rows:
            parts = [x.strip() for x in r.split("|")]
            ratios.setdefault(parts[3].split(" ")[0], []).append(float(parts[-2]))
        w("- The per-layer table compares the fingerprints' per-layer decode cost with the one the "
          "full model implies (CPU time, TP 1): full / fingerprint ratio " +
          ", ".join(f"{min(v):.2f}–{max(v):.2f} for {k}" for k, v in ratios.items()) +
          ". Above 1 the linear extrapolation under-estimates the full model.")
    noise = [(k, sorted(v)) for k, v in same_work.items() if len(v) > 1]
    spreads = [(max(c for _, c in v) - min(c for _, c in v)) / mean([c for _, c in v]) * 100
               for _, v in noise]
    if spreads:
        w(f"- Measurement noise (the same-work table): a request's work hardly depends on PP "
          f"(one request at a time: the stages run one after another, a hand-off copies one "
          f"[tokens, hidden] activation), yet the full model's "
          f"measured CPU time across PP degrees of one (model, TP, compression) spreads by "
          f"{mean(spreads):.1f} % of its mean on average and up to {max(spreads):.1f} %; iServe's "
          "PP estimate reuses PP 1's, so that spread enters the latency error of either method "
          "whatever the estimate.")
    if paired_summary:
        allp = {c: [x for r in paired_summary for x in r[2][c]] for c in ("cpu", "wall")}
        allprof = {c: [x for r in paired_summary for x in r[3 if c == "cpu" else 4]]
                   for c in ("cpu", "wall")}
        goal = lambda v: "met" if v <= 5 else "missed"
        w(f"- iserve, paired (the paired table): mean latency error {mean(allp['cpu']):.2f} % on "
          f"the CPU-time clock and {mean(allp['wall']):.2f} % on the wall clock (goal ≤ 5 %: "
          f"{goal(mean(allp['cpu']))} on CPU time, {goal(mean(allp['wall']))} on the wall clock), "
          f"{len(allp['cpu'])} configurations, when the fingerprints are timed in the same loop "
          f"as the full model; from the profile, timed minutes before the full model, "
          f"{mean(allprof['cpu']):.2f} % and {mean(allprof['wall']):.2f} % (the same estimator; "
          "only when its inputs were timed differs). " +
          ("The difference is what changed on this shared machine between the two timings, "
           "which the paired loop lets the estimate's inputs and the measurement share."
           if mean(allp["cpu"]) < mean(allprof["cpu"]) - 1 else
           "Timing them together does not bring the error down: what remains is not the "
           "machine's drift but how the fingerprints run against the full model at this scale "
           "(the depth table)."))
    w()
    if paired_summary:
        w("## Paired: the fingerprints timed beside each measurement (iserve)")
        w()
        w("Each configuration's full model measured again (`tessera llm measure --alongside`) with")
        w("the 1- and 2-layer fingerprints (PP 1, the configuration's TP and compression) in the")
        w("same loop: every repeat serves every length on each of the three in turn, so each")
        w("request follows another model's and the machine's changes of speed fall on all three.")
        w("The estimate is the same estimator's (`tessera llm estimate`, Eqs. 1–3) from a copy of")
        w("the profile whose latencies for that TP and compression are the ones timed alongside")
        w("(memory is the profile's). Error against the measurement taken in that loop.")
        pc = open(os.path.join(out, "paired-conditions.txt")).read().split("\n") if os.path.exists(
            os.path.join(out, "paired-conditions.txt")) else ["–", "–", "–"]
        w()
        w("| load average (1, 5, 15 min) at start | at end | seconds |")
        w("|---|---|---|")
        w(f"| {pc[0]} | {pc[1]} | {pc[2]} |")
        w()
        w("| model | layers | configs | latency error, CPU time, paired % | max | from the profile % | wall clock, paired % | max | from the profile % |")
        w("|---|---|---|---|---|---|---|---|---|")
        for model, layers, pe, pcpu, pwall in paired_summary + [
                ("**all**", "", allp, allprof["cpu"], allprof["wall"])]:
            w(f"| {model} | {layers} | {len(pe['cpu'])} | {mean(pe['cpu']):.2f} | {max(pe['cpu']):.1f} | "
              f"{mean(pcpu):.2f} | {mean(pe['wall']):.2f} | {max(pe['wall']):.1f} | {mean(pwall):.2f} |")
        w()
        w("| model | configuration | CPU ms, measured | paired estimate (error %) | wall ms, measured | paired estimate (error %) |")
        w("|---|---|---|---|---|---|")
        for r in paired_rows:
            w(r)
        w()
    w("## Same work, different PP: the full model's measured CPU time (noise)")
    w()
    w("| model | TP | compression | CPU ms by PP | spread (max − min) / mean % |")
    w("|---|---|---|---|---|")
    for (k, v), sp in zip(noise, spreads):
        w(f"| {k[0]} | {k[1]} | {k[2]}-{k[3]} | " + ", ".join(f"PP {pp}: {1e3*c:.1f}" for pp, c in v) +
          f" | {sp:.1f} |")
    w()
    w(f"## Decode cost per layer against depth ({depth_model}, TP 1, PP 1)")
    w()
    w("The first k layers of the model (`tessera llm fingerprint --layers k`), measured as the")
    w("full model is; the last row of each compression is the full model. Marginal = (TPOT(k) −")
    w("TPOT(previous k)) / (k − previous k): the cost of one more layer at that depth.")
    w()
    w("| compression | layers | peak memory MB | TPOT ms, CPU | marginal per layer ms, CPU | TPOT ms, wall | marginal per layer ms, wall |")
    w("|---|---|---|---|---|---|---|")
    for r in depth_rows:
        w(r)
    w()
    w("## Memory error by weights and TP (iserve, mean %)")
    w()
    w("| weights | TP | configs | mean memory error % | max % |")
    w("|---|---|---|---|---|")
    for g in sorted(by_group):
        w(f"| {g[0]} | {g[1]} | {len(by_group[g])} | {mean(by_group[g]):.2f} | {max(by_group[g]):.2f} |")
    w()
    w("## Per-layer decode cost: fingerprints against the full model (TP 1, PP 1, CPU time)")
    w()
    w("| model | compression | method (depths) | TPOT_other ms (fingerprints) | TPOT per layer ms, fingerprints | implied by the full model | ratio |")
    w("|---|---|---|---|---|---|---|")
    for r in layer_rows:
        w(r)
    w()
    w("## Per configuration")
    w()
    w("Estimates with their error in % in brackets.")
    w()
    w("| model | configuration | CPU ms, measured | iserve | iserve-deep | wall ms, measured | iserve | iserve-deep | memory MB, measured | iserve | iserve-deep |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        w(r)
PY
echo "wrote $DOC" >&2
