#!/usr/bin/env bash
# The LLM decoder on a GPU (docs/iserve.md#devices), the measurements of
# docs/results/iserve/gpu.md:
#   1. writes a random-weight FP16 checkpoint of a real model's full shape (default
#      data/llm/llama-2-7b: 32 layers, hidden 4096, 6.7 B parameters);
#   2. one request with `tessera llm generate` (TTFT, TPOT at batch 1);
#   3. `tessera llm step-profile`: prefill and decode step costs at batch 1..32, from which
#      decode tokens/s at batch 1, 8 and 32;
#   4. iServe's fingerprint estimate against the full model, the paper's own setting
#      (fingerprints profiled with `tessera llm profile`, estimated with `tessera llm
#      estimate`, the full model measured with `tessera llm measure`, its fingerprints timed
#      alongside it in the same loop);
#   5. writes docs/results/iserve/gpu.md.
#   scripts/gpu-llm.sh [DEVICE]   (default cuda)
# Environment: TESSERA_TORCH (default build-cuda/tessera-torch), LLM_MODEL (a data/llm
# folder), LLM_SHAPE (extra random-checkpoint options, e.g. a smaller shape for a trial on
# the CPU), LENGTHS (output tokens after the first, default "8 64"), REPEATS (default 5).
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICE="${1:-cuda}"
T=${TESSERA_TORCH:-build-cuda/tessera-torch}
MODEL=${LLM_MODEL:-llama-2-7b}
read -r -a SHAPE <<< "${LLM_SHAPE:-}"
read -r -a LENGTHS <<< "${LENGTHS:-8 64}"
REPEATS=${REPEATS:-5}
OUT=${GPU_LLM_OUT:-out/gpu-llm}
DOC=${GPU_LLM_DOC:-docs/results/iserve/gpu.md}
mkdir -p "$OUT" "$(dirname "$DOC")"
if command -v nvidia-smi > /dev/null 2>&1; then
  GPU=$(nvidia-smi -L | head -1)
else
  GPU="no GPU ($(lscpu | awk -F: '/Model name/ {gsub(/^ +/, "", $2); print $2; exit}'))"
fi
STAMP="$(date -u '+%Y-%m-%d %H:%M UTC')"
CKPT=$OUT/ckpt
step() { echo "gpu-llm: $*" >&2; }

step "1. random checkpoint of $MODEL ${SHAPE[*]}"
[ -f "$CKPT/config.json" ] ||
  "$T" llm random-checkpoint "data/llm/$MODEL" --out "$CKPT" --dtype F16 --seed 7 "${SHAPE[@]}" \
    > "$OUT/checkpoint.txt"
step "2. one request"
"$T" llm generate "$CKPT" --device "$DEVICE" --prompt "The quick brown fox jumps over the lazy dog" \
  --new-tokens 128 --ignore-eos > "$OUT/generate.txt"
step "3. step costs"
"$T" llm step-profile "$CKPT" --device "$DEVICE" --segment gpu --max-batch 32 --max-tokens 1024 \
  --repeats 3 --out "$OUT/step-profile.yaml" --cost-model-out "$OUT/cost-model.yaml" \
  > "$OUT/step-profile.txt"
step "4. fingerprints, estimate, full model"
"$T" llm profile "$CKPT" --device "$DEVICE" --out "$OUT/profile.json" --work "$OUT/fingerprints" \
  --weights fp16 --kv kv16 --tp 1 --gpus 1 --lengths "${LENGTHS[@]}" --prompt-tokens 16 \
  --repeats "$REPEATS" --warmups 2 > "$OUT/profile.txt"
"$T" llm estimate "$OUT/profile.json" --model "$CKPT" --gpus 1 --out "$OUT/map.json" \
  > "$OUT/estimate.txt"
"$T" llm measure "$CKPT" --device "$DEVICE" --weights fp16 --kv kv16 --lengths "${LENGTHS[@]}" \
  --prompt-tokens 16 --repeats "$REPEATS" --warmups 2 \
  --alongside "$OUT/fingerprints/fp1" "$OUT/fingerprints/fp2" --out "$OUT/measured.json" \
  > "$OUT/measure.txt"

