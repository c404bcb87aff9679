"""The report page ``results/report/index.html``: one self-contained HTML file (inline CSS, no
script) that links the figure files beside it, with the registry's sections
(``families.SECTIONS``: none is special here), the machine, the run and the table of cells."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from numa_effects import stats
from numa_effects.plan.durations import duration_text
from numa_effects.plan.grid import DEFAULTS, KEYS
from numa_effects.report import deploy_section, families, markup
from numa_effects.report.data import DISTURBED, flag
from numa_effects.report.empty import PageFacts
from numa_effects.report.figures import from_dict
from numa_effects.report.markup import data_table, family_blocks
from numa_effects.tables import stages


def _key(r: dict) -> str:
    """``model/opt/placement/threads/batch``, and an axis with a default only where the cell's
    value is not it (``/jemalloc``)."""
    return "/".join(str(r[k]) for k in KEYS if k not in DEFAULTS or str(r.get(k)) != DEFAULTS[k])


def machine_facts(machine: dict, cells: pd.DataFrame) -> list[tuple[str, object]]:
    """The Machine section's (fact, value) rows, those without a value left out."""
    s = machine.get("summary") or {}
    versions = machine.get("versions") or {}
    host = machine.get("host") or {}
    kernel = machine.get("kernel") or {}
    caps = machine.get("capabilities") or {}
    torch = versions.get("torch")
    if not torch and "torch_version" in cells and cells["torch_version"].notna().any():
        torch = ", ".join(sorted(cells["torch_version"].dropna().astype(str).unique()))
    smt = s.get("smt")
    if smt is not None:
        smt = ("on" if smt else "off") + f" ({s.get('threads_per_core')} per core)"
    per_node = ", ".join(f"node {k}: {v}" for k, v in (s.get("cores_per_node") or {}).items())
    rows = [
        ("CPU", s.get("cpu_model")),
        ("NUMA nodes", s.get("nodes")),
        ("sockets", s.get("packages")),
        ("physical cores", s.get("physical_cores")),
        ("cores per node", per_node),
        ("logical CPUs", s.get("logical_cpus")),
        ("SMT", smt),
        ("vector ISA (oneDNN)", caps.get("isa")),
        ("bf16", caps.get("bf16")),
        ("int8", caps.get("int8")),
        ("torch", torch),
        ("torchvision", versions.get("torchvision")),
        ("python", versions.get("python")),
        ("host", host.get("hostname")),
        ("kernel", host.get("kernel")),
        ("automatic NUMA balancing", kernel.get("numa_balancing")),
        ("transparent huge pages", kernel.get("transparent_hugepage")),
        ("address space randomization", kernel.get("randomize_va_space")),
        ("frequency governor", kernel.get("scaling_governor")),
        ("recorded", machine.get("recorded_at")),
    ]
    if machine.get("imported_from"):
        rows.append(("imported from", "; ".join(machine["imported_from"])))
    return _present(rows)


def _present(rows: list[tuple[str, object]]) -> list[tuple[str, object]]:
    return [(k, v) for k, v in rows if v not in (None, "")]


def _run_facts(cells: pd.DataFrame, skipped: pd.DataFrame) -> list[tuple[str, object]]:
    """The run's counts of cells by status, where they come from, and its times."""
    failed, no_clean, disturbed = _by_status(cells)
    ok = int(cells["status"].eq("ok").sum()) if "status" in cells else 0
    rows: list[tuple[str, object]] = [("cells measured", ok), ("cells failed", len(failed))]
    if len(no_clean):
        rows.append(("cells contended, no clean iteration", len(no_clean)))
    rows.append(("cells skipped", len(skipped)))
    if len(disturbed):
        rows.append(("cells contended or noisy", len(disturbed)))
    sources = sorted(cells["source"].dropna().astype(str).unique()) if "source" in cells else []
    if sources:
        rows.append(("source", ", ".join(sources)))
    rows += _times(cells, sources)
    if replicates := stages.replicates_text(cells):
        rows.append(("replicates per cell (two-stage)", replicates))
    return rows


