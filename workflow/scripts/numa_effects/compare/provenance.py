"""The provenance of compared result folders: every recorded fact of each run and whether the
runs agree (``provenance_table`` -> provenance.csv), and whether they share a machine."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from numa_effects import stats
from numa_effects.compare.runs import Run

NOT_RECORDED = "not recorded"
PROVENANCE_COLUMNS = ["category", "fact", "run", "value", "differs"]
CATEGORIES = ("machine", "versions", "kernel", "config", "load", "when")
# Machine facts that, when they differ, make the comparison one across machines.
MACHINE_FACTS = ("cpu_model", "hostname", "nodes", "physical_cores", "logical_cpus")


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


def _values(cells: pd.DataFrame, col: str) -> pd.Series:
    return cells[col].dropna() if col in cells else pd.Series(dtype=object)


def _distinct(cells: pd.DataFrame, col: str):
    values = sorted({_text(v) for v in _values(cells, col)}, key=str)
    return (values[0] if len(values) == 1 else values) if values else None


def _load(cells: pd.DataFrame) -> list[tuple[str, object]]:
    ok = cells[cells["status"].isin(["ok", "contended"])]

    def agg(col, fn):
        v = pd.to_numeric(_values(ok, col), errors="coerce").dropna()
        return None if v.empty else round(float(fn(v)), 2)

    n_cont = int(ok["contended"].map(stats.as_bool).eq(True).sum())  # read_run adds both columns
    n_noisy = int(ok["noisy"].map(stats.as_bool).eq(True).sum())
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
    tv = versions.get("torchvision") or _distinct(c, "torchvision_version")
    smt = s.get("smt")
    if smt is not None:
        smt = f"{'on' if smt else 'off'} ({s.get('threads_per_core')} per core)"
    out: list[tuple[str, str, object]] = [
        ("machine", "cpu_model", s.get("cpu_model")),
        ("machine", "hostname", host.get("hostname") or _distinct(c, "hostname")),
        ("machine", "nodes", s.get("nodes")),
        ("machine", "sockets", s.get("packages")),
        ("machine", "physical_cores", s.get("physical_cores")),
        ("machine", "logical_cpus", s.get("logical_cpus")),
        ("machine", "smt", smt),
        ("machine", "arch", host.get("machine")),
        ("machine", "emulated", m.get("emulated")),
        ("machine", "source", m.get("source") or _distinct(c, "source") or "measured"),
        ("machine", "imported_from", m.get("imported_from")),
        ("versions", "python", versions.get("python")),
        ("versions", "torch", versions.get("torch") or _distinct(c, "torch_version")),
        ("versions", "torchvision", tv),
        ("versions", "numpy", versions.get("numpy")),
        ("versions", "numa_effects", versions.get("numa_effects")),
        ("versions", "kernel", host.get("kernel")),
    ]
    out += [("kernel", k, v) for k, v in sorted((m.get("kernel") or {}).items())]
    for col in ("protocol", "target_rel_ci", "image_size", "use_smt", "replicates"):
        out.append(("config", col, _distinct(c, col)))
    for col in ("allocator", "pinning", "interop_threads"):  # PackRat's own settings
        if len(_values(c, col)):
            out.append(("config", col, _distinct(c, col)))
    out += [("config", k, v[0] if len(v) == 1 else v) for k, v in run.settings.items()]
    out += [("load", k, v) for k, v in _load(c)]
    start, end = _values(c, "started_at"), _values(c, "finished_at")
    out.append(("when", "first cell started", start.min() if len(start) else None))
    out.append(("when", "last cell finished", end.max() if len(end) else None))
    out.append(("when", "machine recorded", m.get("recorded_at")))
    return out


def provenance_table(runs: list[Run]) -> pd.DataFrame:
    """provenance.csv, one row per fact and run; ``differs`` None for ``when`` (always differs)."""
    rows, values = [], {}
    for run in runs:
        for cat, fact, v in facts(run):
            values.setdefault((cat, fact), {})[run.label] = _text(v)
    for (cat, fact), by_run in values.items():
        seen = {by_run.get(r.label, NOT_RECORDED) for r in runs}
        differs = None if cat == "when" else len(seen) > 1
        rows += [(cat, fact, r.label, by_run.get(r.label, NOT_RECORDED), differs) for r in runs]
    df = pd.DataFrame(rows, columns=PROVENANCE_COLUMNS)
    order = {c: i for i, c in enumerate(CATEGORIES)}
    df = df.sort_values("category", key=lambda s: s.map(order), kind="stable")
    return df.reset_index(drop=True)


def machines(provenance: pd.DataFrame) -> dict:
    """``same``: the runs come from one machine (None: not recorded), ``differ``: the facts."""
    p = provenance[provenance["category"] == "machine"]
    p = p[p["fact"].isin(MACHINE_FACTS)]
    differ = sorted(set(p[p["differs"].eq(True)]["fact"]), key=MACHINE_FACTS.index)
    if differ:
        return {"same": False, "differ": differ}
    cpu = p[p["fact"] == "cpu_model"]["value"].astype(str)
    known = not cpu.empty and not cpu.str.startswith(NOT_RECORDED).any()
    return {"same": True if known else None, "differ": []}
