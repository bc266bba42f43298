#!/usr/bin/env python3
"""Writes long_bursts_s{1,2,3}.csv: SYNTHETIC request counts with long bursts, for
SuperServe's long-burst runs (docs/results/superserve.md, issue 11).

Layout: the Azure Functions 2019 per-minute layout (HashOwner,HashApp,HashFunction,
Trigger,1,...,N), one row, where every count column is ONE 10-MS BIN (29,000 columns for
290 s): read it with `kind: trace, format: azure-functions, seconds_per_minute: 0.01`.

The rate is a two-level on/off process, drawn per second:
- the run alternates quiet spells (seeded uniform lengths in QUIET_S) and bursts (uniform
  in BURST_S), starting quiet;
- burst seconds run at BURST_LEVEL x the mean (each burst's height jittered by +-5 %);
- quiet seconds run at the level that makes the file's mean exactly MEAN_RPS given the
  realised burst fraction p: (1 - p * BURST_LEVEL) / (1 - p);
- each second's rate is multiplied by a lognormal jitter (sigma JITTER);
- within the seconds, arrivals are a Gamma renewal process with squared CV WITHIN_CV2 at
  that second's rate (the paper's bursty streams, §6.1, use CV^2 2 to 8), counted into
  10-ms bins (the reader spreads a bin's arrivals uniformly inside it).
The per-second CV is about (BURST_LEVEL - QUIET_LEVEL) sqrt(p (1 - p)); BURST_LEVEL 1.8
with p about 0.5 gives about 0.8, with peak seconds about 2x the mean: the regime of issue
11 (mean 0.5 x C_min of examples/superserve at MEAN_RPS = 1000, bursts at 0.9 x C_min).

Deterministic: fixed seeds; re-running reproduces the files byte for byte. The script
prints each file's realised statistics (recorded in SOURCE.md).
"""
import hashlib
import math
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
SECONDS = 290
MEAN_RPS = 1000.0
BURST_LEVEL = 1.8
BURST_S = (15.0, 35.0)
QUIET_S = (15.0, 35.0)
JITTER = 0.04
WITHIN_CV2 = 8.0
BIN_S = 0.01
SEEDS = [1, 2, 3]


def rates(rng):
    states = []  # per second: burst height, or None when quiet
    burst = False
    while len(states) < SECONDS:
        if burst:
            height = BURST_LEVEL * rng.uniform(0.95, 1.05)
            states += [height] * round(rng.uniform(*BURST_S))
        else:
            states += [None] * round(rng.uniform(*QUIET_S))
        burst = not burst
    states = states[:SECONDS]
    hot = [h for h in states if h is not None]
    quiet = (SECONDS - sum(hot)) / (SECONDS - len(hot))
    return [(quiet if h is None else h) * math.exp(rng.gauss(0, JITTER) - JITTER * JITTER / 2)
            for h in states]


def bins(rng, r):
    out = [0] * round(SECONDS / BIN_S)
    t = 0.0
    while True:
        t += rng.gammavariate(1 / WITHIN_CV2, WITHIN_CV2 / (MEAN_RPS * r[int(t)]))
        if t >= SECONDS:
            return out
        out[min(len(out) - 1, int(t / BIN_S))] += 1


def stats(c):
    n = len(c)
    mean = sum(c) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in c) / n)
    # Longest run of seconds at or above 1.5x the mean.
    run = best = 0
    for x in c:
        run = run + 1 if x >= 1.5 * mean else 0
        best = max(best, run)
    return mean, sd / mean, max(c) / mean, best


def main():
    for seed in SEEDS:
        rng = random.Random(seed)
        b = bins(rng, rates(rng))
        per_bin = round(1 / BIN_S)
        c = [sum(b[i:i + per_bin]) for i in range(0, len(b), per_bin)]  # per second
        h = hashlib.sha256(f"long-bursts-{seed}".encode()).hexdigest()
        name = f"long_bursts_s{seed}.csv"
        with open(os.path.join(HERE, name), "w") as f:
            f.write("HashOwner,HashApp,HashFunction,Trigger,")
            f.write(",".join(str(i + 1) for i in range(len(b))) + "\n")
            f.write(f"{h},{h},{h},http,")
            f.write(",".join(str(x) for x in b) + "\n")
        mean, cv, peak, longest = stats(c)
        print(f"{name}: {len(c)} s, {sum(c)} requests, mean {mean:.0f}/s, per-second CV "
              f"{cv:.2f}, peak {peak:.2f}x mean, longest run >= 1.5x mean {longest} s")


if __name__ == "__main__":
    main()
