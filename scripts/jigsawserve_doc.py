#!/usr/bin/env python3
"""Writes docs/results/jigsawserve.md from the outputs of scripts/jigsawserve-results.sh.

Usage: jigsawserve_doc.py OUT_DIR > docs/results/jigsawserve.md
Every table is built from OUT_DIR, and every number in the prose is read from those
tables' data, so the page cannot drift from the run that produced it.
"""
import csv
import json
import sys
from pathlib import Path

OUT = Path(sys.argv[1])
SECTIONS = ("fig3", "repro", "bin0s", "steady", "days")
TIMES = {sec: int((OUT / f"time-{sec}").read_text())
         for sec in SECTIONS if (OUT / f"time-{sec}").exists()}
CPU = {sec: int((OUT / f"cpu-{sec}").read_text())
       for sec in SECTIONS if (OUT / f"cpu-{sec}").exists()}
ELAPSED = sum(TIMES.values())
DAYS = {}
MISSING = ("_Not in this run: the outputs of `scripts/jigsawserve-results.sh {}` were not "
           "there when the page was written._")
SPACES = ["Unopt", "T", "A", "A+T", "S", "S+T", "A+S", "A+S+T"]
PAPER = {"Unopt": 1.0, "T": 1.1, "A": 1.6, "A+T": 1.9, "S": 5.25, "S+T": 7.8, "A+S": 12,
         "A+S+T": 21.6}
DAY_SPACES = ["A+S+T", "A+S", "A+T", "S+T"]
lines = []


def w(text=""):
    lines.append(text)


def pct(x, digits=2):
    return f"{x:.{digits}f} %"


def num(x):
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def load(path):
    return json.loads((OUT / path).read_text())


def fig3(spec):
    return {r["search_space"]: r for r in load(f"fig3-{spec}/max_demand.json")}


def ok(r):
    return r["status"] in ("optimal", "feasible (solver limit)")


def ratio(rows, space):
    unopt = rows["Unopt"]
    if not ok(rows[space]) or not ok(unopt):
        return None
    return rows[space]["max_demand_rps"] / unopt["max_demand_rps"]


def status_note(r):
    if not ok(r):
        return "infeasible" if r["status"] == "infeasible" else r["status"]
    note = "optimal" if r["status"] == "optimal" else f"≥ (stopped: {r['limit']})"
    return note


def day(name):
    rows = {r["space"]: r for r in load(f"{name}/summary.json")}
    return rows


def bins(name, space):
    return list(csv.DictReader(open(OUT / name / space / "bins.csv")))


def sim(path):
    return load(f"{path}/summary.json")


# ---------------------------------------------------------------------------------------
w("# JigsawServe: the planner (Fig. 3) and a day of re-planning (Fig. 4)")
w()
w("This page is written entirely by `scripts/jigsawserve-results.sh` (with "
  "`scripts/jigsawserve_doc.py`); every number on it is read from that run's outputs, "
  "and it says which sections had not finished when it was written. Wall-clock seconds "
  "per section on the shared 2-core VM, with other jobs running beside them (the sections "
  "can run in parallel shells), and CPU seconds where recorded: "
  + ", ".join(f"{k} {v} s" + (f" ({CPU[k]} s CPU)" if k in CPU else "")
              for k, v in TIMES.items())
  + (f"; not finished: {', '.join(k for k in SECTIONS if k not in TIMES)}"
     if len(TIMES) < len(SECTIONS) else "")
  + ". Nothing here is kept by hand.")
w()
w("```sh")
w("scripts/jigsawserve-results.sh    # writes this page, jigsawserve/*.svg and report.html")
w("```")
w()
w("Setup (`examples/plan/traffic.yaml`): YOLOv5 n–x → EfficientNet b0–b6 (cars) and VGG "
  "gender nets (people); accuracies: YOLO mAP/51 from the paper's Fig. 2, Loki's normalised "
  "EfficientNet and gender-net accuracies; Loki's fan-out (2.6–18.9 objects per frame, "
  "Poisson) and car/person shares; SLO_l 650 ms, SLO_a 0.9; batch sizes 1–64; p95 latencies "
  "of Loki's `onnxruntime_gpu_ampere` profiles as the whole GPU (7g.80gb, measured); all "
  "other segment types derived by the scaling model; slack 5 %; α = 1, β = 0.035. Every "
  "MILP stops at a node limit (machine-independent); the time limit is a backstop "
  "whose cuts the tables count. Equal-optimal plans are broken by the canonical tie-break "
  "([plan.md](../plan.md#reproducible-plans)).")
w()

