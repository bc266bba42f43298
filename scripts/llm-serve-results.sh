#!/usr/bin/env bash
# Regenerates the "Simulator vs live server" section of docs/results/llm.md (kept also as
# docs/results/llm-sim-vs-real.md, which scripts/llm-results.sh appends when it rewrites
# the page): a tiny random-weight Llama-shaped model served live on this CPU by
# `tessera serve` (the LlmInstanceScheduler driving the libtorch decoder), the first 12
# requests of the Azure LLM 2023 code trace replayed against it by `tessera loadgen`
# (streaming, client-side TTFT/TPOT), and the same spec simulated with the step costs
# `tessera llm step-profile` measured on this machine: its `llm_measured` tables (the
# model the live server also predicts with) and, for comparison, the older
# `token_linear` fit. Every number in the section is printed by this script from the
# runs' summary.json files, the step profile's output and the server's /metrics.
#   scripts/llm-serve-results.sh        (about 10 minutes on 2 cores)
#   TESSERA=build-release/tessera scripts/llm-serve-results.sh   (use a built binary)
#   REPORT_ONLY=1 TESSERA=build-release/tessera scripts/llm-serve-results.sh  (no new runs)
set -euo pipefail
cd "$(dirname "$0")/.."
T=$(scripts/release-build.sh)
. scripts/llm-serve-replay.sh
TT="$(dirname "$T")/tessera-torch"
OUT=out/llm-serve
DOC=docs/results/llm.md
FRAG=docs/results/llm-sim-vs-real.md
PORT=${PORT:-18471}
mkdir -p "$OUT"
# REPORT_ONLY=1: rewrite the section from the last run's files in out/llm-serve.
if [ "${REPORT_ONLY:-0}" != 1 ]; then
cat /proc/loadavg > "$OUT/loadavg-start.txt"

echo "==> checkpoint" >&2
rm -rf "$OUT/model"
"$TT" llm random-checkpoint data/llm/llama-2-7b --out "$OUT/model" --layers 2 --hidden 64 \
  --heads 4 --kv-heads 2 --ffn 128 --vocab 260 --dtype F32 --seed 1 --max-positions 8192 >&2
# (8192 positions: the trace's prompts reach ~7,500 tokens; rotary positions need no table.)

echo "==> step profile" >&2
"$TT" llm step-profile "$OUT/model" --out "$OUT/profiles.yaml" --variant tiny-llama \
  --segment cpu --context 2048 --max-batch 16 --repeats 3 \
  --cost-model-out "$OUT/cost-model.yaml" | tee "$OUT/step-profile.txt" >&2
PER=$(sed -n 's/.*(per_input_token_ms: \([0-9.]*\)).*/\1/p' "$OUT/step-profile.txt")
# Two run specs: the measured tables (served and simulated) and the token-linear fit
# (simulated only, for comparison).
python3 - "$OUT" "$PER" <<'PY'
import sys
out, per = sys.argv[1], sys.argv[2]
text = open("examples/llm-serve/run.yaml").read()
text = text.replace("app: app.yaml", "app: ../../examples/llm-serve/app.yaml", 1)
text = text.replace("deployment: deployment.yaml",
                    "deployment: ../../examples/llm-serve/deployment.yaml", 1)
lines = text.splitlines()
at = [i for i, l in enumerate(lines) if l.startswith("  cost_model:")]
assert len(at) == 1, "examples/llm-serve/run.yaml: one simulation.cost_model line expected"
measured = open(f"{out}/cost-model.yaml").read().strip()
linear = f"{{kind: token_linear, per_input_token_ms: {per}, per_output_token_ms: 0}}"
for name, model in (("run.yaml", measured), ("run-linear.yaml", linear)):
    lines[at[0]] = "  cost_model: " + model
    open(f"{out}/{name}", "w").write("\n".join(lines) + "\n")
PY

echo "==> simulate" >&2
"$T" simulate "$OUT/run.yaml" --out "$OUT/sim" --quiet >/dev/null
"$T" simulate "$OUT/run-linear.yaml" --out "$OUT/sim-linear" --quiet >/dev/null

echo "==> serve + loadgen" >&2
llm_serve_replay "$OUT/serve.log" "$OUT/real" "$OUT/metrics.txt" --llm-step-log "$OUT/steps.csv"

cat /proc/loadavg > "$OUT/loadavg-end.txt"
fi
PER=$(sed -n 's/.*(per_input_token_ms: \([0-9.]*\)).*/\1/p' "$OUT/step-profile.txt")

