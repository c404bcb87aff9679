"""Pure judgement logic of the benchmarks (unit-tested in tests/test_bench.py): is a second
measurement inside the first one's reported 95 % CI, and by how much do two runs differ
compared with the CI they report.

The CI is the interval of the cell's *mean* over its replicates; a second measurement is not
that mean but another estimate with its own process-level noise, so even a perfect pipeline
puts it inside the CI less often than 95 % (a single process, such as the fixed protocol's,
at N = 4 replicates and 3 degrees of freedom: 75 %). ``against_ci`` therefore also gives the
interval a second measurement of the same thing falls in with 95 % (``agreement_hw_pct``,
``inside_agreement``) and the share a perfect pipeline would put inside the CI
(``expected_inside_ci``), both from the first run's own CI, replicates and degrees of freedom:

- the second is the mean of N2 processes of the same cell (the fixed protocol: N2 = 1), the
  first the mean of N1 with the CI t(df) s / sqrt(N1): their difference over
  s sqrt(1/N1 + 1/N2) is t(df)-distributed (s is independent of both means, for the two-level
  and Stein intervals alike), so the interval is the CI's half-width x sqrt(1 + N1 / N2) on the
  log scale (for one more process sqrt(N1 + 1)), and the CI holds the second with
  P(|T| <= t_crit / sqrt(1 + N1 / N2)). It assumes the second's processes spread like the
  first's (the same machine, the same protocol or one as noisy per process).

Every interval of one run holds the noise within that run; a machine whose speed changed
between the runs (this project's VM drifted 3 - 10 % within an hour, docs/performance.md) moves
every cell of the second run together, and no interval of the first holds that. ``with_shift``
estimates that common shift from the cells themselves (a re-run changed nothing else) and asks
again with it removed (``inside_agreement_shift_removed``): a second run that misses because
of the shift alone lands inside with 95 % again; cells that still miss moved on their own.

With the canary (config key ``canary``) ``against_speed`` asks the same at the first run's
reference speed (``tables.speed``): the second run's replicates are moved there along its own
run's slope (the first's, for the fixed protocol's one process per cell), so what the canary saw
of the host's speed between the runs is no longer a difference, and the agreement interval is
that ratio's own (Welch's with two fits, as ``compare.csv``'s ``speed_ratio``: a host may spread
more in one run than in the other). ``width_line`` gives the median CI half-width per
thread count, plain and at the reference speed, against ``GOAL_HALFWIDTH_PCT``.

tests/test_bench.py simulates both with the checkpoint's own rule (first stage, pooled series,
Stein's N) and shows the CI alone failing them, and simulates a shift shared by every cell."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from numa_effects.compare import statistics as compare_stats
from numa_effects.plan.grid import fill_keys

from .common import KEYS

CI_COLUMNS = ["latency_median_ms", "latency_ci_low_ms", "latency_ci_high_ms"]


def _ok(cells: pd.DataFrame) -> pd.DataFrame:
    cells = fill_keys(cells)  # a table from before an axis existed: its default
    if "status" in cells.columns:
        cells = cells[cells["status"] == "ok"]
    return cells


def against_ci(
    first: pd.DataFrame, second: pd.DataFrame, suffixes=("_first", "_second")
) -> pd.DataFrame:
    """Per cell of both tables: the two medians, the difference (second / first - 1, %), the
    first's CI half-width (%), whether the second median lies inside the first's CI,
    ``spread_over_ci``: |difference| / the first's half-width (1 = on the CI's edge), and the
    agreement interval's columns (``agreement``, ``agreement_hw_pct``, ``inside_agreement``,
    ``expected_inside_ci``: the module docstring)."""
    first, second = _ok(first), _ok(second)
    a = first[[*KEYS, *CI_COLUMNS, *_extra(first)]].assign(
        h_1=_log_halfwidth(first), n_1=_numeric(first, "replicates"), df_1=_numeric(first, "ci_df")
    )
    b = second[[*KEYS, "latency_median_ms", *_extra(second)]].assign(
        n_2=_numeric(second, "replicates")
    )
    for df in (a, b):
        df["threads"] = df["threads"].astype(int)
        df["batch_size"] = df["batch_size"].astype(int)
    m = a.merge(b, on=KEYS, suffixes=suffixes)
    f, s = f"latency_median_ms{suffixes[0]}", f"latency_median_ms{suffixes[1]}"
    out = m[KEYS].copy()
    out[f"median{suffixes[0]}_ms"] = m[f]
    out[f"median{suffixes[1]}_ms"] = m[s]
    out["diff_pct"] = (m[s] / m[f] - 1.0) * 100.0
    half = (m["latency_ci_high_ms"] - m["latency_ci_low_ms"]) / 2.0
    out["ci_halfwidth_pct"] = half / m[f] * 100.0
    out["inside_ci"] = (m[s] >= m["latency_ci_low_ms"]) & (m[s] <= m["latency_ci_high_ms"])
    out["spread_over_ci"] = (m[s] - m[f]).abs() / half
    for col in ("contended", "noisy"):
        cols = [c for c in m.columns if c.startswith(col)]
        if cols:
            out[col] = m[cols].fillna(False).astype(bool).any(axis=1)
    h1, n1 = m["h_1"].to_numpy(), m["n_1"].to_numpy()
    n2 = m["n_2"].fillna(1).clip(lower=1).to_numpy()  # a table without replicates: one each
    shrink = 1.0 / np.sqrt(1.0 + n1 / n2)  # the CI's share of the agreement interval
    h = np.where(n1 >= 2, h1 / shrink, np.nan)  # without replicates: no process level known
    ratio = np.log(m[s] / m[f]).to_numpy()
    out["agreement"] = np.where(n2 <= 1, "one more process", "the difference of two means")
    out["agreement_hw_pct"] = np.expm1(h) * 100.0
    out["inside_agreement"] = np.where(np.isnan(h), out["inside_ci"], np.abs(ratio) <= h)
    out["inside_agreement"] = out["inside_agreement"].astype(bool)
    out["expected_inside_ci"] = expected_inside(
        m["df_1"].to_numpy(), np.where(n1 >= 2, shrink, np.nan)
    )
    return out


SPEED_AGREEMENT = "the difference at the reference speed"


def against_speed(first: pd.DataFrame, second: pd.DataFrame, confidence: float = 0.95):
    """``against_ci``'s judgement at the first run's reference speed (``tables.speed``; config
    key ``canary``), from the two runs' ``samples.csv``: per cell of a fitted series of the first
    run that the second measured with the canary too,

    - ``median_first_ms``: the first run's latency at its reference speed, with its CI
      (``ci_halfwidth_pct``: ``speed_ci_halfwidth_pct`` of its cells.csv);
    - ``median_second_ms``: the second run's replicates moved to that speed
      (``speed.across_runs``: along its own run's fit of the series where it has one -- a
      re-run -- else along the first run's, the fixed protocol's one process per cell), so a
      host that ran slower throughout the second run -- and whose canary saw it -- is no longer
      a difference;
    - ``inside_ci``, ``spread_over_ci``, ``diff_pct`` as ``against_ci``;
    - the agreement interval is that ratio's own t interval: with both fits, the two
      estimates' variances added with Welch-Satterthwaite's degrees of freedom, so it holds
      with 95 % also when the host's processes spread more (or less) in one run than in the
      other (2026-12-05: the first run's fit alone held 52 of 60 cells over five pairs of runs,
      each run's own 55; tests/test_bench.py simulates it); with the first run's fit alone,
      s2 (1 / n_1 + 1 / n_2 + (xbar_2 - xbar_1)^2 / Sxx) with its ``df``, exact when the second
      side spreads around the fit as the first's processes do, whatever its number of
      processes. ``expected_inside_ci`` is P(|T| <= t_crit se_1 / se_difference) at the
      interval's degrees of freedom.

    The columns ``with_shift`` and ``agreement_line`` read are those of ``against_ci``; plus
    ``canary_first_ms``, ``canary_second_ms`` (the sides' geometric mean canary) and ``slope``.
    Empty when either run has no canary (``canary: false``) or the first no fitted series."""
    from numa_effects.tables import speed

    columns = [
        *KEYS,
        "median_first_ms",
        "median_second_ms",
        "diff_pct",
        "ci_halfwidth_pct",
        "inside_ci",
        "spread_over_ci",
        "agreement",
        "agreement_hw_pct",
        "inside_agreement",
        "expected_inside_ci",
        "canary_first_ms",
        "canary_second_ms",
        "slope",
    ]
    ra, rb = speed.replicates(first), speed.replicates(second)
    fits = speed.fit(ra) if not ra.empty else {}
    fits_second = speed.fit(rb) if not rb.empty else {}
    est = speed.estimates(ra, fits, confidence) if fits else pd.DataFrame()
    rows = []
    for r in est.to_dict("records"):
        a, b = speed.cell(ra, r), speed.cell(rb, r)
        if b.empty:
            continue
        series = speed.series_of(r)
        c = speed.across_runs(b, fits_second.get(series), a, fits[series], confidence)
        first_ms, lo, hi = r["speed_latency_ms"], r["speed_ci_low_ms"], r["speed_ci_high_ms"]
        second_ms = first_ms * c["ratio"]
        h_first = math.log(hi / lo) / 2.0  # q se_1
        h = c["q"] * c["se"]
        rows.append(
            {
                **{k: r[k] for k in KEYS},
                "median_first_ms": first_ms,
                "median_second_ms": second_ms,
                "diff_pct": (c["ratio"] - 1.0) * 100.0,
                "ci_halfwidth_pct": r["speed_ci_halfwidth_pct"],
                "inside_ci": lo <= second_ms <= hi,
                "spread_over_ci": abs(second_ms - first_ms) / ((hi - lo) / 2.0),
                "agreement": SPEED_AGREEMENT,
                "agreement_hw_pct": math.expm1(h) * 100.0,
                "inside_agreement": abs(c["log_ratio"]) <= h,
                "expected_inside_ci": float(expected_inside(c["df"], h_first / h)),
                "canary_first_ms": math.exp(a["x"].mean()),
                "canary_second_ms": math.exp(b["x"].mean()),
                "slope": r["speed_slope"],
            }
        )
    return pd.DataFrame(rows, columns=columns)


def speed_report(
    first: pd.DataFrame, second: pd.DataFrame, names: tuple[str, str], cause: str
) -> tuple[pd.DataFrame, list[str]]:
    """``against_speed(first, second)`` (the runs' samples.csv) with ``with_shift``'s column, and
    the lines to print: ``agreement_line`` and ``shift_line`` at the reference speed (``names``:
    how to call the first and the second, e.g. ("run 1", "run 2"); ``cause``: what a shift the
    canary does not see would be). The table's ``attrs`` hold the shift."""
    first_name, second_name = names
    t = against_speed(first, second)
    if t.empty:
        return t, [f"{second_name}: no cell timed the canary in both runs (config key canary)"]
    t, shift = with_shift(t)
    t.attrs.update(shift)
    label = f"{second_name} at {first_name}'s reference speed"
    return t, [agreement_line(t, label), shift_line(t, shift, label, first_name, cause)]


def with_speed(df: pd.DataFrame, sp: pd.DataFrame, columns: dict) -> pd.DataFrame:
    """``df`` (one row per cell) with ``speed_report``'s columns ``columns`` (its name -> the
    name in ``df``), NaN for a cell it has no row for (all of them without the canary)."""
    if sp.empty:
        return df.assign(**{new: np.nan for new in columns.values()})
    right = sp[[*KEYS, *columns]].rename(columns=columns)
    right = right.astype({"threads": int, "batch_size": int})
    return df.merge(right, on=KEYS, how="left")


def at_reference_speed(
    df: pd.DataFrame,
    first: tuple[pd.DataFrame, pd.DataFrame],
    second: pd.DataFrame,
    names: tuple[str, str],
    cause: str,
    columns: dict,
) -> tuple[pd.DataFrame, list[str], dict]:
    """A benchmark's judgement at the first run's reference speed, whole: ``df`` (one row per
    cell) with ``speed_report``'s ``columns`` (``with_speed``), the lines to print (the
    report's and ``width_line``'s) and the shift (``with_shift``'s dict; {} without the
    canary). ``first``: the first run's (cells.csv, samples.csv); ``second``: the second's
    samples.csv."""
    cells, samples = first
    sp, lines = speed_report(samples, second, names, cause)
    return with_speed(df, sp, columns), [*lines, width_line(cells)], dict(sp.attrs)


GOAL_HALFWIDTH_PCT = {1: 3.0, 2: 8.0}  # the goal: median CI half-width (%) per thread count


def width_line(cells: pd.DataFrame) -> str:
    """One line: per thread count, the median CI half-width of the cells (``ci_halfwidth_pct``)
    and, where the run timed the canary, at its reference speed (``speed_ci_halfwidth_pct``),
    against ``GOAL_HALFWIDTH_PCT`` where it has a goal for that thread count."""
    ok = _ok(cells)
    parts = []
    for threads, g in ok.groupby(ok["threads"].astype(int), sort=True):
        unit = "thread" if threads == 1 else "threads"
        text = f"{threads} {unit}: {g['ci_halfwidth_pct'].median():.1f} %"
        if "speed_ci_halfwidth_pct" in g.columns and g["speed_ci_halfwidth_pct"].notna().any():
            text += f", at the reference speed {g['speed_ci_halfwidth_pct'].median():.1f} %"
        goal = GOAL_HALFWIDTH_PCT.get(threads)
        parts.append(text + (f" (goal <= {goal:g} %)" if goal is not None else ""))
    return "median CI half-width over the cells: " + "; ".join(parts)


def expected_inside(df, shrink, confidence: float = 0.95) -> np.ndarray:
    """The chance that a second measurement lies inside the first's CI when both measure the
    same thing: P(|T| <= t_crit x shrink), T with the first's ``df``, ``shrink`` = the CI's
    half-width / the agreement interval's (1 / sqrt(N + 1) for one more process; nan where
    either is unknown)."""
    from scipy.stats import t

    df = np.asarray(df, dtype=float)
    shrink = np.asarray(shrink, dtype=float)
    ok = (df >= 1) & np.isfinite(shrink)
    d = np.where(ok, df, 1.0)
    crit = t.ppf(0.5 + confidence / 2, d)
    return np.where(ok, 2 * t.cdf(crit * np.where(ok, shrink, 0.0), d) - 1, np.nan)


def with_shift(t: pd.DataFrame, confidence: float = 0.95) -> tuple[pd.DataFrame, dict]:
    """``against_ci``'s table plus ``inside_agreement_shift_removed``, and the shift every cell of
    the second measurement shares (``shift_pct``, its CI ``shift_ci_low_pct`` ..
    ``shift_ci_high_pct``, ``cells``): the geometric mean of the cells' ratios with its t interval
    over the cells (``compare.statistics.geomean_ratio``, as the comparison's summary; the spread of
    the cells estimates the mean's variance however differently noisy they are). A cell is then
    inside when its log ratio minus the shift's lies within its agreement half-width (the CI's where
    the first run had no replicates)."""
    out = t.copy()
    ratio = 1.0 + out["diff_pct"].to_numpy(dtype=float) / 100.0
    g = compare_stats.geomean_ratio(ratio.tolist(), confidence)
    shift = {
        "cells": g["cells"],
        "shift_pct": (g["geomean"] - 1.0) * 100.0,
        "shift_ci_low_pct": (g["ci_low"] - 1.0) * 100.0,
        "shift_ci_high_pct": (g["ci_high"] - 1.0) * 100.0,
    }
    h = np.log1p(out["agreement_hw_pct"].to_numpy(dtype=float) / 100.0)
    ci = np.log1p(out["ci_halfwidth_pct"].to_numpy(dtype=float) / 100.0)
    h = np.where(np.isfinite(h), h, ci)
    with np.errstate(invalid="ignore", divide="ignore"):  # a cell without a value: not inside
        out["inside_agreement_shift_removed"] = np.abs(np.log(ratio / g["geomean"])) <= h
    return out, shift


def shift_line(t: pd.DataFrame, shift: dict, second: str, first: str, cause: str) -> str:
    """One line: the shift every cell of ``second`` shares against ``first`` (``with_shift``),
    what it may be (``cause``), and how many cells lie inside their agreement interval once it
    is removed."""
    n = len(t)
    if not shift["cells"]:
        return f"{second}: no cell to estimate a shift shared by every cell"
    lo, hi = shift["shift_ci_low_pct"], shift["shift_ci_high_pct"]
    seen = (
        f"a shift every cell shares, which no interval of one run holds ({cause})"
        if lo > 0 or hi < 0
        else "no shift shared by every cell (its CI holds 0)"
    )
    inside = int(t["inside_agreement_shift_removed"].sum())
    return (
        f"{second} against {first} over {shift['cells']} cells: {shift['shift_pct']:+.1f} % "
        f"(95 % CI {lo:+.1f} ... {hi:+.1f} %): {seen}; with it removed, {inside}/{n} = "
        f"{share(t['inside_agreement_shift_removed']):.0%} inside the agreement interval "
        "(95 % expected)"
    )


def _numeric(cells: pd.DataFrame, name: str) -> pd.Series:
    """The column ``name`` as numbers, nan where the table has none."""
    if name in cells.columns:
        return pd.to_numeric(cells[name], errors="coerce")
    return pd.Series(np.nan, index=cells.index)


def _log_halfwidth(cells: pd.DataFrame) -> pd.Series:
    """The CI's half-width on the log scale (the two-level and Stein CIs are symmetric there)."""
    return np.log(cells["latency_ci_high_ms"] / cells["latency_ci_low_ms"]) / 2.0


def agreement_line(t: pd.DataFrame, second: str) -> str:
    """One line: how many of ``second`` (e.g. "fixed median") lie inside the CI against how
    many a perfect pipeline would put there, and inside the agreement interval (95 %)."""
    n = len(t)
    inside, agree = int(t["inside_ci"].sum()), int(t["inside_agreement"].sum())
    expect = t["expected_inside_ci"].mean()
    kinds = ", ".join(sorted(set(t["agreement"])))
    hw = t["agreement_hw_pct"].median()
    return (
        f"{second} inside the CI: {inside}/{n} = {share(t['inside_ci']):.0%}, where a second "
        f"measurement of the same thing lands with {expect:.0%} (the CI is the mean's, the "
        f"{second} has its own process-level noise); inside the interval of {kinds} "
        f"(median +-{hw:.1f} %): {agree}/{n} = {share(t['inside_agreement']):.0%} "
        "(95 % expected)"
    )


def _extra(df: pd.DataFrame) -> list[str]:
    return [c for c in ("contended", "noisy") if c in df.columns]


def share(flags: pd.Series) -> float:
    return float(flags.mean()) if len(flags) else float("nan")


def noise_verdict(table: pd.DataFrame, goal_pct: float = 3.0) -> pd.DataFrame:
    """``against_ci(quiet, loaded)`` plus ``within_goal`` (|diff| <= goal_pct) and
    ``explained``: a cell whose loaded median lies outside the quiet CI must be flagged
    contended or noisy (in either run); ``explained_beyond_chance``: the same with the
    agreement interval (a quiet re-run lands outside the CI by chance, ``expected_inside_ci``)."""
    t = table.copy()
    t["within_goal"] = t["diff_pct"].abs() <= goal_pct
    flagged = np.zeros(len(t), dtype=bool)
    for col in ("contended", "noisy"):
        if col in t.columns:
            flagged |= t[col].to_numpy(dtype=bool)
    t["flagged"] = flagged
    t["explained"] = t["inside_ci"] | t["flagged"]
    t["explained_beyond_chance"] = t["inside_agreement"] | t["flagged"]
    return t
