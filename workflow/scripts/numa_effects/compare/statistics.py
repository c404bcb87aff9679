"""The statistics of a comparison of runs (docs/comparing.md): a cell's ratio between two runs
(``run_ratio``, ``verdict``) and the geometric mean over the matched cells (``geomean_ratio``).
A cell's CI combines both runs' two-level CIs (independent processes), so it holds each run's
process-to-process variation, not what one run's processes share, which is the change shown.
Without a two-level CI on both sides no test is made: a within-process interval would call most
cells significant (tests/test_stats.py). The geometric mean's t interval treats the matched
cells as a sample of cells, so it needs no per-cell CI.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from numa_effects.stats import CONFIDENCE, CellCI, log_ratio_interval, present, t_quantile

FASTER, SLOWER = "faster", "slower"
NO_CHANGE, NOT_ASSESSED = "no significant change", "not assessed"
VERDICTS = (FASTER, SLOWER, NO_CHANGE, NOT_ASSESSED)
MIN_EFFECT_PCT = 2.0  # the default minimum effect of a verdict (config key compare.min_effect_pct)


def run_ratio(baseline: CellCI, compared: CellCI) -> dict:
    """compared / baseline of one cell measured by two runs (the ratio of the cells' medians)
    with its CI, ``ci_df`` (Welch-Satterthwaite) and ``significant`` (the CI excludes 1)."""
    centre, half, df = log_ratio_interval(baseline, compared)
    lo, hi = math.exp(centre - half), math.exp(centre + half)
    out = {"ratio": math.exp(centre), "ci_low": lo, "ci_high": hi, "ci_df": df}
    return out | {"significant": bool(lo > 1.0 or hi < 1.0)}


def verdict(ratio: float, significant: bool | None, min_effect_pct: float = MIN_EFFECT_PCT) -> str:
    """``faster``/``slower`` (significant and at least ``min_effect_pct``), ``no significant
    change``, or ``not assessed`` (no test: None)."""
    if significant is None or not present(ratio):
        return NOT_ASSESSED
    change = (float(ratio) - 1.0) * 100.0
    if significant and change >= min_effect_pct:
        return SLOWER
    if significant and change <= -min_effect_pct:
        return FASTER
    return NO_CHANGE


def geomean_ratio(ratios: Sequence[float], confidence: float = CONFIDENCE) -> dict:
    """The geometric mean of ``ratios`` (one per cell) with its t interval over the cells (NaN
    below 2 cells; ``significant`` None then)."""
    y = np.log(np.asarray([r for r in ratios if present(r) and r > 0], dtype=float))
    n = int(y.size)
    out = {"geomean": math.nan, "ci_low": math.nan, "ci_high": math.nan, "ci_df": max(0, n - 1)}
    out.update(cells=n, significant=None)
    if n == 0:
        return out
    centre = float(y.mean())
    out["geomean"] = math.exp(centre)
    if n >= 2:
        half = t_quantile(n - 1, confidence) * float(y.std(ddof=1)) / math.sqrt(n)
        out.update(ci_low=math.exp(centre - half), ci_high=math.exp(centre + half))
        out["significant"] = bool(out["ci_low"] > 1.0 or out["ci_high"] < 1.0)
    return out
