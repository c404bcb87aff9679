"""The report page ``results/report/index.html``: one self-contained HTML file (inline CSS, no
script, no server) that links the figure files beside it (``figures/``), with the reference
report's sections, the machine and the run, and the table of cells.

The sections, their order, navigation, captions and what a section says when it has no figure
come from the registry (``registry.SECTIONS``, ``registry.FAMILIES``): no section is special
here. The sections of the comparison page (``registry.COMPARE_PAGE``) are ``compare_page``'s."""

from __future__ import annotations

import html
import os
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from numa_effects.plan.grid import DEFAULTS, KEYS
from numa_effects.report import deploy_section
from numa_effects.report import registry as figures_mod
from numa_effects.report.data import flag
from numa_effects.report.registry import PageFacts
from numa_effects.tables import stages

HIGHLIGHT = ' class="numa"'  # the section the page is about stands out in the navigation
INT_COLUMNS = {
    "threads",
    "batch_size",
    "n",
    "interop_threads",
    "instance_id",
    "returncode",
    "replicates",
}

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#222;
background:#fafafa;line-height:1.45}
header,main{max-width:1400px;margin:0 auto;padding:0 1.2rem}
header{padding-top:1rem}
h1{margin:.4rem 0}
h2{border-bottom:2px solid #ddd;padding-bottom:.2rem;margin-top:2.2rem}
nav{position:sticky;top:0;background:#fafafa;border-bottom:1px solid #ddd;padding:.5rem 1.2rem;
z-index:1}
nav a{margin-right:1.2rem;text-decoration:none;color:#0b5394;font-weight:600}
nav a.numa{background:#0b5394;color:#fff;padding:.15rem .6rem;border-radius:.3rem}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:1rem}
figure{margin:0;background:#fff;border:1px solid #ddd;border-radius:.3rem;padding:.4rem}
figure img{width:100%;height:auto;display:block}
figcaption{font-size:.85rem;color:#555;margin-top:.2rem}
.why{background:#fff8e1;border-left:4px solid #f0b400;padding:.6rem .9rem}
.emulated{background:#fde2e1;border-left:6px solid #b00020;padding:.6rem .9rem;font-weight:600}
.facts{border-collapse:collapse}
.facts th{text-align:left;padding:.15rem 1rem .15rem 0;color:#555;font-weight:600}
.scroll{overflow-x:auto;max-width:100%}
table.data{border-collapse:collapse;font-size:.82rem;background:#fff}
table.data td{white-space:nowrap}
table.data th,table.data td{border:1px solid #ddd;padding:.15rem .45rem;text-align:right}
table.data th{background:#f0f0f0}
table.data td.t{text-align:left}
table.data tr.rec td{background:#e8f4e8}
tr.failed td{background:#fde2e1}
tr.skipped td,tr.missing td{background:#eee;color:#666}
tr.contended td{background:#fff3e0}
.status-failed{color:#b00020;font-weight:600}
.small{font-size:.85rem;color:#555}
details{margin:.6rem 0}
summary{cursor:pointer;font-weight:600}
"""


def _e(v) -> str:
    return html.escape("" if v is None else str(v))


def _num(v, digits: int = 1) -> str:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return _e(v)
    if np.isnan(f):
        return ""
    return f"{f:,.{digits}f}"


def caption_html(rst: str) -> str:
    """A family's caption (RST with ``code`` and *emphasis* only) as HTML."""
    out = _e(" ".join(rst.split()))
    out = re.sub(r"``(.+?)``", r"<code>\1</code>", out)
    return re.sub(r"(?<![\w*])\*(\S(?:.*?\S)?)\*(?![\w*])", r"<em>\1</em>", out)


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
        f"pipeline behaviour are real){': ' + _e(why) if why else ''}.</p>"
    )


def _facts(rows: Sequence[tuple[str, object]]) -> str:
    body = "".join(
        f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows if v not in (None, "")
    )
    return f'<table class="facts">{body}</table>'


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
    rows = [
        ("CPU", s.get("cpu_model")),
        ("NUMA nodes", s.get("nodes")),
        ("sockets", s.get("packages")),
        ("physical cores", s.get("physical_cores")),
        (
            "cores per node",
            ", ".join(f"node {k}: {v}" for k, v in (s.get("cores_per_node") or {}).items()),
        ),
        ("logical CPUs", s.get("logical_cpus")),
        (
            "SMT",
            None
            if smt is None
            else ("on" if smt else "off") + f" ({s.get('threads_per_core')} per core)",
        ),
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
    return f'<h2 id="machine">Machine</h2>{_facts(rows)}'


def _duration(seconds: float) -> str:
    seconds = float(seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def run_section(cells: pd.DataFrame, skipped: pd.DataFrame, failures: pd.DataFrame | None) -> str:
    status = cells["status"] if "status" in cells else pd.Series(dtype=object)
    # contended: no replicate had a clean iteration, so the cell has no value (not a failure)
    no_clean = status.eq("contended")
    ok, failed = int((status == "ok").sum()), int((~status.isin(["ok", "contended"])).sum())
    rows = [("cells measured", ok), ("cells failed", failed)]
    if no_clean.any():
        rows.append(("cells contended, no clean iteration", int(no_clean.sum())))
    rows.append(("cells skipped", len(skipped)))
    disturbed = cells[flag(cells) & ~no_clean.reindex(cells.index, fill_value=False)]
    n_disturbed = len(disturbed)
    if n_disturbed:
        rows.append(("cells contended or noisy", n_disturbed))
    sources = sorted(cells["source"].dropna().astype(str).unique()) if "source" in cells else []
    if sources:
        rows.append(("source", ", ".join(sources)))
    if {"started_at", "finished_at"} <= set(cells.columns) and cells["started_at"].notna().any():
        start = pd.to_datetime(cells["started_at"], utc=True, errors="coerce", format="ISO8601")
        end = pd.to_datetime(cells["finished_at"], utc=True, errors="coerce", format="ISO8601")
        if start.notna().any() and end.notna().any():
            rows.append(("first cell started", start.min().isoformat(timespec="seconds")))
            rows.append(("last cell finished", end.max().isoformat(timespec="seconds")))
            rows.append(
                ("wall-clock time of the run", _duration((end.max() - start.min()).total_seconds()))
            )
            rows.append(
                ("time in cell processes", _duration((end - start).dt.total_seconds().sum()))
            )
    else:
        rows.append(("run time", "not recorded (imported results)" if sources else "not recorded"))
    if "measure_s" in cells and cells["measure_s"].notna().any():
        rows.append(("timed inference", _duration(cells["measure_s"].sum())))
    if replicates := stages.replicates_text(cells):
        rows.append(("replicates per cell (two-stage)", replicates))
    parts = [f'<h2 id="run">Run</h2>{_facts(rows)}']
    if not skipped.empty and "reason" in skipped:
        items = "".join(
            f"<li>{len(g)} cell{'s' * (len(g) > 1)}: {_e(reason)}</li>"
            for reason, g in skipped.groupby("reason")
        )
        parts.append(f"<p>Skipped (this machine cannot run them):</p><ul>{items}</ul>")
    bad = cells[~status.isin(["ok", "contended"])] if failed else cells.iloc[0:0]
    if not bad.empty:
        items = "".join(
            f"<li><code>{_e(_key(r))}</code>: "
            f"{_e(r.get('failure_cause'))}: {_e(r.get('failure_message'))}</li>"
            for r in bad.to_dict("records")
        )
        parts.append(
            f"<p>Failed (shown as <em>failed</em> in every figure, never as 0):</p><ul>{items}</ul>"
        )
    if no_clean.any():
        items = "".join(
            f"<li><code>{_e(_key(r))}</code>"
            + (f": {_e(r.get('contended_reason'))}" if _given(r.get("contended_reason")) else "")
            + "</li>"
            for r in cells[no_clean].to_dict("records")
        )
        parts.append(
            f'<p id="contended">Contended, no clean iteration ({int(no_clean.sum())}: other tasks '
            "used the cell's CPUs during every timed iteration of every attempt; shown as "
            "<em>contended</em> in every figure, never as a number):</p>"
            f"<ul>{items}</ul>"
        )
    if not disturbed.empty:
        items = "".join(
            f"<li><code>{_e(_key(r))}</code>: "
            + " and ".join(
                c for c in ("contended", "noisy") if flag(pd.DataFrame([r]), [c]).iloc[0]
            )
            + "</li>"
            for r in disturbed.to_dict("records")
        )
        parts.append(
            f'<p id="disturbed">Contended or noisy ({len(disturbed)}; their timing is disturbed, '
            "ringed or cross-hatched in every figure, never drawn like a clean cell):</p>"
            f"<ul>{items}</ul>"
        )
    if failures is not None and not failures.empty:
        parts.append(
            f"<details><summary>failures.csv ({len(failures)} rows)</summary>"
            f"{_table(failures, list(failures.columns))}</details>"
        )
    return "".join(parts)


def _given(v) -> bool:
    return v is not None and v is not pd.NA and not (isinstance(v, float) and np.isnan(v))


def _table(df: pd.DataFrame, columns: list[str], row_class: str | None = None) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = []
    for r in df.to_dict("records"):
        cls = f' class="{_e(r.get(row_class))}"' if row_class else ""
        tds = []
        for c in columns:
            v = r.get(c)
            if isinstance(v, float) and c in INT_COLUMNS and v.is_integer():
                tds.append(f"<td>{int(v)}</td>")
            elif isinstance(v, float):
                tds.append(f"<td>{_num(v, 2 if abs(v) < 100 else 1)}</td>")
            elif isinstance(v, bool | np.bool_ | int | np.integer):
                tds.append(f"<td>{_e(v)}</td>")
            else:
                tds.append(f'<td class="t">{_e("" if v is None or v is pd.NA else v)}</td>')
        body.append(f"<tr{cls}>{''.join(tds)}</tr>")
    return (
        f'<div class="scroll"><table class="data"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


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
    lat = f"latency_{latency_stat}_ms"
    wanted = [
        *KEYS,
        "status",
        "dtype",
        "native",
        lat,
        "latency_min_ms",
        "latency_max_ms",
        "cv",
        "n",
        "replicates",
        "ci_halfwidth_pct",
        # two_stage: how many replicates the cell was given and why it stopped there
        "replicates_reason",
        "throughput_ips",
        "gflop_per_s",
        "hw_gflop_per_s",
        "efficiency",
        "source",
        "note",
    ]
    columns = [
        c for c in dict.fromkeys(wanted) if c in rows and (rows[c].notna().any() or c in KEYS)
    ]
    rows = rows.astype({"threads": int, "batch_size": int})
    return (
        f'<h2 id="cells">Cells</h2><p class="small">{len(rows)} rows: every measured, failed and '
        f"skipped cell; latency in ms per batch ({latency_stat}), throughput in images/s. "
        "Full columns in <code>tables/cells.csv</code>.</p>"
        "<details open><summary>table of cells</summary>"
        f"{_table(rows, columns, 'status')}</details>"
    )


def _figure_html(fig: figures_mod.Figure, figure_dir: str, page_dir: str) -> str:
    png = os.path.relpath(fig.path(figure_dir), page_dir)
    svg = os.path.relpath(fig.path(figure_dir, "svg"), page_dir)
    what = ", ".join(
        f"{k.replace('batch_size', 'BS')}={v}" for k, v in fig.wildcards.items() if k != "model"
    )
    alt = f"{fig.spec.title}: {fig.model}{', ' + what if what else ''}"
    return (
        f'<figure><a href="{_e(png)}"><img src="{_e(png)}" alt="{_e(alt)}"></a>'
        f'<figcaption>{_e(what or fig.model)} · <a href="{_e(png)}">PNG</a> · '
        f'<a href="{_e(svg)}">SVG</a></figcaption></figure>'
    )


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
    figs = [figures_mod.from_dict(d) for d in figure_list]
    models = sorted(
        {f.model for f in figs} | set(cells.get("model", pd.Series(dtype=str)).dropna())
    )
    title = f"NUMA effects: {', '.join(models) or 'no cells'}"
    cpu = (machine.get("summary") or {}).get("cpu_model")
    origin = (
        f"Imported from PackRat ({_e('; '.join(imported))})"
        if imported
        else f"Measured on {_e(cpu or 'this machine')}"
    )
    facts = PageFacts(cells, skipped, placements, bool(imported))
    # tables a section may show (Section.tables)
    shown = {"degradation": degradation, "precision": precision, "memory_matrix": memory_matrix}
    answer = recommendation is not None
    first = f'<a href="#{deploy_section.ANCHOR}">{deploy_section.HEADING}</a>' if answer else ""
    nav = (
        "<nav>"
        + first
        + "".join(
            f'<a{HIGHLIGHT if sec.highlight else ""} href="#{sec.anchor}">{_e(sec.heading)}</a>'
            for sec in figures_mod.page_sections().values()
        )
        + '<a href="#machine">Machine</a><a href="#run">Run</a><a href="#cells">Cells</a></nav>'
    )
    main = next((sec for sec in figures_mod.page_sections().values() if sec.highlight), None)
    jump = f' <a href="#{main.anchor}">Jump to {_e(main.heading)}</a>.' if main else ""
    body = [
        f"<header><h1>{_e(title)}</h1><p>{origin}. Latency is the {latency_stat} per batch "
        f"(ms); throughput in images per second.{jump}</p></header>",
        nav,
        "<main>",
        emulated_banner(machine),
    ]
    if answer:
        body.append(deploy_section.html_section(recommendation))
    for key, sec in figures_mod.page_sections().items():
        body.append(f'<h2 id="{sec.anchor}">{_e(sec.heading)}</h2>')
        in_section = [f for f in figs if f.spec.section == key]
        if not in_section:
            body.append(f'<p class="why">No figures: {sec.empty(facts)}</p>')
            continue
        for model in models:
            mine = [f for f in in_section if f.model == model]
            if not mine:
                continue
            if len(models) > 1:
                body.append(f"<h3>{_e(model)}</h3>")
            for fam in figures_mod.FAMILIES:
                group = [f for f in mine if f.family == fam.name]
                if not group:
                    continue
                body.append(
                    f'<h3 id="{_e(model)}-{fam.name}">{_e(fam.title)}</h3>'
                    f'<p class="small">{caption_html(fam.caption)}</p><div class="grid">'
                    + "".join(_figure_html(f, figure_dir, page_dir) for f in group)
                    + "</div>"
                )
        for name in sec.tables:
            table = shown.get(name)
            if table is not None and not table.empty:
                cols = [c for c in table.columns if table[c].notna().any()]
                body.append(
                    f"<details><summary>{name} table (tables/{name}.csv)</summary>"
                    f"{_table(table, cols)}</details>"
                )
    body.append('<div class="grid" style="grid-template-columns:1fr 1fr"><div>')
    body.append(machine_section(machine, cells))
    body.append("</div><div>")
    body.append(run_section(cells, skipped, failures))
    body.append("</div></div>")
    body.append(cells_section(cells, skipped, latency_stat))
    body.append("</main>")
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>"
        + "\n".join(b for b in body if b)
        + "</body></html>\n"
    )
