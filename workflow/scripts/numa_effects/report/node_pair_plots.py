"""The Node-pair matrix figures (docs/placements.md): the heatmap of CPU node x memory node
(latency and % change against the local diagonal), the machine's memory matrix, and the scatter
of each pair's change against its memory ratios (does the memory matrix predict the cost?)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from numa_effects.report import drawing, style
from numa_effects.report.data import Tables, node_pair_rows
from numa_effects.report.drawers import drawer
from numa_effects.report.metrics import LATENCY, Metric

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
# a pair with no row in the tables: not measured by this run (not selected by ``node_pairs``,
# or not planned); a failed or skipped pair has a row and says so
NOT_RUN = "not run"
# the scatter's x axes: (memory_matrix.csv column, label, how it is read)
RATIOS = (
    ("distance_ratio", "firmware distance / local distance", "distance"),
    ("latency_ratio", "memory latency / local latency (measured)", "latency"),
    ("inverse_bandwidth_ratio", "local bandwidth / pair bandwidth (measured)", "bandwidth"),
)


def _matrix(d: pd.DataFrame, column: str, rows: list, cols: list) -> pd.DataFrame:
    return d.pivot(index="cpu_node", columns="mem_node", values=column).reindex(
        index=rows, columns=cols
    )


def _panel(ax, val, status, **kw) -> None:
    drawing.heatmap_panel(ax, val, status, extend="neither", **kw)
    rows, cols = list(val.index), list(val.columns)
    ax.set_xlabel("Memory node")
    ax.set_ylabel("CPU node")
    ax.set_xticklabels([str(c) for c in cols])
    ax.set_yticklabels([str(r) for r in rows], rotation=0)


def _limits(values: np.ndarray) -> dict:
    """A value panel's colour scale: the range of the finite ``values`` (never empty)."""
    finite = values[np.isfinite(values)]
    lo, hi = (finite.min(), finite.max()) if finite.size else (0.0, 1.0)
    return {"vmin": lo, "vmax": hi if hi > lo else lo + 1}


def _suptitle(fig, text: str) -> None:
    fig.suptitle(text, fontsize=13, fontweight="bold")


@drawer("node_pair_heatmap")
def heatmap(tables: Tables, model: str, opt: str, batch_size: int, metric: Metric = LATENCY):
    d = node_pair_rows(tables, model, opt, metric)
    d = d[d["batch_size"] == batch_size]
    threads = sorted(d["threads"].unique())
    rows = sorted(d["cpu_node"].unique())
    cols = sorted(set(d["mem_node"]) | set(rows))
    n = max(1, len(threads))
    side = 1.2 + 0.75 * len(cols)
    fig, axes = plt.subplots(n, 2, figsize=(2 * side + 4.5, n * (0.9 + 0.7 * len(rows)) + 1.2))
    axes = np.atleast_2d(axes)
    limits = _limits(d[metric.key].to_numpy(float))
    pcts = d["pct"].where(d["pct_status"].eq("ok")).to_numpy(float)
    vmax, _ = style.color_limit(pcts)
    for (ax_v, ax_p), t in zip(axes, threads, strict=False):
        dt = d[d["threads"] == t]
        vstatus = _matrix(dt, f"{metric.key}_status", rows, cols).fillna(NOT_RUN)
        _panel(
            ax_v,
            _matrix(dt, metric.key, rows, cols),
            vstatus,
            cmap="mako_r",
            **limits,
            label=metric.axis_label(tables.latency_stat),
            text=style.fmt,
        )
        ax_v.set_title(f"{drawing.threads_label(t)}: {metric.name}", fontsize=10)
        pstatus = _matrix(dt, "pct_status", rows, cols).fillna(NOT_RUN)
        pstatus = pstatus.mask(pstatus.eq("baseline"), "ok")
        sig = _matrix(dt, "sig", rows, cols)
        _panel(
            ax_p,
            _matrix(dt, "pct", rows, cols),
            pstatus,
            cmap="RdBu_r",
            vmin=-vmax,
            vmax=vmax,
            label=f"% change vs diagonal (+ = {metric.worse})",
            text=style.pct1,
            hatched=sig.map(lambda s: s is False).astype(bool),
            disturbed=_matrix(dt, "disturbed", rows, cols).eq(True),
        )
        ax_p.set_title(f"{drawing.threads_label(t)}: % change vs its row's diagonal", fontsize=10)
    _suptitle(fig, f"Node-pair matrix, {model}, opt={opt}, batch size {batch_size}")
    status = d[f"{metric.key}_status"]
    notes = drawing.sig_notes(d[d["pct_status"].eq("ok")], "Hatched cells")
    notes += drawing.disturbed_note(d["disturbed"] & status.eq("ok"), "the cell or its diagonal")
    notes += drawing.grey_note(status[status.ne("ok")])
    drawing.footnote(axes[-1][0], notes)
    fig.tight_layout()
    return fig


def _memory_rows(tables: Tables) -> pd.DataFrame:
    m = tables.memory_matrix
    if m is None:
        raise ValueError("the node-pair figures need tables/memory_matrix.csv")
    return m.astype({"cpu_node": int, "mem_node": int})


