"""The tables of a comparison (docs/comparing.md), every compared run against the first:
compare.csv (one row per matched cell: the ratio with its two-level CI and verdict, and with the
canary the ratio at the baseline's reference speed), summary.csv, unmatched.csv and peaks.csv."""

from __future__ import annotations

import math

import pandas as pd

from numa_effects import stats
from numa_effects.compare import statistics as compare_stats
from numa_effects.compare.runs import PEAK_KEYS, Run, pair
from numa_effects.compare.statistics import MIN_EFFECT_PCT
from numa_effects.plan.grid import KEYS
from numa_effects.tables import speed

SPEED = {  # compare.csv's columns at the baseline's reference speed <- speed.contrast's
    "speed_ratio": "ratio",
    "speed_ratio_ci_low": "ci_low",
    "speed_ratio_ci_high": "ci_high",
    "speed_ci_df": "df",
}
NO_SPEED = {**dict.fromkeys(SPEED, math.nan), "canary_change_pct": math.nan}  # no canary on both
# the replicate columns of each side: (name, unit) -> <name>_baseline<unit>, <name>_compared<unit>
SIDES = (("replicates", ""), ("replicate_medians", "_ms"), ("between_sd", "_pct"))
REPLICATE_COLUMNS = [f"{n}_{side}{u}" for n, u in SIDES for side in ("baseline", "compared")]
# summary.csv's verdict counts: one column per verdict, named after it
VERDICT_COLUMNS = {v.replace(" ", "_"): v for v in compare_stats.VERDICTS}
# compare.csv: run, baseline_run, the key columns (and <axis>_compared), then these.
COMPARE_COLUMNS = [
    "latency_statistic",
    "latency_baseline_ms",
    "latency_compared_ms",
    *stats.with_ci("ratio"),
    *stats.with_ci("latency_change", "_pct"),
    "throughput_change_pct",
    "ci_df",
    "ci_method",
    "ci_note",
    "significant",
    "verdict",
    "min_effect_pct",
    "status",
    "status_baseline",
    "status_compared",
    "contended",
    "noisy",
    *REPLICATE_COLUMNS,
    "iteration_ranges_overlap",
    *SPEED,
    "canary_change_pct",
]
SUMMARY_COLUMNS = [
    *("run", "baseline_run", "scope", "cells", "latency_statistic", "geomean_ratio"),
    *("geomean_change_pct", "geomean_ci_low_pct", "geomean_ci_high_pct", "ci_df", "significant"),
    "cells_significant",
    *VERDICT_COLUMNS,
    *("beyond_min_effect_faster", "beyond_min_effect_slower", "disturbed", "min_effect_pct"),
]
PEAK_COLUMNS = [
    *("run", "baseline_run"),
    *PEAK_KEYS,
    *("peak_kernel_baseline", "peak_kernel_compared", "peak_baseline_gflop_per_s"),
    *("peak_compared_gflop_per_s", "peak_change_pct"),
]
UNMATCHED_COLUMNS = ["run", "baseline_run", "only_in", *KEYS, "status"]


def compare_columns(across=()) -> list[str]:
    """compare.csv's columns: an axis added to the grid is a key column here too."""
    return ["run", "baseline_run", *KEYS, *(f"{a}_compared" for a in across), *COMPARE_COLUMNS]


PACKRAT_NOTE = (
    "one process per cell with min/avg/max only (imported PackRat results): nothing measures "
    "the process level, so no CI and no test"
)
ONE_PROCESS_NOTE = (
    "one process per cell and no other replicated cell to pool with: its CI holds only the "
    "iterations inside that process, so no test"
)


def speed_columns(row: dict, baseline: Run, compared: Run, fits: tuple, across=()) -> dict:
    """``SPEED``'s columns and ``canary_change_pct`` of a matched cell (``speed.across_runs``):
    NaN without a canary on both sides, or across an axis of the canary's reference group."""
    out = dict(NO_SPEED)
    if baseline.speed is None or compared.speed is None or set(across) & set(speed.REFERENCE):
        return out
    key_b = {k: row[f"{k}_b"] if k in across else row[k] for k in KEYS}
    key_c = {**key_b, **{k: row[f"{k}_c"] for k in across}}
    fb = fits[0].get(speed.series_of(key_b))
    b, c = speed.cell(baseline.speed, key_b), speed.cell(compared.speed, key_c)
    if fb is None or b.empty or c.empty:
        return out
    fc = fits[1].get(speed.series_of(key_c))
    if fc is None and set(across) & set(speed.SERIES):  # another series, nothing to move it along
        return out
    got = speed.across_runs(c, fc, b, fb)
    out.update({col: got[name] for col, name in SPEED.items()})
    out["canary_change_pct"] = math.expm1(float(c["x"].mean() - b["x"].mean())) * 100.0
    return out


