"""Pure judgement logic of the benchmarks (unit-tested in tests/test_bench.py): is a second
measurement inside the first one's reported 95 % CI, and by how much do two runs differ
compared with the CI they report."""

from __future__ import annotations

import numpy as np
import pandas as pd

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
    first's CI half-width (%), whether the second median lies inside the first's CI, and
    ``spread_over_ci``: |difference| / the first's half-width (1 = on the CI's edge)."""
    a = _ok(first)[[*KEYS, *CI_COLUMNS, *_extra(first)]]
    b = _ok(second)[[*KEYS, "latency_median_ms", *_extra(second)]]
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
    return out


def _extra(df: pd.DataFrame) -> list[str]:
    return [c for c in ("contended", "noisy") if c in df.columns]


def share(flags: pd.Series) -> float:
    return float(flags.mean()) if len(flags) else float("nan")


def noise_verdict(table: pd.DataFrame, goal_pct: float = 3.0) -> pd.DataFrame:
    """``against_ci(quiet, loaded)`` plus ``within_goal`` (|diff| <= goal_pct) and
    ``explained``: a cell whose loaded median lies outside the quiet CI must be flagged
    contended or noisy (in either run)."""
    t = table.copy()
    t["within_goal"] = t["diff_pct"].abs() <= goal_pct
    flagged = np.zeros(len(t), dtype=bool)
    for col in ("contended", "noisy"):
        if col in t.columns:
            flagged |= t[col].to_numpy(dtype=bool)
    t["flagged"] = flagged
    t["explained"] = t["inside_ci"] | t["flagged"]
    return t
