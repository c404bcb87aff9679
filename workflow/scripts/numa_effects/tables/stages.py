"""Replicates where the noise is (config key ``two_stage``), the data side of Stein's two-stage
rule (the plan's side: ``plan.stages``; the statistics: ``stats.stein_replicates``).

After the first stage (``replicates`` processes of every cell) the checkpoint job reads their
results (``first_stage``) and ``decide`` gives every cell its number of replicates in all:

1. the cell's first-stage log variance and degrees of freedom are the two-level ones of the
   tables (``stats.combine_replicates``: its own replicates moderated with the pool of its
   batch-size series, ``tables.cells.pooled_variances``), over the first stage only;
2. from that variance alone, Stein's rule gives the replicates the cell needs for a CI
   half-width within the target (``stats.stein_replicates``), at most ``cap``;
3. every cell of a comparison group (``grid.comparison_group``: a placement, its baseline and
   every optimization at one model, thread count, batch size and allocator) takes the most
   any of them needs, so the group keeps whole rounds in ABBA order and the paired
   comparisons (``tables.compare``) keep every round. More replicates than Stein's N only
   narrow the interval: coverage holds (tests/test_stages.py simulates this very function).

The tables then combine a cell's replicates with the first stage's variance
(``tables.cells.combine_replicates`` with these records: ``ci_method`` ``two-stage``), never
re-estimated from the second stage, which is what makes the coverage exact (Stein 1945). A
cell with no measured first-stage replicate (failed or contended throughout) gets no more and
is combined as usual.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable

from numa_effects import stats
from numa_effects.measure import result as cellresult
from numa_effects.plan import grid as grid_mod
from numa_effects.plan import stages as plan_stages
from numa_effects.tables.cells import KEY_COLUMNS, cell_row, pooled_variances

UNCAPPED = 10**6


def _tuple(key) -> tuple:
    return tuple(getattr(key, c) for c in KEY_COLUMNS)


def first_stage(paths: Iterable[str]) -> dict:
    """CellKey -> the medians (s) of its measured first-stage replicates ([] when none)."""
    out: dict = {}
    for path in paths:
        row = cell_row(cellresult.read(path), str(path))
        key = grid_mod.CellKey.from_record(row)
        meds = out.setdefault(key, [])
        med = row.get("latency_median_ms")
        if row.get("status") == "ok" and med is not None and med == med:
            meds.append(float(med) / 1000.0)
    return out


def decide(medians: dict, settings: dict) -> list[dict]:
    """One record per cell (sorted by key): its key fields, ``replicates`` (in all),
    ``needed`` (Stein's N without the cap), ``reason`` (``plan.stages.REASONS``), and the first
    stage's ``measured`` replicates, ``log_var``, ``df``, ``sd_pct`` and the CI half-width the
    planned replicates promise (``expected_halfwidth_pct``). ``medians``: ``first_stage``'s
    result; ``settings``: ``plan.stages.settings``."""
    r0, cap, target = settings["first_stage"], settings["cap"], settings["target_pct"] / 100.0
    measured = {k: m for k, m in medians.items() if len(m)}
    pooled = pooled_variances({_tuple(k): m for k, m in measured.items()})
    first = {}
    for key, meds in measured.items():
        c = stats.combine_replicates(meds, (), pooled[_tuple(key)])
        log_var, df = c["log_var"], int(c["ci_df"])
        if not (log_var == log_var and df >= 1):
            continue  # nothing measures the spread (one replicate, no pool): as if unmeasured
        need = stats.stein_replicates(log_var, df, target, r0, UNCAPPED)
        first[key] = (len(meds), log_var, df, need, min(need, cap), c["replicate_sd_pct"])
    group_n: dict = {}
    for key, (*_, own, _sd) in first.items():
        g = grid_mod.comparison_group(key)
        group_n[g] = max(group_n.get(g, r0), own)
    records = []
    for key in sorted(medians):
        rec = {**key.as_dict()}
        if key not in first:
            rec.update(
                replicates=r0,
                needed=None,
                reason=plan_stages.UNMEASURED,
                measured=len(medians[key]),
                log_var=None,
                df=None,
                sd_pct=None,
                expected_halfwidth_pct=None,
            )
            records.append(rec)
            continue
        n_ok, log_var, df, need, own, sd = first[key]
        n = group_n[grid_mod.comparison_group(key)]
        if need > cap:
            reason = plan_stages.CAP
        elif n > own:
            reason = plan_stages.GROUP
        elif n == r0:
            reason = plan_stages.FIRST_STAGE
        else:
            reason = plan_stages.TARGET
        rec.update(
            replicates=n,
            needed=need,
            reason=reason,
            measured=n_ok,
            log_var=log_var,
            df=df,
            sd_pct=sd,
            expected_halfwidth_pct=100.0 * math.expm1(stats.stein_halfwidth(log_var, df, n)),
        )
        records.append(rec)
    return records


def write(output: str | os.PathLike, settings: dict, records: list[dict]) -> None:
    plan_stages.write(output, {"settings": settings, "cells": records})


def read_records(file: str | os.PathLike) -> dict:
    """Key tuple (``KEY_COLUMNS``) -> the cell's record, from a counts file."""
    return {_tuple(grid_mod.CellKey.from_record(r)): r for r in plan_stages.load(file)}


def summary_line(records: list[dict], settings: dict) -> str:
    """One line on what the checkpoint decided, e.g. ``two-stage replicates (target +-5 %,
    cap 4): 6 more processes; 10 cells stopped at the first stage, 2 target, 4 cap``."""
    r0 = settings["first_stage"]
    more = sum(r["replicates"] - r0 for r in records)
    counts: dict = {}
    for r in records:
        counts[r["reason"]] = counts.get(r["reason"], 0) + 1
    why = ", ".join(f"{n} {reason}" for reason, n in counts.items())
    return (
        f"two-stage replicates (target +-{settings['target_pct']:g} %, cap {settings['cap']}): "
        f"{more} more process{'es' * (more != 1)} after the first stage of {r0}; "
        f"cells by reason: {why or 'none'}"
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
