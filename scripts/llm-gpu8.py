#!/usr/bin/env python3
"""The 8-GPU study of docs/results/llm.md (docs/llm.md#tp--pp-instances), run by
scripts/llm-results.sh: iServe's model mix (§8.1: Llama-2-70B, 2 x Falcon-40B, Llama-2-7B)
on 8 x A6000, the Azure LLM 2023 code trace split uniformly at random (seed 1) among the
four models. For each intent, `tessera llm instances` deploys the models one after another
and writes each one's TP x PP instance (its `llm:` section); every deployed model is then
simulated on its share of the trace under each scheduling policy. Prints the markdown
section; every sentence is computed from the tables it prints.
  scripts/llm-gpu8.py TESSERA OUT_DIR"""
import csv, json, os, random, subprocess, sys

T, OUT = sys.argv[1], sys.argv[2]
MODELS = ["llama-2-70b", "falcon-40b", "falcon-40b", "llama-2-7b"]
INTENTS = ["latency", "cost", "memory"]
POLICIES = [
    ("fcfs", "{policy: fcfs}"),
    ("static", "{policy: static, max_seqs: 32}"),
    ("continuous", "{policy: continuous, max_seqs: 256, token_budget: 4096}"),
    ("continuous+slo", "{policy: continuous, max_seqs: 256, token_budget: 4096, slo_admission: true}"),
    ("chunked+slo", "{policy: chunked, max_seqs: 256, token_budget: 512, slo_admission: true}"),
]
GPU, GPUS, TIME_SCALE, SLO_SCALE, PROMPT = "a6000", 8, 0.5, 5, 2048
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
os.makedirs(OUT, exist_ok=True)

