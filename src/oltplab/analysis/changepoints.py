"""Change points in an ordered series (versions in release order, or nightly runs over
time): E-Divisive means with the t-test split and merge of Hunter (Fleming et al., "Hunter:
Using Change Point Detection to Hunt for Performance Regressions", ICPE 2023), the method
Apache Otava implements.

* E-Divisive means (Matteson and James, 2014) finds, in a stretch of the series, the split
  that maximises the energy distance between the values before and after it (q-hat).
* Split: the series is walked in overlapping windows; in each, the best split is kept
  while a Student t-test between its two sides gives p <= 10 x the wanted level, and the
  search goes on inside both sides. These are the "weak" change points.
* Merge: the weakest change point (highest p-value, against its neighbours' stretches) is
  dropped, and its neighbours tested again, until every one left has p < the wanted level.

Apache Otava pins numpy and scipy versions older than oltplab's, so the method is written
here; tests/fast/test_changepoints.py shows it finds what Otava 0.8.0 finds on recorded
series. All pure: a series in, change points out.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

MAX_PVALUE = 0.001
WINDOW = 50


@dataclass(frozen=True)
class ChangePoint:
    index: int  # the first value after the change
    pvalue: float
    mean_before: float
    mean_after: float

    @property
    def change_pct(self) -> float:
        return (self.mean_after / self.mean_before - 1) * 100 if self.mean_before else math.inf


def _best_split(values: np.ndarray, allowed: np.ndarray | None = None) -> tuple[int, float] | None:
    """The split of `values` maximising q-hat over every (tau, kappa): values[:tau] against
    values[tau:kappa]; (tau, q-hat), or None for fewer than two values.

    With D the matrix of |x_i - x_j|, q-hat of X = z[:tau], Y = z[tau:kappa] is
    2/(n+m) sum D(X, Y) - 2m/((n+m)(n-1)) sum_{i<k} D(X_i, X_k) - 2n/((n+m)(m-1)) sum_{j<k}
    D(Y_j, Y_k), each within-sum taken as 0 for a side of one value. Every block sum of D
    comes from its 2-D prefix sums, so all (tau, kappa) are scored at once.
    """
    size = len(values)
    if size < 2:
        return None
    distances = np.abs(values[:, None] - values[None, :])
    prefix = np.zeros((size + 1, size + 1))
    prefix[1:, 1:] = distances.cumsum(0).cumsum(1)

    def block(r0: np.ndarray, r1: np.ndarray, c0: np.ndarray, c1: np.ndarray) -> np.ndarray:
        return prefix[r1, c1] - prefix[r0, c1] - prefix[r1, c0] + prefix[r0, c0]

    tau = np.arange(1, size)[:, None]  # first index of Y
    kappa = np.arange(2, size + 1)[None, :]  # one past Y's end
    valid = kappa > tau
    tau_b, kappa_b = np.broadcast_arrays(tau, kappa)
    zero = np.zeros_like(tau_b)
    n = tau_b.astype(float)
    m = (kappa_b - tau_b).astype(float)
    between = block(zero, tau_b, tau_b, kappa_b)
    within_x = block(zero, tau_b, zero, tau_b) / 2
    within_y = block(tau_b, kappa_b, tau_b, kappa_b) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        q = 2 / (n + m) * between
        q -= np.where(n > 1, 2 * m / ((n + m) * (n - 1)) * within_x, 0.0)
        q -= np.where(m > 1, 2 * n / ((n + m) * (m - 1)) * within_y, 0.0)
    if allowed is None:
        # Pairs with kappa <= tau are no split; they score 0, so a stretch where every split
        # scores below 0 keeps its first (Hunter's argmax over the same matrix does too).
        q = np.where(valid, q, 0.0)
    else:
        # Splits (tau) and stretch ends (kappa) only where whole groups meet. Every other
        # pair is out of the running, whatever the allowed ones score: a 0 there would win
        # over allowed splits that all score below it (one outlying repetition makes them
        # so) and split a group.
        valid &= np.isin(tau, allowed) & np.isin(kappa, np.append(allowed, size))
        if not valid.any():
            return None
        q = np.where(valid, q, -np.inf)
    row, _ = np.unravel_index(int(np.argmax(q)), q.shape)
    return int(row) + 1, float(q.max())


def t_test(left: np.ndarray, right: np.ndarray) -> tuple[float, float, float]:
    """Student's two-sided t-test of two sides' means (pooled variance, with each side's
    spread as its population standard deviation, as Hunter computes it): p, means."""
    from scipy import special  # loaded by the first interval, not by every command

    mean_l, mean_r = float(left.mean()), float(right.mean())
    n_l, n_r = len(left), len(right)
    if n_l + n_r <= 2:
        return 1.0, mean_l, mean_r
    std_l = float(left.std()) if n_l >= 2 else 0.0
    std_r = float(right.std()) if n_r >= 2 else 0.0
    df = n_l + n_r - 2
    pooled = ((n_l - 1) * std_l**2 + (n_r - 1) * std_r**2) / df
    error = math.sqrt(pooled * (1 / n_l + 1 / n_r))
    if error == 0:
        return (0.0 if mean_l != mean_r else math.nan), mean_l, mean_r
    t = (mean_l - mean_r) / error
    return float(2 * special.stdtr(df, -abs(t))), mean_l, mean_r


def _stretches(points: list[int], start: int, end: int) -> list[tuple[int, int]]:
    edges = [start, *points, end]
    return [(a, b) for a, b in itertools.pairwise(edges) if a != b]


def _detect(
    values: np.ndarray, start: int, end: int, max_pvalue: float, boundaries: np.ndarray | None
) -> list[int]:
    """E-Divisive in values[start:end]: the best split of the most dissimilar stretch,
    while it is significant."""
    found: list[int] = []
    while True:
        best: tuple[float, int, tuple[int, int]] | None = None
        for a, b in _stretches(found, start, end):
            allowed = (
                None if boundaries is None else boundaries[(boundaries > a) & (boundaries < b)] - a
            )
            split = _best_split(values[a:b], allowed)
            if split is not None and (best is None or split[1] > best[0]):
                best = (split[1], a + split[0], (a, b))
        if best is None:
            return found
        _, index, (a, b) = best
        pvalue, _, _ = t_test(values[a:index], values[index:b])
        if not pvalue <= max_pvalue:
            return found
        found = sorted([*found, index])


def _tested(values: np.ndarray, points: list[int]) -> list[ChangePoint]:
    """Each point tested against its neighbours' stretches."""
    edges = [0, *points, len(values)]
    out = []
    for i, index in enumerate(points, start=1):
        pvalue, before, after = t_test(values[edges[i - 1] : index], values[index : edges[i + 1]])
        out.append(ChangePoint(index, pvalue, before, after))
    return out


