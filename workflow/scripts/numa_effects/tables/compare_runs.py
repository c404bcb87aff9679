"""Result folders compared cell by cell (config key ``compare``, docs/comparing.md).

A run is a result folder, measured here (``snakemake all``) or imported (config key ``import``):
its ``tables/cells.csv`` and ``machine.json``, and the ``settings`` of its cell JSONs
(``cells/.../r{k}.json``) when it has them. Folders are only read. The first run is the
baseline; every other run is compared with it:

- cells are matched on every key column (``plan.grid.KEYS``: an axis added to the grid joins
  the match without an edit here) except the axes named in ``across`` (each with one value in
  each run: the setting under test, e.g. an allocator axis); a cell of one run only is listed in
  ``unmatched.csv``, never dropped silently;
- ``compare_table`` -> ``compare.csv``, one row per matched cell: both latencies (the median,
  else the mean: ``stats.latency_statistic``), ``ratio`` = compared / baseline with its CI
  (``stats.run_ratio``: the cells' two-level model over both runs' replicate medians),
  ``significant``, ``verdict`` (``stats.verdict`` with ``min_effect_pct``), ``contended`` and
  ``noisy`` when either cell is. A cell without a two-level CI on both sides (one process per
  cell and nothing to pool; PackRat's min/avg/max) gets no CI and no test (``ci_method`` empty,
  ``ci_note`` says why, ``verdict`` ``not assessed``): only the process level could say whether
  its change is more than process-to-process noise, and it was not measured;
- where both runs timed the canary (config key ``canary``; their ``tables/samples.csv``), the
  same ratio at the baseline run's reference speed (``speed_ratio`` with its CI, ``tables.speed``:
  each side moved there along its own run's slope of the cell's series, Welch's interval,
  ``speed.between``; the baseline's fit for both where the compared run has none) and
  ``canary_change_pct``, how much slower (+) the compared run's processes ran the canary: the
  host's speed between the runs as the canary saw it, out of ``speed_ratio``. Right for a
  change that leaves the canary alone (the model, the harness, a setting on the same machine
  and torch); across machines or torch versions the canary's own change is part of the change
  under test (docs/comparing.md). Not across ``threads`` or ``placement`` (the canary's own CPUs
  differ);
- ``summary_table`` -> ``summary.csv``: per compared run the verdict counts and the geometric
  mean of the ratios with its CI (``stats.geomean_ratio``) over all matched cells with a value,
  over the clean ones (neither side contended or noisy), and per model, opt and placement;
- ``provenance_table`` -> ``provenance.csv``: machine, versions, kernel, config and load of each
  run, ``differs`` where the runs disagree (the comparison page shows those first);
- ``unmatched_table`` -> ``unmatched.csv``: the cells of one side only;
- ``peak_table`` -> ``peaks.csv``: the machine's peak kernels (each run's ``tables/peak.csv``,
  the same kernels of torch in one process per run) per placement, thread count and data type
  in both runs, and their change: a second, weak view of the host's speed beside the cells'
  shared shift (the summary's geometric mean): one process of a few seconds per peak, but
  blind to the change under test unless it is torch or the machine (docs/comparing.md);
- ``folder_problem``, ``pair_problem``: why a folder cannot be compared (the config check's
  lines); ``matched_keys``: the matched cells, from which the figures are planned.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from numa_effects import stats
from numa_effects.plan import paths
from numa_effects.plan.grid import KEYS, keyed

CELLS = paths.table("cells")
MACHINE = paths.MACHINE
REPLICATE_FILE = re.compile(r"r\d+\.json")
NOT_RECORDED = "not recorded"
# The cells.csv columns a comparison reads of each side (absent ones are empty).
SIDE_COLUMNS = (
    "status",
    "latency_median_ms",
    "latency_mean_ms",
    "latency_min_ms",
    "latency_max_ms",
    "latency_ci_low_ms",
    "latency_ci_high_ms",
    "ci_df",
    "ci_method",
    "replicates",
    "replicate_medians_ms",
    "between_sd_pct",
    "contended",
    "noisy",
    "source",
)
# compare.csv: run, baseline_run, the key columns (and <axis>_compared), then these.
COMPARE_COLUMNS = [
    "latency_statistic",
    "latency_baseline_ms",
    "latency_compared_ms",
    "ratio",
    "ratio_ci_low",
    "ratio_ci_high",
    "latency_change_pct",
    "latency_change_ci_low_pct",
    "latency_change_ci_high_pct",
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
    "replicates_baseline",
    "replicates_compared",
    "replicate_medians_baseline_ms",
    "replicate_medians_compared_ms",
    "between_sd_baseline_pct",
    "between_sd_compared_pct",
    "iteration_ranges_overlap",
    "speed_ratio",
    "speed_ratio_ci_low",
    "speed_ratio_ci_high",
    "speed_ci_df",
    "canary_change_pct",
]
SPEED = {  # compare.csv's columns at the baseline's reference speed <- speed.contrast's
    "speed_ratio": "ratio",
    "speed_ratio_ci_low": "ci_low",
    "speed_ratio_ci_high": "ci_high",
    "speed_ci_df": "df",
}
SAMPLES = paths.table("samples")
SUMMARY_COLUMNS = [
    "run",
    "baseline_run",
    "scope",
    "cells",
    "latency_statistic",
    "geomean_ratio",
    "geomean_change_pct",
    "geomean_ci_low_pct",
    "geomean_ci_high_pct",
    "ci_df",
    "significant",
    "cells_significant",
    "faster",
    "slower",
    "no_significant_change",
    "not_assessed",
    "beyond_min_effect_faster",
    "beyond_min_effect_slower",
    "disturbed",
    "min_effect_pct",
]
PROVENANCE_COLUMNS = ["category", "fact", "run", "value", "differs"]
PEAK = paths.table("peak")
PEAK_KEYS = ["placement", "threads", "dtype"]
PEAK_COLUMNS = [
    "run",
    "baseline_run",
    *PEAK_KEYS,
    "peak_kernel_baseline",
    "peak_kernel_compared",
    "peak_baseline_gflop_per_s",
    "peak_compared_gflop_per_s",
    "peak_change_pct",
]


def compare_columns(across=()) -> list[str]:
    """compare.csv's columns: an axis added to the grid is a key column here too."""
    return ["run", "baseline_run", *KEYS, *(f"{a}_compared" for a in across), *COMPARE_COLUMNS]


