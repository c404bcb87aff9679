"""The comparison page ``<results>/compare/<name>/index.html`` (docs/comparing.md): one
self-contained HTML file in the run report's style, what differs between the runs first."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from numa_effects import stats
from numa_effects.compare import statistics as compare_stats
from numa_effects.compare import tables as compare_tables
from numa_effects.plan.grid import KEYS
from numa_effects.report import families
from numa_effects.report.empty import PageFacts
from numa_effects.report.figures import from_dict
from numa_effects.report.markup import (
    data_table,
    document,
    escape,
    family_blocks,
    section_links,
)

EXTRA_CSS = """
.machines{background:#fde2e1;border-left:6px solid #b00020;padding:.6rem .9rem;font-weight:600}
.unknown{background:#fff8e1;border-left:4px solid #f0b400;padding:.6rem .9rem}
.verdict-slower{color:#d55e00;font-weight:600}
.verdict-faster{color:#0173b2;font-weight:600}
td.differs{background:#fff3e0}
"""
# compare.csv's columns the page shows after run, the keys and each axis compared across
CELL_COLUMNS = [
    "latency_statistic",
    "latency_baseline_ms",
    "latency_compared_ms",
    "latency_change_pct",
    "latency_change_ci_low_pct",
    "latency_change_ci_high_pct",
    "significant",
    "verdict",
    "ci_method",
    "replicates_baseline",
    "replicates_compared",
    "contended",
    "noisy",
    "status",
    "ci_note",
]
# summary.csv's columns the page shows
HIDDEN = ("run", "baseline_run", "latency_statistic", "geomean_ratio", "ci_df", "min_effect_pct")
SUMMARY_SHOWN = [c for c in compare_tables.SUMMARY_COLUMNS if c not in HIDDEN]


def _pct(v) -> str:
    return f"{float(v):+.1f} %" if stats.present(v) else "–"


def _ratio_pct(ratio: float) -> str:
    return _pct((ratio - 1.0) * 100.0)


def _details(summary: str, table: pd.DataFrame, cols, tag: str = "details") -> str:
    return f"<{tag}><summary>{summary}</summary>{data_table(table, cols)}</details>"


def machines_banner(machines: dict) -> str:
    """Across machines, or machines not recorded: said above everything else."""
    if machines.get("same") is False:
        return (
            '<p class="machines" id="across-machines">Across machines: these runs differ in '
            f"{escape(', '.join(machines['differ']))} (Differences below). Every change below "
            "includes the machine, not only the setting under test.</p>"
        )
    if machines.get("same") is None:
        return (
            '<p class="unknown" id="machine-unknown">The machine of at least one run is not '
            "recorded (an import without <code>import.machine</code>): whether these runs come "
            "from one machine cannot be checked.</p>"
        )
    return ""


def _wide(provenance: pd.DataFrame, labels: Sequence[str]) -> pd.DataFrame:
    if provenance.empty:
        return pd.DataFrame(columns=["category", "fact", *labels, "differs"])
    p, keys = provenance.astype({"run": str}), ["category", "fact"]
    wide = p.pivot_table(index=keys, columns="run", values="value", aggfunc="first", sort=False)
    differs = p.groupby(keys, sort=False)["differs"].first()
    wide = wide.reset_index().merge(differs.reset_index(), on=keys, how="left")
    return wide.reindex(columns=["category", "fact", *labels, "differs"])


def _facts_table(wide: pd.DataFrame, labels: Sequence[str]) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in ["category", "fact", *labels])
    rows = []
    for r in wide.to_dict("records"):
        cls = ' class="t differs"' if r.get("differs") is True else ' class="t"'
        tds = f'<td class="t">{escape(r["category"])}</td><td class="t">{escape(r["fact"])}</td>'
        tds += "".join(f"<td{cls}>{escape(r.get(label))}</td>" for label in labels)
        rows.append(f"<tr>{tds}</tr>")
    return (
        f'<div class="scroll"><table class="data"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def differences_section(provenance: pd.DataFrame, labels: Sequence[str]) -> str:
    wide = _wide(provenance, labels)
    diff = wide[wide["differs"].map(stats.as_bool).eq(True)]
    parts = ['<h2 id="differences">What differs between the runs</h2>']
    if diff.empty:
        parts.append(
            "<p>No recorded fact of machine, versions, kernel, configuration or load differs "
            "(the full list is under Provenance).</p>"
        )
    else:
        parts.append(
            f"<p>{len(diff)} recorded facts differ (machine, versions, kernel, configuration, "
            "load); every other one is the same (Provenance, below).</p>"
            + _facts_table(diff, labels)
        )
    when = wide[wide["category"] == "when"]
    if not when.empty:
        parts.append(
            '<p class="small">When each run was measured:</p>' + _facts_table(when, labels)
        )
    return "".join(parts)


def _sentence(row: dict, baseline: str) -> str:
    run = escape(row["run"])
    n = int(row["cells"])
    if n == 0:
        return f"<p><b>{run}</b> vs <b>{escape(baseline)}</b>: no matched cell with a value.</p>"
    gm = _pct(row["geomean_change_pct"])
    ci = " (no CI: fewer than 2 cells)"
    if pd.notna(row["geomean_ci_low_pct"]):
        ci = f" (95 % CI {_pct(row['geomean_ci_low_pct'])} … {_pct(row['geomean_ci_high_pct'])})"
    counts = (
        f"{int(row['cells_significant'])} with a significant change; "
        f'<span class="verdict-faster">{int(row["faster"])} faster</span>, '
        f'<span class="verdict-slower">{int(row["slower"])} slower</span>, '
        f"{int(row['no_significant_change'])} no significant change"
    )
    if int(row["not_assessed"]):
        counts += (
            f", {int(row['not_assessed'])} not assessed (of which "
            f"{int(row['beyond_min_effect_faster'])} changed by at least "
            f"−{row['min_effect_pct']:g} % and {int(row['beyond_min_effect_slower'])} by at least "
            f"+{row['min_effect_pct']:g} %, untested)"
        )
    return (
        f"<p><b>{run}</b> vs <b>{escape(baseline)}</b> over {n} matched cells: geometric mean "
        f"latency change <b>{gm}</b>{ci}; {counts} (minimum effect ±{row['min_effect_pct']:g} "
        "%).</p>"
    )


COVERS = (
    '<p class="small"><b>What the intervals cover.</b> A cell\'s CI (and <code>significant</code>)'
    " is the two-level interval of the cells' own tables over both runs: the iterations inside "
    "each process and the process-to-process variation each run measured with its replicates "
    "(Welch–Satterthwaite on the logs of the replicate medians, each run's variance pooled over "
    "the cell's batch-size series where replicates are few). It does not cover what all "
    "processes of one run share (the machine's state that day): that is part of the change "
    "shown. A cell is <em>faster</em> or <em>slower</em> only when significant and changed by "
    "at least the minimum effect. The geometric mean's CI is a t interval over the matched "
    "cells' log ratios: it treats them as a sample of cells, so it holds their measurement noise "
    "and the differences between their changes, but not a shift shared by every cell of one "
    "run.</p>"
)
NOT_ASSESSED = (
    '<p class="why" id="not-assessed"><b>Not assessed: {n} cells</b> ({note}). One process '
    "per cell cannot tell a real change from the process-to-process variation (1 – 3.5 % of "
    "the median between processes on a quiet machine, docs/performance.md), so these cells get "
    "no CI and no verdict; their changes are point estimates. The geometric mean's CI still "
    "holds: each cell is its own process in each run, so the spread of the cells' changes "
    "includes the process level.</p>"
)


def summary_section(summary: pd.DataFrame, compare: pd.DataFrame, baseline: str) -> str:
    parts = ['<h2 id="summary">Summary</h2>']
    if summary.empty:
        return parts[0] + "<p>No matched cells.</p>"
    for run, s in summary.groupby("run", sort=False):
        parts.append(_sentence(s.to_dict("records")[0], baseline))
        cols = [c for c in SUMMARY_SHOWN if c in s]
        parts.append(_details(f"summary.csv for {escape(run)} ({len(s)} scopes)", s, cols))
    parts.append(COVERS)
    na = compare[compare["verdict"] == compare_stats.NOT_ASSESSED]
    if not na.empty:
        notes = na["ci_note"].dropna().astype(str)
        note = notes.mode().iloc[0] if not notes.empty else "no CI"
        parts.append(NOT_ASSESSED.format(n=len(na), note=escape(note)))
    return "".join(parts)


PEAKS_WHY = (
    '<p class="small">The peaks are the same kernels of torch timed in one process per run, '
    "thread count and data type (<code>tables/peak.csv</code> of each run, "
    "<code>tables/peaks.csv</code> here): unless torch or the machine differ (above), "
    "they do not depend on the pipeline's code. They are a weak witness of the machine's "
    "speed: a few seconds of one kernel in one process (re-runs on a 2-vCPU VM within an hour "
    "moved them by up to 10 % while their cells moved by up to 5 %, docs/comparing.md). "
    "Peaks and every cell moving the same way by several % point to the machine; peaks moving "
    "alone say little. A re-run of the baseline close in time tells for sure.</p>"
)


def peaks_section(peaks: pd.DataFrame | None, summary: pd.DataFrame) -> str:
    """Per compared run: how the peak kernels both runs measured changed, beside the cells'."""
    if peaks is None or peaks.empty:
        return ""
    parts = ['<h3 id="peaks">The machine\'s peak kernels</h3>']
    for run, p in peaks.groupby("run", sort=False):
        # the kernels' time, compared / baseline (+ = slower, like latency)
        ratio = p["peak_baseline_gflop_per_s"] / p["peak_compared_gflop_per_s"]
        low, high = _ratio_pct(ratio.min()), _ratio_pct(ratio.max())
        gm = compare_stats.geomean_ratio(ratio.tolist())["geomean"]
        cells = summary[(summary["run"] == run) & (summary["scope"] == compare_tables.ALL)]
        shift = cells["geomean_change_pct"].head(1).dropna()  # the one ALL row, if it has a value
        beside = f"; the cells' latency: {_pct(shift.iloc[0])}" if len(shift) else ""
        parts.append(
            f"<p><b>{escape(run)}</b> vs the baseline: the time of the {len(p)} peak kernels "
            f"measured in both runs changed by {low} … {high} "
            f"(geometric mean <b>{_ratio_pct(gm)}</b>; + = slower, like latency){beside}.</p>"
        )
        cols = [c for c in p.columns if c != "baseline_run"]
        parts.append(_details(f"peaks.csv for {escape(run)} ({len(p)} rows)", p, cols))
    parts.append(PEAKS_WHY)
    return "".join(parts)


CANARY_WHY = (
    '<p class="small">The canary is a fixed matrix product timed after every iteration on the '
    "cell's own CPUs (config key <code>canary</code>): it saw the host's speed each process got. "
    "At the baseline's reference speed, both cells' replicates are moved to the baseline's "
    "speed, each along its own run's slope (<code>speed_ratio</code> in "
    "<code>tables/compare.csv</code>). Right for a change that leaves the canary alone (the model, "
    "the harness, a setting on the same machine and torch); across machines or torch versions the "
    "canary's own change is part of the change under test (docs/comparing.md).</p>"
)


def canary_section(compare: pd.DataFrame) -> str:
    """Per compared run: the canary's change, and the cells' geometric mean change plain and at
    the baseline's reference speed (empty without a ratio at the reference speed)."""
    if "speed_ratio" not in compare or not compare["speed_ratio"].notna().any():
        return ""
    parts = ['<h3 id="canary">The host\'s speed, as the canary saw it</h3>']
    for run, c in compare.groupby("run", sort=False):
        c = c[c["speed_ratio"].notna()]
        if c.empty:
            continue
        canary = compare_stats.geomean_ratio((1.0 + c["canary_change_pct"] / 100.0).tolist())
        plain = compare_stats.geomean_ratio(c["ratio"].tolist())
        at = compare_stats.geomean_ratio(c["speed_ratio"].tolist())

        def pct(g):
            ci = f"{_ratio_pct(g['ci_low'])} … {_ratio_pct(g['ci_high'])}"
            return f"<b>{_ratio_pct(g['geomean'])}</b> (95 % CI {ci})"

        parts.append(
            f"<p><b>{escape(run)}</b> vs the baseline, over the {len(c)} cells both timed with the "
            f"canary: the canary {_ratio_pct(canary['geomean'])} (+ = slower); the cells' "
            f"latency {pct(plain)}, at the baseline's reference speed {pct(at)}.</p>"
        )
    parts.append(CANARY_WHY)
    return "".join(parts)


def unmatched_section(unmatched: pd.DataFrame) -> str:
    head = '<h2 id="unmatched">Cells in one run only</h2>'
    if unmatched.empty:
        return head + "<p>None: every cell of each run has its match.</p>"
    counts = "; ".join(
        f"{n} only in {escape(k)}" for k, n in unmatched["only_in"].value_counts(sort=False).items()
    )
    cols = [c for c in compare_tables.UNMATCHED_COLUMNS if c != "baseline_run"]
    return (
        f"{head}<p>{len(unmatched)} cells have no match ({counts}): they are listed here, not "
        "compared (<code>tables/unmatched.csv</code>).</p>"
        + _details("unmatched cells", unmatched, cols, "details open")
    )


def figures_sections(figs, page_dir: str, figure_dir: str, facts: PageFacts) -> str:
    body = []
    for key, sec in families.page_sections(families.COMPARE_PAGE).items():
        body.append(f'<h2 id="{sec.anchor}">{escape(sec.heading)}</h2>')
        mine = [f for f in figs if f.spec.section == key]
        if not mine:
            body.append(f'<p class="why">No figures: {sec.empty(facts)}</p>')
            continue
        for run in sorted({f.run for f in mine}):
            run_figs = [f for f in mine if f.run == run]
            body += family_blocks(run_figs, run, (figure_dir, page_dir), f": {escape(run)}")
    return "".join(body)


def _header(settings: dict, compare: pd.DataFrame) -> str:
    """The title, what is matched and how the change reads, and the runs (the baseline first)."""
    labels = list(settings["labels"])
    runs = "".join(
        f"<li><b>{escape(label)}</b>: <code>{escape(folder)}</code>"
        + (" (baseline)" if i == 0 else "")
        + "</li>"
        for i, (label, folder) in enumerate(zip(labels, settings["runs"], strict=True))
    )
    across = settings.get("across") or []
    stat = stats.compared_statistics(compare, "median")
    matched = "every axis" if not across else f"every axis but {', '.join(across)}"
    return (
        f"<header><h1>{escape(_title(settings))}</h1><p>Each run's cells against the baseline's, "
        f"matched on {escape(matched)} ({', '.join(KEYS)}). Latency is the {escape(stat)} per "
        "batch; change = (run − baseline) / baseline × 100 (+ = slower). Minimum effect of a "
        f"verdict: ±{settings['min_effect_pct']:g} %.</p><ul>{runs}</ul></header>"
    )


def _title(settings: dict) -> str:
    return f"Comparison: {settings['name']}"


def _nav() -> str:
    return (
        '<nav><a href="#differences">Differences</a><a href="#summary">Summary</a>'
        + section_links(families.COMPARE_PAGE)
        + '<a href="#unmatched">One run only</a><a href="#cells">Cells</a>'
        '<a href="#provenance">Provenance</a></nav>'
    )


def cells_section(compare: pd.DataFrame, across) -> str:
    """The matched cells, their keys (and each axis compared across) first."""
    cols = ["run", *KEYS, *(f"{a}_compared" for a in across), *CELL_COLUMNS]
    cols = [c for c in cols if c in compare]
    return (
        f'<h2 id="cells">Matched cells</h2><p class="small">{len(compare)} rows '
        "(<code>tables/compare.csv</code> has every column).</p>"
        + _details("table of matched cells", compare, cols)
    )


def render(
    settings: dict,
    figure_list: Sequence[dict],
    compare: pd.DataFrame,
    summary: pd.DataFrame,
    provenance: pd.DataFrame,
    unmatched: pd.DataFrame,
    machines: dict,
    *,
    page_dir: str,
    figure_dir: str,
    peaks: pd.DataFrame | None = None,
) -> str:
    """The page; ``settings``: ``compare.settings``, ``peaks``: ``compare.tables.peak_table``."""
    labels = list(settings["labels"])
    figs = [from_dict(d) for d in figure_list]
    facts = PageFacts(compare, pd.DataFrame(), [], False)
    body = [
        _header(settings, compare),
        _nav(),
        "<main>",
        machines_banner(machines),
        differences_section(provenance, labels),
        summary_section(summary, compare, settings["baseline"]),
        peaks_section(peaks, summary),
        canary_section(compare),
        figures_sections(figs, page_dir, figure_dir, facts),
        unmatched_section(unmatched),
        cells_section(compare, settings.get("across") or []),
        '<h2 id="provenance">Provenance</h2><p class="small">Every recorded fact of each run '
        "(<code>tables/provenance.csv</code>); highlighted: differs.</p>"
        f"<details><summary>all facts</summary>{_facts_table(_wide(provenance, labels), labels)}"
        "</details>",
        "</main>",
    ]
    return document(_title(settings), body, EXTRA_CSS)