# --- Fig. 3 -----------------------------------------------------------------------------
def section_fig3():
    cal = [("traffic", "default: γ 0.5, roofline, δ 0.994"),
           ("traffic_no_roofline", "no roofline"),
           ("traffic_sensitivity_mild", "sensitivity: γ 0.35, no roofline, δ 0.75"),
           ("traffic_sensitivity_h100", "sensitivity: γ 0.2, no roofline, δ 0.5")]
    d = fig3("traffic")  # the rest is optional: a section cut short shows what finished
    cal = [c for c in cal if (OUT / f"fig3-{c[0]}" / "max_demand.json").exists()]
    f3 = {spec: fig3(spec) for spec, _ in cal}
    w("## Fig. 3: the largest demand per search space (traffic, 840 slices)")
    w()
    w("The paper's Fig. 3: the largest demand each A/S/T search space serves for the "
      "traffic-analysis app on a hypothetical 120 GPUs (840 slices) at accuracy SLO 0.9, "
      "relative to Unopt (`tessera plan --max-demand --slices 840`, "
      "[plan.md](../plan.md#max-serviceable-demand): exact to 0.1 % unless marked ≥).")
    w()
    w("| space | paper (× Unopt) | max req/s | × Unopt | slices used | accuracy | status | MILPs | search s |")
    w("|---|---:|---:|---:|---:|---:|---|---:|---:|")
    for s in SPACES:
        r = d[s]
        if ok(r):
            p = r.get("plan", {}).get("predicted", {})
            w(f"| {s} | {PAPER[s]} | {r['max_demand_rps']:,.0f} | {ratio(d, s):.2f} | "
              f"{p.get('slices', '-')} | {p.get('accuracy', 0):.3f} | {status_note(r)} | "
              f"{r['milps']} | {r['seconds']:.1f} |")
        else:
            w(f"| {s} | {PAPER[s]} | - | - | - | - | {status_note(r)} | {r['milps']} | "
              f"{r['seconds']:.1f} |")
    w()
    order = sorted([s for s in SPACES if ratio(d, s)], key=lambda s: ratio(d, s))
    best = order[-1]
    w(f"- **{best} serves the most** ({ratio(d, best):.2f} × Unopt; the paper: A+S+T, 21.6 ×). "
      f"The ordering here is {' < '.join(order)}; the paper's is Unopt < T < A < A+T < S < S+T "
      "< A+S < A+S+T.")
    w(f"- **T and A are worth more here, S much less**: T {ratio(d, 'T'):.2f} × (paper 1.1), "
      f"A {ratio(d, 'A'):.2f} × (1.6), S {ratio(d, 'S'):.2f} × (5.25). The paper's S gain comes "
      "from small models under-using a whole H100; here the MIG and MPS curves are *derived* "
      "from whole-GPU profiles (Loki's onnxruntime Ampere profiles barely batch for YOLOv5), "
      "and the sensitivity study below shows that the calibration decides S.")
    w()
    w("### Under other calibrations of the scaling model (a sensitivity study)")
    w()
    w("The MIG and MPS curves above are derived by the scaling model (γ, δ, roofline: a "
      "calibration, [plan.md](../plan.md#segments-and-profiles)); measured per-segment curves "
      "would replace it, and none are bundled. So this asks the converse: what calibration "
      "would a real H100 need for the paper's lattice? The last two columns are "
      "**hypothetical** calibrations, not measurements "
      "(`examples/plan/traffic_sensitivity_mild.yaml`, `traffic_sensitivity_h100.yaml`).")
    w()
    w("| space | paper (× Unopt) | " + " | ".join(f"{n}: × Unopt (req/s)" for _, n in cal) + " |")
    w("|---|---:|" + "---:|" * len(cal))
    for s in SPACES:
        cells = []
        for spec, _ in cal:
            r = f3[spec][s]
            x = ratio(f3[spec], s)
            flag = "" if r["status"] == "optimal" else " ≥"
            cells.append(f"{x:.2f} ({r['max_demand_rps']:,.0f}){flag}" if x else status_note(r))
        w(f"| {s} | {PAPER[s]} | " + " | ".join(cells) + " |")
    w()
    same = all(abs(ratio(f3[spec], s) - ratio(d, s)) < 1e-9 for spec, _ in cal
               for s in ("T", "A", "A+T"))
    if same:
        w(f"- **T, A and A+T do not depend on the calibration** ({ratio(d, 'T'):.2f}, "
          f"{ratio(d, 'A'):.2f} and {ratio(d, 'A+T'):.2f} × Unopt in every column): they use "
          "whole GPUs, whose curves are measured.")
    if "traffic_sensitivity_h100" in f3 and "traffic_sensitivity_mild" in f3:
        h = f3["traffic_sensitivity_h100"]
        m = f3["traffic_sensitivity_mild"]
        h_order = sorted([s for s in SPACES if ratio(h, s)], key=lambda s: ratio(h, s))
        w(f"- **With γ 0.35, no roofline and δ 0.75**: S+T {ratio(m, 'S+T'):.2f} (paper 7.8), "
          f"A+S {ratio(m, 'A+S'):.2f} (12), A+S+T {ratio(m, 'A+S+T'):.2f} (21.6) × Unopt, against "
          f"{ratio(d, 'S+T'):.2f}, {ratio(d, 'A+S'):.2f} and {ratio(d, 'A+S+T'):.2f} by default; "
          f"S stays at {ratio(m, 'S'):.2f} (paper 5.25).")
        w(f"- **With γ 0.2, no roofline and δ 0.5** the ordering is {' < '.join(h_order)} "
          f"({', '.join(f'{ratio(h, s):.2f}' for s in h_order)}), "
          + ("the paper's ordering" if h_order == SPACES else "not quite the paper's") +
          f"; S+T, A+S and A+S+T reach {ratio(h, 'S+T'):.2f}, {ratio(h, 'A+S'):.2f} and "
          f"{ratio(h, 'A+S+T'):.2f} × (paper 7.8, 12, 21.6).")
    w("- So the paper's Fig. 3 needs small MIG slices that keep most of a whole GPU's speed at "
      "small batches and MPS processes that overlap far better than PPipe's measured "
      "δ = 0.994; whether an H100 does is a measurement this repository cannot make.")
    w()

    # --- other apps ---------------------------------------------------------------------------
    if not all((OUT / f"fig3-{x}" / "max_demand.json").exists()
               for x in ("social", "ar", "traffic-28")):
        w("### The other apps, and traffic on 28 slices")
        w()
        w(MISSING.format("fig3"))
        w()
        return
    so, ar, t28 = fig3("social"), fig3("ar"), fig3("traffic-28")
    w("### The other apps, and traffic on 28 slices")
    w()
    w("| space | social (depth 1), 840 slices: × Unopt | AR (depth 3), 840: × Unopt | traffic, 28 slices: req/s |")
    w("|---|---:|---:|---:|")
    for s in SPACES:
        def cell(rows, rel):
            r = rows[s]
            if not ok(r):
                return "infeasible" if r["status"] == "infeasible" else r["status"]
            if rel:
                x = ratio(rows, s)
                base = f" ({r['max_demand_rps']:,.0f} req/s)" if s == "Unopt" else ""
                return (f"{x:.2f}" if x else "-") + base
            return f"{r['max_demand_rps']:.1f}"
        w(f"| {s} | {cell(so, True)} | {cell(ar, True)} | {cell(t28, False)} |")
    w()
    infeasible28 = [s for s in SPACES if not ok(t28[s])]
    if infeasible28:
        msg = t28[infeasible28[0]].get("message", "")
        w(f"On 28 slices {', '.join(infeasible28)} cannot serve any demand: `{msg}`. The paper "
          "uses 840 slices for Fig. 3 for this reason; the replan days use 28 slices and show "
          "those spaces as infeasible rows.")
        w()
    w("The social and AR apps use Loki's models in the paper's shapes (no ResNet/GIT/TTS "
      "profiles are bundled), so their numbers are about the shapes, not the paper's models.")
    w()



