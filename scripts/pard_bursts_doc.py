#!/usr/bin/env python3
"""Prints docs/results/pard.md's section on bursts at measured capacity, from the runs
scripts/pard-results.sh left in OUT (out/pard):

  OUT/capacity-APP/comparison.csv     nexus on APP-steady (Poisson) at several load scales
  OUT/stream-APP-azure-real/...       the workload's arrival stream (timeseries.csv)
  OUT/bursts-APP-sSEED/comparison*.csv  the policies at the loads 0.7 and 0.9 x capacity

Usage: pard_bursts_doc.py OUT capacity|scales|cap APP... | tables SEEDS APP..."""
import csv
import math
import re
import sys
from pathlib import Path

STEADY = Path("examples/pard")
LOADS = (0.7, 0.9)
ATTAINMENT = 0.99


def steady_rate(app):
    text = (STEADY / f"{app}-steady.yaml").read_text()
    return float(re.search(r"rate_rps:\s*([0-9.]+)", text).group(1))


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def capacity(out, app):
    """The largest Poisson rate at which nexus or pard keeps >= 99 % attainment."""
    rate = steady_rate(app)
    ok = [float(r["load_scale"]) for r in rows(out / f"capacity-{app}" / "comparison.csv")
          if float(r["slo_attainment"]) >= ATTAINMENT]
    return rate, (max(ok) if ok else 0.0), (max(ok) * rate if ok else 0.0)


def stream_mean(out, app):
    vals = [float(r["arrivals_rps"]) for r in rows(out / f"stream-{app}-azure-real" / "timeseries.csv")
            if float(r["window_start_s"]) < 240]
    return sum(vals) / len(vals)


def scales(out, app):
    cap = capacity(out, app)[2]
    mean = stream_mean(out, app)
    return [load * cap / mean for load in LOADS]