def change_points(
    series: list[float] | np.ndarray,
    *,
    max_pvalue: float = MAX_PVALUE,
    window: int = WINDOW,
    groups: list[int] | None = None,
) -> list[ChangePoint]:
    """The change points of an ordered series, Hunter's way (split, then merge).

    `groups` says how many values each point of the series has (a version measured
    several times gives one value per repetition): a change then lies between two groups,
    never inside one, and its t-test has every repetition to go on.
    """
    values = np.asarray(series, dtype=float)
    boundaries = None
    if groups is not None:
        if sum(groups) != len(values):
            raise ValueError(f"groups add up to {sum(groups)}, the series has {len(values)}")
        boundaries = np.cumsum(groups)[:-1]
    # The split keeps weaker points than asked for; the merge then holds them to the level.
    if max_pvalue < 0.05:
        first_pass = max_pvalue * 10
    else:
        first_pass = max_pvalue * 2 if max_pvalue < 0.5 else max_pvalue
    weak: list[int] = []
    start, step = 0, window // 2
    while start < len(values):
        end = min(start + window, len(values))
        found = _detect(values, start, end, first_pass, boundaries)
        weak = sorted(set(weak) | set(found))
        start = max(found[-1] if found else 0, start + step)
    points = _tested(values, weak)
    while points:
        weakest = max(range(len(points)), key=lambda i: (points[i].pvalue, -i))
        if points[weakest].pvalue < max_pvalue:
            return points
        kept = [p.index for i, p in enumerate(points) if i != weakest]
        points = _tested(values, kept)
    return points
