"""Run Apache Otava's change point detection on recorded series; write inputs and outputs."""

import json
import sys

import numpy as np
from otava.analysis import compute_change_points

rng = np.random.default_rng(2026)
cases = []


def add(name, series, **kw):
    series = [round(float(v), 4) for v in series]
    cps, _ = compute_change_points(series, **kw)
    cases.append(
        {
            "name": name,
            "series": [round(float(v), 4) for v in series],
            "params": kw,
            "otava": [int(c.index) for c in cps],
            "pvalues": [float(c.stats.pvalue) for c in cps],
        }
    )


for n in (8, 12, 20):
    add(f"flat-{n}", 1000 + rng.normal(0, 20, n))
for n, at, step in ((10, 4, 0.25), (12, 6, -0.10), (20, 13, 0.10), (16, 3, -0.4), (20, 8, 0.05)):
    s = 1000 + rng.normal(0, 15, n)
    s[at:] *= 1 + step
    add(f"step-{n}-at-{at}-{step:+.2f}", s)
s = 500 + rng.normal(0, 8, 40)
s[10:] *= 0.8
s[25:] *= 1.3
add("two-steps-40", s)
s = 700 + rng.normal(0, 10, 120)
s[30:] *= 1.1
s[70:] *= 0.85
s[100:] *= 1.2
add("three-steps-120-windows", s)
s = 100 + np.cumsum(rng.normal(0, 1, 60))
add("random-walk-60", s)
s = np.array([410, 412, 409, 300, 305, 298, 299, 450, 448, 452], dtype=float)
add("tiny-two-steps", s)
s = 1000 + rng.normal(0, 20, 30)
s[15:] *= 0.7
add("step-30-p0.05", s, max_pvalue=0.05)
add("constant-6", [5.0] * 6)
add("two-values", [1.0, 2.0])
json.dump(cases, sys.stdout, indent=1)
