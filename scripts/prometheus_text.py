"""Reads Prometheus text exposition (a /metrics page) for the results scripts."""
import re


def metric(text, name):
    """The sum of every sample of metric NAME in TEXT, over all its label sets (0 if none)."""
    total = 0.0
    for m in re.finditer(r"^" + re.escape(name) + r"(?:\{[^}]*\})? ([0-9.eE+-]+)$", text, re.M):
        total += float(m.group(1))
    return total
