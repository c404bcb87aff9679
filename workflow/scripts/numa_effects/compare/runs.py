"""The result folders a comparison reads, only reading them (docs/comparing.md). Cells are
matched on every key column but the axes compared across (``pair``); a cell of one run only
goes to unmatched.csv, never dropped silently."""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from numa_effects.plan import paths
from numa_effects.plan.grid import KEYS, keyed
from numa_effects.tables import speed, tidy

CELLS, MACHINE = paths.table("cells"), paths.MACHINE
PEAK_KEYS = ["placement", "threads", "dtype"]
REPLICATE_FILE = re.compile(r"r\d+\.json")
# The cells.csv columns a comparison reads of each side (absent ones are empty).
SIDE_COLUMNS = (
    "status",
    *(f"latency_{s}_ms" for s in ("median", "mean", "min", "max", "ci_low", "ci_high")),
    *("ci_df", "ci_method", "replicates", "replicate_medians_ms", "between_sd_pct", "contended"),
    *("noisy", "source"),
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
    peaks: pd.DataFrame | None = None  # ``read_peaks``
    speed: pd.DataFrame | None = None  # ``read_speed``


def folder_problem(folder: str | os.PathLike, shown: str | None = None) -> str | None:
    """Why ``folder`` (``shown``: as the user gave it) cannot be compared, or None."""
    p, name = Path(folder), shown or str(folder)
    if not p.exists():
        return f"{name} does not exist"
    if not p.is_dir():
        return f"{name} is a file, not a result folder"
    missing = [f for f in (CELLS, MACHINE) if not (p / f).is_file()]
    if missing:
        return f"{name} is not a result folder (no {' and no '.join(missing)})"
    try:
        cells = keyed(tidy.read(p / CELLS))
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
    for path in (folder / "cells").rglob("r*.json"):
        if not REPLICATE_FILE.fullmatch(path.name):
            continue
        try:
            settings = json.loads(path.read_text()).get("settings") or {}
        except (OSError, ValueError):
            continue
        for k, v in settings.items():
            found.setdefault(k, set()).add(json.dumps(v))
    return {k: [json.loads(v) for v in sorted(vs)] for k, vs in sorted(found.items())}


def read_run(folder, label: str, settings: bool = True, shown: str | None = None) -> Run:
    """A result folder (``shown``: as the user gave it, for messages). A row reported from another
    cell's measurement (``same_binding_as``) is left out, so no change counts twice."""
    why = folder_problem(folder, shown)
    if why:
        raise CompareError(why)
    p = Path(folder)
    cells = keyed(tidy.read(p / CELLS))  # an axis added since the run gets its default
    if "same_binding_as" in cells:
        cells = cells[cells["same_binding_as"].isna()].reset_index(drop=True)
    for col in SIDE_COLUMNS:
        if col not in cells.columns:
            cells[col] = None if col in ("status", "ci_method", "source") else np.nan
    cells["status"] = cells["status"].fillna("ok")
    cells = cells.astype({"threads": int, "batch_size": int})
    machine = json.loads((p / MACHINE).read_text())
    found = _settings(p) if settings else {}
    return Run(shown or str(folder), label, cells, machine, found, read_peaks(p), read_speed(p))


def _optional(path: Path, lacking: str, read=tidy.read) -> pd.DataFrame | None:
    """An optional table, or None: absent, or broken (not a failed comparison: says so)."""
    if not path.is_file():
        return None
    try:
        return read(path)
    except Exception as exc:
        print(f"{path}: not read, {lacking} ({type(exc).__name__}: {exc})", file=sys.stderr)
        return None


def read_peaks(folder: Path) -> pd.DataFrame | None:
    """The run's ``ok`` peaks (``tables/peak.csv``), or None: none, or without the columns."""
    peaks = _optional(folder / paths.table("peak"), "no peaks compared")
    if peaks is None or not {*PEAK_KEYS, "peak_gflop_per_s"} <= set(peaks.columns):
        return None
    if "status" in peaks.columns:
        peaks = peaks[peaks["status"].fillna("ok") == "ok"]
    if "peak_kernel" not in peaks.columns:
        peaks = peaks.assign(peak_kernel=None)
    peaks = peaks[[*PEAK_KEYS, "peak_kernel", "peak_gflop_per_s"]].copy()
    peaks["threads"] = peaks["threads"].astype(int)
    return peaks


def _reps(path: Path) -> pd.DataFrame:
    return speed.replicates(keyed(tidy.read(path)))


def read_speed(folder: Path) -> pd.DataFrame | None:
    """The run's replicates with their canary (``tables/samples.csv``), or None without one."""
    reps = _optional(folder / paths.table("samples"), "no ratio at the reference speed", _reps)
    return None if reps is None or reps.empty else reps.astype({"threads": int, "batch_size": int})


def match_keys(across=()) -> list[str]:
    """The key columns cells are matched on: every axis but those compared across."""
    return [k for k in KEYS if k not in set(across)]


def _values(run: Run, axis: str) -> list:
    return sorted(run.cells[axis].dropna().unique().tolist(), key=str)


def _shown(values: list, n: int = 4) -> str:
    text = ", ".join(str(v) for v in values[:n])
    return text + (f", ... ({len(values)} values)" if len(values) > n else "")


def pair_problem(baseline: Run, compared: Run, across=()) -> str | None:
    """Why ``compared`` cannot be compared with ``baseline`` (the config check's text), or None."""
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
    why = f"{baseline.folder} and {compared.folder} have no cell in common on {', '.join(on)}"
    if apart:
        why += f"; every cell differs in {' and '.join(apart)}: to compare across an axis, name it"
        why += " in compare.across"
    return why


def read_runs(folders, labels, across=()) -> list[Run]:
    """Every run, checked: a ``CompareError`` with the config check's text if one fails."""
    runs = [read_run(f, label) for f, label in zip(folders, labels, strict=True)]
    for run in runs[1:]:
        why = pair_problem(runs[0], run, across)
        if why:
            raise CompareError(why)
    return runs


def pair(baseline: Run, compared: Run, across=()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(matched cells: the baseline's columns with suffix ``_b``, the compared run's with ``_c``,
    the keys of the baseline; cells of one side only, with ``only_in``)."""
    on = match_keys(across)
    b, c = (r.cells[[*KEYS, *SIDE_COLUMNS]].copy() for r in (baseline, compared))
    m = b.merge(c, on=on, how="outer", suffixes=("_b", "_c"), indicator=True)
    for axis in across:  # the key keeps the baseline's value; the compared one is beside it
        m[axis] = m[f"{axis}_b"].where(m["_merge"] != "right_only", m[f"{axis}_c"])
    both = m[m["_merge"] == "both"].drop(columns="_merge")
    only = [
        m[m["_merge"] == side].assign(only_in=run.label).rename(columns={f"status{x}": "status"})
        for side, run, x in (("left_only", baseline, "_b"), ("right_only", compared, "_c"))
    ]
    only = pd.concat(only, ignore_index=True)[["only_in", *KEYS, "status"]]
    both = both.astype({k: int for k in ("threads", "batch_size") if k in on})
    return both.reset_index(drop=True), only.reset_index(drop=True)


def matched_keys(folders, labels, across=()) -> list[dict]:
    """The matched cells' keys with the compared run's label (``run``): the figures' plan."""
    runs = [read_run(f, label, settings=False) for f, label in zip(folders, labels, strict=True)]
    out = []
    for run in runs[1:]:
        both, _ = pair(runs[0], run, across)
        for r in both[list(KEYS)].to_dict("records"):
            out.append({"run": run.label, **r})
    return out