def geo(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def by_policy(path):
    """(policy, load index) -> row, the load index from the order of the scales."""
    out = {}
    seen = []
    for r in rows(path):
        s = float(r["load_scale"])
        if s not in seen:
            seen.append(s)
        out[(r["policy"], seen.index(s))] = r
    return out


def print_capacity(out, apps):
    print("| app | steady Poisson rate (req/s) | largest load scale at ≥ 99 % attainment (nexus or pard) | capacity (req/s) | 240-s Azure stream mean at scale 1 (req/s) | scales for 0.7 / 0.9 × capacity |")
    print("|---|---:|---:|---:|---:|---|")
    for app in apps:
        rate, scale, cap = capacity(out, app)
        sc = scales(out, app)
        print(f"| {app} | {rate:.0f} | {scale:.2f} | {cap:.0f} | {stream_mean(out, app):.1f} | "
              f"{sc[0]:.3f} / {sc[1]:.3f} |")


POLICIES = ["nexus", "clipper++", "pard", "pard-backlog-mu", "pard-local-mu", "pard-hbf", "pard-instant"]
PHASES = ["onset", "plateau", "decay", "calm"]


def print_tables(out, seeds, apps):
    print("Goodput (req/s) and invalid rate per app, load and seed:")
    print()
    print("| app | load × capacity | seed | " + " | ".join(POLICIES) + " | invalid: " +
          " | ".join(POLICIES) + " |")
    print("|---|---:|---:|" + "---:|" * (2 * len(POLICIES)))
    ratios = {}  # (load, seed, policy, base) -> [per-app ratio]
    for app in apps:
        for seed in seeds:
            t = by_policy(out / f"bursts-{app}-s{seed}" / "comparison.csv")
            for li, load in enumerate(LOADS):
                g = [float(t[(p, li)]["goodput_rps"]) for p in POLICIES]
                v = [float(t[(p, li)]["invalid_rate"]) for p in POLICIES]
                print(f"| {app} | {load} | {seed} | " + " | ".join(f"{x:.1f}" for x in g) + " | " +
                      " | ".join(f"{x:.4f}" for x in v) + " |")
                for p in POLICIES[2:]:
                    for base in ("nexus", "clipper++"):
                        ratios.setdefault((load, seed, p, base), []).append(
                            float(t[(p, li)]["goodput_rps"]) / float(t[(base, li)]["goodput_rps"]))
                        ratios.setdefault((load, seed, p, "inv-" + base), []).append(
                            (float(t[(p, li)]["invalid_rate"]), float(t[(base, li)]["invalid_rate"])))
    print()
    print("Geometric mean over the apps of each PARD reading's goodput over the paper's baselines, "
          "and on how many apps its invalid rate is below both:")
    print()
    print("| load × capacity | seed | policy | goodput × nexus (geo. mean) | goodput × clipper++ (geo. mean) | apps with invalid rate below both | goal (≥ 1.16× both, invalid below both) |")
    print("|---:|---:|---|---:|---:|---:|---|")
    for load in LOADS:
        for seed in seeds:
            for p in POLICIES[2:]:
                gn = geo(ratios[(load, seed, p, "nexus")])
                gc = geo(ratios[(load, seed, p, "clipper++")])
                below = sum(1 for (a, b), (_, c) in zip(ratios[(load, seed, p, "inv-nexus")],
                                                         ratios[(load, seed, p, "inv-clipper++")])
                            if a < b and a < c)
                met = "met" if gn >= 1.16 and gc >= 1.16 and below == len(apps) else "not met"
                print(f"| {load} | {seed} | {p} | {gn:.2f} | {gc:.2f} | {below} of {len(apps)} | {met} |")
    print()
    print("### Where the wasted work is done, per burst phase")
    print()
    print("Seed 1, 0.9 × capacity. Windows of 1 s; a window is overloaded when its arrivals exceed "
          "the capacity of the workers alive; a run of overloaded windows is a burst, its first 3 s "
          "its onset, the rest its plateau, the 5 s after it its decay, every other window calm. "
          "Each lost request counts in the window in which it ended (within one SLO of the work "
          "spent on it). Wasted GPU-s: device time spent on requests that ended dropped or late, "
          "split by the stage that spent it; drops: where the requests were dropped.")
    print()
    for app in apps:
        path = out / f"bursts-{app}-s1" / "comparison_phases.csv"
        data = rows(path)
        stages = [k[len("wasted_gpu_"):] for k in data[0] if k.startswith("wasted_gpu_")]
        scale_labels = sorted({r["label"].split(" ×")[1] for r in data if " ×" in r["label"]},
                              key=float)
        high = scale_labels[-1]
        print(f"#### {app} at 0.9 × capacity (scale {high})")
        print()
        print("| policy | phase | seconds | arrivals | on time | wasted GPU-s | wasted by stage (% of the phase's) | drops by stage (% of the phase's) | invalid share of the phase's GPU time |")
        print("|---|---|---:|---:|---:|---:|---|---|---:|")
        for p in POLICIES:
            for ph in PHASES:
                r = next(x for x in data if x["label"] == f"{p} ×{high}" and x["phase"] == ph)
                if int(r["windows"]) == 0:
                    continue
                w = [float(r["wasted_gpu_" + s]) for s in stages]
                d = [int(r["dropped_at_" + s]) for s in stages]
                tw, td, gpu = sum(w), sum(d), float(r["gpu_seconds"])
                ws = " / ".join(f"{100 * x / tw:.0f}" for x in w) if tw > 0 else "–"
                ds = " / ".join(f"{100 * x / td:.0f}" for x in d) if td > 0 else "–"
                print(f"| {p} | {ph} | {float(r['seconds']):.0f} | {r['arrivals']} | {r['ok']} | "
                      f"{tw:.1f} | {ws} | {ds} | {tw / gpu if gpu > 0 else 0:.4f} |")
        print()
        print("Stages, in order: " + " / ".join(stages) + ".")
        print()


def main():
    out = Path(sys.argv[1])
    what = sys.argv[2]
    if what == "cap":
        print(f"{capacity(out, sys.argv[3])[2]:.1f}")
    elif what == "scales":
        print(" ".join(f"{s:.4f}" for s in scales(out, sys.argv[3])))
    elif what == "capacity":
        print_capacity(out, sys.argv[3:])
    elif what == "tables":
        print_tables(out, sys.argv[3].split(","), sys.argv[4:])


if __name__ == "__main__":
    main()