def unmatched_columns() -> list[str]:
    return ["run", "baseline_run", "only_in", *KEYS, "status"]


CATEGORIES = ("machine", "versions", "kernel", "config", "load", "when")
# Machine facts that, when they differ, make the comparison one across machines.
MACHINE_FACTS = ("cpu_model", "hostname", "nodes", "physical_cores", "logical_cpus")
PACKRAT_NOTE = (
    "one process per cell with min/avg/max only (imported PackRat results): nothing measures "
    "the process level, so no CI and no test"
)
ONE_PROCESS_NOTE = (
    "one process per cell and no other replicated cell to pool with: its CI holds only the "
    "iterations inside that process, so no test"
)


class CompareError(ValueError):
    """Folders that cannot be compared (the config check says the same)."""


@dataclass
class Run:
    folder: str
    label: str
    cells: pd.DataFrame
    machine: dict
    settings: dict = field(default_factory=dict)  # setting -> sorted distinct values
    peaks: pd.DataFrame | None = None  # its tables/peak.csv (ok rows), None without one
    # its replicates with the canary (``speed.replicates`` of tables/samples.csv), None without
    speed: pd.DataFrame | None = None


# -- reading and checking folders ------------------------------------------------------------------


def read_cells(path: Path):
    """cells.csv with every key column: an axis added since the run (e.g. ``allocator``, or
    PackRat's files) gets its default (``grid.fill_keys``), so older runs still match."""
    return keyed(stats.read_table(path))


def folder_problem(folder: str | os.PathLike, shown: str | None = None) -> str | None:
    """Why ``folder`` is not a result folder that can be compared, or None (``shown``: the
    folder as the user gave it, for the message)."""
    p, name = Path(folder), shown or str(folder)
    if not p.exists():
        return f"{name} does not exist"
    if not p.is_dir():
        return f"{name} is a file, not a result folder"
    missing = [f for f in (CELLS, MACHINE) if not (p / f).is_file()]
    if missing:
        return f"{name} is not a result folder (no {' and no '.join(missing)})"
    try:
        cells = read_cells(p / CELLS)
    except Exception as exc:  # a broken CSV: say which file
        return f"{name}/{CELLS} cannot be read ({type(exc).__name__}: {exc})"
    lacking = [k for k in KEYS if k not in cells.columns]
    if lacking:
        return f"{name}/{CELLS} has no {', '.join(lacking)} column (not a table of cells)"
    if cells.empty:
        return f"{name}/{CELLS} has no cells"
    try:
        json.loads((p / MACHINE).read_text())
    except (OSError, ValueError) as exc:
        return f"{name}/{MACHINE} is not JSON ({type(exc).__name__})"
    return None


