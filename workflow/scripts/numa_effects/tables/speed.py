"""The cells' latency at the run's reference speed (config key ``canary``; docs/performance.md,
"The machine's own speed").

On a VM the processes of one cell run at different speeds of the host, and a fixed
cache-resident kernel timed beside every iteration (the canary) sees that speed as the model
does. This module takes it out of the between-process spread, the textbook way (an analysis of
covariance with a common slope):

- per replicate r of cell c: y = log of its median clean latency, x = log of its median canary
  (the clean iterations' canaries);
- per group of cells whose canary is the same kernel under the same conditions (``GROUP``: the
  thread count and the placement, the canary's threads and CPUs), one slope ``b``, fitted within
  the cells (each cell centred on its own means: the cells' latencies differ, their speeds do
  not), and one residual variance ``s2`` with ``df = sum(n_c - 1) - 1`` degrees of freedom;
- the group's reference speed ``ref``: the median of its replicates' x;
- the cell's latency at that speed: ``ybar_c - b (xbar_c - ref)``, with the t interval of
  ``s2 (1 / n_c + (xbar_c - ref)^2 / Sxx)`` (the second term: the slope's own error).

What it estimates is the cell's latency had the host run at the group's median speed of this
run: the same quantity for every cell of the group, so comparisons between them (placements at
one thread count, optimizations, batch sizes) no longer carry the speed each process happened
to get. It is not the mean over the speeds the run saw (that is ``latency_median_ms`` with its
two-level CI), and another run has its own reference. The naive way, a slope fitted on each
cell's own few replicates and the adjusted values then treated as plain replicates, covers far
less than 95 % (tests/test_speed.py simulates both)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from numa_effects import stats
from numa_effects.plan.grid import KEYS

KEY_COLUMNS = list(KEYS)
GROUP = ("threads", "placement")
COLUMNS = [
    "speed_latency_ms",
    "speed_ci_low_ms",
    "speed_ci_high_ms",
    "speed_ci_halfwidth_pct",
    "speed_ci_df",
    "speed_slope",
    "speed_canary_ref_ms",
    "speed_canary_median_ms",
]


def replicates(samples: pd.DataFrame) -> pd.DataFrame:
    """One row per replicate with a canary: its key, ``y`` (log median clean latency, ms) and
    ``x`` (log median canary of the same iterations, ms). Empty without canaries."""
    columns = [*KEY_COLUMNS, "replicate", "y", "x"]
    if samples.empty or "canary_ms" not in samples.columns:
        return pd.DataFrame(columns=columns)
    clean = samples[~samples["excluded"].astype(bool) & samples["canary_ms"].notna()]
    if clean.empty:
        return pd.DataFrame(columns=columns)
    med = clean.groupby([*KEY_COLUMNS, "replicate"], sort=True)[["latency_ms", "canary_ms"]]
    per = med.median().reset_index()
    return per.assign(y=np.log(per["latency_ms"]), x=np.log(per["canary_ms"]))[columns]


def fit(reps: pd.DataFrame) -> dict:
    """Per group (``GROUP`` values): ``slope``, ``ref``, ``s2``, ``df``, ``sxx`` of the common-slope
    fit over its cells (``replicates``' rows); a group with no spread to fit (fewer than two
    degrees of freedom, or every cell's canaries equal) is left out."""
    out = {}
    for group, g in reps.groupby(list(GROUP), sort=True):
        dx, dy, n_within = [], [], 0
        for _, cell in g.groupby(KEY_COLUMNS, sort=False):
            if len(cell) < 2:
                continue
            dx.append(cell["x"].to_numpy() - cell["x"].mean())
            dy.append(cell["y"].to_numpy() - cell["y"].mean())
            n_within += len(cell) - 1
        if not dx:
            continue
        dx, dy = np.concatenate(dx), np.concatenate(dy)
        sxx, df = float(dx @ dx), n_within - 1
        if df < 1 or sxx <= 0.0:
            continue
        slope = float(dx @ dy) / sxx
        resid = dy - slope * dx
        out[group] = {
            "slope": slope,
            "ref": float(np.median(g["x"])),
            "s2": float(resid @ resid) / df,
            "df": df,
            "sxx": sxx,
        }
    return out


def estimates(reps: pd.DataFrame, fits: dict, confidence: float = stats.CONFIDENCE) -> pd.DataFrame:
    """One row per cell of a fitted group: its key and ``COLUMNS``."""
    from scipy.stats import t as student_t

    rows = []
    for key, cell in reps.groupby(KEY_COLUMNS, sort=True):
        k = dict(zip(KEY_COLUMNS, key, strict=True))
        f = fits.get(tuple(k[c] for c in GROUP))
        if f is None:
            continue
        n, xbar, ybar = len(cell), float(cell["x"].mean()), float(cell["y"].mean())
        est = ybar - f["slope"] * (xbar - f["ref"])
        se = math.sqrt(f["s2"] * (1.0 / n + (xbar - f["ref"]) ** 2 / f["sxx"]))
        q = float(student_t.ppf(0.5 + confidence / 2.0, f["df"]))
        med, lo, hi = math.exp(est), math.exp(est - q * se), math.exp(est + q * se)
        rows.append(
            {
                **k,
                "speed_latency_ms": med,
                "speed_ci_low_ms": lo,
                "speed_ci_high_ms": hi,
                "speed_ci_halfwidth_pct": (hi - lo) / 2.0 / med * 100.0,
                "speed_ci_df": f["df"],
                "speed_slope": f["slope"],
                "speed_canary_ref_ms": math.exp(f["ref"]),
                "speed_canary_median_ms": math.exp(float(cell["x"].median())),
            }
        )
    return pd.DataFrame(rows, columns=[*KEY_COLUMNS, *COLUMNS])


def ratio(
    reps: pd.DataFrame, fits: dict, compared: dict, baseline: dict, confidence=stats.CONFIDENCE
) -> dict | None:
    """The latency ratio compared / baseline of two cells of one fitted group, both at the same
    speed: the contrast of the common-slope fit, ``(ybar_c - ybar_b) - b (xbar_c - xbar_b)``,
    with the t interval of ``s2 (1 / n_c + 1 / n_b + (xbar_c - xbar_b)^2 / Sxx)`` (the slope is
    shared, so only the difference of the two cells' speeds carries its error). ``compared``
    and ``baseline``: the cells' keys (``KEY_COLUMNS``). ``{"ratio", "ci_low", "ci_high",
    "df"}``; None when the cells are not in one fitted group or either has no replicate."""
    from scipy.stats import t as student_t

    groups = {tuple(k[c] for c in GROUP) for k in (compared, baseline)}
    if len(groups) != 1 or next(iter(groups)) not in fits:
        return None
    f = fits[next(iter(groups))]
    sides = []
    for k in (compared, baseline):
        sel = np.ones(len(reps), dtype=bool)
        for c in KEY_COLUMNS:
            sel &= (reps[c] == k[c]).to_numpy()
        if not sel.any():
            return None
        sides.append(reps[sel])
    (c, b) = sides
    dx = float(c["x"].mean() - b["x"].mean())
    est = float(c["y"].mean() - b["y"].mean()) - f["slope"] * dx
    se = math.sqrt(f["s2"] * (1.0 / len(c) + 1.0 / len(b) + dx * dx / f["sxx"]))
    q = float(student_t.ppf(0.5 + confidence / 2.0, f["df"]))
    return {
        "ratio": math.exp(est),
        "ci_low": math.exp(est - q * se),
        "ci_high": math.exp(est + q * se),
        "df": f["df"],
    }


def join(cells: pd.DataFrame, samples: pd.DataFrame) -> pd.DataFrame:
    """``cells`` with ``COLUMNS`` for the cells whose replicates timed the canary (none of them
    added when no cell did)."""
    reps = replicates(samples)
    if reps.empty or cells.empty:
        return cells
    est = estimates(reps, fit(reps))
    if est.empty:
        return cells
    keys = cells[KEY_COLUMNS].astype(object)
    est_keys = est[KEY_COLUMNS].astype(object)
    merged = keys.merge(est.assign(**est_keys), on=KEY_COLUMNS, how="left")
    return cells.assign(**{c: merged[c].to_numpy() for c in COLUMNS})
