"""Small statistics on per-second series."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

BATCH = 5
# Below this many repetitions an interval over them is all width: with 2, t(1) = 12.7 puts
# a throughput's 95% interval from near 0 to several times its point.
MIN_REPETITIONS = 3
# A per-second series as a list or as the arrays the parsers keep.
Series = Sequence[float] | np.ndarray


def mser5_cut(series: Series) -> int:
    """Seconds to drop from the start so that what remains is steady (MSER-5).

    MSER (White, 1997; Spratt's MSER-5 variant, 1998) batches the series into means of
    5 observations and picks the truncation point d that minimises the marginal standard
    error of the remaining batches, sum((y_i - mean)^2) / (n - d)^2, searching d over the
    first half only (beyond that the estimate is too noisy to trust). Returns seconds.
    """
    values = np.asarray(series, dtype=float)
    batches = len(values) // BATCH
    if batches < 4:
        return 0
    means = values[: batches * BATCH].reshape(batches, BATCH).mean(axis=1)
    # Suffix sums give every candidate's mean and squared deviations in one pass.
    suffix_sum = np.cumsum(means[::-1])[::-1]
    suffix_sq = np.cumsum((means**2)[::-1])[::-1]
    remaining = np.arange(batches, 0, -1, dtype=float)
    candidates = batches // 2
    mean = suffix_sum[:candidates] / remaining[:candidates]
    deviations = suffix_sq[:candidates] - remaining[:candidates] * mean**2
    statistic = deviations / remaining[:candidates] ** 2
    return int(np.argmin(statistic)) * BATCH


def jitter(series: Series) -> float | None:
    """Standard deviation over mean (coefficient of variation) of a per-second series."""
    values = np.asarray(series, dtype=float)
    if len(values) < 2 or values.mean() == 0:
        return None
    return float(values.std(ddof=1) / values.mean())


def steady(series: Series, fixed_cut: int | None = None) -> tuple[int, np.ndarray]:
    """The steady part of a series: after the MSER-5 cut, or after `fixed_cut` seconds."""
    cut = mser5_cut(series) if fixed_cut is None else min(fixed_cut, max(0, len(series) - 2))
    return cut, np.asarray(series[cut:], dtype=float)


# The level a cell ran at, for telling its stalls, taken over the values that did any work:
# a server stopped for 30 s of a 6 s cell leaves 29 of its 31 seconds at 0, so any
# percentile of them all is 0 and nothing would stand below it.
STALL_LEVEL_PERCENTILE = 90


def stalls(
    series: Series, fraction: float = 0.1, seconds: int = 3, spans: Series | None = None
) -> list[tuple[int, int]]:
    """Runs of values below `fraction` of the level the series ran at (the 90th percentile
    of its values above 0) that last at least `seconds` seconds: (first, last) values,
    1-based. Each value lasts a second, or as many as `spans` says. A series that never
    did any work stalled throughout (a freeze from before its first value)."""
    values = np.asarray(series, dtype=float)
    if len(values) == 0:
        return []
    lasting = np.ones(len(values)) if spans is None else np.asarray(spans, dtype=float)
    working = values[values > 0]
    level = float(np.percentile(working, STALL_LEVEL_PERCENTILE)) if len(working) else np.inf
    below = np.concatenate(([0], (values < fraction * level), [0]))
    edges = np.diff(below.astype(np.int8))
    starts, ends = np.flatnonzero(edges == 1) + 1, np.flatnonzero(edges == -1)
    return [
        (int(a), int(b))
        for a, b in zip(starts, ends, strict=True)
        if lasting[a - 1 : b].sum() >= seconds
    ]