def _settings(folder: Path) -> dict:
    """setting -> its distinct values over the run's cell JSONs (``settings`` of each)."""
    found: dict[str, set] = {}
    root = folder / "cells"
    if not root.is_dir():
        return {}
    for path in root.rglob("r*.json"):
        if not REPLICATE_FILE.fullmatch(path.name):
            continue
        try:
            settings = json.loads(path.read_text()).get("settings") or {}
        except (OSError, ValueError):
            continue
        for k, v in settings.items():
            found.setdefault(k, set()).add(json.dumps(v))
    return {k: [json.loads(v) for v in sorted(vs)] for k, vs in sorted(found.items())}


def read_run(
    folder: str | os.PathLike, label: str, settings: bool = True, shown: str | None = None
) -> Run:
    """A result folder (``folder_problem`` says why one cannot be read); ``shown``: the folder
    as the user gave it (``Run.folder``, in messages). Its cells are its measurements, each
    once: a row reported from another cell's (``same_binding_as``) is left out, so no change
    counts twice in the geometric means."""
    why = folder_problem(folder, shown)
    if why:
        raise CompareError(why)
    p = Path(folder)
    cells = read_cells(p / CELLS)
    if "same_binding_as" in cells:  # each measurement once: its second name repeats it
        cells = cells[cells["same_binding_as"].isna()].reset_index(drop=True)
    for col in SIDE_COLUMNS:
        if col not in cells.columns:
            cells[col] = None if col in ("status", "ci_method", "source") else np.nan
    cells["status"] = cells["status"].fillna("ok")
    cells = cells.astype({"threads": int, "batch_size": int})
    machine = json.loads((p / MACHINE).read_text())
    return Run(
        shown or str(folder),
        label,
        cells,
        machine,
        _settings(p) if settings else {},
        read_peaks(p),
        read_speed(p),
    )


def read_peaks(folder: Path) -> pd.DataFrame | None:
    """The run's measured peaks (``tables/peak.csv``, status ok), or None: an import, a run
    from before the peak table, or a table without the columns."""
    path = folder / PEAK
    if not path.is_file():
        return None
    try:
        peaks = stats.read_table(path)
    except Exception as exc:  # a broken table is no peak, not a failed comparison: say so
        print(f"{path}: not read, no peaks compared ({type(exc).__name__}: {exc})", file=sys.stderr)
        return None
    if not {*PEAK_KEYS, "peak_gflop_per_s"} <= set(peaks.columns):
        return None
    if "status" in peaks.columns:
        peaks = peaks[peaks["status"].fillna("ok") == "ok"]
    if "peak_kernel" not in peaks.columns:
        peaks = peaks.assign(peak_kernel=None)
    peaks = peaks[[*PEAK_KEYS, "peak_kernel", "peak_gflop_per_s"]].copy()
    peaks["threads"] = peaks["threads"].astype(int)
    return peaks


def read_speed(folder: Path) -> pd.DataFrame | None:
    """The run's replicates with their canary (``speed.replicates`` of ``tables/samples.csv``),
    or None: an import, a run with ``canary: false`` or from before the canary."""
    from numa_effects.tables import speed

    path = folder / SAMPLES
    if not path.is_file():
        return None
    try:
        reps = speed.replicates(keyed(stats.read_table(path)))
    except Exception as exc:  # as a broken peak table: no speed columns, and say so
        print(
            f"{path}: not read, no ratio at the reference speed ({type(exc).__name__}: {exc})",
            file=sys.stderr,
        )
        return None
    return None if reps.empty else reps.astype({"threads": int, "batch_size": int})


