#!/usr/bin/env python3
"""Prints docs/results/pard.md's tables on the burst grid (streams of set burst length and
peak-to-mean ratio made by scripts/pard_burst_workloads.py), from the runs
scripts/pard-results.sh left in OUT/grid-APP-STREAM (OUT: out/pard-grid)/comparison*.csv, where STREAM is
bB-pP-sS and each run holds the policies at the loads 0.5, 0.7 and 1.0 x the app's
measured capacity.

Usage: pard_burst_grid_doc.py OUT SEEDS STREAMS APPS   (STREAMS: bB-pP,... without the seed)"""
import csv
import math
import sys
from pathlib import Path

POLICIES = ["nexus", "clipper++", "pard", "pard-local-mu"]
PARDS = ["pard", "pard-local-mu"]
LOADS = ["0.5", "0.7", "1"]
PHASES = ["onset", "plateau", "decay", "calm"]
GOAL = 1.16
# The live workers' capacity the comparison's overload windows are judged against: the
# lowest stage's Σ max_batch / d(max_batch) (the Setup tables of docs/results/pard.md).
ANALYTIC_CAPACITY = {"tm": 1200.0, "lv": 1120.0, "ga": 390.0, "da": 1000.0}


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def label(policy, load):
    return policy if load == "1" else f"{policy} ×{load}"


def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


class Grid:
    def __init__(self, out, seeds, streams, apps):
        self.seeds, self.streams, self.apps = seeds, streams, apps
        self.res = {}  # (app, stream, seed, load, policy) -> comparison.csv row
        self.phase = {}  # (app, stream, seed, load, policy, phase) -> comparison_phases.csv row
        for app in apps:
            for st in streams:
                for s in seeds:
                    d = out / f"grid-{app}-{st}-s{s}"
                    by_label = {r["label"]: r for r in rows(d / "comparison.csv")}
                    ph = {(r["label"], r["phase"]): r for r in rows(d / "comparison_phases.csv")}
                    for load in LOADS:
                        for p in POLICIES:
                            self.res[(app, st, s, load, p)] = by_label[label(p, load)]
                            for f in PHASES:
                                self.phase[(app, st, s, load, p, f)] = ph[(label(p, load), f)]

    def val(self, key, field):
        return float(self.res[key][field])

    def ratio(self, app, st, s, load, p, base):
        return self.val((app, st, s, load, p), "goodput_rps") / self.val((app, st, s, load, base),
                                                                        "goodput_rps")

    def below_both(self, app, st, s, load, p):
        v = self.val((app, st, s, load, p), "invalid_rate")
        return v < self.val((app, st, s, load, "nexus"), "invalid_rate") and \
            v < self.val((app, st, s, load, "clipper++"), "invalid_rate")

    def cells(self, apps=None, streams=None, loads=None):
        for app in apps or self.apps:
            for st in streams or self.streams:
                for s in self.seeds:
                    for load in loads or LOADS:
                        yield app, st, s, load


def fmt_range(xs):
    return f"{min(xs):.2f}–{max(xs):.2f}" if xs else "–"


def goal_table(g):
    print("| stream | load × capacity | policy | goodput × nexus (geo. mean over apps; seeds) | "
          "goodput × clipper++ (geo. mean over apps; seeds) | cells with invalid rate below both | goal met in seeds |")
    print("|---|---:|---|---|---|---:|---:|")
    for st in g.streams:
        for load in LOADS:
            for p in PARDS:
                gn, gc, met = [], [], 0
                below = 0
                for s in g.seeds:
                    n = geo([g.ratio(a, st, s, load, p, "nexus") for a in g.apps])
                    c = geo([g.ratio(a, st, s, load, p, "clipper++") for a in g.apps])
                    b = sum(g.below_both(a, st, s, load, p) for a in g.apps)
                    gn.append(n)
                    gc.append(c)
                    below += b
                    met += n >= GOAL and c >= GOAL and b == len(g.apps)
                print(f"| {st} | {load} | {p} | {fmt_range(gn)} | {fmt_range(gc)} | "
                      f"{below} of {len(g.apps) * len(g.seeds)} | {met} of {len(g.seeds)} |")


def marginal_table(g, what):
    """Goodput ratio and invalid-rate comparison per app, split by burst length, peak or load."""
    if what == "burst":
        groups = sorted({st.split("-")[0] for st in g.streams}, key=lambda x: int(x[1:]))
        pick = lambda key: [st for st in g.streams if st.split("-")[0] == key]  # noqa: E731
        head = "burst length"
    elif what == "peak":
        groups = sorted({st.split("-")[1] for st in g.streams}, key=lambda x: int(x[1:]))
        pick = lambda key: [st for st in g.streams if st.split("-")[1] == key]  # noqa: E731
        head = "peak-to-mean"
    else:
        groups = LOADS
        pick = lambda key: None  # noqa: E731
        head = "load × capacity"
    print(f"| app | {head} | runs | pard × nexus | pard × clipper++ | pard-local-mu × nexus | "
          "pard-local-mu × clipper++ | invalid rate nexus / clipper++ / pard / pard-local-mu (mean) | "
          "runs with pard-local-mu's invalid rate below both |")
    print("|---|---|---:|---:|---:|---:|---:|---|---:|")
    for app in g.apps:
        for key in groups:
            cs = list(g.cells([app], pick(key), [key] if what == "load" else None))
            r = {(p, b): geo([g.ratio(*c, p, b) for c in cs]) for p in PARDS
                 for b in ("nexus", "clipper++")}
            inv = [sum(g.val((*c, p), "invalid_rate") for c in cs) / len(cs) for p in POLICIES]
            below = sum(g.below_both(*c, "pard-local-mu") for c in cs)
            name = key[1:] if what in ("burst", "peak") else key
            print(f"| {app} | {name} | {len(cs)} | {r[('pard', 'nexus')]:.3f} | "
                  f"{r[('pard', 'clipper++')]:.3f} | {r[('pard-local-mu', 'nexus')]:.3f} | "
                  f"{r[('pard-local-mu', 'clipper++')]:.3f} | "
                  + " / ".join(f"{x:.4f}" for x in inv) + f" | {below} of {len(cs)} |")