# --- reproducibility --------------------------------------------------------------------
def section_repro():
    alone = load("repro-alone/plan.json")
    hog = load("repro-hog/plan.json")


    def plan_rows(p):
        out = []
        for t in p["tasks"]:
            for i in t["instances"]:
                out.append((t["task"], i["variant"], i["segment"], i["max_batch"], i["count"]))
        return out


    same_plan = plan_rows(alone) == plan_rows(hog)
    w("## Reproducible plans")
    w()
    w("The planner breaks ties between equal-optimal plans by a second, lexicographic solve "
      "([plan.md](../plan.md#reproducible-plans)), and every solve stops at a node limit, so a "
      "plan does not depend on the machine's speed or load. `tessera plan "
      "examples/plan/traffic.yaml` (20 req/s, 28 slices), alone and with a busy loop running "
      "beside it:")
    w()
    w("| run | instances (task, variant, segment, max batch, count) | accuracy | slices | CBC s | tie-break |")
    w("|---|---|---:|---:|---:|---|")
    for name, p in (("alone", alone), ("beside a CPU hog", hog)):
        inst = "; ".join(f"{a} {b} {c} b{d_} ×{e}" for a, b, c, d_, e in plan_rows(p))
        w(f"| {name} | {inst} | {p['predicted']['accuracy']:.4f} | {p['predicted']['slices']} | "
          f"{p['solver']['seconds']:.2f} | {p['solver']['tie_break']} |")
    w()
    ats = [load(f"repro-at-{i}/max_demand.json")[0] for i in (1, 2, 3)
           if (OUT / f"repro-at-{i}" / "max_demand.json").exists()]
    w("Traffic's A+T maximum at 840 slices (`--max-demand --space A+T --slices 840`), three runs "
      "(earlier versions gave 2,690, 2,824 and 2,844 req/s when the solves stopped at wall-clock "
      "limits):")
    w()
    w("| run | max req/s | proven bound req/s | status | MILPs | nodes | limit | seconds |")
    w("|---:|---:|---:|---|---:|---:|---|---:|")
    for i, r in enumerate(ats, 1):
        w(f"| {i} | {r['max_demand_rps']:,.2f} | {r['upper_bound_rps']:,.2f} | {r['status']} | "
          f"{r['milps']} | {r['nodes']} | {r['limit']} | {r['seconds']:.1f} |")
    w()
    if len(ats) < 3:
        w(f"_Only {len(ats)} of the 3 runs had finished when the page was written._")
        w()
    at_same = len({r["max_demand_rps"] for r in ats}) == 1
    nodes_same = len({r["nodes"] for r in ats}) == 1
    at_values = ", ".join(f"{r['max_demand_rps']:,.2f}" for r in ats)
    w(f"- The plan is {'identical' if same_plan else 'NOT identical'} with and without the hog, "
      f"and the {len(ats)} A+T maxima are {'identical' if at_same else 'NOT identical'} "
      f"({at_values} req/s)"
  + ("; with the same node counts, only the seconds vary." if nodes_same else
     "; their node counts and proven bounds differ where the time limit cut a probe short."))
    cut = [n for n, p in (("alone", alone), ("beside the hog", hog))
           if p["solver"]["tie_break"] != "settled" or p["solver"]["limit"] != "none"]
    cut_at = [str(i) for i, r in enumerate(ats, 1) if r["limit"] == "time limit"]
    if cut or cut_at:
        w("- The time limit cut solves short here (" + "; ".join(
            ([f"the plan {', '.join(cut)}: tie-break `{alone['solver']['tie_break']}`"] if cut else [])
            + ([f"A+T run {', '.join(cut_at)}: a probe"] if cut_at else []))
          + "), on a machine heavily loaded by other jobs; the answers still agree, and the "
          "page reports each cut rather than hiding it ([plan.md](../plan.md#plan-spec): the "
          "limit is a backstop behind the node limits).")
    w()

    # --- simulating one plan ----------------------------------------------------------------
    if not (OUT / "sim-20-nostale" / "summary.json").exists():
        w("## Simulating a plan")
        w()
        w(MISSING.format("repro"))
        w()
        return
    s20, s20n = sim("sim-20"), sim("sim-20-nostale")
    w("## Simulating a plan")
    w()
    w("`tessera plan` writes `run.yaml` with the data plane its verification picked "
      "([plan.md](../plan.md)); here the plan's `run.yaml` with its policies replaced by "
      "JigsawServe's data plane (the `jigsawserve` preset, "
      "[policies.md](../policies.md#jigsawserve)) runs in `tessera simulate` with Poisson "
      "arrivals at the planned demand. The plan above, 60 s:")
    w()
    w("| data plane | on time | dropped (by reason) | late | per sub-request violations | GPU time wasted |")
    w("|---|---:|---:|---:|---:|---:|")
    for name, s in (("`jigsawserve` (stale after L̂(t) + 20 ms)", s20),
                    ("`jigsawserve`, no stale drops (`jigsawserve:86400000`)", s20n)):
        reasons = ", ".join(f"{k} {v}" for k, v in s["dropped_by_reason"].items()) or "-"
        w(f"| {name} | {pct(100 * s['slo_attainment'], 1)} | {pct(100 * s['drop_rate'], 1)} "
          f"({reasons}) | {s['late']} | {pct(100 * s['subrequests']['violation_rate'])} | "
          f"{pct(100 * s['invalid_rate'], 1)} |")
    w()



