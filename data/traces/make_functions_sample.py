#!/usr/bin/env python3
"""Writes functions_sample.csv: a small SYNTHETIC file in the Azure Functions 2019 trace
format (HashOwner,HashApp,HashFunction,Trigger,1,...,1440; invocations per minute).
No real data is involved; the output is fully determined by the fixed seed."""
import hashlib
import math
import random

MINUTES = 1440
rng = random.Random(20190701)


def fake_hash(name):
    return hashlib.sha256(name.encode()).hexdigest()


def diurnal_http(m):
    # Busy in the afternoon, quiet at night, with some noise.
    base = 20 + 15 * math.sin(2 * math.pi * (m - 360) / MINUTES)
    return max(0, round(base + rng.gauss(0, 3)))


def timer(m):
    return 1 if m % 5 == 0 else 0


bursts = {s: rng.randint(50, 200) for s in range(90, MINUTES, 180)}


def bursty_queue(m):
    for start, height in bursts.items():
        if start <= m < start + 4:
            return height // (1 + m - start)
    return rng.choice([0, 0, 0, 1, 2])


rows = [("owner-a", "app-web", "fn-http", "http", diurnal_http),
        ("owner-a", "app-cron", "fn-timer", "timer", timer),
        ("owner-b", "app-jobs", "fn-queue", "queue", bursty_queue)]

with open("functions_sample.csv", "w", newline="\n") as out:
    out.write("HashOwner,HashApp,HashFunction,Trigger," +
              ",".join(str(m) for m in range(1, MINUTES + 1)) + "\n")
    for owner, app, fn, trigger, counts in rows:
        values = [counts(m) for m in range(MINUTES)]
        out.write(",".join([fake_hash(owner), fake_hash(owner + app), fake_hash(owner + app + fn),
                            trigger] + [str(v) for v in values]) + "\n")
