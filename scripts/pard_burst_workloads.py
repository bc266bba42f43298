#!/usr/bin/env python3
"""Makes the burst-grid workloads of docs/results/pard.md ("Bursts of set length and
peak-to-mean ratio") from the real Azure LLM code trace, and prints their statistics.

How a workload is made (burst length B s, peak-to-mean P, seed S):
- The trace: data/traces/azure_llm_code_2023.csv, 8,819 real arrivals over 3,436 s,
  replayed 10x faster (time scale 0.1: 343.6 s, 25.7 req/s).
- Copies: K copies of that replay, each started at its own seeded uniform offset and
  wrapped around (a copy is the replay from its offset to the end, then from its start),
  superposed: the aggregate of K independent groups of the service's users. Every arrival
  is one of the trace's own, only shifted in time, so the arrival process inside a second is
  the trace's.
- The burst envelope: a square wave over 300 s with period 5B; each period is quiet for
  2B s, bursts for B s, and is quiet for 2B s again (duty 0.2, bursts in the middle). The
  burst level is P x the mean and the quiet level q = (1 - 0.2 P) / 0.8 x the mean
  (P 2 / 3 / 4: q 0.75 / 0.5 / 0.25), so the mean over the 300 s is the mean.
- Levels are copy counts: at level x, copies 0 .. round(x * M) - 1 are on, where M =
  round(1200 / 25.7) = 47 copies make the mean, ~1,200 req/s. An arrival of copy k at time
  t is kept when copy k is on at t.
The runs then scale each stream to a load of the app's measured capacity (rate_scale,
seeded thinning) in the workload files written beside the traces.

Deterministic (fixed seeds). Usage:
  pard_burst_workloads.py OUT make SEEDS APP=CAPACITY...  writes OUT/workloads/*.csv, *.yaml
  pard_burst_workloads.py OUT stats SEEDS                prints the streams' statistics
"""
import csv
import datetime
import json
import math
import random
import re
import sys
from pathlib import Path

TRACE = Path("data/traces/azure_llm_code_2023.csv")
TIME_SCALE = 0.1
SECONDS = 300
TARGET_MEAN = 1200.0
BURSTS_S = (5, 20, 60)
PEAKS = (2, 3, 4)
DUTY = 0.2


def quiet_level(peak):
    return (1 - DUTY * peak) / (1 - DUTY)


def in_burst(t, burst_s):
    return 2 * burst_s <= t % (5 * burst_s) < 3 * burst_s


def trace_times():
    times = []
    with open(TRACE, newline="") as f:
        for r in csv.DictReader(f):
            stamp = datetime.datetime.fromisoformat(r["TIMESTAMP"].strip()[:26])
            times.append(stamp.timestamp())
    t0 = times[0]
    return [(t - t0) * TIME_SCALE for t in times]


def make_stream(replay, burst_s, peak, seed):
    span = replay[-1] + (replay[-1] - replay[0]) / (len(replay) - 1)  # one mean gap past the end
    per_copy = len(replay) / span
    m = round(TARGET_MEAN / per_copy)
    on_burst = round(peak * m)
    on_quiet = round(quiet_level(peak) * m)
    rng = random.Random(f"pard-bursts/{burst_s}/{peak}/{seed}")
    out = []
    for k in range(max(on_burst, on_quiet)):
        offset = rng.uniform(0, span)
        for x in replay:
            t = (x - offset) % span
            if t < SECONDS and k < (on_burst if in_burst(t, burst_s) else on_quiet):
                out.append(t)
    out.sort()
    return out, m, on_burst, on_quiet


def name(burst_s, peak, seed):
    return f"b{burst_s}-p{peak}-s{seed}"


def stats(times, burst_s):
    counts = [0] * SECONDS
    for t in times:
        counts[min(int(t), SECONDS - 1)] += 1
    mean = sum(counts) / SECONDS
    sd = math.sqrt(sum((c - mean) ** 2 for c in counts) / SECONDS)
    burst = [c for s, c in enumerate(counts) if in_burst(s + 0.5, burst_s)]
    quiet = [c for s, c in enumerate(counts) if not in_burst(s + 0.5, burst_s)]
    bm = sum(burst) / len(burst)
    bsd = math.sqrt(sum((c - bm) ** 2 for c in burst) / len(burst))
    return {"mean": mean, "cv": sd / mean, "peak": max(counts) / mean, "burst": bm / mean,
            "quiet": sum(quiet) / len(quiet) / mean, "burst_cv": bsd / bm}


def workload_yaml(app, trace_name, rate_scale):
    """The app's *-azure-real workload file with its trace swapped for TRACE_NAME."""
    text = Path(f"examples/pard/{app}-azure-real.yaml").read_text()
    lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
    body = "\n".join(lines)
    for key in ("app", "deployment", "runtimes", "dir"):
        body = re.sub(rf"(^\s*{key}: )(?!/)", r"\g<1>../../../examples/pard/", body, flags=re.M)
    slo = re.search(r"slo_ms:\s*([0-9.]+)", body).group(1)
    workload = (f"workload:\n  source: {{kind: trace, path: {trace_name}.csv}}\n"
                f"  rate_scale: {rate_scale:.6f}\n  slo_ms: {slo}\n")
    body = re.sub(r"^workload:\n(?:  .*\n)+", workload, body + "\n", flags=re.M)
    return (f"# {app} on the burst-grid stream {trace_name} (scripts/pard_burst_workloads.py),\n"
            f"# thinned to the app's measured capacity; written by scripts/pard-results.sh.\n" + body)


def main():
    out = Path(sys.argv[1]) / "workloads"
    what = sys.argv[2]
    seeds = [int(s) for s in sys.argv[3].split(",")]
    if what == "make":
        out.mkdir(parents=True, exist_ok=True)
        caps = dict(a.split("=") for a in sys.argv[4:])
        replay = trace_times()
        for b in BURSTS_S:
            for p in PEAKS:
                for s in seeds:
                    n = name(b, p, s)
                    times, m, on_b, on_q = make_stream(replay, b, p, s)
                    with open(out / f"{n}.csv", "w") as f:
                        f.write("arrival_s\n")
                        f.writelines(f"{t:.6f}\n" for t in times)
                    st = stats(times, b)
                    st.update({"copies_mean": m, "copies_burst": on_b, "copies_quiet": on_q})
                    (out / f"{n}.json").write_text(json.dumps(st))
                    for app, cap in caps.items():
                        (out / f"{app}-{n}.yaml").write_text(
                            workload_yaml(app, n, float(cap) / st["mean"]))
    elif what == "stats":
        print("| stream | burst length (s) | peak-to-mean (set) | quiet level (set) | copies quiet / mean / burst | mean (req/s) | per-second CV | peak second / mean | burst seconds' mean / mean | quiet seconds' mean / mean | per-second CV inside bursts |")
        print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
        for b in BURSTS_S:
            for p in PEAKS:
                for s in seeds:
                    n = name(b, p, s)
                    st = json.loads((out / f"{n}.json").read_text())
                    print(f"| {n} | {b} | {p} | {quiet_level(p):.2f} | {st['copies_quiet']} / "
                          f"{st['copies_mean']} / {st['copies_burst']} | {st['mean']:.1f} | "
                          f"{st['cv']:.2f} | {st['peak']:.2f} | {st['burst']:.2f} | "
                          f"{st['quiet']:.2f} | {st['burst_cv']:.3f} |")


if __name__ == "__main__":
    main()