# --- days -------------------------------------------------------------------------------
COLS = ("| space | slices used | accuracy drop | violations per frame (mean per bin) | "
        "all frames | per sub-request (mean per bin) | all sub-requests | bins ≥ 10 % | "
        "worst bin | quiet quarter: slices / viol. | busy quarter: slices / viol. | "
        "max-demand bins | MILP solves (cut short) | wall s |")
SEP = "|---|" + "---:|" * 13


def day_row(label, r):
    if r.get("infeasible"):
        return (f"| {label} | infeasible: {r['message']} | | | | | | | | | | | "
                f"{r['milp_solves']} ({r['milp_solves_cut_short']}) | {r['wall_seconds']:.0f} |")
    sub = r["subrequests"]
    return (f"| {label} | {pct(r['slices_used_pct'], 1)} | {pct(r['accuracy_drop_pct'])} | "
            f"{pct(r['violation_pct_mean_per_bin'])} | {pct(r['violation_pct_all_requests'])} | "
            f"{pct(sub['violation_pct_mean_per_bin'])} | {pct(100 * sub['violation_rate'])} | "
            f"{r['bins_over_10pct']} | {pct(r['worst_bin_violation_pct'], 1)} | "
            f"{pct(r['quiet_quarter']['slices_used_pct'], 1)} / "
            f"{pct(r['quiet_quarter']['violation_pct'])} | "
            f"{pct(r['busy_quarter']['slices_used_pct'], 1)} / "
            f"{pct(r['busy_quarter']['violation_pct'])} | {r['max_demand_bins']} | "
            f"{r['milp_solves']} ({r['milp_solves_cut_short']}) | {r['wall_seconds']:.0f} |")


