"""The report page ``results/report/index.html``: one self-contained HTML file (inline CSS, no
script) that links the figure files beside it, with the registry's sections
(``families.SECTIONS``: none is special here), the machine, the run and the table of cells."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from numa_effects import stats
from numa_effects.plan.grid import DEFAULTS, KEYS
from numa_effects.report import deploy_section, families
from numa_effects.report.data import DISTURBED, flag
from numa_effects.report.empty import PageFacts
from numa_effects.report.figures import from_dict
from numa_effects.report.markup import (
    data_table,
    document,
    escape,
    facts_table,
    family_blocks,
    section_links,
)
from numa_effects.tables import stages


def _key(r: dict) -> str:
    """``model/opt/placement/threads/batch``, and an axis with a default only where the cell's
    value is not it (``/jemalloc``)."""
    return "/".join(str(r[k]) for k in KEYS if k not in DEFAULTS or str(r.get(k)) != DEFAULTS[k])


def emulated_banner(machine: dict) -> str:
    """machine.json ``emulated: true``: the timings come from an emulated guest (e.g. QEMU TCG)
    and mean nothing as performance; the page says so above everything else."""
    if not machine.get("emulated"):
        return ""
    why = machine.get("emulated_reason")
    return (
        '<p class="emulated" id="emulated">Emulated machine: these timings were measured in an '
        "emulated guest and mean nothing as performance (only the placement, binding and "
        f"pipeline behaviour are real){': ' + escape(why) if why else ''}.</p>"
    )


def machine_section(machine: dict, cells: pd.DataFrame) -> str:
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
    return f'<h2 id="machine">Machine</h2>{facts_table(rows)}'


def _duration(seconds: float) -> str:
    seconds = float(seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


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
                ("wall-clock time of the run", _duration(wall)),
                ("time in cell processes", _duration((end - start).dt.total_seconds().sum())),
            ]
    else:
        rows.append(("run time", "not recorded (imported results)" if sources else "not recorded"))
    if "measure_s" in cells and cells["measure_s"].notna().any():
        rows.append(("timed inference", _duration(cells["measure_s"].sum())))
    return rows


def _by_status(cells: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The cells that failed, that are contended (no replicate had a clean iteration, so no
    value, not a failure), and that have a value whose timing was contended or noisy."""
    status = cells.get("status", pd.Series("ok", index=cells.index))
    no_clean = status.eq("contended")
    failed = cells[~status.isin(["ok", "contended"])]
    return failed, cells[no_clean], cells[flag(cells) & ~no_clean]


def _cell_list(intro: str, rows: pd.DataFrame, text) -> str:
    """``intro`` (a paragraph) and the list of ``rows``' keys, each followed by ``text(row)``."""
    if rows.empty:
        return ""
    items = "".join(
        f"<li><code>{escape(_key(r))}</code>{text(r)}</li>" for r in rows.to_dict("records")
    )
    return f"{intro}<ul>{items}</ul>"


def _why_failed(r: dict) -> str:
    return f": {escape(r.get('failure_cause'))}: {escape(r.get('failure_message'))}"


def _why_contended(r: dict) -> str:
    why = r.get("contended_reason")
    return f": {escape(why)}" if pd.notna(why) else ""


def _how_disturbed(r: dict) -> str:
    return ": " + " and ".join(c for c in DISTURBED if stats.as_bool(r.get(c)) is True)


def run_section(cells: pd.DataFrame, skipped: pd.DataFrame, failures: pd.DataFrame | None) -> str:
    failed, no_clean, disturbed = _by_status(cells)
    parts = [f'<h2 id="run">Run</h2>{facts_table(_run_facts(cells, skipped))}']
    if not skipped.empty and "reason" in skipped:
        items = "".join(
            f"<li>{len(g)} cell{'s' * (len(g) > 1)}: {escape(reason)}</li>"
            for reason, g in skipped.groupby("reason")
        )
        parts.append(f"<p>Skipped (this machine cannot run them):</p><ul>{items}</ul>")
    parts += [
        _cell_list(
            "<p>Failed (shown as <em>failed</em> in every figure, never as 0):</p>",
            failed,
            _why_failed,
        ),
        _cell_list(
            f'<p id="contended">Contended, no clean iteration ({len(no_clean)}: other tasks '
            "used the cell's CPUs during every timed iteration of every attempt; shown as "
            "<em>contended</em> in every figure, never as a number):</p>",
            no_clean,
            _why_contended,
        ),
        _cell_list(
            f'<p id="disturbed">Contended or noisy ({len(disturbed)}; their timing is disturbed, '
            "ringed or cross-hatched in every figure, never drawn like a clean cell):</p>",
            disturbed,
            _how_disturbed,
        ),
    ]
    if failures is not None and not failures.empty:
        parts.append(
            f"<details><summary>failures.csv ({len(failures)} rows)</summary>"
            f"{data_table(failures, list(failures.columns))}</details>"
        )
    return "".join(parts)