python3 - "$OUT" "$PER" > "$FRAG" <<'PY'
import json, re, sys
out, per = sys.argv[1], float(sys.argv[2])
sim = json.load(open(f"{out}/sim/summary.json"))
lin = json.load(open(f"{out}/sim-linear/summary.json"))
real = json.load(open(f"{out}/real/summary.json"))
prof = open(f"{out}/step-profile.txt").read()
load0 = open(f"{out}/loadavg-start.txt").read().split()[:3]
load1 = open(f"{out}/loadavg-end.txt").read().split()[:3]
m = re.search(r"prefill \(tokens -> ms\):(.*)\n", prof)
points = [tuple(map(float, p.split(":"))) for p in m.group(1).split()]
held = [(int(n), *map(float, v.split("/"))) for n, v in
        (p.split(":") for p in re.search(r"held-out prefill \([^)]*\):(.*)\n", prof).group(1).split())]
fit = re.search(r"fit error on held-out prompts[^:]*: table ([0-9.]+) % \(([0-9.]+) %\), "
                r"quadratic ([0-9.]+) % \(([0-9.]+) %\); chosen: (\w+)", prof)
quad = re.search(r"quadratic: prefill = (\S+) \+ (\S+) n \+ (\S+) n\^2 ms", prof)
dec = re.search(r"decode \(batch x context -> ms\):(.*) contexts \[(.*)\]\n", prof)
dec_rows = re.findall(r"b(\d+):\[([^\]]*)\]", dec.group(1))
contexts = [float(c) for c in dec.group(2).split(",")]
metrics = open(f"{out}/metrics.txt").read()
def metric(name):
    mm = re.search(name + r"\{[^}]*\} ([0-9.e+-]+)", metrics)
    return float(mm.group(1)) if mm else 0.0
def fmt(v):
    v = float(v)
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"
def pct(a, b):
    if a == b:
        return "+0 %"
    return "—" if b == 0 else f"{100.0 * (a - b) / b:+.0f} %"
def get(s, *path):
    for p in path:
        s = s[p]
    return s
def completed(s):
    return s["completed"] if "completed" in s else s["llm"]["requests"]
rows = [
    ("requests submitted", lambda s: s["submitted"]),
    ("completed (ok + late)", completed),
    ("goodput (both SLOs), req/s", lambda s: s["llm"]["goodput_rps"]),
    ("TTFT p50, ms", lambda s: s["llm"]["ttft_ms"]["p50"]),
    ("TTFT p99, ms", lambda s: s["llm"]["ttft_ms"]["p99"]),
    ("TPOT p50, ms", lambda s: s["llm"]["tpot_ms"]["p50"]),
    ("TPOT p99, ms", lambda s: s["llm"]["tpot_ms"]["p99"]),
    ("TTFT SLO attainment", lambda s: s["llm"]["ttft_attainment"]),
    ("TPOT SLO attainment", lambda s: s["llm"]["tpot_attainment"]),
    ("output tokens", lambda s: s["llm"]["output_tokens"]),
]
print("<!-- generated by scripts/llm-serve-results.sh: do not edit -->")
print("## Simulator vs live server (tiny model on this CPU)\n")
print("`scripts/llm-serve-results.sh`: a random-weight Llama-shaped model (2 layers, hidden 64,")
print("vocabulary 260, byte tokenizer) served by `tessera serve --llm-checkpoint` on this CPU")
print("(continuous batching, 16 sequences, one instance), the first 12 requests of the Azure LLM")
print("2023 code trace at an eighth of its rate replayed by `tessera loadgen` (streaming")
print("`/v1/completions`, TTFT and TPOT measured on the client), and the same run spec")
print("simulated (`tessera simulate`) with the step costs `tessera llm step-profile` measured")
print("on this machine: the `llm_measured` model (its tables, docs/llm-serve.md#measured-step-costs),")
print("and for comparison the older `token_linear` fit. Random weights generate meaningless")
print("text; the point is serving behaviour. Load average (1/5/15 min) at the start: "
      f"{' '.join(load0)}; at the end: {' '.join(load1)}.\n")
print("### Measured step costs\n")
print("One request's prefill (median of 3; the grid of the table):\n")
print("| prefill tokens | " + " | ".join(f"{int(n)}" for n, _ in points) + " |")
print("|---|" + "---|" * len(points))
print("| ms | " + " | ".join(f"{t:.2f}" for _, t in points) + " |")
print(f"| ms per token | " + " | ".join(f"{t / n:.4f}" for n, t in points) + " |\n")
print("Prompt lengths held out of the grid, and what each prefill form predicts for them:\n")
print("| held-out tokens | measured ms | table (piecewise-linear) ms | quadratic ms |")
print("|---|---|---|---|")
for n, meas, tab, q in held:
    print(f"| {n} | {meas:.2f} | {tab:.2f} ({pct(tab, meas)}) | {q:.2f} ({pct(q, meas)}) |")
