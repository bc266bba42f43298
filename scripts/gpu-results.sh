#!/usr/bin/env bash
# The GPU section of docs/results/serve.md (docs/serve.md#serving-on-gpus), on a machine
# with an NVIDIA GPU and a CUDA PyTorch (pip) whose libtorch tessera builds against:
#   1. builds tessera against that libtorch (build-cuda, TESSERA_CUDA=ON);
#   2. profiles the zoo on the GPU (`tessera profile --device cuda`);
#   3. serves examples/serve's three-stage zoo pipeline on the GPU with those profiles and
#      replays its workload (examples/serve/compare.sh), beside `tessera simulate`;
#   4. plans the traffic app (examples/plan/traffic.yaml), serves the plan with
#      `--device cuda` (its variants are profile-timed emulations: their real models are
#      not available) and replays it, beside `tessera simulate`;
#   5. writes the tables between the gpu-results markers of docs/results/serve.md.
# On a machine without a GPU it says so and exits 0 without writing anything.
#   scripts/gpu-results.sh [DEVICE]     (default cuda; e.g. cuda:1 or a GPU-/MIG- UUID)
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICE="${1:-cuda}"
if ! command -v nvidia-smi > /dev/null 2>&1 || ! nvidia-smi -L 2> /dev/null | grep -q '^GPU '; then
  echo "gpu-results: no NVIDIA GPU on this machine (nvidia-smi -L lists none):" \
       "the GPU section of docs/results/serve.md is not measured here; nothing written."
  exit 0
fi
TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2> /dev/null || true)
if [ -z "$TORCH_PREFIX" ] || [ "$(python3 -c 'import torch; print(torch.cuda.is_available())')" != True ]; then
  echo "gpu-results: a GPU is here but python3 has no CUDA PyTorch to build against" >&2
  exit 1
fi
# TESSERA_BUILD_DIR: a build made already (scripts/gpu-session.sh makes one where the
# Debian dependencies come from an unpacked prefix); otherwise build here.
if [ -z "${TESSERA_BUILD_DIR:-}" ]; then
  cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$TORCH_PREFIX" \
    -DTESSERA_CUDA=ON -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_BENCH=OFF > /dev/null
  ninja -C build-cuda tessera tessera-torch > /dev/null
fi
T=${TESSERA_BUILD_DIR:-build-cuda}/tessera
OUT=out/gpu-results
WORK=out/gpu-serve  # two levels deep, so examples/serve's ../../data paths still resolve
rm -rf "$OUT" "$WORK" && mkdir -p "$OUT" "$WORK"
GPU=$(nvidia-smi -L | head -1)
STAMP="$(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"

# 5. The tables, into docs/results/serve.md between the markers (what has been measured so
#    far: the plan's rows say when its step has not run).
write_doc() {
python3 - "$OUT" "$GPU" "$STAMP" "$DEVICE" <<'PY'
import json, os, sys
out, gpu, stamp, device = sys.argv[1:5]

def summary(path):
    return json.load(open(path))

def side_by_side(sim, real):
    rows = [("goodput (req/s)", lambda s: s["goodput_rps"]), ("drop rate", lambda s: s["drop_rate"]),
            ("late", lambda s: s["late"]), ("p50 latency (ms)", lambda s: s["latency_ms"]["p50"]),
            ("p99 latency (ms)", lambda s: s["latency_ms"]["p99"])]
    lines = ["| | simulate | serve + loadgen | gap |", "|---|---:|---:|---:|"]
    fmt = lambda v: "not measured" if v is None else f"{v:.4g}"
    for label, get in rows:
        s, r = get(sim), get(real)
        gap = f"{100 * (r - s) / s:+.1f} %" if s and r is not None else ""
        lines.append(f"| {label} | {fmt(s)} | {fmt(r)} | {gap} |")
    return "\n".join(lines)

text = [f"Measured by `scripts/gpu-results.sh {device}` on {gpu}, {stamp}.", "",
        "Zoo latency on the GPU (`tessera profile --device " + device +
        "`, 3x224x224, median ms per batch; raw profile: `" + out + "/zoo-gpu.yaml`):", "",
        "```", open(f"{out}/zoo-gpu.txt").read().rstrip(), "```", "",
        "examples/serve's pipeline on the GPU (profiles re-measured there):", "",
        side_by_side(summary(f"{out}/cmp-zoo/sim/summary.json"),
                     summary(f"{out}/cmp-zoo/real/summary.json")), "",
        "Where the served latency went (`scripts/served_breakdown.py` on the server's "
        "`/metrics`): its batches against the profile the simulator used, and the mean "
        "parts of a request (queue: before its first batch; compute input: reading the "
        "request up to the engine; compute infer: first batch to answer, every stage and hop):",
        "", open(f"{out}/cmp-zoo-breakdown.md").read().rstrip(), "",
        "The traffic app's plan served with `--device " + device +
        "` (profile-timed emulations):", ""]
if os.path.exists(f"{out}/plan/served/summary.json"):
    text.append(side_by_side(summary(f"{out}/plan/sim/summary.json"),
                             summary(f"{out}/plan/served/summary.json")))
else:
    text.append("Not measured in this run: its step (plan, simulate, serve, replay) had not "
                "finished when the page was written.")
doc = "docs/results/serve.md"
s = open(doc).read()
begin, end = "<!-- gpu-results:begin -->", "<!-- gpu-results:end -->"
i, j = s.index(begin) + len(begin), s.index(end)
open(doc, "w").write(s[:i] + "\n" + "\n".join(text) + "\n" + s[j:])
print(f"gpu-results: wrote the GPU section of {doc}")
PY
}

