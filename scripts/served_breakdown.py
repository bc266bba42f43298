#!/usr/bin/env python3
"""Where a served run's latency went, from the server's own /metrics scrape.

Prints two markdown tables: per stage, the batches the server ran against the profile the
simulator used (mean batch time served / profiled at the mean batch size, interpolated), and
per successful request, the mean of each part Triton's statistics name (queue, compute
input, compute infer, compute output; docs/serve.md#metrics).

    scripts/served_breakdown.py METRICS.txt DEPLOYMENT.yaml PROFILES.yaml...

METRICS.txt is `curl /metrics` after the run (examples/serve/compare.sh keeps it);
DEPLOYMENT.yaml names each task's variant; PROFILES.yaml are the run's profile files.
"""
import re
import sys

try:
    import yaml
except ImportError:
    sys.exit("served_breakdown: needs PyYAML (apt-get install python3-yaml)")

SAMPLE = re.compile(r'^([a-z_]+)\{([^}]*)\} ([-+0-9.eE]+|NaN)$')


def read_metrics(path):
    """{(name, frozenset(labels)): value} of every sample line."""
    samples = {}
    with open(path) as f:
        for line in f:
            m = SAMPLE.match(line.strip())
            if not m:
                continue
            labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
            samples[(m.group(1), labels)] = float(m.group(3))
    return samples


def by_label(samples, name, label):
    return {dict(k[1]).get(label): v for k, v in samples.items() if k[0] == name}


def profiled_ms(latency, batch):
    """The profile's time at a (fractional) batch size: linear between measured sizes."""
    sizes = sorted(latency)
    if batch <= sizes[0]:
        return latency[sizes[0]]
    for lo, hi in zip(sizes, sizes[1:]):
        if batch <= hi:
            return latency[lo] + (latency[hi] - latency[lo]) * (batch - lo) / (hi - lo)
    return latency[sizes[-1]]


def main(argv):
    if len(argv) < 4:
        sys.exit("usage: served_breakdown.py METRICS.txt DEPLOYMENT.yaml PROFILES.yaml...")
    samples = read_metrics(argv[1])
    deployment = yaml.safe_load(open(argv[2]))
    variant_of = {w["task"]: (w["variant"], w.get("segment")) for w in deployment["workers"]}
    profiles = {}
    for path in argv[3:]:
        for p in yaml.safe_load(open(path))["profiles"]:
            profiles[(p["variant"], p.get("segment"))] = {int(b): float(ms) for b, ms in
                                                         p["latency_ms"].items()}
    size_sum = by_label(samples, "tessera_batch_size_sum", "task")
    size_count = by_label(samples, "tessera_batch_size_count", "task")
    seconds = by_label(samples, "tessera_batch_seconds_total", "task")
    print("| stage | variant | batches | mean batch | mean batch time, served (ms) "
          "| profile at that batch (ms) | served / profiled |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for task, batches in size_count.items():
        if not batches:
            continue
        variant, segment = variant_of.get(task, ("?", None))
        mean_batch = size_sum[task] / batches
        served = 1000 * seconds.get(task, 0.0) / batches
        latency = profiles.get((variant, segment))
        prof = profiled_ms(latency, mean_batch) if latency else None
        ratio = f"{served / prof:.2f}×" if prof else "no profile"
        prof_text = f"{prof:.3f}" if prof else "–"
        print(f"| {task} | {variant} | {batches:.0f} | {mean_batch:.2f} | {served:.3f} | "
              f"{prof_text} | {ratio} |")
    print()
    count = sum(by_label(samples, "tessera_inference_count_total", "model").values())
    print("| per successful request (mean, ms) | queue | compute input | compute infer "
          "| compute output |")
    print("|---|---:|---:|---:|---:|")
    parts = []
    for part in ("queue", "compute_input", "compute_infer", "compute_output"):
        total_us = sum(by_label(samples, f"tessera_inference_{part}_duration_us", "model")
                       .values())
        parts.append(f"{total_us / 1000 / count:.3f}" if count else "–")
    print(f"| {count:.0f} requests | " + " | ".join(parts) + " |")


if __name__ == "__main__":
    main(sys.argv)