print()
print(f"Fit error over the held-out lengths (sum of |predicted - measured| over sum measured;")
print(f"worst single length in brackets): table {fit.group(1)} % ({fit.group(2)} %), quadratic")
print(f"{fit.group(3)} % ({fit.group(4)} %); the profile chose **{fit.group(5)}** (the smaller).")
print(f"The quadratic, fitted by least squares on the relative error: prefill = {float(quad.group(1)):.4g}")
print(f"+ {float(quad.group(2)):.4g}·n + {float(quad.group(3)):.4g}·n² ms. The run spec's table")
print("holds the grid and the held-out lengths.\n")
print("A decode iteration of b requests at a context of c tokens each (ms):\n")
print("| batch \\ context | " + " | ".join(f"{int(c)}" for c in contexts) + " |")
print("|---|" + "---|" * len(contexts))
for b, vals in dec_rows:
    print(f"| {b} | " + " | ".join(f"{float(v):.3f}" for v in vals.split(",")) + " |")
print()
print("### Simulated against live\n")
print("| | simulated, `llm_measured` | live | live vs `llm_measured` | simulated, `token_linear` | live vs `token_linear` |")
print("|---|---|---|---|---|---|")
for name, f in rows:
    s, r, l = float(f(sim)), float(f(real)), float(f(lin))
    print(f"| {name} | {fmt(s)} | {fmt(r)} | {pct(r, s)} | {fmt(l)} | {pct(r, l)} |")
print()
steps = metric('tessera_llm_steps_total')
live_s = metric('tessera_llm_step_seconds_total')
pred_s = metric('tessera_llm_step_predicted_seconds_total')
dsteps = metric('tessera_llm_decode_only_steps_total')
dsec = metric('tessera_llm_decode_only_step_seconds_total')
dpred = metric('tessera_llm_decode_only_step_predicted_seconds_total')
dtok = metric('tessera_llm_decode_only_step_tokens_total')
print(f"The live server ran {int(steps)} steps, prefilled "
      f"{int(metric('tessera_llm_prefill_tokens_total'))} tokens and preempted "
      f"{int(metric('tessera_llm_preemptions_total'))} times (its `/metrics`); the simulator "
      f"(`llm_measured`) ran {sim['llm']['steps']} steps, prefilled {sim['llm']['prefill_tokens']} "
      f"tokens and preempted {sim['llm']['preemptions']} times.\n")
print("### Where the time went: the live steps against the model's time for the same steps\n")
print("The live server predicts every step it runs with the run's cost model (the same")
print("`llm_measured` tables) and counts both the measured and the predicted seconds")
print("(`/metrics`: `tessera_llm_step_seconds_total`, `tessera_llm_step_predicted_seconds_total`")
print("and their decode-only parts):\n")
print("| steps | count | live s | model s | live / model |")
print("|---|---|---|---|---|")
def ratio(a, b):
    return f"{a / b:.2f}" if b > 0 else "—"
pre_n, pre_live, pre_pred = steps - dsteps, live_s - dsec, pred_s - dpred
print(f"| with a prefill | {int(pre_n)} | {pre_live:.2f} | {pre_pred:.2f} | {ratio(pre_live, pre_pred)} |")
print(f"| decode only | {int(dsteps)} | {dsec:.2f} | {dpred:.2f} | {ratio(dsec, dpred)} |")
print(f"| all | {int(steps)} | {live_s:.2f} | {pred_s:.2f} | {ratio(live_s, pred_s)} |")
print()
import csv, os
step_rows = list(csv.DictReader(open(f"{out}/steps.csv"))) if os.path.exists(f"{out}/steps.csv") else []
pre_rows = [r for r in step_rows if int(r["prefill_tokens"]) > 0]
if pre_rows:
    print("Step by step (the server's `--llm-step-log`), every step with a prefill:\n")
    print("| step | prefill tokens | decode tokens | model s | live s | live / model |")
    print("|---|---|---|---|---|---|")
    for r in pre_rows:
        m, l = float(r["model_ms"]) / 1e3, float(r["live_ms"]) / 1e3
        print(f"| {r['step']} | {r['prefill_tokens']} | {r['decode_tokens']} | {m:.2f} | {l:.2f} | {ratio(l, m)} |")
    print()
if dtok > 0:
    print(f"Decode-only steps decoded {int(dtok)} tokens: {1e3 * dsec / dtok:.3f} ms per token live, "
          f"{1e3 * dpred / dtok:.3f} ms per token in the model.\n")
print(f"For comparison, `token_linear` charges {per:.4f} ms per prefilled token (the least-squares")
print(f"slope over the grid): {lin['llm']['prefill_tokens']} tokens = "
      f"{lin['llm']['prefill_tokens'] * per / 1e3:.1f} s of prefill in its run.\n")
def diff(f):
    a, b = float(f(real)), float(f(sim))
    return 0.0 if a == b else (float("inf") if b == 0 else 100.0 * (a - b) / b)