def _times(cells: pd.DataFrame, sources: list[str]) -> list[tuple[str, object]]:
    rows: list[tuple[str, object]] = []
    if {"started_at", "finished_at"} <= set(cells.columns) and cells["started_at"].notna().any():
        start = pd.to_datetime(cells["started_at"], utc=True, errors="coerce", format="ISO8601")
        end = pd.to_datetime(cells["finished_at"], utc=True, errors="coerce", format="ISO8601")
        if start.notna().any() and end.notna().any():
            wall = (end.max() - start.min()).total_seconds()
            rows += [
                ("first cell started", start.min().isoformat(timespec="seconds")),
                ("last cell finished", end.max().isoformat(timespec="seconds")),
                ("wall-clock time of the run", duration_text(wall)),
                ("time in cell processes", duration_text((end - start).dt.total_seconds().sum())),
            ]
    else:
        rows.append(("run time", "not recorded (imported results)" if sources else "not recorded"))
    if "measure_s" in cells and cells["measure_s"].notna().any():
        rows.append(("timed inference", duration_text(cells["measure_s"].sum())))
    return rows


def _by_status(cells: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The cells that failed, that are contended (no replicate had a clean iteration, so no
    value, not a failure), and that have a value whose timing was contended or noisy."""
    status = cells.get("status", pd.Series("ok", index=cells.index))
    no_clean = status.eq("contended")
    failed = cells[~status.isin(["ok", "contended"])]
    return failed, cells[no_clean], cells[flag(cells) & ~no_clean]


def _keyed(rows: pd.DataFrame, text) -> list[tuple[str, str]]:
    """``rows``' keys, each with ``text(row)``."""
    return [(_key(r), text(r)) for r in rows.to_dict("records")]


def _why_failed(r: dict) -> str:
    return f": {r.get('failure_cause')}: {r.get('failure_message')}"


def _why_contended(r: dict) -> str:
    why = r.get("contended_reason")
    return f": {why}" if pd.notna(why) else ""


def _how_disturbed(r: dict) -> str:
    return ": " + " and ".join(c for c in DISTURBED if stats.as_bool(r.get(c)) is True)


def run_section(cells: pd.DataFrame, skipped: pd.DataFrame, failures: pd.DataFrame | None) -> dict:
    """The Run section's facts, skipped reasons, cells failed, contended and disturbed, and
    failures.csv."""
    failed, no_clean, disturbed = _by_status(cells)
    reasons = []
    if not skipped.empty and "reason" in skipped:
        reasons = [(len(g), reason) for reason, g in skipped.groupby("reason")]
    shown = failures is not None and not failures.empty
    return {
        "facts": _present(_run_facts(cells, skipped)),
        "skipped": reasons,
        "failed": _keyed(failed, _why_failed),
        "contended": _keyed(no_clean, _why_contended),
        "disturbed": _keyed(disturbed, _how_disturbed),
        "failures": data_table(failures, list(failures.columns)) if shown else None,
    }


def cells_section(cells: pd.DataFrame, skipped: pd.DataFrame, latency_stat: str) -> dict | None:
    """The table of cells: every measured, failed and skipped one (None: no cell)."""
    rows = cells.copy()
    if not rows.empty:
        # a failure's cause, else why a cell has no efficiency (its peak under-measured)
        note = rows.get("failure_cause", pd.Series(None, index=rows.index, dtype=object))
        rows["note"] = note.where(note.notna(), rows.get("efficiency_note"))
    if not skipped.empty:
        sk = skipped.assign(status="skipped", note=skipped.get("reason"))
        rows = pd.concat([rows, sk], ignore_index=True) if not rows.empty else sk
    if rows.empty:
        return None
    rows = rows.sort_values(list(KEYS), kind="stable")
    lat = stats.latency_column(latency_stat)
    timing = (lat, "latency_min_ms", "latency_max_ms", "cv", "n", "replicates", "ci_halfwidth_pct")
    rates = ("throughput_ips", "gflop_per_s", "hw_gflop_per_s", "efficiency")
    # replicates_reason (two_stage): how many replicates the cell was given and why
    wanted = [*KEYS, "status", "dtype", "native", *timing, "replicates_reason", *rates, "source"]
    wanted.append("note")
    columns = [
        c for c in dict.fromkeys(wanted) if c in rows and (rows[c].notna().any() or c in KEYS)
    ]
    rows = rows.astype({"threads": int, "batch_size": int})
    return data_table(rows, columns, "status")


def _section(key, sec, figs, models, facts, shown: dict, dirs: tuple[str, str]) -> dict:
    """One section: its figures per model and family (or why it has none), and its tables."""
    out = {"anchor": sec.anchor, "heading": sec.heading, "highlight": sec.highlight}
    in_section = [f for f in figs if f.spec.section == key]
    if not in_section:
        return {**out, "why": sec.empty(facts), "groups": [], "tables": []}
    groups = [
        {
            "model": model if len(models) > 1 else None,
            "blocks": family_blocks([f for f in in_section if f.model == model], model, dirs),
        }
        for model in models
        if any(f.model == model for f in in_section)
    ]
    tables = []
    for name in sec.tables:
        table = shown.get(name)
        if table is not None and not table.empty:
            tables.append((name, data_table(table, [c for c in table if table[c].notna().any()])))
    return {**out, "why": None, "groups": groups, "tables": tables}


def _links(deploy: dict | None, sections: list[dict]) -> list[dict]:
    """The header's links: "What to deploy" with an answer, the sections with figures, and the
    machine, the run and the cells."""
    answer = [deploy] if deploy and deploy["tables"] else []
    shown = [s for s in sections if s["why"] is None]
    fixed = [{"anchor": a, "heading": a.title()} for a in ("machine", "run", "cells")]
    return [{"highlight": False, **s} for s in (*answer, *shown, *fixed)]


def render(
    figure_list: Sequence[dict],
    cells: pd.DataFrame,
    skipped: pd.DataFrame,
    degradation: pd.DataFrame | None,
    machine: dict,
    *,
    page_dir: str,
    figure_dir: str,
    placements: Sequence[str],
    imported: Sequence[str] = (),
    latency_stat: str = "median",
    failures: pd.DataFrame | None = None,
    precision: pd.DataFrame | None = None,
    memory_matrix: pd.DataFrame | None = None,
    recommendation: pd.DataFrame | None = None,
    under_load: dict | None = None,
) -> str:
    """The page; ``recommendation``: ``tables/recommendation.csv`` (None: the run has no
    "What to deploy" section); ``under_load``: its figure under load (``deploy_section``)."""
    figs = [from_dict(d) for d in figure_list]
    models = sorted(
        {f.model for f in figs} | set(cells.get("model", pd.Series(dtype=str)).dropna())
    )
    facts = PageFacts(cells, skipped, placements, bool(imported))
    # tables a section may show (Section.tables)
    shown = {"degradation": degradation, "precision": precision, "memory_matrix": memory_matrix}
    sections = [
        _section(key, sec, figs, models, facts, shown, (figure_dir, page_dir))
        for key, sec in families.page_sections().items()
    ]
    deploy = None if recommendation is None else deploy_section.section(recommendation, under_load)
    links = _links(deploy, sections)
    # what the header points to: the answer, else the highlighted section if it has figures
    first = (deploy_section.ANCHOR, *(s["anchor"] for s in sections if s["highlight"]))
    return markup.render(
        "report.html.j2",
        title=f"NUMA effects: {', '.join(models) or 'no cells'}",
        imported="; ".join(imported),
        cpu=(machine.get("summary") or {}).get("cpu_model") or "this machine",
        latency_stat=latency_stat,
        jump=next((a for a in links if a["anchor"] in first), None),
        links=links,
        emulated={"reason": machine.get("emulated_reason")} if machine.get("emulated") else None,
        deploy=deploy,
        sections=sections,
        machine=machine_facts(machine, cells),
        run=run_section(cells, skipped, failures),
        cells=cells_section(cells, skipped, latency_stat),
    )
