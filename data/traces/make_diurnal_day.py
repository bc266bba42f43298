#!/usr/bin/env python3
"""Writes diurnal_day.csv (and diurnal_day_steady.csv, below): one day (1,440 minutes) of per-minute request counts in the
Azure Functions 2019 layout, for JigsawServe's day-long re-planning runs.

  counts(m) = K * envelope(m) * burst(m)

- burst(m) = 1 - W + W * ma5(m) / mean: a modulation of weight W = 0.25 that follows the
  REAL shape of azure_llm_code_2023.csv (Azure LLM inference trace 2023, code service,
  CC-BY 4.0): ma5 is the 5-minute moving average of its per-minute request counts,
  repeated over the day. The raw trace is far too bursty for image traffic (minutes with
  no request next to minutes at 3.5x the mean), so only a quarter of the load follows it;
  this is where the bin-to-bin surprises that a 5-bin mean mispredicts come from.
- envelope(m): a smooth diurnal curve, quiet at 04:00 (0.3) and busy at 16:00 (1.0). It is
  a MODEL: the one-day Twitter trace JigsawServe uses is not available here, and no
  day-long real trace is bundled.
- K: chosen so that the busiest 5-minute bin averages 1,000 requests/s; runs scale the
  day to an app's capacity with `rate_scale`.

Deterministic: no randomness.
"""
import csv
import hashlib
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
MINUTES = 1440
PEAK_BIN_RPS = 1000.0
BURST_WEIGHT = 0.25


def real_minute_counts():
    from datetime import datetime
    times = []
    with open(os.path.join(HERE, "azure_llm_code_2023.csv")) as f:
        for row in csv.DictReader(f):
            stamp = row["TIMESTAMP"][:26]  # microseconds
            times.append(datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f"))
    start = times[0].replace(second=0, microsecond=0)
    counts = {}
    for t in times:
        m = int((t - start).total_seconds() // 60)
        counts[m] = counts.get(m, 0) + 1
    last = max(counts)
    # Drop the partial last minute.
    return [counts.get(m, 0) for m in range(last)]


def envelope(m):
    phase = 0.5 - 0.5 * math.cos(2 * math.pi * (m - 240) / MINUTES)
    return 0.3 + 0.7 * phase ** 1.5


def main():
    real = real_minute_counts()
    mean = sum(real) / len(real)
    n = len(real)
    ma5 = [sum(real[(m + k) % n] for k in range(-2, 3)) / 5 for m in range(n)]
    burst = [1 - BURST_WEIGHT + BURST_WEIGHT * a / mean for a in ma5]
    shape = [envelope(m) * burst[m % len(burst)] for m in range(MINUTES)]
    peak_bin = max(sum(shape[b * 5:(b + 1) * 5]) / 5 for b in range(MINUTES // 5))
    k = PEAK_BIN_RPS * 60 / peak_bin
    counts = [round(k * s) for s in shape]
    digest = hashlib.sha256(b"tessera diurnal day").hexdigest()
    with open(os.path.join(HERE, "diurnal_day.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["HashOwner", "HashApp", "HashFunction", "Trigger"] +
                   [str(m + 1) for m in range(MINUTES)])
        w.writerow([digest, digest, digest, "http"] + counts)
    # The steady-bin day: every 5-minute bin holds its total spread evenly over its
    # minutes (the first minutes take the remainder), so each bin's demand is steady and
    # the day's bin totals are those of diurnal_day.csv.
    steady = []
    for b in range(MINUTES // 5):
        total = sum(counts[b * 5:(b + 1) * 5])
        steady += [total // 5 + (1 if i < total % 5 else 0) for i in range(5)]
    with open(os.path.join(HERE, "diurnal_day_steady.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["HashOwner", "HashApp", "HashFunction", "Trigger"] +
                   [str(m + 1) for m in range(MINUTES)])
        w.writerow([digest, digest, digest, "http"] + steady)
    print(f"{len(real)} real minutes (mean {mean:.1f}/min), day total {sum(counts)}, "
          f"peak 5-min bin {PEAK_BIN_RPS:.0f} req/s, quietest 5-min bin "
          f"{min(sum(counts[b*5:(b+1)*5]) / 300 for b in range(MINUTES // 5)):.0f} req/s")


if __name__ == "__main__":
    main()
