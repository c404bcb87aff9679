"""The cells' latency at the run's reference speed (config key ``canary``; docs/performance.md,
"At the run's reference speed"): on a VM a cell's processes run at different speeds of the host,
and the canary, a fixed kernel timed beside every iteration, sees that speed as the model does.

An analysis of covariance: per replicate y = log median clean latency, x = log median canary;
per batch-size series (``SERIES``) one slope b fitted within the cells and one residual variance
``s2`` (not wider: how closely the model follows the canary differs between code paths); per
``REFERENCE`` group the reference speed ``ref``, the median x; the cell at it is
``ybar_c - b (xbar_c - ref)`` with the t interval of ``s2 (1 / n_c + (xbar_c - ref)^2 / Sxx)``.
Every cell of a group is then at the same speed, so comparisons between them lose the speed each
process happened to get. A slope fitted per cell covers far less than 95 % (tests/test_speed.py).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from numa_effects import stats
from numa_effects.plan.grid import KEYS

KEY_COLUMNS = list(KEYS)
REFERENCE = ("threads", "placement")  # one reference speed: the canary's threads and CPUs
# a batch-size series: one slope and residual variance (and ``cells.pooled_variances``' pool)
SERIES = tuple(c for c in KEY_COLUMNS if c != "batch_size")
COLUMNS = [
    *("speed_latency_ms", "speed_ci_low_ms", "speed_ci_high_ms", "speed_ci_halfwidth_pct"),
    *("speed_ci_df", "speed_slope", "speed_canary_ref_ms", "speed_canary_median_ms"),
]


def series_of(key: dict) -> tuple:
    """The ``SERIES`` values of a cell's key (``fit``'s keys)."""
    return tuple(key[c] for c in SERIES)


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
    """Per series (``SERIES`` values): ``slope``, ``ref``, ``s2``, ``df``, ``sxx`` of the
    common-slope fit over its cells; a series with nothing to fit (df < 1, no spread) is out."""
    refs = {g: float(np.median(r["x"])) for g, r in reps.groupby(list(REFERENCE), sort=True)}
    out = {}
    for series, g in reps.groupby(list(SERIES), sort=True):
        dx, dy, n_within = [], [], 0
        for _, cell in g.groupby("batch_size", sort=False):
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
        first = g.iloc[0]
        out[series] = {
            "slope": slope,
            "ref": refs[tuple(first[c] for c in REFERENCE)],
            "s2": float(resid @ resid) / df,
            "df": df,
            "sxx": sxx,
        }
    return out


def _at(cell: pd.DataFrame, f: dict, ref: float) -> tuple[float, float]:
    """(log latency at ``ref``, its variance) of one cell's replicates under fit ``f``."""
    n, xbar, ybar = len(cell), float(cell["x"].mean()), float(cell["y"].mean())
    return ybar - f["slope"] * (xbar - ref), f["s2"] * (1.0 / n + (xbar - ref) ** 2 / f["sxx"])


def _interval(est: float, var: float, df: float, confidence: float) -> dict:
    se = math.sqrt(var)
    q = stats.t_quantile(df, confidence)
    return {
        "ratio": math.exp(est),
        "ci_low": math.exp(est - q * se),
        "ci_high": math.exp(est + q * se),
        "df": df,
        "log_ratio": est,
        "se": se,
        "q": q,
    }


def estimates(reps: pd.DataFrame, fits: dict, confidence: float = stats.CONFIDENCE) -> pd.DataFrame:
    """One row per cell of a fitted series: its key and ``COLUMNS``."""
    rows = []
    for key, cell in reps.groupby(KEY_COLUMNS, sort=True):
        k = dict(zip(KEY_COLUMNS, key, strict=True))
        f = fits.get(series_of(k))
        if f is None:
            continue
        est, var = _at(cell, f, f["ref"])
        got = _interval(est, var, f["df"], confidence)
        med, lo, hi = got["ratio"], got["ci_low"], got["ci_high"]
        rows.append(
            {
                **k,
                "speed_latency_ms": med,
                "speed_ci_low_ms": lo,
                "speed_ci_high_ms": hi,
                "speed_ci_halfwidth_pct": stats.halfwidth_pct(med, lo, hi),
                "speed_ci_df": f["df"],
                "speed_slope": f["slope"],
                "speed_canary_ref_ms": math.exp(f["ref"]),
                "speed_canary_median_ms": math.exp(float(cell["x"].median())),
            }
        )
    return pd.DataFrame(rows, columns=[*KEY_COLUMNS, *COLUMNS])