step "5. $DOC"
python3 - "$OUT" "$DOC" "$GPU" "$STAMP" "$DEVICE" "$MODEL ${SHAPE[*]}" <<'PY'
import json, re, sys
out, doc, gpu, stamp, device, model = sys.argv[1:7]
model = model.strip()
text = [f"# The LLM decoder on a GPU", "",
        f"Measured by `scripts/gpu-llm.sh {device}` on {gpu}, {stamp}, with "
        f"tessera-torch built against that machine's CUDA libtorch "
        f"(`scripts/gpu-session.sh`). The checkpoint is a random-weight FP16 checkpoint of "
        f"`data/llm/{model}`'s shape (`tessera llm random-checkpoint`): "
        + open(f"{out}/checkpoint.txt").read().strip().replace("wrote ", "") + ".", ""]

gen = open(f"{out}/generate.txt").read()
m = re.search(r"TTFT ([0-9.]+) ms, TPOT ([0-9.]+) ms", gen)
text += ["## One request (`tessera llm generate`, 128 new tokens)", "",
         "| TTFT (ms) | TPOT (ms) | tokens/s |", "|---:|---:|---:|",
         f"| {m.group(1)} | {m.group(2)} | {1000 / float(m.group(2)):.1f} |" if m else
         "| (not found in the output) | | |", ""]

steps = open(f"{out}/step-profile.txt").read()
d = re.search(r"decode \(batch x context -> ms\): (.*) contexts \[(.*)\]", steps)
text += ["## Decode tokens/s by batch (`tessera llm step-profile`)", ""]
if d:
    contexts = [int(float(c)) for c in d.group(2).split(",")]
    text += ["| batch | " + " | ".join(f"context {c}" for c in contexts) + " |",
             "|---:|" + "---:|" * len(contexts)]
    for b, ms in re.findall(r"b(\d+):\[([^\]]*)\]", d.group(1)):
        if int(b) in (1, 8, 32):
            text.append(f"| {b} | " + " | ".join(f"{int(b) / (float(x) / 1e3):.0f}"
                                                for x in ms.split(",")) + " |")
    text.append("")
text += ["## Decode steps by batch (`tessera llm step-profile`)", "",
         "Decode tokens/s = batch / step time, from the measured decode step at each context "
         "of the grid (medians of 3). The step profile and its llm_measured cost model are "
         f"`{out}/step-profile.yaml` and `{out}/cost-model.yaml`.", "",
         "```", open(f"{out}/step-profile.txt").read().rstrip(), "```", ""]

est = json.load(open(f"{out}/map.json"))
meas = json.load(open(f"{out}/measured.json"))
entry = next(e for e in est["entries"] if e["config"] == "tp1-pp1-fp16-kv16")
text += ["## iServe's fingerprint estimate against the full model", "",
         "The 1- and 2-layer fingerprints profiled on the GPU (`tessera llm profile --tp 1 "
         "--weights fp16 --kv kv16`), the full model's latency estimated from them by Eq. 1 "
         "(`tessera llm estimate`, latency = TTFT + output length x TPOT) and measured "
         "(`tessera llm measure`, 16 prompt tokens, medians). The paper reports a 4.91 % "
         "mean latency error for its estimator.", "",
         "| output tokens after the first | estimated (ms) | measured (ms) | error |",
         "|---:|---:|---:|---:|"]
errors = []
for row in meas["latency"]:
    n = row["output_length"]
    e = entry["ttft_s"] + n * entry["tpot_s"]
    r = row["seconds"]
    errors.append(abs(e - r) / r)
    text.append(f"| {n} | {1e3 * e:.2f} | {1e3 * r:.2f} | {100 * (e - r) / r:+.2f} % |")
text += ["", f"Mean absolute latency error: {100 * sum(errors) / len(errors):.2f} %.", ""]
if "alongside" in meas:
    text += ["Fingerprints timed alongside the full model (same loop):", "",
             "| checkpoint | output tokens | seconds |", "|---|---:|---:|"]
    for a in meas["alongside"]:
        for row in a["latency"]:
            text.append(f"| {a['checkpoint']} | {row['output_length']} | {row['seconds']:.5f} |")
    text.append("")
text += ["Memory: estimated " + f"{entry['memory_bytes'] / 1e9:.2f} GB, measured "
         + (f"{meas['memory_bytes'] / 1e9:.2f} GB" if meas.get("memory_bytes") else "not measured")
         + f" (`{out}/map.json`, `{out}/measured.json`).", ""]
open(doc, "w").write("\n".join(text))
print(f"gpu-llm: wrote {doc}")
PY