def sh(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout

# The trace, split among the models.
rows = list(csv.reader(open(os.path.join(ROOT, "data/traces/azure_llm_code_2023.csv"))))
rng = random.Random(1)
parts = [[] for _ in MODELS]
for r in rows[1:]:
    parts[rng.randrange(len(MODELS))].append(r)
for i, p in enumerate(parts):
    with open(f"{OUT}/trace-{i}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(rows[0])
        w.writerows(p)

# SLOs per model: SLO_SCALE x the TTFT (prompt PROMPT tokens) and TPOT of its fewest-GPU
# fp16 configuration that fits (iServe §8.3's base), from the analytic model.
slo = {}
for m in sorted(set(MODELS)):
    table = sh(T, "llm", "config-map", f"{ROOT}/data/llm/{m}", "--gpu", GPU, "--gpus", str(GPUS),
               "--prompt-tokens", str(PROMPT))
    best = None
    for line in table.splitlines():
        c = [x.strip() for x in line.strip("|").split("|")]
        if len(c) < 6 or not c[0].endswith("-fp16-kv16"):
            continue
        gpus, mem = int(c[1]), float(c[2])
        if mem / gpus > 48 or (best and gpus >= best[0]):
            continue
        best = (gpus, c[0], float(c[4]), float(c[5]) / 1e3)
    slo[m] = {"base": best[1], "ttft_s": SLO_SCALE * best[2], "tpot_s": SLO_SCALE * best[3]}

def time_sliced(section, k):
    """The section with every term of the step time multiplied by k: the GPUs' FLOP/s,
    bandwidth and link bandwidths divided by k, the overhead and link latencies times k."""
    import re
    def scale(field, f):
        nonlocal section
        section = re.sub(rf"({field}: )([0-9.e+-]+)",
                         lambda m: m.group(1) + repr(float(m.group(2)) * f), section)
    for field in ("bandwidth_gbs", "tflops", "bus_gbs"):
        scale(field, 1.0 / k)
    for field in ("step_overhead_ms", "latency_us"):
        scale(field, float(k))
    return section

def run(intent, pname, sched, i, model, section, tag=""):
    d = f"{OUT}/{intent}"
    app = f"{d}/app-{i}.yaml"
    with open(app, "w") as f:
        f.write(f"name: {model}\nslo_ms: 600000\nttft_slo_ms: {slo[model]['ttft_s'] * 1e3:.3f}\n"
                f"tpot_slo_ms: {slo[model]['tpot_s'] * 1e3:.3f}\n"
                "tasks:\n  - name: llm\n    variants:\n      - {name: llama-2-7b}\n")
    spec = f"{d}/{pname}{tag}-{i}.yaml"
    with open(spec, "w") as f:
        f.write(f"app: app-{i}.yaml\n"
                "deployment: {workers: [{task: llm, variant: llama-2-7b, segment: a100-40gb, count: 1}]}\n"
                f"profiles: [{{file: {ROOT}/examples/llm/profiles.yaml}}]\n"
                "workload:\n"
                f"  source: {{kind: trace, format: azure-llm, path: ../trace-{i}.csv}}\n"
                f"  time_scale: {TIME_SCALE}\n"
                "policies:\n  dispatch: least_loaded\n"
                "llm:\n" + section + f"  scheduler: {sched}\n"
                "simulation:\n  seed: 1\n  window_s: 10\n")
    sh(T, "simulate", spec, "--out", f"{d}/{pname}{tag}-{i}", "--quiet")
    return json.load(open(f"{d}/{pname}{tag}-{i}/summary.json"))

deps, res, sliced = {}, {}, {}
def sharing(intent):
    """Per model, the most instances on any one of its GPUs (1: it has them to itself)."""
    count = {}
    for dep in deps[intent][1]:
        if dep["config"] is not None:
            for g in dep["gpus"].split(","):
                count[g] = count.get(g, 0) + 1
    return [max(count[g] for g in dep["gpus"].split(",")) if dep["config"] else 0
            for dep in deps[intent][1]]
for intent in INTENTS:
    d = f"{OUT}/{intent}"
    deps[intent] = (sh(T, "llm", "instances", "--intent", intent, "--gpu", GPU, "--gpus", str(GPUS),
                       "--out", d, *[f"{ROOT}/data/llm/{m}" for m in MODELS]),
                    json.load(open(f"{d}/deployments.json")))
    k = sharing(intent)
    for pname, sched in POLICIES:
        res[(intent, pname)] = []
        sliced[(intent, pname)] = []
        for i, m in enumerate(MODELS):
            dep = deps[intent][1][i]
            if dep["config"] is None:
                res[(intent, pname)].append((len(parts[i]), None))
                sliced[(intent, pname)].append((len(parts[i]), None))
                continue
            section = open(f"{d}/{dep['file']}").read()
            r = run(intent, pname, sched, i, m, section)
            res[(intent, pname)].append((len(parts[i]), r))
            if k[i] > 1:
                r = run(intent, pname, sched, i, m, time_sliced(section, k[i]), "-sliced")
            sliced[(intent, pname)].append((len(parts[i]), r))

# TP against PP under batching: Llama-2-70B alone on four GPUs in fp16, on its share of
# the trace, under each policy.
TPPP = ["tp4-pp1-fp16-kv16", "tp2-pp2-fp16-kv16", "tp1-pp4-fp16-kv16"]
tppp, tppp_dep = {}, {}
for c in TPPP:
    d = f"{OUT}/{c}"
    sh(T, "llm", "instances", "--config", c, "--gpu", GPU, "--gpus", str(GPUS), "--out", d,
       f"{ROOT}/data/llm/{MODELS[0]}")
    tppp_dep[c] = json.load(open(f"{d}/deployments.json"))[0]
    section = open(f"{d}/{tppp_dep[c]['file']}").read()
    for pname, sched in POLICIES:
        tppp[(c, pname)] = run(c, pname, sched, 0, MODELS[0], section)

P = print
P("## Eight GPUs serving iServe's model mix (TP × PP instances)")
P()
P(f"iServe §8.1's model set ({', '.join(MODELS)}) on {GPUS} × {GPU}, the code trace split "
  f"uniformly at random (seed 1) among the four models at time_scale {TIME_SCALE} "
  f"({len(rows) - 1} requests). For each intent `tessera llm instances` deploys the models one "
  "after another (hybrid placement) and writes each one's TP × PP instance "
  "([../llm.md](../llm.md#tp--pp-instances)): step costs from iServe's analytic GPU model "
  "(TP all-reduces, PP micro-batches), KV blocks from the controller's reservation plus an "
  "equal share of the memory left on its GPUs. Each deployed model is then simulated on "
  "its share of the trace under each policy. Generated by `scripts/llm-gpu8.py`.")
P()
P(f"SLOs per model: {SLO_SCALE} × the TTFT (at {PROMPT} prompt tokens) and TPOT of its "
  "fewest-GPU fp16 configuration (iServe §8.3's base):")
P()
P("| model | base configuration | TTFT SLO (s) | TPOT SLO (ms) |")
P("|---|---|---|---|")
for m in sorted(slo):
    P(f"| {m} | {slo[m]['base']} | {slo[m]['ttft_s']:.2f} | {slo[m]['tpot_s'] * 1e3:.1f} |")
for intent in INTENTS:
    P()
    P(f"### intent {intent}: the configurations chosen")
    P()
    P(deps[intent][0].rstrip())
P()
P("The controller ranks configurations by their batch-1 TTFT and TPOT, so its choice per "
  "intent (the tables above) is the same under every scheduling policy; the policies "
  "differ in what the chosen instances then serve (below).")
P()
P("### Results per intent and policy (summed over the four models)")
P()
P("Goodput counts requests meeting their model's TTFT and TPOT SLOs; attainment is over every "
  "request of the trace (a model not deployed misses all of its requests); KV utilisation is "
  "the mean over the deployed instances.")
P()
P("The last two columns are the time-sliced bound: each co-located instance's step times "
  "multiplied by the most instances on any of its GPUs (k), as if the GPUs took turns — the "
  "pessimistic side of sharing, where the other columns are the optimistic side.")
P()
P("| intent | policy | goodput (req/s) | SLO attainment | tokens/s | KV utilisation | "
  "preemptions | dropped | time-sliced goodput (req/s) | time-sliced attainment |")
P("|---|---|---|---|---|---|---|---|---|---|")
agg = {}
for intent in INTENTS:
    for pname, _ in POLICIES:
        total = good = tok = pre = drop = 0
        kv = []
        for n, r in res[(intent, pname)]:
            total += n
            if r is None:
                continue
            good += r["llm"]["goodput_rps"]
            tok += r["llm"]["tokens_per_s"]
            pre += r["llm"]["preemptions"]
            drop += r["dropped"]
            kv.append(r["llm"]["kv_utilization"])
        att = sum(r["slo_attainment"] * n for n, r in res[(intent, pname)] if r) / total
        sg = sum(r["llm"]["goodput_rps"] for n, r in sliced[(intent, pname)] if r)
        sa = sum(r["slo_attainment"] * n for n, r in sliced[(intent, pname)] if r) / total
        a = dict(good=good, att=att, tok=tok, kv=sum(kv) / max(1, len(kv)), pre=pre, drop=drop,
                 sgood=sg, satt=sa)
        agg[(intent, pname)] = a
        P(f"| {intent} | {pname} | {good:.3f} | {att:.3f} | {tok:.1f} | {a['kv']:.3f} | {pre} | "
          f"{drop} | {sg:.3f} | {sa:.3f} |")
P()
P("### Per model (intent × policy)")
P()
P("| intent | policy | model | configuration | goodput (req/s) | SLO attainment | TTFT p99 (ms) | "
  "TPOT p99 (ms) | KV blocks | KV utilisation | preemptions |")
P("|---|---|---|---|---|---|---|---|---|---|---|")
for intent in INTENTS:
    for pname, _ in POLICIES:
        for i, (n, r) in enumerate(res[(intent, pname)]):
            dep = deps[intent][1][i]
            if r is None:
                P(f"| {intent} | {pname} | {MODELS[i]} | - | 0 | 0 | - | - | - | - | - |")
                continue
            l = r["llm"]
            P(f"| {intent} | {pname} | {MODELS[i]} | {dep['config']} | {l['goodput_rps']:.3f} | "
              f"{r['slo_attainment']:.3f} | {l['ttft_ms']['p99']:.0f} | {l['tpot_ms']['p99']:.1f} | "
              f"{dep['kv_blocks']} | {l['kv_utilization']:.3f} | {l['preemptions']} |")
P()
P(f"### TP against PP under batching: {MODELS[0]} alone on four GPUs (fp16)")
P()
P("The same model, memory and GPUs as three configurations, on the model's share of the trace "
  "(the configuration map's TTFT at 512 prompt tokens and TPOT at batch 1, then the runs).")
P()
P("| configuration | TTFT (s) | TPOT (ms) | KV blocks | policy | goodput (req/s) | SLO attainment | "
  "TTFT p99 (ms) | TPOT p99 (ms) | tokens/s | KV utilisation | preemptions |")
P("|---|---|---|---|---|---|---|---|---|---|---|---|")
for c in TPPP:
    dep = tppp_dep[c]
    for pname, _ in POLICIES:
        r = tppp[(c, pname)]
        l = r["llm"]
        P(f"| {c} | {dep['ttft_s']:.3f} | {dep['tpot_s'] * 1e3:.1f} | {dep['kv_blocks']} | {pname} | "
          f"{l['goodput_rps']:.3f} | {r['slo_attainment']:.3f} | {l['ttft_ms']['p99']:.0f} | "
          f"{l['tpot_ms']['p99']:.1f} | {l['tokens_per_s']:.1f} | {l['kv_utilization']:.3f} | "
          f"{l['preemptions']} |")
P()
P("### What the tables show")
P()
for intent in INTENTS:
    best = max(POLICIES, key=lambda p: agg[(intent, p[0])]["good"])[0]
    P(f"- intent {intent}: the best policy is {best} with {agg[(intent, best)]['good']:.3f} req/s "
      f"goodput ({agg[(intent, best)]['att']:.3f} attainment), against "
      f"{agg[(intent, 'fcfs')]['good']:.3f} req/s for fcfs (iServe's scheduler) and "
      f"{agg[(intent, 'continuous')]['good']:.3f} for continuous without SLO-aware admission.")
for pname, _ in POLICIES:
    best = max(INTENTS, key=lambda i: agg[(i, pname)]["sgood"])
    P(f"- under {pname} with time-slicing the best intent is {best} "
      f"({agg[(best, pname)]['sgood']:.3f} req/s; "
      + ", ".join(f"{i} {agg[(i, pname)]['sgood']:.3f}" for i in INTENTS) + ").")
for pname, _ in POLICIES:
    best = max(INTENTS, key=lambda i: agg[(i, pname)]["good"])
    P(f"- under {pname} the best intent is {best} ({agg[(best, pname)]['good']:.3f} req/s; "
      + ", ".join(f"{i} {agg[(i, pname)]['good']:.3f}" for i in INTENTS) + ").")
shared = {}
for intent in INTENTS:
    count = {}
    for dep in deps[intent][1]:
        if dep["config"] is not None:
            for g in dep["gpus"].split(","):
                count[g] = count.get(g, 0) + 1
    shared[intent] = (sum(1 for c in count.values() if c > 1), max(count.values()))
for pname, _ in POLICIES:
    best = max(TPPP, key=lambda c: tppp[(c, pname)]["llm"]["goodput_rps"])
    P(f"- {MODELS[0]} on four GPUs under {pname}: the highest goodput is {best}'s "
      f"({tppp[(best, pname)]['llm']['goodput_rps']:.3f} req/s; "
      + ", ".join(f"{c} {tppp[(c, pname)]['llm']['goodput_rps']:.3f}" for c in TPPP)
      + f"); at batch 1 the map ranks them by TPOT "
      + ", ".join(f"{tppp_dep[c]['tpot_s'] * 1e3:.1f} ms" for c in TPPP) + ".")
P("- Co-location brackets the results: the first goodput columns simulate each co-located "
  "instance with its GPUs' compute to itself (optimistic), the time-sliced ones with 1/k of "
  "it (pessimistic); the engine does not yet share a GPU between instances step by step. "
  "GPUs holding more than one instance: "
  + ", ".join(f"{i} {shared[i][0]} of {GPUS} (up to {shared[i][1]} instances on one)"
              for i in INTENTS) + ".")