def cell(reps: pd.DataFrame, key: dict) -> pd.DataFrame:
    """The rows of ``reps`` (``replicates``' rows) of the cell ``key`` (its ``KEY_COLUMNS``)."""
    return reps[(reps[KEY_COLUMNS] == [key[c] for c in KEY_COLUMNS]).all(axis=1)]


def contrast(
    compared: pd.DataFrame, baseline: pd.DataFrame, f: dict, confidence=stats.CONFIDENCE
) -> dict:
    """The latency ratio of two sets of replicates (``replicates``' rows) at the same speed under
    one series' fit ``f`` (``fit``): ``(ybar_c - ybar_b) - b (xbar_c - xbar_b)`` on the log
    scale, with the t interval of ``s2 (1 / n_c + 1 / n_b + (xbar_c - xbar_b)^2 / Sxx)`` (the
    slope is the fit's, so only the difference of the two sides' speeds carries its error).
    ``{"ratio", "ci_low", "ci_high", "df", "log_ratio", "se", "q"}``."""
    dx = float(compared["x"].mean() - baseline["x"].mean())
    est = float(compared["y"].mean() - baseline["y"].mean()) - f["slope"] * dx
    var = f["s2"] * (1.0 / len(compared) + 1.0 / len(baseline) + dx * dx / f["sxx"])
    return _interval(est, var, f["df"], confidence)


def across_runs(
    compared: pd.DataFrame,
    f_compared: dict | None,
    baseline: pd.DataFrame,
    f_baseline: dict,
    confidence=stats.CONFIDENCE,
) -> dict:
    """The latency ratio of one cell's replicates in two runs (or of two series' cells,
    ``ratio``) at the baseline's reference speed: each side moved to it along its own fit, their
    estimates' difference with the variances added (the fits are independent: a run whose
    processes spread more widens it) and Welch-Satterthwaite's degrees of freedom; both along
    the baseline's fit where the compared side has none (``contrast``). ``contrast``'s dict."""
    if f_compared is None:
        return contrast(compared, baseline, f_baseline, confidence)
    ref = f_baseline["ref"]
    ec, vc = _at(compared, f_compared, ref)
    eb, vb = _at(baseline, f_baseline, ref)
    df = (vc + vb) ** 2 / (vc**2 / f_compared["df"] + vb**2 / f_baseline["df"])
    return _interval(ec - eb, vc + vb, df, confidence)


def ratio(reps: pd.DataFrame, fits: dict, compared: dict, baseline: dict) -> dict | None:
    """The latency ratio compared / baseline (the cells' keys) of two fitted cells of one
    ``REFERENCE`` group at its reference speed: ``contrast`` within one series, ``across_runs``
    between two; None when that cannot be computed."""
    if any(compared[c] != baseline[c] for c in REFERENCE):
        return None
    fc, fb = fits.get(series_of(compared)), fits.get(series_of(baseline))
    c, b = cell(reps, compared), cell(reps, baseline)
    if fc is None or fb is None or c.empty or b.empty:
        return None
    one_fit = series_of(compared) == series_of(baseline)  # then its common slope
    return across_runs(c, None if one_fit else fc, b, fb)


def join(cells: pd.DataFrame, samples: pd.DataFrame) -> pd.DataFrame:
    """``cells`` with ``COLUMNS`` for the cells whose replicates timed the canary."""
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
