"""Replicates where the noise is (config key ``two_stage``): the data side of Stein's two-stage
rule (the plan's side: ``plan.stages``; the statistics: ``stats.stein_replicates``).

After the first stage the checkpoint reads its records (``first_stage_rounds``) and ``decide``
gives every cell its replicates in all: Stein's N from the cell's first-stage two-level log
variance (its own replicates moderated with its batch-size series' pool), at most ``cap``; the
cells of a comparison that pays for pairing take the most any of them needs, so they keep whole
rounds in ABBA order for their paired interval. Which comparisons pay is the first stage's
answer (``pairing``), by the very test the tables use (``degradation.paired_choice``); elsewhere
each cell takes its own N. More replicates than N only narrow the interval. The tables then
combine a cell's replicates with the first stage's variance (``stats.stein_interval``); a cell
with no measured first-stage replicate gets no more.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections import Counter
from collections.abc import Iterable

from numa_effects import stats
from numa_effects.measure import record
from numa_effects.plan import grid as grid_mod
from numa_effects.plan import stages as plan_stages
from numa_effects.tables import degradation
from numa_effects.tables.cells import cell_row, pooled_variances

UNCAPPED = 10**6


def first_stage_rounds(paths: Iterable[str]) -> dict:
    """CellKey -> {replicate (its round): median (s)} of its measured first-stage replicates
    ({} when none)."""
    out: dict = {}
    for path in paths:
        row = cell_row(record.read(path), str(path))
        key = grid_mod.CellKey.from_record(row)
        meds = out.setdefault(key, {})
        med = row.get("latency_median_ms")
        if row.get("status") == "ok" and med is not None and med == med:
            meds[int(row["replicate"])] = float(med) / 1000.0
    return out


def round_order(rounds: dict) -> dict:
    """``first_stage_rounds``' result as ``decide`` takes it: CellKey -> the medians in round
    order."""
    return {k: [r[i] for i in sorted(r)] for k, r in rounds.items()}


def _partners(key, keys) -> Iterable[tuple[str, object]]:
    """(axis, the cell it is compared with) for every paired comparison of ``key`` in ``keys``."""
    for axis, baseline_of in degradation.PAIRED.items():
        base = baseline_of(getattr(key, axis))
        if base is not None:
            other = dataclasses.replace(key, **{axis: base})
            if other in keys:
                yield axis, other


def pairing(rounds: dict) -> list[dict]:
    """Whether each kind of comparison pays for whole rounds (``degradation.paired_choice`` on the
    first stage): per thread count and compared axis, ``paired``, the adjacent processes'
    ``correlation`` and the number of ``comparisons``."""
    by: dict = {}
    for key, reps in rounds.items():
        for axis, other in _partners(key, rounds):
            if set(reps) & set(rounds[other]):
                by.setdefault((key.threads, axis), []).append((rounds[other], reps))
    out = []
    for (threads, axis), pairs in sorted(by.items()):
        use, _pool, rho = degradation.paired_choice(pairs)
        out.append(
            {
                "threads": threads,
                "axis": axis,
                "paired": bool(use),
                "correlation": None if rho != rho else round(float(rho), 4),
                "comparisons": len(pairs),
            }
        )
    return out


def _linked(keys, pairs: list[dict] | None) -> dict:
    """Cell -> a representative of the cells it must keep whole rounds with: linked through
    the comparisons that ``pairs`` (``pairing``) says pay (None: every comparison)."""
    pays = None if pairs is None else {(p["threads"], p["axis"]) for p in pairs if p["paired"]}
    parent = {k: k for k in keys}

    def root(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for key in keys:
        for axis, other in _partners(key, parent):
            if pays is None or (key.threads, axis) in pays:
                parent[root(key)] = root(other)
    return {k: root(k) for k in keys}


def _reason(need: int, cap: int, n: int, own: int, r0: int) -> str:
    """Why a cell takes ``n`` replicates: the cap, its group's count, the first stage, or its
    own target."""
    if need > cap:
        return plan_stages.CAP
    if n > own:
        return plan_stages.GROUP
    if n == r0:
        return plan_stages.FIRST_STAGE
    return plan_stages.TARGET


def decide(medians: dict, settings: dict, pairs: list[dict] | None = None) -> list[dict]:
    """One record per cell (sorted by key): its key fields, ``replicates`` (in all), ``needed``
    (Stein's N without the cap), ``reason`` and the first stage's ``measured``, ``log_var``, ``df``,
    ``sd_pct``, ``expected_halfwidth_pct``. ``pairs``: ``pairing``'s result (None: all pair)."""
    r0, cap, target = settings["first_stage"], settings["cap"], settings["target_pct"] / 100.0
    measured = {k: m for k, m in medians.items() if len(m)}
    pooled = pooled_variances({dataclasses.astuple(k): m for k, m in measured.items()})
    first = {}  # the measured cells' Stein N and first-stage fields of their record
    for key, meds in measured.items():
        c = stats.combine_replicates(meds, (), pooled[dataclasses.astuple(key)])
        log_var, df = c["log_var"], int(c["ci_df"])
        if not (log_var == log_var and df >= 1):
            continue  # nothing measures the spread (one replicate, no pool): as if unmeasured
        need = stats.stein_replicates(log_var, df, target, r0, UNCAPPED)
        sd = c["replicate_sd_pct"]
        first[key] = need, dict(measured=len(meds), log_var=log_var, df=df, sd_pct=sd)
    linked = _linked(list(medians), pairs)
    group_n: dict = {}
    for key, (need, _) in first.items():
        group_n[linked[key]] = max(group_n.get(linked[key], r0), min(need, cap))
    records = []
    for key in sorted(medians):
        if key in first:
            need, f = first[key]
            n = group_n[linked[key]]
            reason = _reason(need, cap, n, min(need, cap), r0)
            half = 100.0 * math.expm1(stats.t_halfwidth(f["log_var"], f["df"], n))
        else:
            n, need, reason, half = r0, None, plan_stages.UNMEASURED, None
            f = dict(measured=len(medians[key]), log_var=None, df=None, sd_pct=None)
        rec = {**key.as_dict(), "replicates": n, "needed": need, "reason": reason}
        records.append({**rec, **f, "expected_halfwidth_pct": half})
    return records


def write(
    output: str | os.PathLike, settings: dict, records: list[dict], pairs: list[dict] | None = None
) -> None:
    plan_stages.write(output, {"settings": settings, "pairing": pairs, "cells": records})


def read_records(file: str | os.PathLike) -> dict:
    """Key tuple (``KEY_COLUMNS``) -> the cell's record, from a counts file."""
    return {dataclasses.astuple(grid_mod.CellKey.from_record(r)): r for r in plan_stages.load(file)}


def pairing_text(pairs: list[dict]) -> str:
    """'whole rounds for opt at 2 threads (r = 0.81); not for opt at 1 thread (r = -0.27)' from
    ``pairing``'s records (r: the adjacent processes' correlation)."""

    def one(p):
        rho = "n/a" if p["correlation"] is None else f"{p['correlation']:.2f}"
        t = p["threads"]
        return f"{p['axis']} at {t} thread{'s' * (t != 1)} (r = {rho})"

    yes = [one(p) for p in pairs if p["paired"]]
    no = [one(p) for p in pairs if not p["paired"]]
    parts = [f"whole rounds for {', '.join(yes)}"] if yes else []
    parts += [f"not for {', '.join(no)}"] if no else []
    return "; ".join(parts)


def summary_line(records: list[dict], settings: dict, pairs: list[dict] | None = None) -> str:
    """One line on what the checkpoint decided and which comparisons kept whole rounds."""
    r0 = settings["first_stage"]
    more = sum(r["replicates"] - r0 for r in records)
    counts = Counter(r["reason"] for r in records)
    why = ", ".join(f"{n} {reason}" for reason, n in counts.items())
    return (
        f"two-stage replicates (target +-{settings['target_pct']:g} %, cap {settings['cap']}): "
        f"{more} more process{'es' * (more != 1)} after the first stage of {r0}; "
        f"cells by reason: {why or 'none'}" + (f"; {pairing_text(pairs)}" if pairs else "")
    )


def replicates_text(cells) -> str | None:
    """'2 - 4 processes; 10 cells: first stage; 4 cells: cap' from cells.csv's two-stage
    columns (the summary and the report's run section); None without them."""
    if "replicates_reason" not in cells or not cells["replicates_reason"].notna().any():
        return None
    n = cells["replicates_planned"].dropna()
    why = "; ".join(
        f"{count} cell{'s' * (count > 1)}: {reason}"
        for reason, count in cells["replicates_reason"].value_counts(sort=False).items()
    )
    return f"{int(n.min())} - {int(n.max())} processes; {why}"
