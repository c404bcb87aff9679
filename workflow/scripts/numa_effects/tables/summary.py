"""The short text summary a run ends with: what ran, what was skipped or failed, where to look."""

from __future__ import annotations

import json

import pandas as pd

from numa_effects import stats
from numa_effects.plan.grid import DEFAULTS, KEYS
from numa_effects.tables import flops, stages
from numa_effects.tables.cells import SAME


def cell_label(row) -> str:
    """``model/opt/placement/t{threads}/bs{batch}``, and ``/{axis}`` for an axis with a default
    whose value is not it (``/jemalloc``): a default-only grid reads as before the axis."""
    base = f"{row['model']}/{row['opt']}/{row['placement']}/t{row['threads']}/bs{row['batch_size']}"
    extra = [
        str(row.get(k))
        for k in KEYS
        if k in DEFAULTS and row.get(k) is not None and str(row.get(k)) != DEFAULTS[k]
    ]
    return "/".join([base, *extra])


def packing_lines(packing: pd.DataFrame | None, profile: pd.DataFrame | None) -> list[str]:
    """What packing measured and recommends: the interference profile and its cost, then per
    job the recommendation, and where the measured best is not the predicted plan."""
    from numa_effects.tables import interference

    lines = []
    if profile is not None:
        c = interference.cost(profile)
        if c["jobs"]:
            ok = profile[profile["status"] == "ok"]
            got = ", ".join(
                f"t{r.threads} k={r.k}"
                + ("" if str(r.node) in ("0", "nan", "None") else f" node {r.node}")
                + f": {r.slowdown:.3f}"
                for r in ok.itertuples()
            )
            lines.append(
                f"  interference profile: {c['jobs']} job(s), {c['groups']} group size(s), "
                f"{c['wall_s']:.0f} s; slowdown {got or 'none measured'}"
            )
    if packing is None or packing.empty:
        return lines
    for r in packing.itertuples():
        where = f"{r.model}/{r.opt} C={r.budget} B={r.batch_size}"
        if r.status == "no-plan":
            lines.append(f"  packing {where}: no plan ({r.failure})")
            continue
        rec = r.recommended_plan if isinstance(r.recommended_plan, str) else None
        if rec is None:
            lines.append(f"  packing {where}: {r.plan} predicted; not measured ({r.status})")
            continue
        line = f"  packing {where}: recommended {rec} ({r.recommended_latency_ms:.4g} ms"
        if r.recommended_speedup == r.recommended_speedup:
            line += f", {r.recommended_speedup:.2f}x the fat instance"
        line += ")"
        if stats.as_bool(r.recommended_is_predicted) is False:
            line += f"; predicted best was {r.plan}: the measured ranking differs"
        lines.append(line)
    return lines


def reported_twice(cells: pd.DataFrame) -> pd.Series:
    """The rows of ``cells`` reported from another cell's measurement (``same_binding_as``)."""
    if cells.empty or SAME not in cells:
        return pd.Series(False, index=cells.index)
    return cells[SAME].map(lambda v: isinstance(v, str) and v != "")


def same_binding_lines(cells: pd.DataFrame) -> list[str]:
    """One line on the cells measured once for two names (``plan.binding``)."""
    same = cells[reported_twice(cells)]
    if same.empty:
        return []
    parts = [
        f"{p} = {m} at t{','.join(str(t) for t in sorted(g['threads'].unique()))}"
        for (p, m), g in same.groupby(["placement", SAME], sort=False)
    ]
    return [
        f"  same binding, measured once: {len(same)} cell(s) reported from the cell with their "
        f"binding ({'; '.join(parts)}; cells.csv {SAME})"
    ]


def efficiency_lines(ok: pd.DataFrame) -> list[str]:
    """The cells' efficiency range, and how many have none (above their peak)."""
    if ok.empty or "efficiency" not in ok:
        return []
    known = pd.to_numeric(ok["efficiency"], errors="coerce").dropna()
    lines = []
    if len(known):
        lines.append(
            f"  efficiency: {known.min():.2f} - {known.max():.2f} of the peak (the best of "
            "its windows; cells.csv column efficiency)"
        )
    unknown = int(ok.get("efficiency_note", pd.Series(dtype=object)).notna().sum())
    if unknown:
        lines.append(
            f"  efficiency unknown: {unknown} cell(s) ran above {flops.EFFICIENCY_MAX:g} x "
            "their peak: the peak is under-measured (cells.csv column efficiency_note)"
        )
    return lines