def day_table(name, spaces=DAY_SPACES):
    rows = day(name)
    w(COLS)
    w(SEP)
    for s in spaces:
        if s in rows:
            w(day_row(s, rows[s]))
    w()
    return rows


def sub_v(r):
    return r["subrequests"]["violation_pct_mean_per_bin"]



def section_days():
    days = DAYS
    w("## A day of re-planning (Fig. 4)")
    w()
    w("`tessera replan` ([replan.md](../replan.md)) replays one day of 288 five-minute bins on "
      "28 slices (4 GPUs): at every bin it predicts the demand as the mean of the last 5 bins, "
      "plans at that plus 5 % slack, and moves the running deployment to the plan (instances "
      "both plans share keep running; new ones start 10 s after the boundary, the ones they "
      "replace stop then). Search spaces A+S+T (JigsawServe), A+S, A+T and S+T; the "
      "`jigsawserve` data plane with the paper's staleness thresholds (20 ms for traffic and "
      "social media, 40 ms for AR). Each app's day is scaled so that its busiest bin is the "
      "largest demand A+S+T serves on 28 slices; a space that cannot serve a prediction runs "
      "its max-demand plan, as in the paper.")
    w()
    w("The day (`data/traces/diurnal_day.csv`, see its SOURCE.md): a synthetic diurnal "
      "envelope (busiest/quietest bin 4.7×) with a quarter of the load following the real "
      "Azure LLM 2023 trace's 5-minute shape, so bins move by up to ±20 % within and between "
      "bins. Columns: mean slices of the plans (% of 28); mean accuracy drop of the plans "
      "(1 − A_obj); SLO violations = late + dropped + failed, per frame (a frame is violated "
      "when any of its objects is) and per sub-request (the paper's §4.5 count: a drop at a "
      "task with factor F counts F), as the mean of the per-bin rates and over the whole day; "
      "bins with ≥ 10 % violations per frame (the paper's \"particularly poorly\"); the worst "
      "bin; the quietest and busiest quarter of bins; bins on the max-demand fallback plan; "
      "MILP solves (the plan cache solves each 5 % demand step once) and how many a limit cut "
      "short; the run's wall-clock seconds."
      + (" Every day on one page: [jigsawserve/report.html](jigsawserve/report.html)."
         if any((OUT / f"day-{a}" / "summary.json").exists() for a in ("traffic", "social", "ar"))
         else ""))
    w()
    titles = {"traffic": "Traffic analysis (depth 2)",
              "social": "Social media (depth 1, two parallel models)",
              "ar": "AR assistant (depth 3 chain)"}
    for app in ("traffic", "social", "ar"):
        w(f"### {titles[app]}")
        w()
        if not (OUT / f"day-{app}" / "summary.json").exists():
            w(MISSING.format("days"))
            w()
            continue
        days[app] = day_table(f"day-{app}")
        w(f"![{app} day](jigsawserve/day-{app}.svg)")
        w()
    have = [(OUT / f"day-traffic-{k}" / "summary.json").exists()
            for k in ("nostale", "disruptive")]
    tn = day("day-traffic-nostale") if have[0] else None
    td = day("day-traffic-disruptive") if have[1] else None
    w("### Sensitivity (traffic)")
    w()
    w("A+S+T without stale drops (`--stale-ms 86400000`), everything else the same:")
    w()
    if tn:
        day_table("day-traffic-nostale", ["A+S+T"])
    else:
        w(MISSING.format("days"))
        w()
    w("A+S+T with disruptive reconfiguration (`--disruptive`: replaced instances stop at the "
      "bin boundary):")
    w()
    if td:
        day_table("day-traffic-disruptive", ["A+S+T"])
    else:
        w(MISSING.format("days"))
        w()

    # Prose for the days.
    def feasible(rows, s):
        return s in rows and not rows[s].get("infeasible")


    w("### What matches the paper and what does not")
    w()
    for app in days:
        rows = days[app]
        live = [s for s in DAY_SPACES if feasible(rows, s)]
        by_v = sorted(live, key=lambda s: rows[s]["violation_pct_mean_per_bin"])
        w(f"- **{titles[app].split(' (')[0]}**: fewest violations per frame: {by_v[0]} "
          f"({pct(rows[by_v[0]]['violation_pct_mean_per_bin'])} mean per bin, "
          f"{pct(sub_v(rows[by_v[0]]))} per sub-request, on "
          f"{pct(rows[by_v[0]]['slices_used_pct'], 1)} of the slices); then "
          + ", ".join(f"{s} {pct(rows[s]['violation_pct_mean_per_bin'])} on "
                      f"{pct(rows[s]['slices_used_pct'], 1)}" for s in by_v[1:])
          + (f"; infeasible: {', '.join(s for s in DAY_SPACES if s in rows and not feasible(rows, s))}"
             if any(s in rows and not feasible(rows, s) for s in DAY_SPACES) else "")
          + ".")
    t = days.get("traffic", {})
    if feasible(t, "A+S+T") and tn:
        w(f"- **Stale drops** cost traffic's A+S+T {pct(t['A+S+T']['violation_pct_mean_per_bin'] - tn['A+S+T']['violation_pct_mean_per_bin'])} "
          f"per frame: {pct(t['A+S+T']['violation_pct_mean_per_bin'])} with them, "
          f"{pct(tn['A+S+T']['violation_pct_mean_per_bin'])} without "
          f"({pct(sub_v(t['A+S+T']))} and {pct(sub_v(tn['A+S+T']))} per sub-request).")
    if feasible(t, "A+S+T") and td:
        w(f"- **Reconfiguration** is cheap in this model: stopping replaced instances at the "
          f"boundary (`--disruptive`) moves A+S+T from {pct(t['A+S+T']['violation_pct_mean_per_bin'])} "
          f"to {pct(td['A+S+T']['violation_pct_mean_per_bin'])} per frame.")
    if not days:
        return
    w("- **The absolute numbers do not match** the paper's (JigsawServe: 43.3 % of the slices on "
      "average, < 0.6 % violations): A+S+T uses "
      + ", ".join(f"{pct(days[a]['A+S+T']['slices_used_pct'], 1)} ({a})" for a in days
                  if feasible(days[a], "A+S+T"))
      + " of the slices with "
      + ", ".join(f"{pct(sub_v(days[a]['A+S+T']))} ({a})" for a in days if feasible(days[a], "A+S+T"))
      + " violations per sub-request. The days are scaled so that the busiest bin needs "
      "every slice, and the steady-bin study below shows where the violations come from.")
    w()



