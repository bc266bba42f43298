#!/usr/bin/env python3
"""Fits the efficiency factors of tessera's analytic GPU model (src/iserve/analytic_model.hpp;
the fitted mbu and mfu are GpuSpec's defaults in src/iserve/gpu_spec.hpp) to the public
per-operator GPU timings of microsoft/vidur (MIT; data/gpu/SOURCE.md).

Llama-2-70B decoder layer, linear layers only (q/k/v, o, gate/up, down), per TP shard:
  decode  (num_tokens <= 8):     t = shard weight bytes / (bandwidth * mbu)
  prefill (num_tokens >= 1024):  t = 2 * shard params * tokens / (peak FLOP/s * mfu)
  all-reduce of S bytes over n GPUs: t = alpha + 2 (n-1)/n * S / bus_bandwidth
mbu and mfu are the medians of the per-row ratios; the model's error over every row of the
same regime is reported. Writes a markdown table to stdout. Standard library only.
"""
import csv
import statistics
import sys
from collections import defaultdict

DATA = sys.argv[1] if len(sys.argv) > 1 else "data/gpu"
# Datasheet figures (bytes/s of memory, dense FP16 tensor FLOP/s), data/gpu/SOURCE.md.
SHEET = {"a100": (2.039e12, 312e12), "h100": (3.35e12, 989e12), "a40": (696e9, 149.7e12)}
# Llama-2-70B: hidden 8192, 64 heads, 8 KV heads (head dim 128), FFN 28672, gated MLP.
H, KV, F = 8192, 1024, 28672
LINEAR_PARAMS = H * H + 2 * H * KV + H * H + 3 * H * F


def regime_rows(rows, lo, hi):
    return [r for r in rows if lo <= int(r["num_tokens"]) <= hi]


def main():
    rows = list(csv.DictReader(open(f"{DATA}/vidur_llama2_70b_layer.csv")))
    print("| GPU | mbu (decode, <= 8 tokens) | decode rows | decode mean abs. error | mfu (prefill, >= 1024 tokens) | prefill rows | prefill mean abs. error |")
    print("|---|---|---|---|---|---|---|")
    for gpu, (bw, peak) in SHEET.items():
        mine = [r for r in rows if r["gpu"] == gpu]
        dec = regime_rows(mine, 1, 8)
        pre = regime_rows(mine, 1024, 1 << 30)

        def dec_model(r, mbu):
            return LINEAR_PARAMS * 2 / int(r["tp"]) / (bw * mbu) * 1e3

        def pre_model(r, mfu):
            return 2 * LINEAR_PARAMS / int(r["tp"]) * int(r["num_tokens"]) / (peak * mfu) * 1e3

        mbu = statistics.median(dec_model(r, 1.0) / float(r["linear_ms"]) for r in dec)
        mfu = statistics.median(pre_model(r, 1.0) / float(r["linear_ms"]) for r in pre)
        derr = statistics.mean(abs(dec_model(r, mbu) / float(r["linear_ms"]) - 1) for r in dec)
        perr = statistics.mean(abs(pre_model(r, mfu) / float(r["linear_ms"]) - 1) for r in pre)
        print(f"| {gpu} | {mbu:.3f} | {len(dec)} | {100 * derr:.1f} % | {mfu:.3f} | {len(pre)} | {100 * perr:.1f} % |")

    print()
    print("| network | GPUs | alpha (us) | bus bandwidth (GB/s) | sizes | mean abs. error |")
    print("|---|---|---|---|---|---|")
    groups = defaultdict(list)
    for r in csv.DictReader(open(f"{DATA}/vidur_all_reduce.csv")):
        s = int(r["size_bytes"])
        if s <= 256 << 20:
            groups[(r["network"], int(r["num_workers"]))].append((s, float(r["median_ms"]) * 1e-3))
    for (net, n), pts in sorted(groups.items()):
        xs = [2 * (n - 1) / n * s for s, _ in pts]
        ys = [t for _, t in pts]
        mx, my = statistics.mean(xs), statistics.mean(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        alpha = max(my - slope * mx, 0.0)
        # alpha from the smallest messages (latency-bound), where the line is least reliable
        small = [t for s, t in pts if s <= 65536]
        alpha_small = statistics.median(small) if small else alpha
        err = statistics.mean(abs((alpha_small + slope * x) / y - 1) for x, y in zip(xs, ys))
        print(f"| {net} | {n} | {alpha_small * 1e6:.1f} | {1 / slope / 1e9:.0f} | {len(pts)} | {100 * err:.1f} % |")


if __name__ == "__main__":
    main()