def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _status(row: dict, suffix: str) -> str:
    """A cell's status as the figures know it: ok, failed, contended or skipped (``read_run``
    makes a blank one ``ok``)."""
    s = str(row[f"status{suffix}"])
    return s if s in ("ok", "contended", "skipped") else "failed"


def _ci(row: dict, suffix: str) -> tuple[float, float, float] | None:
    """One side's CI bounds and degrees of freedom, when they make an interval."""
    names = ("latency_ci_low_ms", "latency_ci_high_ms", "ci_df")
    lo, hi, df = (_num(row.get(f"{c}{suffix}")) for c in names)
    return (lo, hi, df) if lo > 0 and hi > 0 and df > 0 else None


def _note(row: dict) -> str:
    """Why a matched cell with a value on both sides has no CI."""
    if any(str(row.get(f"source{s}") or "").startswith("imported") for s in ("_b", "_c")):
        return PACKRAT_NOTE
    if stats.WITHIN in (row.get("ci_method_b"), row.get("ci_method_c")):
        return ONE_PROCESS_NOTE
    if not (_num(row.get("latency_median_ms_b")) > 0 and _num(row.get("latency_median_ms_c")) > 0):
        return "one side has no median (only the mean): no CI and no test"
    return "one side has no two-level CI (cells.csv without ci_method or ci_df): no test"


def _either(a, b) -> bool:
    return stats.as_bool(a) is True or stats.as_bool(b) is True


def _overlap(row: dict) -> bool | None:
    ends = [_num(row.get(f"latency_{m}_ms_{x}")) for x in "bc" for m in ("min", "max")]
    if any(math.isnan(v) for v in ends):
        return None
    lo_b, hi_b, lo_c, hi_c = ends
    return bool(lo_c <= hi_b and lo_b <= hi_c)


def _pct(r: float) -> float:
    return (r - 1.0) * 100.0


def _statuses(row: dict) -> tuple[str, str, str, str]:
    """(latency statistic, baseline's status, compared cell's, the pair's): the median where
    every cell with a value has one, else PackRat's mean; ``ok`` without that value: ``missing``."""
    sb, sc = _status(row, "_b"), _status(row, "_c")
    medians = [row[f"latency_median_ms{x}"] for x, st in (("_b", sb), ("_c", sc)) if st == "ok"]
    stat = stats.latency_statistic(medians or [math.nan], every=True)
    col = stats.latency_column(stat)
    sb, sc = (
        "missing" if st == "ok" and not _num(row[f"{col}{x}"]) > 0 else st
        for x, st in (("_b", sb), ("_c", sc))
    )
    status = next((s for s in ("failed", "contended", "skipped", "missing") if s in (sb, sc)), "ok")
    return stat, sb, sc, status


def _compare_row(row: dict, baseline: Run, compared: Run, fits, min_effect_pct, across) -> dict:
    stat, sb, sc, status = _statuses(row)
    col = stats.latency_column(stat)
    lb, lc = _num(row[f"{col}_b"]), _num(row[f"{col}_c"])
    ok = status == "ok"
    reps = [row[f"{name}{unit}_{x}"] for name, unit in SIDES for x in "bc"]
    out = {
        "run": compared.label,
        "baseline_run": baseline.label,
        **{k: row[k] for k in KEYS},
        **{f"{a}_compared": row[f"{a}_c"] for a in across},
        "latency_statistic": stat,
        "latency_baseline_ms": lb if ok else math.nan,
        "latency_compared_ms": lc if ok else math.nan,
        **dict.fromkeys([*stats.with_ci("ratio"), "ci_df"], math.nan),
        **dict.fromkeys(("ci_method", "ci_note", "significant")),
        "min_effect_pct": float(min_effect_pct),
        "status": status,
        "status_baseline": sb,
        "status_compared": sc,
        "contended": _either(row["contended_b"], row["contended_c"]),
        "noisy": _either(row["noisy_b"], row["noisy_c"]),
        **dict(zip(REPLICATE_COLUMNS, reps, strict=True)),
        "iteration_ranges_overlap": _overlap(row) if ok else None,
        **NO_SPEED,
    }
    if not ok:
        side, what = ("baseline", sb) if sb != "ok" else ("compared", sc)
        return out | {"ci_note": f"no value: the {side} cell is {what}", "verdict": "no value"}
    out["ratio"] = lc / lb
    out.update(speed_columns(row, baseline, compared, fits, across))
    cb, cc = _ci(row, "_b"), _ci(row, "_c")
    method = stats.ratio_ci_method(stat, row.get("ci_method_b"), row.get("ci_method_c"))
    if method == stats.TWO_LEVEL and cb and cc:
        r = compare_stats.run_ratio(cb, cc)
        out.update(ratio=r["ratio"], ratio_ci_low=r["ci_low"], ratio_ci_high=r["ci_high"])
        out.update(ci_df=r["ci_df"], ci_method=method, significant=r["significant"])
    else:
        out["ci_note"] = _note(row)
    out["verdict"] = compare_stats.verdict(out["ratio"], out["significant"], min_effect_pct)
    return out