def machine_line(machine: dict) -> str:
    """The machine's CPU and layout (an import records no layout: none is claimed)."""
    s = machine.get("summary", {})
    if "nodes" not in s:
        return f"  machine: {s.get('cpu_model', 'not recorded')}; layout not recorded"
    smt = "on" if s.get("smt") else "off"
    return (
        f"  machine: {s.get('cpu_model', '?')}, {s['nodes']} NUMA node(s), "
        f"{s.get('physical_cores', '?')} cores, SMT {smt}"
    )


def failure_lines(failed: pd.DataFrame, unclean: pd.DataFrame, results: str) -> list[str]:
    """A line per failed cell and per cell contended throughout, with what to do."""
    lines = [
        f"  FAILED {cell_label(row)}: {row['failure_cause']}: {row['failure_message']}"
        for _, row in failed.iterrows()
    ]
    if not failed.empty:
        lines += [
            f"  failure details (exit status, last lines of output): {results}/tables/failures.csv",
            "  re-run only the failed cells: make retry-failed (docs/troubleshooting.md)",
        ]
    lines += [
        f"  CONTENDED {cell_label(row)}: {row.get('contended_reason')}"
        for _, row in unclean.iterrows()
    ]
    if len(unclean):
        lines.append(
            "  re-measure them on a quieter machine: snakemake ... --forcerun "
            "$(python workflow/scripts/failed_cells.py --contended)"
        )
    return lines


def render(
    cells: pd.DataFrame,
    skipped: pd.DataFrame,
    machine: dict,
    results: str,
    packing: pd.DataFrame | None = None,
    profile: pd.DataFrame | None = None,
    history: list[str] = (),
    recommendation: pd.DataFrame | None = None,
    loadtest_note: str | None = None,
) -> str:
    """The run's summary; ``history``: where the records a re-run replaced are kept
    (``tables.history.summary_lines``); ``recommendation``: what to deploy (its first lines);
    ``loadtest_note``: why the answer was not tested under load (``Plan.loadtest_note``)."""
    from numa_effects.tables import deploy

    twice = same_binding_lines(cells)
    cells = cells[~reported_twice(cells)]  # each measurement once below
    ok = cells[cells["status"] == "ok"] if not cells.empty else cells
    failed = cells[cells["status"] == "failed"] if not cells.empty else cells
    # measured, but no iteration was clean: not a number, not a failure either
    unclean = cells[cells["status"] == "contended"] if not cells.empty else cells
    imported = machine.get("imported_from")
    lines = [
        *deploy.answer_lines(recommendation),
        *([f"  {loadtest_note}"] if loadtest_note else []),
        "numa-effects run summary",
        machine_line(machine),
    ]
    if imported:
        lines.append(f"  imported from: {', '.join(imported)}")
    verb = "imported" if imported else "measured"
    line = f"  cells: {len(ok)} {verb}, {len(failed)} failed, {len(skipped)} skipped"
    if len(unclean):
        line += f", {len(unclean)} contended throughout (no statistics)"
    lines.append(line)
    lines += twice
    if not ok.empty and "measure_s" in ok:
        lines.append(f"  timed inference: {ok['measure_s'].sum():.0f} s over all cells")
    if replicates := stages.replicates_text(cells):  # config key two_stage
        lines.append(f"  replicates per cell (two-stage): {replicates}")
    for reason, group in skipped.groupby("reason") if not skipped.empty else []:
        lines.append(f"  skipped {len(group)}: {reason}")
    lines += failure_lines(failed, unclean, results)
    if "contended" in ok and not ok.empty:
        n = int(ok["contended"].map(stats.as_bool).eq(True).sum())
        if n:
            lines.append(
                f"  contended: {n} cell(s) shared their CPUs with other tasks while timed "
                "(cells.csv columns contended, foreign_cpu_pct)"
            )
    lines += efficiency_lines(ok)
    lines += packing_lines(packing, profile)
    lines += history
    lines += [
        f"  tables: {results}/tables/cells.csv, samples.csv, skipped.csv, failures.csv",
        f"  machine: {results}/machine.json",
    ]
    return "\n".join(lines) + "\n"


def load_machine(path: str) -> dict:
    with open(path) as fh:
        return json.load(fh)