# --- steady-bin day ---------------------------------------------------------------------
def section_bin0():
    w("### Bin 0 of the steady day alone")
    w()
    # Bin 0 alone.
    B0 = [("default", "the controller's plan (slack 5 %), stale after L̂(t) + 20 ms"),
          ("nostale", "same plan, no stale drops"),
          ("stale40", "same plan, stale after L̂(t) + 40 ms"),
          ("stale100", "same plan, stale after L̂(t) + 100 ms"),
          ("stale200", "same plan, stale after L̂(t) + 200 ms"),
          ("fixedfanout", "same plan, fixed fan-out (every frame the mean)"),
          ("slack0.3", "plan with slack 30 %"),
          ("slack0.5", "plan with slack 50 %"),
          ("slack1.0", "plan with slack 100 %")]
    b0 = {}


    def car_util(p, car):
        """car_classification's demand at bin 0's 32.217 req/s over its planned capacity."""
        return car["demand_rps"] * 32.217 / p["planned_demand_rps"] / car["throughput_rps"]


    for key, _ in B0:
        p = load(f"bin0-{key}/plan.json")
        s = sim(f"bin0-{key}/sim")
        car = next(t for t in p["tasks"] if t["task"] == "car_classification")
        b0[key] = (p, s, car)


    def v0(key):
        return 100 * b0[key][1]["subrequests"]["violation_rate"]


    w("**Bin 0 alone.** Bin 0's plan (`tessera plan` at 33.545 req/s, what the controller "
      "planned for it) simulated for 300 s at bin 0's demand of 32.217 req/s, then the same "
      "with one thing changed at a time. \"car util.\" is car_classification's demand over its "
      "planned capacity at 32.217 req/s; \"car L̂\" its batching timeout L̂(t).")
    w()
    w("| variant | slices | car_classification instances | car L̂ (ms) | car util. | sub-request violations | per frame | drops by reason | drops at car_classification |")
    w("|---|---:|---|---:|---:|---:|---:|---|---:|")
    def config(p):
        return [(t["task"], i["variant"], i["segment"], i["max_batch"], i["count"])
                for t in p["tasks"] for i in t["instances"]]

    differ = []
    for key, label in B0:
        p, s, car = b0[key]
        if label.startswith("same plan") and config(p) != config(b0["default"][0]):
            label += " ¹"
            differ.append(key)
        inst = ", ".join(f"{i['count']} × {i['variant']} {i['segment']} b{i['max_batch']}"
                         for i in car["instances"])
        reasons = ", ".join(f"{k} {v}" for k, v in s["dropped_by_reason"].items()) or "-"
        w(f"| {label} | {p['predicted']['slices']} | {inst} | {car['latency_ms']:.1f} | "
          f"{car_util(p, car):.2f} | {pct(v0(key))} | "
          f"{pct(100 * (1 - s['slo_attainment']))} | {reasons} | "
          f"{s['dropped_by_stage'].get('car_classification', 0)} |")
    w()
    if differ:
        w("¹ Not the same plan: the same `tessera plan` command returned another configuration "
          "here, because a solve was cut short by the time limit (tie-break: "
          + ", ".join(f"`{b0[k][0]['solver']['tie_break']}`" for k in ["default"] + differ)
          + "); the row still shows that rule on a plan of the same slices.")
        w()
    label = dict(B0)
    under1 = [k for k, _ in B0 if v0(k) <= 1.0]
    dp, ds, dcar = b0["default"]
    by_stage = ds["dropped_by_stage"]
    top = max(by_stage, key=by_stage.get) if by_stage else "no stage"
    w(f"- **Where bin 0's violations come from: stale drops, most at {top}.** "
      f"The controller's plan loses {pct(v0('default'))} of bin 0's sub-requests; "
      f"of its {ds['dropped']} dropped frames, {by_stage.get(top, 0)} are dropped at {top} "
      f"and {by_stage.get('car_classification', 0)} at car_classification. Each frame brings ~17 cars at once (Poisson fan-out), the "
      f"plan runs car_classification at {car_util(dp, dcar):.0%} of its capacity (the MILP "
      "sizes it for the mean demand + 5 %), and its batching timeout L̂(t) = "
      f"{dcar['latency_ms']:.1f} ms makes the staleness window L̂(t) + 20 ms about two batch "
      "cycles: a burst that does not fit in them is purged, although its deadline is hundreds "
      "of milliseconds away.")
    w(f"- **Not a bug in the threshold or the plan's arithmetic**: without stale drops bin 0 has "
      f"{pct(v0('nostale'))} violations ({b0['nostale'][1]['late']} frames late), so the plan's capacity and latency "
      f"budgets hold. The window decides: {pct(v0('stale40'))} at + 40 ms, "
      f"{pct(v0('stale100'))} at + 100 ms, {pct(v0('stale200'))} at + 200 ms. A fixed "
      f"fan-out (no per-frame variance) gives {pct(v0('fixedfanout'))}.")
    w(f"- **More slack**: slack 30 % gives {pct(v0('slack0.3'))} on "
      f"{b0['slack0.3'][0]['predicted']['slices']} slices (car util. "
      f"{car_util(b0['slack0.3'][0], b0['slack0.3'][2]):.2f}), 50 % {pct(v0('slack0.5'))} on "
      f"{b0['slack0.5'][0]['predicted']['slices']}, 100 % {pct(v0('slack1.0'))} on "
      f"{b0['slack1.0'][0]['predicted']['slices']} (the controller's plan: "
      f"{dp['predicted']['slices']}). "
      + (f"At or below 1 %: {'; '.join(label[k] for k in under1)}." if under1 else
         "None of these reaches 1 %."))