def ceiling(g, c, p):
    """(on time, the fluid ceiling) of one run: every request of a window that was not
    overloaded, and the capacity's worth in each overloaded one (onset and plateau)."""
    ok = top = 0.0
    for f in PHASES:
        r = g.phase[(*c, p, f)]
        ok += int(r["ok"])
        if f in ("onset", "plateau"):
            top += ANALYTIC_CAPACITY[c[0]] * float(r["seconds"])
        else:
            top += int(r["arrivals"])
    return ok, top


def ceiling_table(g):
    print("| app | load × capacity | nexus / ceiling | clipper++ / ceiling | pard / ceiling | "
          "pard-local-mu / ceiling | largest possible goodput × nexus (ceiling / nexus; range over streams) | streams where ≥ 1.16 × nexus is possible |")
    print("|---|---:|---:|---:|---:|---:|---|---:|")
    for app in g.apps:
        for load in LOADS:
            frac = {p: [] for p in POLICIES}
            room = {}
            for st in g.streams:
                rs = []
                for s in g.seeds:
                    c = (app, st, s, load)
                    for p in POLICIES:
                        ok, top = ceiling(g, c, p)
                        frac[p].append(ok / top)
                    ok, top = ceiling(g, c, "nexus")
                    rs.append(top / ok)
                room[st] = sum(rs) / len(rs)
            possible = sum(1 for v in room.values() if v >= GOAL)
            print(f"| {app} | {load} | " +
                  " | ".join(f"{sum(frac[p]) / len(frac[p]):.3f}" for p in POLICIES) +
                  f" | {fmt_range(list(room.values()))} | {possible} of {len(g.streams)} |")


def waste_table(g, load):
    print("| app | policy | onset | plateau | decay | calm | all | dropped at the first stage (% of drops) | attainment |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for app in g.apps:
        for p in POLICIES:
            w = {f: 0.0 for f in PHASES}
            first = drops = ok = sub = 0
            for c in g.cells([app], None, [load]):
                for f in PHASES:
                    r = g.phase[(*c, p, f)]
                    w[f] += sum(float(v) for k, v in r.items() if k.startswith("wasted_gpu_"))
                row = g.res[(*c, p)]
                stage_drops = [int(v) for k, v in row.items() if k.startswith("dropped_at_")]
                first += stage_drops[0]
                drops += sum(stage_drops)
                ok += int(row["ok"])
                sub += int(row["submitted"])
            tot = sum(w.values())
            print(f"| {app} | {p} | " + " | ".join(f"{w[f]:.1f}" for f in PHASES) +
                  f" | {tot:.1f} | {100 * first / drops if drops else 0:.0f} % | {ok / sub:.4f} |")


def main():
    out = Path(sys.argv[1])
    seeds = sys.argv[2].split(",")
    streams = sys.argv[3].split(",")
    apps = sys.argv[4:]
    g = Grid(out, seeds, streams, apps)
    print("#### The goal, per stream and load")
    print()
    print("Each PARD reading's goodput over the paper's baselines, the geometric mean over the four "
          "apps (the range over the seeds), on how many of the app × seed cells its invalid rate is "
          f"below both baselines', and in how many seeds the goal (≥ {GOAL}× both, invalid rate below "
          "both on every app) holds:")
    print()
    goal_table(g)
    for what, title in (("burst", "burst length"), ("peak", "peak-to-mean ratio"),
                        ("load", "load")):
        print()
        print(f"#### Per app and {title}")
        print()
        print(f"Geometric means of the goodput ratios over the runs (streams × seeds × loads) of each "
              f"app and {title}; invalid rates averaged over the same runs:")
        print()
        marginal_table(g, what)
    print()
    print("#### How much room there is: the fluid ceiling")
    print()
    print("No policy can serve on time more than every request of the windows that were not "
          "overloaded plus the capacity's worth of each overloaded window (the live workers' "
          "capacity, the lowest stage's Σ max_batch / d(max_batch): tm 1200, lv 1120, ga 390, "
          "da 1000 req/s), give or take one SLO's worth of work carried past each burst. Each "
          "policy's on-time requests as a fraction of that ceiling (mean over streams and seeds), "
          "and the ceiling over Nexus's on-time requests, the most any policy could gain on Nexus "
          "(mean over the seeds; range over the streams):")
    print()
    ceiling_table(g)
    print()
    print("#### Where the wasted work is done, per burst phase (load 1.0 × capacity)")
    print()
    print("Wasted GPU-s (device time spent on requests that ended dropped or late) summed over the "
          "streams and seeds at 1.0 × capacity, by burst phase (as in the previous section), with "
          "the share of drops made at the first stage and the SLO attainment over the same runs:")
    print()
    waste_table(g, "1")


if __name__ == "__main__":
    main()
