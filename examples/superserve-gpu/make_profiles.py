#!/usr/bin/env python3
"""Writes profiles.yaml: a SYNTHETIC, GPU-like latency profile of the 12 pareto subnets of
examples/superserve, for the MaxBatch-vs-SlackFit sensitivity runs.

Not a measurement. Each subnet i (accuracy order, i = 0..11) gets l_i(b) = a_i + c_i * b,
with a large fixed cost a_i and a per-sample cost c_i, both interpolated geometrically
between the ends below. The ends follow the paper's anchors for 8 RTX 2080Ti GPUs
(Fig. 5c): the smallest subnet serves ~8,000 req/s at batch 16 (16 ms per batch), the
largest ~2,000 req/s (64 ms); per-sample FLOPs differ ~8x (App. A.2), so the largest subnet's
per-sample cost is ~4.7x the smallest's and its batch-1 latency ~2.4x.
"""
import os

NAMES = [
    "d00000-e000000000000000000-w000000", "d00000-e110000001111000100-w010000",
    "d00000-e210011001111001100-w210000", "d00000-e220011001222001200-w210000",
    "d02100-e222211001222001200-w210000", "d02201-e222212221222001200-w210000",
    "d02222-e222212221222211222-w210000", "d22222-e222222222222222222-w220000",
    "d22222-e222222222222222222-w221101", "d22222-e222222222222222222-w222101",
    "d22222-e222222222222222222-w222202", "d22222-e222222222222222222-w222222",
]
A = (4.0, 8.0)    # fixed cost, ms: smallest, largest subnet
C = (0.75, 3.5)   # per-sample cost, ms
BATCHES = [1, 2, 4, 8, 16]


def geo(lo, hi, t):
    return lo * (hi / lo) ** t


def main():
    out = ["# SYNTHETIC GPU-like profile written by make_profiles.py (not measured): l(b) = a + c*b",
           "profiles:"]
    n = len(NAMES)
    for i, name in enumerate(NAMES):
        t = i / (n - 1)
        a, c = geo(*A, t), geo(*C, t)
        lat = ", ".join(f"{b}: {a + c * b:.3f}" for b in BATCHES)
        out += [f"  - variant: {name}", "    segment: gpu", "    origin: derived",
                '    source: "synthetic GPU-like affine model (examples/superserve-gpu/make_profiles.py)"',
                f"    latency_ms: {{{lat}}}"]
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "profiles.yaml"), "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