def cells_section(cells: pd.DataFrame, skipped: pd.DataFrame, latency_stat: str) -> str:
    rows = cells.copy()
    if not rows.empty:
        # a failure's cause, else why a cell has no efficiency (its peak under-measured)
        note = rows.get("failure_cause", pd.Series(None, index=rows.index, dtype=object))
        rows["note"] = note.where(note.notna(), rows.get("efficiency_note"))
    if not skipped.empty:
        sk = skipped.assign(status="skipped", note=skipped.get("reason"))
        rows = pd.concat([rows, sk], ignore_index=True) if not rows.empty else sk
    if rows.empty:
        return '<h2 id="cells">Cells</h2><p>No cells.</p>'
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
    return (
        f'<h2 id="cells">Cells</h2><p class="small">{len(rows)} rows: every measured, failed and '
        f"skipped cell; latency in ms per batch ({latency_stat}), throughput in images/s. "
        "Full columns in <code>tables/cells.csv</code>.</p>"
        "<details open><summary>table of cells</summary>"
        f"{data_table(rows, columns, 'status')}</details>"
    )


def _nav(answer: bool) -> str:
    first = f'<a href="#{deploy_section.ANCHOR}">{deploy_section.HEADING}</a>' if answer else ""
    return (
        f"<nav>{first}{section_links(families.RUN_PAGE)}"
        '<a href="#machine">Machine</a><a href="#run">Run</a><a href="#cells">Cells</a></nav>'
    )


def _section(key, sec, figs, models, facts, shown: dict, dirs: tuple[str, str]) -> list[str]:
    """One section: its figures per model and family (or why it has none), and its tables."""
    body = [f'<h2 id="{sec.anchor}">{escape(sec.heading)}</h2>']
    in_section = [f for f in figs if f.spec.section == key]
    if not in_section:
        return [*body, f'<p class="why">No figures: {sec.empty(facts)}</p>']
    for model in models:
        mine = [f for f in in_section if f.model == model]
        if not mine:
            continue
        if len(models) > 1:
            body.append(f"<h3>{escape(model)}</h3>")
        body += family_blocks(mine, model, dirs)
    for name in sec.tables:
        table = shown.get(name)
        if table is not None and not table.empty:
            cols = [c for c in table.columns if table[c].notna().any()]
            body.append(
                f"<details><summary>{name} table (tables/{name}.csv)</summary>"
                f"{data_table(table, cols)}</details>"
            )
    return body


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
) -> str:
    """The page; ``recommendation``: ``tables/recommendation.csv`` (None: the run has no
    "What to deploy" section)."""
    figs = [from_dict(d) for d in figure_list]
    models = sorted(
        {f.model for f in figs} | set(cells.get("model", pd.Series(dtype=str)).dropna())
    )
    title = f"NUMA effects: {', '.join(models) or 'no cells'}"
    cpu = (machine.get("summary") or {}).get("cpu_model")
    origin = (
        f"Imported from PackRat ({escape('; '.join(imported))})"
        if imported
        else f"Measured on {escape(cpu or 'this machine')}"
    )
    facts = PageFacts(cells, skipped, placements, bool(imported))
    # tables a section may show (Section.tables)
    shown = {"degradation": degradation, "precision": precision, "memory_matrix": memory_matrix}
    sections = families.page_sections()
    main = next((sec for sec in sections.values() if sec.highlight), None)
    jump = f' <a href="#{main.anchor}">Jump to {escape(main.heading)}</a>.' if main else ""
    body = [
        f"<header><h1>{escape(title)}</h1><p>{origin}. Latency is the {latency_stat} per batch "
        f"(ms); throughput in images per second.{jump}</p></header>",
        _nav(recommendation is not None),
        "<main>",
        emulated_banner(machine),
    ]
    if recommendation is not None:
        body.append(deploy_section.html_section(recommendation))
    for key, sec in sections.items():
        body += _section(key, sec, figs, models, facts, shown, (figure_dir, page_dir))
    body.append('<div class="grid" style="grid-template-columns:1fr 1fr"><div>')
    body.append(machine_section(machine, cells))
    body.append("</div><div>")
    body.append(run_section(cells, skipped, failures))
    body.append("</div></div>")
    body.append(cells_section(cells, skipped, latency_stat))
    body.append("</main>")
    return document(title, body)
