"""Summary statistics of one cell's latency samples (seconds), and the confidence interval of
the median used by the adaptive stopping rule (``measure``).

Keys ending in ``_s`` are latencies in seconds; the tidy tables turn every such key into a
``latency_<name>_ms`` column, so new statistics flow into the tables without further code.

The CI of the median is the distribution-free order-statistic interval: for sorted samples
``x_(1) <= ... <= x_(n)`` the interval ``[x_(j), x_(n-j+1)]`` covers the true median with
probability ``1 - 2 P(B <= j-1)``, ``B ~ Binomial(n, 1/2)`` (scipy's binomial CDF), whatever the
shape of the distribution, so it is valid for skewed, heavy-tailed and multi-modal latencies.
``j`` is the largest rank whose coverage is still >= the requested level, so the interval is
conservative (its exact coverage is recorded as ``ci_coverage``). It assumes independent samples:
a drifting stream makes it too narrow for the mean of the drift, which is why the stopping rule
still has caps and the tables keep every raw sample. Below n = 6 no 95 % interval exists (the
min..max interval of 5 samples covers only 93.75 %): the bounds are NaN there.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

NOISY_IQR_OVER_MEDIAN = 0.10  # torch.utils.benchmark warns at this IQR/median ratio
CONFIDENCE = 0.95


@functools.lru_cache(maxsize=8192)
def median_ci_ranks(n: int, confidence: float = CONFIDENCE) -> tuple[int, int, float] | None:
    """0-based ranks ``(lo, hi)`` of the order statistics bounding the median's CI and the
    interval's exact coverage, or None when ``n`` samples cannot reach ``confidence``.
    (``scipy.special.bdtr`` is the binomial CDF; it imports in a fraction of scipy.stats' time,
    which matters once per cell process.)"""
    from scipy.special import bdtr

    if n < 1:
        return None
    half_alpha = (1.0 - confidence) / 2.0
    cdf = bdtr(np.arange(0, n // 2 + 1), n, 0.5)  # P(B <= k), k = 0 .. n/2
    j = int(np.searchsorted(cdf, half_alpha, side="right"))  # largest j: P(B <= j-1) <= a/2
    if j < 1:
        return None
    return j - 1, n - j, 1.0 - 2.0 * float(cdf[j - 1])


def median_ci(latencies: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Order-statistic confidence interval of the median; (nan, nan) when n is too small."""
    a = np.asarray(latencies, dtype=float)
    ranks = median_ci_ranks(int(a.size), confidence)
    if ranks is None:
        return math.nan, math.nan
    lo, hi, _ = ranks
    part = np.partition(a, (lo, hi))
    return float(part[lo]), float(part[hi])


def summarize(latencies_s: Sequence[float], confidence: float = CONFIDENCE) -> dict:
    a = np.asarray(latencies_s, dtype=float)
    if a.size == 0:
        raise ValueError("no latency samples to summarize")
    q10, q25, q50, q75, q90, q99 = np.percentile(a, [10, 25, 50, 75, 90, 99])
    mean = float(a.mean())
    std = float(a.std(ddof=1)) if a.size > 1 else 0.0
    iqr = float(q75 - q25)
    lo, hi = median_ci(a, confidence)
    ranks = median_ci_ranks(int(a.size), confidence)
    return {
        "n": int(a.size),
        "min_s": float(a.min()),
        "p10_s": float(q10),
        "median_s": float(q50),
        "mean_s": mean,
        "p90_s": float(q90),
        "p99_s": float(q99),
        "max_s": float(a.max()),
        "std_s": std,
        "iqr_s": iqr,
        "ci_low_s": lo,
        "ci_high_s": hi,
        "ci_level": confidence,
        "ci_coverage": ranks[2] if ranks else math.nan,
        # half the CI width relative to the median, in percent (the adaptive target's unit)
        "ci_halfwidth_pct": (hi - lo) / 2.0 / q50 * 100.0 if q50 > 0 else math.nan,
        "cv": std / mean if mean > 0 else float("nan"),
        "noisy": bool(q50 > 0 and iqr / q50 > NOISY_IQR_OVER_MEDIAN),
    }


def throughput(batch_size: int, latencies_s: Sequence[float], median_s: float) -> dict:
    """Images per second: batch / median latency with its CI (batch / the median's CI bounds,
    swapped), and PackRat's batch x n / total timed seconds."""
    total = float(np.sum(latencies_s))
    lo, hi = median_ci(latencies_s)
    return {
        "ips": batch_size / median_s,
        "ci_low_ips": batch_size / hi if hi > 0 else math.nan,
        "ci_high_ips": batch_size / lo if lo > 0 else math.nan,
        "total_ips": batch_size * len(latencies_s) / total,
    }


def ci_within(
    latencies: Sequence[float], rel: float, confidence: float = CONFIDENCE
) -> tuple[bool, float]:
    """(both bounds of the median's CI lie within ``rel`` (a fraction) of the median, median).
    One partial sort per call: the adaptive loop calls this after every timed iteration."""
    a = np.asarray(latencies, dtype=float)
    n = int(a.size)
    ranks = median_ci_ranks(n, confidence)
    lo_i, hi_i = (ranks[0], ranks[1]) if ranks else (0, n - 1)
    mid_hi, mid_lo = n // 2, (n - 1) // 2
    part = np.partition(a, sorted({lo_i, hi_i, mid_lo, mid_hi}))
    median = float(0.5 * (part[mid_lo] + part[mid_hi]))
    if ranks is None or median <= 0:
        return False, median
    return bool(max(median - part[lo_i], part[hi_i] - median) <= rel * median), median