def compare_table(runs: list[Run], min_effect_pct=MIN_EFFECT_PCT, across=()) -> pd.DataFrame:
    """compare.csv: every compared run against the first."""
    rows = []
    for run in runs[1:]:
        both, _ = pair(runs[0], run, across)
        fits = tuple(speed.fit(r.speed) if r.speed is not None else {} for r in (runs[0], run))
        for row in both.to_dict("records"):
            rows.append(_compare_row(row, runs[0], run, fits, min_effect_pct, across))
    df = pd.DataFrame(rows, columns=compare_columns(across))
    for b in stats.BOUNDS:
        df[f"latency_change{b}_pct"] = (df[f"ratio{b}"].astype(float) - 1.0) * 100.0
    df["throughput_change_pct"] = (1.0 / df["ratio"].astype(float) - 1.0) * 100.0
    for c in ("significant", "contended", "noisy", "iteration_ranges_overlap"):
        df[c] = df[c].astype(object).where(df[c].notna(), None)
    return df.sort_values(["run", *KEYS], kind="stable").reset_index(drop=True)


def unmatched_table(runs: list[Run], across=()) -> pd.DataFrame:
    """unmatched.csv: per compared run, the cells of one side only."""
    frames = []
    for run in runs[1:]:
        _, only = pair(runs[0], run, across)
        frames.append(only.assign(run=run.label, baseline_run=runs[0].label))
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return df.reindex(columns=UNMATCHED_COLUMNS)


def peak_table(runs: list[Run]) -> pd.DataFrame:
    """peaks.csv: per compared run, the peaks both runs measured and ``peak_change_pct`` =
    compared / baseline - 1 (+ = the compared run's kernels ran faster)."""
    frames = []
    base = runs[0].peaks
    for run in runs[1:]:
        if base is None or run.peaks is None:
            continue
        m = base.merge(run.peaks, on=PEAK_KEYS, suffixes=("_baseline", "_compared"))
        b, c = m.pop("peak_gflop_per_s_baseline"), m.pop("peak_gflop_per_s_compared")
        m = m.assign(run=run.label, baseline_run=runs[0].label, peak_baseline_gflop_per_s=b)
        m = m.assign(peak_compared_gflop_per_s=c, peak_change_pct=(c / b - 1.0) * 100.0)
        frames.append(m[PEAK_COLUMNS])
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame(columns=PEAK_COLUMNS)
    df = pd.concat(frames, ignore_index=True)[PEAK_COLUMNS]
    return df.sort_values(["run", *PEAK_KEYS], kind="stable").reset_index(drop=True)


# -- the summary -----------------------------------------------------------------------------------


def _summary_row(d: pd.DataFrame, scope: str, min_effect_pct: float) -> dict:
    ok = d[d["status"] == "ok"]
    g = compare_stats.geomean_ratio(ok["ratio"].astype(float).tolist())
    verdicts = ok["verdict"].value_counts()
    change = ok["latency_change_pct"].astype(float)
    return {
        "scope": scope,
        "cells": g["cells"],
        "latency_statistic": stats.compared_statistics(ok),
        "geomean_ratio": g["geomean"],
        "geomean_change_pct": _pct(g["geomean"]),
        "geomean_ci_low_pct": _pct(g["ci_low"]),
        "geomean_ci_high_pct": _pct(g["ci_high"]),
        "ci_df": g["ci_df"],
        "significant": g["significant"],
        "cells_significant": int(ok["significant"].eq(True).sum()),
        **{col: int(verdicts.get(v, 0)) for col, v in VERDICT_COLUMNS.items()},
        "beyond_min_effect_faster": int((change <= -min_effect_pct).sum()),
        "beyond_min_effect_slower": int((change >= min_effect_pct).sum()),
        "disturbed": int((ok["contended"].eq(True) | ok["noisy"].eq(True)).sum()),
        "min_effect_pct": float(min_effect_pct),
    }


ALL, CLEAN = "all matched cells", "clean cells (neither side contended or noisy)"


def summary_table(compare: pd.DataFrame, min_effect_pct=MIN_EFFECT_PCT) -> pd.DataFrame:
    """summary.csv: per compared run and scope (all, clean, per model/opt/placement)."""
    rows = []
    for (run, base), d in compare.groupby(["run", "baseline_run"], sort=False):
        clean = d[~(d["contended"].eq(True) | d["noisy"].eq(True))]
        scopes = [(ALL, d), (CLEAN, clean)]
        scopes += [(f"{m}/{o}/{p}", g) for (m, o, p), g in d.groupby(["model", "opt", "placement"])]
        for scope, part in scopes:
            row = _summary_row(part, scope, min_effect_pct)
            rows.append({"run": run, "baseline_run": base, **row})
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