def speed_columns(row: dict, baseline: Run, compared: Run, fits: tuple, across=()) -> dict:
    """``SPEED``'s columns and ``canary_change_pct`` of one matched cell (``pair``'s row): the
    compared cell's replicates against the baseline's at the baseline's reference speed, each
    moved along its own run's fit of its series, or both along the baseline's where the compared
    run's series has no fit of its own (``speed.across_runs``). ``fits``:
    the two runs' ``speed.fit``. NaN where either run has no canary for the cell, the baseline's
    series no fit, or ``across`` is an axis of the reference group (the canary's threads and
    CPUs)."""
    from numa_effects.tables import speed

    out = {**dict.fromkeys(SPEED, math.nan), "canary_change_pct": math.nan}
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


def match_keys(across=()) -> list[str]:
    """The key columns cells are matched on: every axis but those compared across."""
    return [k for k in KEYS if k not in set(across)]


def _values(run: Run, axis: str) -> list:
    return sorted(run.cells[axis].dropna().unique().tolist(), key=str)


def _shown(values: list, n: int = 4) -> str:
    text = ", ".join(str(v) for v in values[:n])
    return text + (f", ... ({len(values)} values)" if len(values) > n else "")


def pair_problem(baseline: Run, compared: Run, across=()) -> str | None:
    """Why ``compared`` cannot be compared with ``baseline``, or None: an axis compared across
    has several values in one run, or the runs have no cell in common."""
    for axis in across:
        for run in (baseline, compared):
            values = _values(run, axis)
            if len(values) > 1:
                return (
                    f"across {axis}: {run.folder} has {len(values)} values of {axis} "
                    f"({_shown(values)}), so its cells would match several of the other run's; "
                    "allowed: an axis with one value in each run"
                )
    on = match_keys(across)
    common = baseline.cells[on].merge(compared.cells[on].drop_duplicates(), on=on)
    if not common.empty:
        return None
    apart = [
        f"{k} ({_shown(_values(baseline, k))} vs {_shown(_values(compared, k))})"
        for k in on
        if not set(_values(baseline, k)) & set(_values(compared, k))
    ]
    hint = (
        f"; every cell differs in {' and '.join(apart)}: to compare across an axis, name it in "
        "compare.across"
        if apart
        else ""
    )
    return (
        f"{baseline.folder} and {compared.folder} have no cell in common on {', '.join(on)}{hint}"
    )


def read_runs(folders, labels, across=(), settings: bool = True) -> list[Run]:
    """Every run, checked: a folder that is not a result folder, or a run with nothing in
    common with the baseline, is a ``CompareError`` (the config check's text)."""
    runs = [read_run(f, label, settings) for f, label in zip(folders, labels, strict=True)]
    for run in runs[1:]:
        why = pair_problem(runs[0], run, across)
        if why:
            raise CompareError(why)
    return runs


# -- matching ------------------------------------------------------------------------------------


def _side(run: Run) -> pd.DataFrame:
    return run.cells[[*KEYS, *SIDE_COLUMNS]].copy()