# 1. The zoo on the GPU, at 3x224x224.
{
  echo "input: [3, 224, 224]"
  echo "models:"
  for a in resnet18 resnet34 resnet50 resnet101 resnet152 wide_resnet50_2 resnext50_32x4d \
           mobilenet_v2 small_cnn; do
    echo "  - {variant: $a, zoo: $a}"
  done
} > "$OUT/zoo-models.yaml"
"$T" profile --models "$OUT/zoo-models.yaml" --device "$DEVICE" --segment gpu \
  --batches 1,2,4,8,16,32 --out "$OUT/zoo-gpu.yaml" > "$OUT/zoo-gpu.txt"

# 2. examples/serve's pipeline on the GPU: its profiles re-measured there (segment label
#    `cpu` kept, so the deployment is unchanged), its models on the device.
cp examples/serve/*.yaml "$WORK"/ && mkdir -p "$WORK/profiles"
{ echo "device: $DEVICE"; grep -v '^device:' examples/serve/models.yaml; } > "$WORK/models-gpu.yaml"
"$T" profile --models "$WORK/models-gpu.yaml" --batches 1,2,4,8 --out "$WORK/profiles/cpu.yaml" > /dev/null
examples/serve/compare.sh "$WORK/run.yaml" "$WORK/models-gpu.yaml" "$OUT/cmp-zoo" "$T" 18090 \
  > "$OUT/cmp-zoo.txt"
# Where the served latency went: the server's batches against the profile, and Triton's
# per-request parts, from its /metrics scrape.
python3 scripts/served_breakdown.py "$OUT/cmp-zoo/metrics.txt" "$WORK/deployment.yaml" \
  "$WORK"/profiles/*.yaml > "$OUT/cmp-zoo-breakdown.md"
write_doc  # now, in case the plan below runs out of time; again after it

# 3. The traffic app's plan, served with --device cuda (profile-timed emulations).
# (exit 4: the plan missed its target in verification; it is still written and served)
"$T" plan examples/plan/traffic.yaml --out "$OUT/plan" > "$OUT/plan.txt" || [ $? -eq 4 ]
"$T" simulate "$OUT/plan/run.yaml" --out "$OUT/plan/sim" --quiet > /dev/null
"$T" serve "$OUT/plan/run.yaml" --device "$DEVICE" --port 18091 --max-inflight 512 \
  > "$OUT/plan/serve.log" 2>&1 &
SERVER=$!
trap 'kill -INT $SERVER 2> /dev/null || true' EXIT
for _ in $(seq 1 300); do
  curl -sf http://127.0.0.1:18091/v2/health/ready > /dev/null && break
  kill -0 $SERVER 2> /dev/null || { cat "$OUT/plan/serve.log"; exit 1; }
  sleep 0.1
done
"$T" loadgen "$OUT/plan/run.yaml" --url http://127.0.0.1:18091 --connections 200 \
  --out "$OUT/plan/served" --quiet > /dev/null
curl -s http://127.0.0.1:18091/metrics > "$OUT/plan/metrics.txt"
kill -INT $SERVER && wait $SERVER || true
trap - EXIT

write_doc