print("### Reading the tables\n")
print(f"Over the live server's own {int(steps)} steps the model's time is {pred_s:.1f} s against "
      f"{live_s:.1f} s measured ({100.0 * (pred_s / live_s - 1.0):+.0f} %, the step table above); "
      f"the simulated run's steps took {sim['gpu_seconds']:.1f} s in all (its summary's "
      f"`gpu_seconds`).")
goal = [(n, f) for n, f in rows if n.startswith(("goodput", "TTFT p", "TPOT p"))]
off = [(n, diff(f)) for n, f in goal if abs(diff(f)) > 10.0]
if not off:
    print("Goodput and the p50/p99 TTFT and TPOT are all within 10 % of the simulation.\n")
else:
    within = [n for n, f in goal if abs(diff(f)) <= 10.0]
    print("Within 10 %: " + (", ".join(within) if within else "none") +
          "; beyond: " + ", ".join(f"{n} ({d:+.0f} %)" for n, d in off) + ".\n")
if any(n.startswith("goodput") for n, _ in off):
    good_live = round(real["llm"]["goodput_rps"] * real["duration_s"])
    good_sim = round(sim["llm"]["goodput_rps"] * sim["duration_s"])
    print(f"Goodput counts whole requests, and this run has {real['submitted']}: "
          f"{good_live} met both SLOs live and {good_sim} in the simulation (TTFT SLO "
          f"attainment {real['llm']['ttft_attainment']:.3g} live against "
          f"{sim['llm']['ttft_attainment']:.3g} simulated), so one request more or less is "
          f"{100.0 / real['submitted']:.0f} % of it.\n")
if any(n.startswith("TTFT") for n, _ in off) and pre_rows:
    worst = max(pre_rows, key=lambda r: abs(float(r["live_ms"]) - float(r["model_ms"])))
    print(f"Step by step, the largest miss among the prefill steps is step {worst['step']} ({worst['prefill_tokens']} prompt tokens), "
          f"{float(worst['model_ms']) / 1e3:.2f} s in the model and "
          f"{float(worst['live_ms']) / 1e3:.2f} s live: every request queued behind it "
          f"inherits the difference in its TTFT.\n")
if any(n.startswith("TTFT") for n, _ in off):
    print(f"TTFT is queueing behind prefill steps of seconds: the prefill steps took "
          f"{pre_live:.1f} s live and {pre_pred:.1f} s in the model (live/model "
          f"{ratio(pre_live, pre_pred)}), and the same prefill varies between runs on this "
          f"machine: the chosen {fit.group(5)} form missed the held-out lengths by "
          f"{fit.group(1) if fit.group(5) == 'table' else fit.group(3)} % (worst "
          f"{fit.group(2) if fit.group(5) == 'table' else fit.group(4)} %), lengths measured "
          f"minutes apart from the grid by the same command.\n")
if any(n.startswith("TPOT") for n, _ in off) and dsteps > 0:
    live_step, model_step = 1e3 * dsec / dsteps, 1e3 * dpred / dsteps
    tpot_live, tpot_sim = real['llm']['tpot_ms']['p50'], sim['llm']['tpot_ms']['p50']
    cells = [[float(v) for v in vals.split(",")] for _, vals in dec_rows]
    falls = sum(1 for row in cells for a, b in zip(row, row[1:]) if a > b)
    pairs = sum(len(row) - 1 for row in cells)
    print(f"TPOT: a decode-only step took {live_step:.2f} ms on average live and "
          f"{model_step:.2f} ms in the model; the client measured a TPOT p50 of "
          f"{tpot_live:.2f} ms, the simulation {tpot_sim:.2f} ms.", end=" ")
    if model_step > live_step:
        print(f"The model over-charges decode: the decode table's cells are each timed over "
              f"a few milliseconds on a loaded machine, and {falls} of its {pairs} steps "
              f"along the context fall instead of rising, which no cost of a longer context "
              f"does (the decode table above).", end=" ")
    else:
        print("The rest of a live token's interval lies outside the steps (the runtime "
              "thread between steps, the server-sent-event write and the HTTP thread, the load "
              "generator on the same cores), which the simulator does not model.", end=" ")
    print("A TPOT also holds every prefill step that ran while the request decoded, so a "
          "prefill of seconds landing inside or outside a request's ~14 tokens moves its "
          "TPOT by far more than 10 %.\n")
quiet = float(load0[0]) < 1.0 and float(load1[0]) < 1.5
print(f"The load average was {load0[0]} at the start and {load1[0]} at the end on 2 cores" +
      (": a quiet machine." if quiet else
       ": not a quiet machine; rerun `scripts/llm-serve-results.sh` on one."))
PY

# Splice the section into docs/results/llm.md (between its markers, else at the end).
scripts/splice_section.py "$DOC" "$FRAG" llm-serve
echo "wrote $FRAG and its section in $DOC" >&2
