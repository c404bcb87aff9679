"""Summary statistics of one cell's latency samples (seconds).

Keys ending in ``_s`` are latencies in seconds; the tidy tables turn every such key into a
``latency_<name>_ms`` column, so new statistics flow into the tables without further code.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

NOISY_IQR_OVER_MEDIAN = 0.10  # torch.utils.benchmark warns at this IQR/median ratio


def summarize(latencies_s: Sequence[float]) -> dict:
    a = np.asarray(latencies_s, dtype=float)
    if a.size == 0:
        raise ValueError("no latency samples to summarize")
    q10, q25, q50, q75, q90, q99 = np.percentile(a, [10, 25, 50, 75, 90, 99])
    mean = float(a.mean())
    std = float(a.std(ddof=1)) if a.size > 1 else 0.0
    iqr = float(q75 - q25)
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
        "cv": std / mean if mean > 0 else float("nan"),
        "noisy": bool(q50 > 0 and iqr / q50 > NOISY_IQR_OVER_MEDIAN),
    }


def throughput(batch_size: int, latencies_s: Sequence[float], median_s: float) -> dict:
    """Images per second: batch / median latency, and batch x n / total timed seconds."""
    total = float(np.sum(latencies_s))
    return {
        "ips": batch_size / median_s,
        "total_ips": batch_size * len(latencies_s) / total,
    }