@drawer("node_pair_memory")
def memory(tables: Tables, model: str, metric: Metric = LATENCY):
    m = _memory_rows(tables)
    rows = sorted(m["cpu_node"].unique())
    cols = sorted(set(m["mem_node"]) | set(rows))
    ok = _matrix(m, "status", rows, cols).fillna(NOT_RUN)
    known = _matrix(m, "distance", rows, cols).notna().map(lambda k: "ok" if k else "missing")
    panels = (
        ("distance", "firmware distance (10 = local)", "rocket_r", known, "{:.0f}"),
        ("latency_ns", "idle latency (ns per load)", "rocket_r", ok, "{:.0f}"),
        ("bandwidth_gb_per_s", "read bandwidth (GB/s, one core)", "mako", ok, "{:.1f}"),
    )
    side = 1.4 + 0.8 * len(cols)
    fig, axes = plt.subplots(1, 3, figsize=(3 * side + 5, 1.6 + 0.75 * len(rows)))
    for ax, (column, label, cmap, status, form) in zip(axes, panels, strict=True):
        val = _matrix(m, column, rows, cols).astype(float)
        status = status.mask(val.isna() & status.eq("ok"), "missing")
        _panel(ax, val, status, cmap=cmap, label=label, text=form.format, **_limits(val.to_numpy()))
        ax.set_title(label, fontsize=10)
    _suptitle(fig, "This machine's memory matrix")
    failed = m[~m["status"].eq("ok")]
    notes = [f"n{r.cpu_node}m{r.mem_node}: {r.status} ({r.reason})" for r in failed.itertuples()]
    drawing.footnote(axes[0], notes[:6])
    fig.tight_layout()
    return fig


def ratios(tables: Tables) -> pd.DataFrame:
    """``memory_matrix.csv`` with the scatter's x values: ``distance_ratio`` (distance over the
    CPU node's local distance), ``latency_ratio`` and ``inverse_bandwidth_ratio`` (the local
    bandwidth over the pair's: > 1 = the pair is slower, like the other two)."""
    m = _memory_rows(tables).copy()
    local = m[m["cpu_node"] == m["mem_node"]].set_index("cpu_node")["distance"]
    m["distance_ratio"] = m["distance"].astype(float) / m["cpu_node"].map(local).astype(float)
    m["inverse_bandwidth_ratio"] = 1.0 / m["bandwidth_ratio"].astype(float)
    m["latency_ratio"] = m["latency_ratio"].astype(float)
    return m


def fit(x: np.ndarray, y: np.ndarray) -> tuple[float | None, float | None]:
    """Pearson's r and the least-squares slope of y on x; (None, None) with fewer than three
    distinct x values (a line through two points says nothing)."""
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(np.unique(x)) < 3:
        return None, None
    slope = float(np.polyfit(x, y, 1)[0])
    r = float(np.corrcoef(x, y)[0, 1]) if np.std(y) > 0 else None
    return r, slope


@drawer("node_pair_scatter")
def scatter(tables: Tables, model: str, opt: str, metric: Metric = LATENCY):
    d = node_pair_rows(tables, model, opt, metric)
    d = d[(d["cpu_node"] != d["mem_node"]) & d["pct_status"].eq("ok")]
    d = d.merge(
        ratios(tables)[["cpu_node", "mem_node", *(c for c, _, _ in RATIOS)]],
        on=["cpu_node", "mem_node"],
        how="left",
    )
    threads = sorted(d["threads"].unique()) or [1]
    bss = sorted(d["batch_size"].unique())
    fig, axes = plt.subplots(1, len(RATIOS), figsize=(5.2 * len(RATIOS), 4.6), sharey=True)
    for ax, (column, label, what) in zip(axes, RATIOS, strict=True):
        for (t, bs), g in d.groupby(["threads", "batch_size"]):
            x, y = g[column].to_numpy(float), g["pct"].to_numpy(float)
            color = style.thread_color(t, threads)
            marker = MARKERS[bss.index(bs) % len(MARKERS)]
            sig = g["sig"].map(lambda s: s is not False).to_numpy(bool)
            err = drawing.ci_error_bars(g, y, ("pct_lo", "pct_hi"))
            ax.errorbar(x, y, yerr=err, fmt="none", ecolor=color, alpha=0.6)
            ax.scatter(x[sig], y[sig], color=color, marker=marker, s=42, zorder=3)
            ax.scatter(
                x[~sig], y[~sig], facecolors="none", edgecolors=color, marker=marker, s=42, zorder=3
            )
        r, slope = fit(d[column].to_numpy(float), d["pct"].to_numpy(float))
        ax.axhline(0, color="0.6", lw=0.8)
        ax.set_xlabel(label)
        summary = (
            f"r = {r:.2f}, slope {slope:+.1f} %/unit"
            if r is not None
            else "fewer than 3 distinct x: no r"
            if slope is None
            else f"slope {slope:+.1f} %/unit"
        )
        ax.set_title(f"vs {what}: {summary}", fontsize=10)
    axes[0].set_ylabel(f"% {metric.name} change vs diagonal (+ = {metric.worse})")
    handles = _scatter_handles(threads, bss)
    if handles:
        axes[-1].legend(handles=handles, fontsize=8, loc="best")
    _suptitle(fig, f"Inference cost against the memory matrix, {model}, opt={opt}")
    drawing.footnote(axes[0], ["Hollow markers: not significant (the CI includes 0)."])
    fig.tight_layout()
    return fig


def _scatter_handles(threads: list, bss: list) -> list:
    """The scatter's legend: a colour per thread count, a marker per batch size."""

    def mark(color, marker, label):
        return plt.Line2D([], [], color=color, marker=marker, ls="", label=label)

    by_threads = [
        mark(style.thread_color(t, threads), "o", drawing.threads_label(t)) for t in threads
    ]
    by_batch = [mark("0.3", MARKERS[i % len(MARKERS)], f"batch {bs}") for i, bs in enumerate(bss)]
    return by_threads + by_batch