def pair(baseline: Run, compared: Run, across=()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(matched cells: the baseline's columns with suffix ``_b``, the compared run's with ``_c``,
    the keys of the baseline; cells of one side only, with ``only_in``)."""
    on = match_keys(across)
    b, c = _side(baseline), _side(compared)
    m = b.merge(c, on=on, how="outer", suffixes=("_b", "_c"), indicator=True)
    for axis in across:  # the key keeps the baseline's value; the compared one is beside it
        m[axis] = m[f"{axis}_b"].where(m["_merge"] != "right_only", m[f"{axis}_c"])
    both = m[m["_merge"] == "both"].drop(columns="_merge")
    left = m[m["_merge"] == "left_only"].assign(
        only_in=baseline.label, status=lambda d: d["status_b"]
    )
    right = m[m["_merge"] == "right_only"].assign(
        only_in=compared.label, status=lambda d: d["status_c"]
    )
    only = pd.concat([left, right], ignore_index=True)[["only_in", *KEYS, "status"]]
    both = both.astype({k: int for k in ("threads", "batch_size") if k in on})
    return both.reset_index(drop=True), only.reset_index(drop=True)


def matched_keys(folders, labels, across=()) -> list[dict]:
    """The matched cells' keys with the compared run's label (``run``): what the comparison's
    figures are planned from (pandas; read at parse time like an import's cells)."""
    runs = [read_run(f, label, settings=False) for f, label in zip(folders, labels, strict=True)]
    out = []
    for run in runs[1:]:
        both, _ = pair(runs[0], run, across)
        for r in both[list(KEYS)].to_dict("records"):
            out.append({"run": run.label, **r})
    return out


# -- the comparison table --------------------------------------------------------------------------


def _num(v) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f


def _status(row: dict, suffix: str) -> str:
    """A cell's status as the figures know it: ok, failed, contended or skipped."""
    s = row.get(f"status{suffix}")
    s = "ok" if s is None or (isinstance(s, float) and math.isnan(s)) else str(s)
    return s if s in ("ok", "contended", "skipped") else "failed"


def _ci(row: dict, suffix: str) -> tuple[float, float, float] | None:
    lo, hi, df = (
        _num(row.get(f"{c}{suffix}")) for c in ("latency_ci_low_ms", "latency_ci_high_ms", "ci_df")
    )
    if row.get(f"ci_method{suffix}") in stats.T_INTERVALS and lo > 0 and hi > 0 and df > 0:
        return lo, hi, df
    return None


def _note(row: dict) -> str:
    """Why a matched cell with a value on both sides has no CI."""
    for s in ("_b", "_c"):
        if str(row.get(f"source{s}") or "").startswith("imported"):
            return PACKRAT_NOTE
    for s in ("_b", "_c"):
        if row.get(f"ci_method{s}") == "within-process":
            return ONE_PROCESS_NOTE
    if not (_num(row.get("latency_median_ms_b")) > 0 and _num(row.get("latency_median_ms_c")) > 0):
        return "one side has no median (only the mean): no CI and no test"
    return "one side has no two-level CI (cells.csv without ci_method or ci_df): no test"


def _either(a, b) -> bool:
    return stats.as_bool(a) is True or stats.as_bool(b) is True


def _overlap(row: dict) -> bool | None:
    lo_b, hi_b = _num(row.get("latency_min_ms_b")), _num(row.get("latency_max_ms_b"))
    lo_c, hi_c = _num(row.get("latency_min_ms_c")), _num(row.get("latency_max_ms_c"))
    if any(math.isnan(v) for v in (lo_b, hi_b, lo_c, hi_c)):
        return None
    return bool(lo_c <= hi_b and lo_b <= hi_c)


def _pct(r: float) -> float:
    return (r - 1.0) * 100.0 if r == r else math.nan


def compare_rows(baseline: Run, compared: Run, min_effect_pct: float, across=()) -> list[dict]:
    """One row per matched cell of ``compared`` against ``baseline`` (``compare_columns``)."""
    from numa_effects.tables import speed

    both, _ = pair(baseline, compared, across)
    fits = tuple(speed.fit(r.speed) if r.speed is not None else {} for r in (baseline, compared))
    rows = []
    for row in both.to_dict("records"):
        sb, sc = _status(row, "_b"), _status(row, "_c")
        # the median where every cell with a value has one, else the mean (PackRat's)
        medians = [row[f"latency_median_ms{x}"] for x, st in (("_b", sb), ("_c", sc)) if st == "ok"]
        stat = stats.latency_statistic(medians or [math.nan], every=True)
        col = stats.latency_column(stat)
        sb, sc = (
            "missing" if st == "ok" and not _num(row[f"{col}{x}"]) > 0 else st
            for x, st in (("_b", sb), ("_c", sc))
        )
        status = next(
            (s for s in ("failed", "contended", "skipped", "missing") if s in (sb, sc)), "ok"
        )
        lb, lc = _num(row[f"{col}_b"]), _num(row[f"{col}_c"])
        out = {
            "run": compared.label,
            "baseline_run": baseline.label,
            **{k: row[k] for k in KEYS},
            **{f"{a}_compared": row[f"{a}_c"] for a in across},
            "latency_statistic": stat,
            "latency_baseline_ms": lb if status == "ok" else math.nan,
            "latency_compared_ms": lc if status == "ok" else math.nan,
            "ratio": math.nan,
            "ratio_ci_low": math.nan,
            "ratio_ci_high": math.nan,
            "ci_df": math.nan,
            "ci_method": None,
            "ci_note": None,
            "significant": None,
            "min_effect_pct": float(min_effect_pct),
            "status": status,
            "status_baseline": sb,
            "status_compared": sc,
            "contended": _either(row["contended_b"], row["contended_c"]),
            "noisy": _either(row["noisy_b"], row["noisy_c"]),
            "replicates_baseline": row["replicates_b"],
            "replicates_compared": row["replicates_c"],
            "replicate_medians_baseline_ms": row["replicate_medians_ms_b"],
            "replicate_medians_compared_ms": row["replicate_medians_ms_c"],
            "between_sd_baseline_pct": row["between_sd_pct_b"],
            "between_sd_compared_pct": row["between_sd_pct_c"],
            "iteration_ranges_overlap": _overlap(row) if status == "ok" else None,
            **dict.fromkeys(SPEED, math.nan),
            "canary_change_pct": math.nan,
        }
        if status != "ok":
            side, what = ("baseline", sb) if sb != "ok" else ("compared", sc)
            out["ci_note"] = f"no value: the {side} cell is {what}"
            out["verdict"] = "no value"
            rows.append(out)
            continue
        out["ratio"] = lc / lb
        out.update(speed_columns(row, baseline, compared, fits, across))
        cb, cc = _ci(row, "_b"), _ci(row, "_c")
        if stat == stats.MEDIAN and cb and cc:
            r = stats.run_ratio(cb, cc)
            out.update(
                ratio=r["ratio"],
                ratio_ci_low=r["ci_low"],
                ratio_ci_high=r["ci_high"],
                ci_df=r["ci_df"],
                ci_method="two-level",
                significant=r["significant"],
            )
        else:
            out["ci_note"] = _note(row)
        out["verdict"] = stats.verdict(out["ratio"], out["significant"], min_effect_pct)
        rows.append(out)
    return rows


def compare_table(
    runs: list[Run], min_effect_pct: float = stats.MIN_EFFECT_PCT, across=()
) -> pd.DataFrame:
    """compare.csv: every compared run against the first (see the module docstring)."""
    rows = [r for run in runs[1:] for r in compare_rows(runs[0], run, min_effect_pct, across)]
    df = pd.DataFrame(rows, columns=compare_columns(across))
    df["latency_change_pct"] = _pct_series(df["ratio"])
    df["latency_change_ci_low_pct"] = _pct_series(df["ratio_ci_low"])
    df["latency_change_ci_high_pct"] = _pct_series(df["ratio_ci_high"])
    df["throughput_change_pct"] = (1.0 / df["ratio"].astype(float) - 1.0) * 100.0
    for c in ("significant", "contended", "noisy", "iteration_ranges_overlap"):
        df[c] = df[c].astype(object).where(df[c].notna(), None)
    return df.sort_values(["run", *KEYS], kind="stable").reset_index(drop=True)


def _pct_series(s: pd.Series) -> pd.Series:
    return (s.astype(float) - 1.0) * 100.0


def unmatched_table(runs: list[Run], across=()) -> pd.DataFrame:
    """unmatched.csv: per compared run, the cells of one side only."""
    frames = []
    for run in runs[1:]:
        _, only = pair(runs[0], run, across)
        frames.append(only.assign(run=run.label, baseline_run=runs[0].label))
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return df.reindex(columns=unmatched_columns())


def peak_table(runs: list[Run]) -> pd.DataFrame:
    """peaks.csv: per compared run, the peaks measured in both runs (placement, threads, data
    type) and ``peak_change_pct`` = compared / baseline - 1 (+ = the compared run's kernels ran
    faster); empty where either run has no peak table."""
    frames = []
    base = runs[0].peaks
    for run in runs[1:]:
        if base is None or run.peaks is None:
            continue
        m = base.merge(run.peaks, on=PEAK_KEYS, suffixes=("_baseline", "_compared"))
        frames.append(
            pd.DataFrame(
                {
                    "run": run.label,
                    "baseline_run": runs[0].label,
                    **{k: m[k] for k in PEAK_KEYS},
                    "peak_kernel_baseline": m["peak_kernel_baseline"],
                    "peak_kernel_compared": m["peak_kernel_compared"],
                    "peak_baseline_gflop_per_s": m["peak_gflop_per_s_baseline"],
                    "peak_compared_gflop_per_s": m["peak_gflop_per_s_compared"],
                    "peak_change_pct": (
                        m["peak_gflop_per_s_compared"] / m["peak_gflop_per_s_baseline"] - 1.0
                    )
                    * 100.0,
                }
            )
        )
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame(columns=PEAK_COLUMNS)
    df = pd.concat(frames, ignore_index=True)[PEAK_COLUMNS]
    return df.sort_values(["run", *PEAK_KEYS], kind="stable").reset_index(drop=True)


# -- the summary -----------------------------------------------------------------------------------


def _summary_row(d: pd.DataFrame, scope: str, min_effect_pct: float) -> dict:
    ok = d[d["status"] == "ok"]
    g = stats.geomean_ratio(ok["ratio"].astype(float).tolist())
    verdicts = ok["verdict"].value_counts()
    change = ok["latency_change_pct"].astype(float)
    stat = "/".join(sorted(ok["latency_statistic"].dropna().astype(str).unique()))
    return {
        "scope": scope,
        "cells": g["cells"],
        "latency_statistic": stat or None,
        "geomean_ratio": g["geomean"],
        "geomean_change_pct": _pct(g["geomean"]),
        "geomean_ci_low_pct": _pct(g["ci_low"]),
        "geomean_ci_high_pct": _pct(g["ci_high"]),
        "ci_df": g["ci_df"],
        "significant": g["significant"],
        "cells_significant": int(ok["significant"].eq(True).sum()),
        "faster": int(verdicts.get(stats.FASTER, 0)),
        "slower": int(verdicts.get(stats.SLOWER, 0)),
        "no_significant_change": int(verdicts.get(stats.NO_CHANGE, 0)),
        "not_assessed": int(verdicts.get(stats.NOT_ASSESSED, 0)),
        "beyond_min_effect_faster": int((change <= -min_effect_pct).sum()),
        "beyond_min_effect_slower": int((change >= min_effect_pct).sum()),
        "disturbed": int((ok["contended"].eq(True) | ok["noisy"].eq(True)).sum()),
        "min_effect_pct": float(min_effect_pct),
    }


ALL, CLEAN = "all matched cells", "clean cells (neither side contended or noisy)"


def summary_table(
    compare: pd.DataFrame, min_effect_pct: float = stats.MIN_EFFECT_PCT
) -> pd.DataFrame:
    """summary.csv: per compared run, the geometric mean over all matched cells with a value,
    over the clean ones, and per model/opt/placement, with the verdict counts."""
    rows = []
    for (run, base), d in compare.groupby(["run", "baseline_run"], sort=False):
        clean = d[~(d["contended"].eq(True) | d["noisy"].eq(True))]
        scopes = [(ALL, d), (CLEAN, clean)]
        scopes += [(f"{m}/{o}/{p}", g) for (m, o, p), g in d.groupby(["model", "opt", "placement"])]
        for scope, part in scopes:
            rows.append(
                {"run": run, "baseline_run": base, **_summary_row(part, scope, min_effect_pct)}
            )
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


# -- provenance ------------------------------------------------------------------------------------


def _text(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return NOT_RECORDED
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, list):
        return ", ".join(_text(x) for x in v) if v else NOT_RECORDED
    if isinstance(v, dict):
        return ", ".join(f"{k}: {_text(x)}" for k, x in v.items()) or NOT_RECORDED
    return str(v)


def _distinct(cells: pd.DataFrame, col: str):
    if col not in cells or cells[col].dropna().empty:
        return None
    values = sorted({_text(v) for v in cells[col].dropna()}, key=str)
    return values[0] if len(values) == 1 else values


def _load(cells: pd.DataFrame) -> list[tuple[str, object]]:
    ok = cells[cells["status"].isin(["ok", "contended"])]

    def agg(col, fn):
        v = (
            pd.to_numeric(ok[col], errors="coerce").dropna()
            if col in ok
            else pd.Series(dtype=float)
        )
        return None if v.empty else round(float(fn(v)), 2)

    n_cont = int(ok["contended"].map(stats.as_bool).eq(True).sum()) if "contended" in ok else None
    n_noisy = int(ok["noisy"].map(stats.as_bool).eq(True).sum()) if "noisy" in ok else None
    has_load = "load_1m" in ok and ok["load_1m"].notna().any()
    return [
        ("load_1m median before a cell", agg("load_1m", np.median)),
        ("load_1m max before a cell", agg("load_1m", np.max)),
        ("foreign CPU % max while timed", agg("foreign_cpu_pct", np.max)),
        ("cells contended", n_cont if has_load or n_cont else None),
        ("cells noisy", n_noisy if has_load or n_noisy else None),
    ]


def facts(run: Run) -> list[tuple[str, str, object]]:
    """(category, fact, value) of one run: machine, versions, kernel, config, load, when."""
    m, c = run.machine, run.cells
    s = m.get("summary") or {}
    host = m.get("host") or {}
    versions = m.get("versions") or {}
    smt = s.get("smt")
    out: list[tuple[str, str, object]] = [
        ("machine", "cpu_model", s.get("cpu_model")),
        ("machine", "hostname", host.get("hostname") or _distinct(c, "hostname")),
        ("machine", "nodes", s.get("nodes")),
        ("machine", "sockets", s.get("packages")),
        ("machine", "physical_cores", s.get("physical_cores")),
        ("machine", "logical_cpus", s.get("logical_cpus")),
        (
            "machine",
            "smt",
            None
            if smt is None
            else f"{'on' if smt else 'off'} ({s.get('threads_per_core')} per core)",
        ),
        ("machine", "arch", host.get("machine")),
        ("machine", "emulated", m.get("emulated")),
        ("machine", "source", m.get("source") or _distinct(c, "source") or "measured"),
        ("machine", "imported_from", m.get("imported_from")),
        ("versions", "python", versions.get("python")),
        ("versions", "torch", versions.get("torch") or _distinct(c, "torch_version")),
        (
            "versions",
            "torchvision",
            versions.get("torchvision") or _distinct(c, "torchvision_version"),
        ),
        ("versions", "numpy", versions.get("numpy")),
        ("versions", "numa_effects", versions.get("numa_effects")),
        ("versions", "kernel", host.get("kernel")),
    ]
    out += [("kernel", k, v) for k, v in sorted((m.get("kernel") or {}).items())]
    for col in ("protocol", "target_rel_ci", "image_size", "use_smt", "replicates"):
        out.append(("config", col, _distinct(c, col)))
    for col in ("allocator", "pinning", "interop_threads"):  # PackRat's own settings
        if col in c and c[col].notna().any():
            out.append(("config", col, _distinct(c, col)))
    out += [("config", k, v[0] if len(v) == 1 else v) for k, v in run.settings.items()]
    out += [("load", k, v) for k, v in _load(c)]
    start = (
        c["started_at"].dropna().min()
        if "started_at" in c and c["started_at"].notna().any()
        else None
    )
    end = (
        c["finished_at"].dropna().max()
        if "finished_at" in c and c["finished_at"].notna().any()
        else None
    )
    out += [("when", "first cell started", start), ("when", "last cell finished", end)]
    out.append(("when", "machine recorded", m.get("recorded_at")))
    return out


def provenance_table(runs: list[Run]) -> pd.DataFrame:
    """provenance.csv: every fact of every run (long: one row per fact and run); ``differs``:
    the runs disagree (None for the ``when`` facts, which always differ)."""
    rows, values = [], {}
    for run in runs:
        for cat, fact, v in facts(run):
            values.setdefault((cat, fact), {})[run.label] = _text(v)
    for (cat, fact), by_run in values.items():
        differs = (
            None if cat == "when" else len({by_run.get(r.label, NOT_RECORDED) for r in runs}) > 1
        )
        for run in runs:
            rows.append(
                {
                    "category": cat,
                    "fact": fact,
                    "run": run.label,
                    "value": by_run.get(run.label, NOT_RECORDED),
                    "differs": differs,
                }
            )
    df = pd.DataFrame(rows, columns=PROVENANCE_COLUMNS)
    order = {c: i for i, c in enumerate(CATEGORIES)}
    return df.sort_values("category", key=lambda s: s.map(order), kind="stable").reset_index(
        drop=True
    )


def machines(provenance: pd.DataFrame) -> dict:
    """Whether the runs come from one machine, as far as their records say: ``same``
    (True, False, or None when a machine fact is recorded by no run) and ``differ`` (the
    machine facts that differ)."""
    p = provenance[provenance["category"] == "machine"]
    p = p[p["fact"].isin(MACHINE_FACTS)]
    differ = sorted(set(p[p["differs"].eq(True)]["fact"]), key=MACHINE_FACTS.index)
    if differ:
        return {"same": False, "differ": differ}
    cpu = p[p["fact"] == "cpu_model"]["value"].astype(str)
    known = not cpu.empty and not cpu.str.startswith(NOT_RECORDED).any()
    return {"same": True if known else None, "differ": []}