def section_steady():
    days = DAYS
    st = day("day-steady")["A+S+T"]
    def optday(name):
        f = OUT / name / "summary.json"
        return day(name)["A+S+T"] if f.exists() else None

    st100 = optday("day-steady-stale100")
    st_s1 = optday("day-steady-slack1.0")
    mod = days.get("traffic", {}).get("A+S+T")
    w("## Steady-bin day and the < 1 % goal")
    w()
    w("The paper runs each demand bin until it reaches a steady state. The steady-bin day "
      "(`data/traces/diurnal_day_steady.csv`: the bin totals of the modulated day, each "
      "spread evenly over its bin's minutes, Poisson within) holds every 5-minute bin's "
      "demand steady; A+S+T only, next to the modulated day's A+S+T row from above, and the "
      "steady day again with the two levers the bin-0 study below points to: a staleness "
      "threshold of L̂(t) + 100 ms (`--stale-ms 100`) and 100 % slack (`--slack 1.0`), both "
      "named variants, not the paper's settings (20 ms, 5 %)"
      + ("" if mod and st100 and st_s1 else
         " (rows missing below had not finished when the page was written: "
         + ", ".join(n for n, ok_ in (("the modulated day", mod), ("stale + 100 ms", st100),
                                        ("slack 100 %", st_s1)) if not ok_) + ")")
      + ":")
    w()
    w(COLS.replace("| space |", "| day |"))
    w(SEP)
    STEADY = tuple(x for x in (
        ("steady bins", "day-steady", st), ("modulated (above)", "day-traffic", mod),
        ("steady bins, stale + 100 ms", "day-steady-stale100", st100),
        ("steady bins, slack 100 %", "day-steady-slack1.0", st_s1)) if x[2] is not None)
    for name, _, r in STEADY:
        w(day_row(name, r))
    w()
    w("| day | mean demand (req/s) | peak bin (req/s) | mean / peak | mean slices used (of 28) |")
    w("|---|---:|---:|---:|---:|")
    for name, run, _ in STEADY:
        b = bins(run, "A+S+T")
        dem = [float(x["demand_rps"]) for x in b]
        sl = [float(x["slices"]) for x in b]
        w(f"| {name} | {sum(dem) / len(dem):.1f} | {max(dem):.1f} | "
          f"{sum(dem) / len(dem) / max(dem):.3f} | {sum(sl) / len(sl) / 28:.3f} |")
    w()

    best_day = min(STEADY, key=lambda x: sub_v(x[2]))
    w(f"- **The steady day** has {pct(sub_v(st))} violations per sub-request (mean per bin) "
      "with the paper's settings"
      + (f", against {pct(sub_v(mod))} on the modulated day: "
         + ("holding the bins steady changes little, so the bins' modulation is not where the "
            "violations come from" if abs(sub_v(st) - sub_v(mod)) <= 0.2 * max(sub_v(mod), 0.1)
            else "the bins' modulation accounts for part of them") if mod else "") + ". "
      + (f"With stale after L̂(t) + 100 ms: {pct(sub_v(st100))} "
         f"({pct(st100['slices_used_pct'], 1)} of the slices). " if st100 else "")
      + (f"With 100 % slack: {pct(sub_v(st_s1))} ({pct(st_s1['slices_used_pct'], 1)} of the "
         f"slices, {st_s1['max_demand_bins']} bins on the max-demand plan). " if st_s1 else "")
      + ("The ≤ 1 % goal is reached by: "
         + ", ".join(n for n, _, r in STEADY if sub_v(r) <= 1.0) + "."
         if any(sub_v(r) <= 1.0 for _, _, r in STEADY) else
         f"None reaches the ≤ 1 % goal; the best is {best_day[0]} ({pct(sub_v(best_day[2]))})."))
    levers = sorted(((n, r) for n, key, r in STEADY if key.startswith("day-steady-")),
                    key=lambda x: sub_v(x[1]))
    if len(levers) == 2:
        w("- So the paper's < 1 % (< 0.6 %) is not reached with the paper's 5 % slack and 20 ms "
          "staleness on these profiles. Of the two levers, "
          + " does more than ".join(f"{n} ({pct(sub_v(r))} on {pct(r['slices_used_pct'], 1)} "
                                    "of the slices)" for n, r in levers)
          + "; the bin-0 study below takes one bin apart, one change at a time. (This "
          "simulation runs every batch at the p95 latency the plan uses; a real GPU's batches "
          "vary around it, which these runs do not model.)")
    w()



for name, fn in (("fig3", section_fig3), ("repro", section_repro), ("days", section_days),
                 ("steady", section_steady), ("bin0s", section_bin0)):
    mark = len(lines)
    try:
        fn()
    except FileNotFoundError as e:  # a section that did not finish: say so, keep the rest
        title = next((x for x in lines[mark:] if x.startswith("#")), f"## {name}")
        del lines[mark:]
        w(title)
        w()
        w(MISSING.format(name) + f" (missing: `{Path(e.filename).relative_to(OUT)}`)")
        w()
print("\n".join(lines))
