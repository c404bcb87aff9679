"""Draw the report's figures (matplotlib + seaborn, Agg backend): one function per kind of
figure, registered for its families with ``@drawer`` (``numa_effects.report.registry``) and
called by ``draw``.

The data come shaped from ``numa_effects.report.data`` and the look from
``numa_effects.report.style``: a failed, skipped, contended (no clean iteration) or missing cell
is marked below the x axis, never drawn as 0 (lines break there instead of bridging); a
contended or noisy cell with a value is ringed or cross-hatched and has a legend entry. Every
draw function has the signature ``f(tables, *, metric, **wildcards)``, ``metric`` the family's
``registry.Metric``.
"""

from __future__ import annotations

import os
import textwrap

import matplotlib

from numa_effects.report import style

style.apply()

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.transforms import ScaledTranslation  # noqa: E402

from numa_effects import stats  # noqa: E402
from numa_effects.plan import allocators as allocators_mod  # noqa: E402
from numa_effects.plan import placement as placement_mod  # noqa: E402
from numa_effects.report import packing_plots, registry  # noqa: E402, F401 (packing drawers)
from numa_effects.report.data import (  # noqa: E402
    Tables,
    comparison,
    deg_stat,
    pair_status,
    sequential,
)
from numa_effects.report.registry import (  # noqa: E402
    THROUGHPUT,
    Metric,
    base_variant,
    drawer,
    dtype_of,
)
from numa_effects.report.style import (  # noqa: E402
    DPI,
    HOLLOW_STATUSES,
    LOG_Y_RATIO,
    NOT_SIGNIFICANT,
    STATUS_MARKERS,
    STATUS_STEP_PT,
    STATUS_TEXT,
    batch_color,
    color_limit,
    opt_color,
    opt_label,
    opt_order,
    pct1,
    placement_color,
    placement_order,
    thread_color,
)

# -- drawing helpers ------------------------------------------------------------------------


def _titles(ax, title: str, subtitle: str) -> None:
    ax.set_title(title, fontsize=14, fontweight="bold", pad=22)
    ax.annotate(
        subtitle,
        xy=(0.5, 1.0),
        xycoords="axes fraction",
        xytext=(0, 6),
        textcoords="offset points",
        ha="center",
        va="bottom",
        fontsize=9,
        color="0.35",
    )


def _footnote(ax, notes: list[str]) -> None:
    """Notes under the x axis label (inside the saved area: figures are saved tight)."""
    if notes:
        ax.annotate(
            "\n".join(notes),
            xy=(0.0, 0.0),
            xycoords=("axes fraction", ax.xaxis.label),
            xytext=(0, -8),
            textcoords="offset points",
            ha="left",
            va="top",
            fontsize=8,
            color="0.3",
        )


def _not_value_note(df: pd.DataFrame, status_col: str) -> list[str]:
    same = df[status_col].eq(style.SAME_BINDING)
    notes = [SAME_NOTE] if same.any() else []
    bad = df[~df[status_col].isin(["ok", style.SAME_BINDING])]
    if bad.empty:
        return notes
    counts = bad[status_col].value_counts().sort_index().items()
    parts = [f"{n} {STATUS_TEXT.get(s, s)}" for s, n in counts]
    reasons = sorted({str(r) for r in bad.get("reason", pd.Series()).dropna()})
    why = f" ({'; '.join(reasons)[:110]})" if reasons else ""
    what = "No value" if "contended" in set(bad[status_col]) else "Not measured"
    return [*notes, f"{what}: {', '.join(parts)}{why}; marked along the x axis, never drawn as 0."]


SAME_NOTE = (
    "'=': the placement binds like its baseline there (the same CPUs and memory nodes), so "
    "the two are one measurement: no difference, none drawn."
)


def _lines(
    ax,
    df: pd.DataFrame,
    hue: str,
    order: list,
    color_of,
    label_of,
    value: str,
    *,
    x: str = "threads",
    annotate: bool = False,
    fmt=None,
    sig: str | None = None,
    style_of=None,
) -> set[str]:
    """One line per ``hue`` value over ``x`` of the column ``value`` (its CI ``<value>_lo``,
    ``<value>_hi`` and status ``<value>_status``); returns the marks drawn (statuses of cells
    with no value, ``style.DISTURBED`` when a contended or noisy point is ringed).
    ``style_of``: a hue value's line style (None: matplotlib's solid line)."""
    drawn: set[str] = set()
    no_value: dict = {}  # x -> [(status, colour)] in line order
    xs = sorted(df[x].unique())
    for i, h in enumerate(order):
        d = df[df[hue] == h].set_index(x).reindex(xs)
        color = color_of(h)
        y = d[value].to_numpy(dtype=float)
        extra = {"linestyle": style_of(h)} if style_of is not None else {}
        ax.plot(
            xs, y, marker="o", markersize=5, linewidth=1.8, color=color, label=label_of(h), **extra
        )
        if sig is not None and sig in d:
            hollow = d[sig].map(lambda s: s is False).to_numpy(dtype=bool) & ~np.isnan(y)
            if hollow.any():
                ax.plot(
                    np.asarray(xs)[hollow],
                    y[hollow],
                    linestyle="none",
                    marker="o",
                    markersize=7,
                    markerfacecolor="white",
                    markeredgecolor=color,
                    markeredgewidth=1.5,
                )
        if "disturbed" in d:
            ring = d["disturbed"].eq(True).to_numpy(dtype=bool) & ~np.isnan(y)
            if ring.any():
                ax.plot(np.asarray(xs)[ring], y[ring], **style.DISTURBED_MARK)
                drawn.add(style.DISTURBED)
        lo, hi = f"{value}_lo", f"{value}_hi"
        if lo in d and hi in d and d[lo].notna().any():
            err = np.vstack([y - d[lo].to_numpy(float), d[hi].to_numpy(float) - y])
            ax.errorbar(xs, y, yerr=np.abs(err), fmt="none", ecolor=color, capsize=3, lw=1)
        if annotate:
            for j, (xv, yv) in enumerate(zip(xs, y, strict=True)):
                if not np.isnan(yv):
                    ax.annotate(
                        (fmt or style.fmt)(yv),
                        (xv, yv),
                        textcoords="offset points",
                        xytext=(0, 7 if i % 2 == 0 else -13),
                        ha="center",
                        fontsize=7,
                        color=color,
                        alpha=0.9 if j % 2 == 0 else 0.75,
                    )
        st = d[f"{value}_status"].fillna("missing")
        for xv, s in zip(xs, st, strict=True):
            if s != "ok":
                drawn.add(s)
                no_value.setdefault(xv, []).append((s, color))
    _no_value_marks(ax, no_value)
    return drawn


def _no_value_marks(ax, marks: dict) -> None:
    """Cells with no value, marked along the x axis: in a strip just below it (never among the
    data, whatever the y scale), at the cell's x, one marker per line with no value there
    (stacked downwards in line order); the x tick labels move down to make room."""
    if not marks:
        return
    for xv, at_x in marks.items():
        for rank, (s, color) in enumerate(at_x):
            below = ScaledTranslation(
                0, -STATUS_STEP_PT * (rank + 0.75) / 72, ax.figure.dpi_scale_trans
            )
            ax.scatter(
                [xv],
                [0.0],
                transform=ax.get_xaxis_transform() + below,
                marker=STATUS_MARKERS[s],
                s=45,
                facecolors="none" if s in HOLLOW_STATUSES else [color],
                edgecolors=[color],
                linewidths=1.5,
                clip_on=False,
                zorder=5,
            )
    depth = max(len(v) for v in marks.values())
    ax.tick_params(axis="x", pad=plt.rcParams["xtick.major.pad"] + STATUS_STEP_PT * depth + 1)


def _y_scale(ax, values: pd.Series, *, zero: bool = True) -> str:
    v = values.dropna()
    v = v[v > 0]
    if len(v) and v.max() / v.min() > LOG_Y_RATIO:
        ax.set_yscale("log")
        return " (log scale)"
    if zero:
        ax.set_ylim(bottom=0)
        ax.margins(y=0.12)
    return ""


def _threads_axis(ax, threads: list[int]) -> None:
    ax.set_xlabel("Intra-op threads")
    if len(threads) <= 24:
        ax.set_xticks(threads)
    else:
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))


def _finish(fig, ax, statuses: set[str], notes: list[str], *, extra: list | None = None) -> None:
    handles, _ = ax.get_legend_handles_labels()
    handles = handles + (extra or []) + style.status_legend(statuses)
    if handles:
        ncol = 2 if len(handles) > 12 else 1
        ax.legend(
            handles=handles,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            ncol=ncol,
            fontsize=8,
            frameon=False,
        )
    _footnote(ax, notes)


def _new(width: float = 8.0, height: float = 4.8):
    return plt.subplots(figsize=(width, height))


def _threads_label(t) -> str:
    return f"{int(t)} thread" + ("s" if int(t) > 1 else "")


def _sub(model: str, *parts: str) -> str:
    return " · ".join([model, *parts])


# -- families -------------------------------------------------------------------------------


def _threads_metric_axes(ax, tables: Tables, d, metric: Metric) -> str:
    """x = threads, y = the metric's label, unit and scale; returns "Latency" or "Throughput"."""
    _threads_axis(ax, sorted(d["threads"].unique()))
    scale = _y_scale(ax, d[metric.key])
    ax.set_ylabel(metric.axis_label(tables.latency_stat) + scale)
    return metric.title


def _non_native(tables: Tables, model: str) -> dict:
    """{(opt, allocator): precision note} of the cells of ``model`` whose dtype this CPU does
    not compute natively (cells.csv ``native`` false): the report marks them."""
    c = tables.cells
    if c.empty or "native" not in c:
        return {}
    bad = c[(c["model"] == model) & c["native"].map(stats.as_bool).eq(False)]
    notes = bad["precision_note"] if "precision_note" in bad else pd.Series(None, index=bad.index)
    return {
        (o, a): (n if isinstance(n, str) else "")
        for o, a, n in zip(bad["opt"], bad["allocator"], notes, strict=True)
    }


def _variants(d: pd.DataFrame, non_native: dict):
    """The (opt, allocator) lines of ``d``: hue values, colour, line style and label functions
    (colour by optimization, dash by allocator; with one allocator exactly the optimization's
    line), and the notes of the non-native ones."""
    d = d.assign(variant=list(zip(d["opt"], d["allocator"], strict=True)))
    # allocators told apart when they vary, or when the one shown is not glibc as it comes
    several = d["allocator"].nunique() > 1 or d["allocator"].ne(allocators_mod.GLIBC).any()
    order = sorted(
        d["variant"].unique(), key=lambda v: (opt_order(v[0]), allocators_mod.order(v[1]))
    )

    def label(v):
        text = opt_label(v[0]) + (f" · {style.allocator_label(v[1])}" if several else "")
        return text + (f" · {style.NON_NATIVE}" if v in non_native else "")

    def dash(v):
        return style.allocator_linestyle(v[1])

    notes = sorted(
        {f"{style.NON_NATIVE} {v[0]}: {non_native[v]}" for v in order if v in non_native}
    )
    return d, order, (lambda v: opt_color(v[0])), label, (dash if several else None), notes


@drawer("latency_per_batch", "throughput_per_batch")
def per_batch(tables: Tables, model: str, batch_size: int, metric: Metric):
    """x = threads, one line per optimization (and allocator), sequential placement."""
    u = sequential(tables.universe(model, every_allocator=True))
    d = u[u["batch_size"] == batch_size]
    d, order, color, label, dash, notes = _variants(d, _non_native(tables, model))
    fig, ax = _new()
    drawn = _lines(ax, d, "variant", order, color, label, metric.key, annotate=True, style_of=dash)
    name = _threads_metric_axes(ax, tables, d, metric)
    _titles(
        ax,
        f"Threads vs {name} (BS={batch_size})",
        _sub(
            model,
            "placement sequential",
            "one line per optimization" + (" and allocator" if dash else ""),
        ),
    )
    _finish(fig, ax, drawn, _not_value_note(d, f"{metric.key}_status") + notes)
    return fig


@drawer("latency_per_opt", "throughput_per_opt")
def per_opt(tables: Tables, model: str, opt: str, metric: Metric):
    """x = threads, one line per batch size."""
    u = sequential(tables.universe(model))
    d = u[u["opt"] == opt]
    bss = sorted(d["batch_size"].unique())
    fig, ax = _new()
    drawn = _lines(
        ax, d, "batch_size", bss, lambda b: batch_color(b, bss), lambda b: f"BS={b}", metric.key
    )
    name = _threads_metric_axes(ax, tables, d, metric)
    _titles(
        ax,
        f"Threads vs {name} (opt={opt})",
        _sub(model, opt_label(opt), "placement sequential", "one line per batch size"),
    )
    _finish(fig, ax, drawn, _not_value_note(d, f"{metric.key}_status"))
    return fig


@drawer("speedup")
def speedup(tables: Tables, model: str, opt: str, metric: Metric = THROUGHPUT):
    """Throughput relative to the fewest threads, one line per batch size + mean."""
    u = sequential(tables.universe(model))
    d = u[u["opt"] == opt].copy()
    t0 = int(d["threads"].min())
    base = d[d["threads"] == t0].set_index("batch_size")[metric.key]
    d["speedup"] = d[metric.key] / d["batch_size"].map(base)
    base_disturbed = d[d["threads"] == t0].set_index("batch_size")["disturbed"]
    d["disturbed"] = d["disturbed"] | d["batch_size"].map(base_disturbed).eq(True)
    status = d[f"{metric.key}_status"]
    d["speedup_status"] = np.where(
        status.ne("ok"), status, np.where(d["speedup"].isna(), "missing", "ok")
    )
    bss = sorted(d["batch_size"].unique())
    fig, ax = _new()
    drawn = _lines(
        ax, d, "batch_size", bss, lambda b: batch_color(b, bss), lambda b: f"BS={b}", "speedup"
    )
    threads = sorted(d["threads"].unique())
    mean = d.groupby("threads")["speedup"].mean()
    ax.plot(
        mean.index,
        mean.to_numpy(),
        color="black",
        linewidth=3,
        linestyle="--",
        label="mean over batch sizes",
    )
    ax.plot(
        threads,
        [t / t0 for t in threads],
        color="0.55",
        linewidth=1,
        linestyle=":",
        label="ideal (linear)",
    )
    _threads_axis(ax, threads)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(f"Speedup ({metric.name} / {metric.name} at {_threads_label(t0)})")
    _titles(
        ax,
        f"Speedup over {_threads_label(t0).title()} (opt={opt})",
        _sub(model, opt_label(opt), "placement sequential", "one line per batch size"),
    )
    notes = _not_value_note(d, "speedup_status")
    no_base = sorted(set(bss) - set(base.dropna().index))
    if no_base:
        notes.append(
            f"No {t0}-thread baseline for BS={', '.join(map(str, no_base))}: "
            "no speedup drawn for those batch sizes."
        )
    _finish(fig, ax, drawn, notes)
    return fig


@drawer("throughput_per_batch_size")
def throughput_per_batch_size(tables: Tables, model: str, opt: str, metric: Metric = THROUGHPUT):
    """x = batch size (log2), y = images/s, one line per thread count."""
    u = sequential(tables.universe(model))
    d = u[u["opt"] == opt]
    threads = sorted(d["threads"].unique())
    fig, ax = _new(10.0, 5.6)
    drawn = _lines(
        ax,
        d,
        "threads",
        threads,
        lambda t: thread_color(t, threads),
        lambda t: _threads_label(t),
        metric.key,
        x="batch_size",
    )
    bss = sorted(d["batch_size"].unique())
    ax.set_xscale("log", base=2)
    ax.set_xticks(bss, [str(b) for b in bss])
    ax.minorticks_off()
    ax.set_xlabel("Batch size (images, log2 scale)")
    ax.set_ylabel(metric.axis_label(tables.latency_stat) + _y_scale(ax, d[metric.key]))
    _titles(
        ax,
        f"Batch Size vs {metric.title} (opt={opt})",
        _sub(model, opt_label(opt), "placement sequential", "one line per thread count"),
    )
    _finish(fig, ax, drawn, _not_value_note(d, f"{metric.key}_status"))
    return fig


def _sig_notes(d: pd.DataFrame, how: str) -> list[str]:
    ok = d[d["pct_status"] == "ok"]
    if ok.empty:
        return []
    known = ok["sig"].map(lambda s: s is not None)
    if not known.any():
        return ["No per-iteration samples: no confidence intervals, significance not assessed."]
    return [f"{how}: {NOT_SIGNIFICANT}."]


def _by_cell(d: pd.DataFrame, column: str, bss: list, threads: list) -> pd.DataFrame:
    """``column`` of the comparison rows as a batch size x threads grid (the heatmap's)."""
    return d.pivot(index="batch_size", columns="threads", values=column).reindex(
        index=bss, columns=threads
    )


def _baselines(placements) -> str:
    """The baseline(s) the placements are compared with, for a label: ``sequential``."""
    bases = sorted({placement_mod.baseline_of(p) for p in placements} - {None})
    return " / ".join(bases) if len(bases) <= 2 else "their baselines"


def annotate_cells(
    ax,
    val: pd.DataFrame,
    status: pd.DataFrame,
    *,
    cmap,
    norm,
    text=pct1,
    hatched: pd.DataFrame | None = None,
    disturbed: pd.DataFrame | None = None,
    fontsize: int = 9,
) -> None:
    """Over a seaborn heatmap of ``val`` (same index and columns as ``status``): each cell's
    value printed in a colour readable on its fill (``text(value)``); a cell whose status is not
    ``ok`` grey and labelled with why (``STATUS_TEXT``); ``hatched`` cells hatched (not
    significant), ``disturbed`` ones cross-hatched in red."""
    for i, row in enumerate(val.index):
        for j, col in enumerate(val.columns):
            s = status.loc[row, col]
            if s != "ok":
                ax.add_patch(Rectangle((j, i), 1, 1, facecolor="0.88", edgecolor="white", lw=0.6))
                ax.text(
                    j + 0.5,
                    i + 0.5,
                    textwrap.fill(STATUS_TEXT.get(s, s), 12),
                    ha="center",
                    va="center",
                    fontsize=fontsize - 1,
                    color="0.3",
                    style="italic",
                )
                continue
            v = float(val.loc[row, col])
            r, g, b, _ = cmap(norm(v))
            dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
            ax.text(
                j + 0.5,
                i + 0.5,
                text(v),
                ha="center",
                va="center",
                fontsize=fontsize,
                color="white" if dark else "black",
            )
            marks = (
                (hatched, style.NOT_SIGNIFICANT_HATCH, (0, 0, 0, 0.35), 0),
                (disturbed, style.DISTURBED_HATCH, style.DISTURBED_COLOR, 1.5),
            )
            for mask, hatch, edge, lw in marks:
                if mask is not None and bool(mask.loc[row, col]):
                    ax.add_patch(
                        Rectangle((j, i), 1, 1, fill=False, hatch=hatch, edgecolor=edge, lw=lw)
                    )


def heatmap_grid(d: pd.DataFrame, colorbar: str, hatched=lambda sig: sig is False):
    """A % heatmap of the rows ``d`` (``comparison`` or ``data.run_change``: ``pct``,
    ``pct_status``, ``sig``, ``disturbed``): x = threads, y = batch size (largest on top),
    diverging colours centred on 0, printed values, ``hatched(sig)`` cells hatched, disturbed
    ones cross-hatched in red, cells with no value grey and labelled. Returns (figure, axes,
    half-range of the colour scale, the colour bar's ``extend``)."""
    threads = sorted(d["threads"].unique())
    bss = sorted(d["batch_size"].unique(), reverse=True)  # largest on top, like a y axis
    val = _by_cell(d, "pct", bss, threads)
    status = _by_cell(d, "pct_status", bss, threads)
    sig = _by_cell(d, "sig", bss, threads)
    disturbed = _by_cell(d, "disturbed", bss, threads).eq(True)
    vmax, extend = color_limit(val.to_numpy(float))
    width = min(18.0, 4.0 + 0.62 * len(threads))
    height = min(14.0, 2.6 + 0.45 * len(bss))
    fig, ax = plt.subplots(figsize=(max(width, 8.5), max(height, 4.5)))
    import seaborn as sns

    cmap = sns.color_palette("RdBu_r", as_cmap=True)
    sns.heatmap(
        val,
        ax=ax,
        cmap=cmap,
        center=0.0,
        vmin=-vmax,
        vmax=vmax,
        mask=val.isna(),
        linewidths=0.6,
        linecolor="white",
        cbar_kws={
            "label": colorbar,
            "shrink": 0.9,
            "extend": extend,
        },
    )
    fontsize = 9 if len(threads) <= 12 else 8 if len(threads) <= 20 else 6
    annotate_cells(
        ax,
        val,
        status,
        cmap=cmap,
        norm=matplotlib.colors.Normalize(-vmax, vmax),
        text=pct1,
        hatched=sig.map(hatched).astype(bool),
        disturbed=disturbed,
        fontsize=fontsize,
    )
    ax.set_xlabel("Intra-op threads")
    ax.set_ylabel("Batch size (images)")
    ax.tick_params(axis="y", rotation=0)
    return fig, ax, vmax, extend


def disturbed_note(disturbed: pd.Series, where: str) -> list[str]:
    """A heatmap's note on its cross-hatched cells (``disturbed``: one bool per drawn cell)."""
    n = int(disturbed.sum())
    if not n:
        return []
    return [
        f"Cross-hatched, red-framed cells ({n}): {style.DISTURBED_TEXT} in {where}; read their "
        "values with care."
    ]


def grey_note(statuses: pd.Series, why: str = "") -> list[str]:
    """A heatmap's note on its grey cells: how many of each status (``statuses``: one per cell
    with no value), then ``why``."""
    if statuses.empty:
        return []
    counts = ", ".join(f"{n} {s}" for s, n in statuses.value_counts().items())
    return [f"Grey cells have no value ({counts}){why}."]


def clipped_note(vmax: float, extend: str) -> list[str]:
    if extend != "both":
        return []
    return [
        f"Colour scale clipped at ±{vmax:.1f} % (95th percentile): cells beyond it have the "
        "end colour; their printed values are exact."
    ]


@drawer("latency_degradation_heatmap", "throughput_degradation_heatmap")
def heatmap(tables: Tables, model: str, opt: str, placement: str, metric: Metric):
    """% degradation of ``placement`` vs its baseline, x = threads, y = batch size."""
    d = comparison(tables, model, opt, metric)
    d = d[d["placement"] == placement]
    baseline = placement_mod.baseline_of(placement)
    fig, ax, vmax, extend = heatmap_grid(d, f"% {metric.name} degradation (+ = {metric.worse})")
    _titles(
        ax,
        f"% {metric.title} Degradation, {placement} (opt={opt})",
        _sub(model, metric.degradation(placement, baseline, deg_stat(d, tables))),
    )
    notes = _sig_notes(d, "Hatched cells") + clipped_note(vmax, extend)
    notes += disturbed_note(d["disturbed"] & d["pct_status"].eq("ok"), "either cell of the pair")
    same = d["pct_status"].eq(style.SAME_BINDING)
    notes += [SAME_NOTE.replace("'='", "Same binding")] if same.any() else []
    bad = d[d["pct_status"].ne("ok") & ~same]["pct_status"]
    what = "has no value" if "contended" in set(bad) else "is not measured"
    notes += grey_note(bad, f": either cell of the pair {what}")
    _footnote(ax, notes)
    return fig


@drawer("numa_latency_per_batch", "numa_throughput_per_batch")
def numa_per_batch(tables: Tables, model: str, opt: str, batch_size: int, metric: Metric):
    """x = threads, one line per placement (the baselines included)."""
    u = tables.universe(model)
    d = u[(u["opt"] == opt) & (u["batch_size"] == batch_size)]
    places = sorted(d["placement"].unique(), key=placement_order)
    fig, ax = _new()
    drawn = _lines(ax, d, "placement", places, placement_color, str, metric.key, annotate=True)
    name = _threads_metric_axes(ax, tables, d, metric)
    _titles(
        ax,
        f"Threads vs {name} by Placement (BS={batch_size}, opt={opt})",
        _sub(model, opt_label(opt), "one line per placement"),
    )
    _finish(fig, ax, drawn, _not_value_note(d, f"{metric.key}_status"))
    return fig


@drawer("numa_latency_loss", "numa_throughput_loss")
def numa_loss(tables: Tables, model: str, opt: str, batch_size: int, metric: Metric):
    """x = threads, y = % degradation vs each placement's baseline, one line per placement."""
    d = comparison(tables, model, opt, metric)
    d = d[d["batch_size"] == batch_size]
    places = sorted(d["placement"].unique(), key=placement_order)
    fig, ax = _new()
    drawn = _lines(
        ax,
        d,
        "placement",
        places,
        placement_color,
        lambda p: f"{p} vs {placement_mod.baseline_of(p)}",
        "pct",
        annotate=True,
        fmt=pct1,
        sig="sig",
    )
    ax.axhline(0.0, color="black", linewidth=1)
    ax.margins(y=0.15)
    _threads_axis(ax, sorted(d["threads"].unique()))
    ax.set_ylabel(
        f"% {metric.name} degradation vs {_baselines(places)}\n(+ = {metric.worse}, − = better)"
    )
    _titles(
        ax,
        f"Threads vs % {metric.title} Loss (BS={batch_size}, opt={opt})",
        _sub(
            model,
            opt_label(opt),
            metric.of(deg_stat(d, tables)),
            "error bars: CI where samples exist",
        ),
    )
    extra = []
    if d["sig"].map(lambda s: s is False).any():
        extra.append(
            Line2D(
                [],
                [],
                marker="o",
                linestyle="none",
                markerfacecolor="white",
                markeredgecolor="0.3",
                label="not significant",
            )
        )
    _finish(
        fig,
        ax,
        drawn,
        _sig_notes(d, "Hollow markers") + _not_value_note(d, "pct_status"),
        extra=extra,
    )
    return fig


# -- precision and runtime ------------------------------------------------------------------


@drawer("precision_speedup")
def precision_speedup(tables: Tables, model: str, batch_size: int, metric: Metric):
    """x = threads, y = speedup over float32 eager on the run's baseline allocator
    (``base_variant``), one line per other (opt, allocator), sequential placement; from
    precision.csv, statuses from the cells."""
    if tables.precision is None:
        raise ValueError("this figure needs the precision table")
    u = sequential(tables.universe(model, every_allocator=True))
    u = u[u["batch_size"] == batch_size]
    st = f"{metric.key}_status"
    base_opt, base_alloc = base_variant(u["allocator"])
    is_base = (u["opt"] == base_opt) & (u["allocator"] == base_alloc)
    base = u[is_base][["placement", "threads", st, "disturbed"]]
    d = u[~is_base].merge(base, on=["placement", "threads"], how="left", suffixes=("", "_b"))
    d["disturbed"] = d["disturbed"] | d["disturbed_b"].eq(True)
    d["pair"] = pair_status(d[st], d[f"{st}_b"].fillna("missing"))
    p = tables.precision
    p = p[(p["model"] == model) & (p["batch_size"] == batch_size)]
    keep = ["placement", "threads", "opt", "allocator", "speedup", "speedup_ci_low"]
    keep += ["speedup_ci_high", "significant"]
    p = p[[c for c in keep if c in p]].rename(
        columns={
            "speedup_ci_low": "speedup_lo",
            "speedup_ci_high": "speedup_hi",
            "significant": "sig",
        }
    )
    d = d.merge(
        p.astype({"threads": int}), on=["placement", "threads", "opt", "allocator"], how="left"
    )
    for c in ("speedup", "speedup_lo", "speedup_hi"):
        if c not in d:
            d[c] = np.nan
    if "sig" not in d:
        d["sig"] = None
    d.loc[d["pair"] != "ok", ["speedup", "speedup_lo", "speedup_hi"]] = np.nan
    d["speedup_status"] = np.where(
        d["pair"].ne("ok"), d["pair"], np.where(d["speedup"].isna(), "missing", "ok")
    )
    d, order, color, label, dash, notes = _variants(d, _non_native(tables, model))
    fig, ax = _new()
    drawn = _lines(
        ax,
        d,
        "variant",
        order,
        color,
        label,
        "speedup",
        annotate=True,
        sig="sig",
        style_of=dash,
    )
    ax.axhline(1.0, color="black", linewidth=1)
    _threads_axis(ax, sorted(d["threads"].unique()))
    scale = _y_scale(ax, d["speedup"])
    base_label = style.allocator_label(base_alloc)
    ax.set_ylabel(
        f"Speedup over float32 eager, {base_label} ({tables.latency_stat} latency){scale}"
    )
    _titles(
        ax,
        f"Speedup over float32 Eager (BS={batch_size})",
        _sub(model, "placement sequential", "error bars: 95 % CI of the ratio"),
    )
    extra = []
    if d["sig"].map(lambda s: s is False).any():
        extra.append(
            Line2D(
                [],
                [],
                marker="o",
                linestyle="none",
                markerfacecolor="white",
                markeredgecolor="0.3",
                label="not significant",
            )
        )
    _finish(
        fig,
        ax,
        drawn,
        _sig_notes(d.assign(pct_status=d["speedup_status"]), "Hollow markers")
        + _not_value_note(d, "speedup_status")
        + notes,
        extra=extra,
    )
    return fig


@drawer("precision_numa_loss")
def precision_numa_loss(tables: Tables, model: str, placement: str, batch_size: int, metric):
    """x = threads, y = % degradation of ``placement`` vs its baseline, one line per
    optimization (its dtype in the legend)."""
    u = tables.universe(model)
    opts = sorted(u["opt"].unique(), key=opt_order)
    parts = [comparison(tables, model, o, metric) for o in opts]
    d = pd.concat(parts, ignore_index=True)
    d = d[(d["placement"] == placement) & (d["batch_size"] == batch_size)]
    non_native = _non_native(tables, model)
    marked = {o for o, a in non_native if a == tables.allocator}

    def label(o):
        return f"{opt_label(o)} [{dtype_of(o)}]" + (f" · {style.NON_NATIVE}" if o in marked else "")

    fig, ax = _new()
    drawn = _lines(ax, d, "opt", opts, opt_color, label, "pct", annotate=True, fmt=pct1, sig="sig")
    ax.axhline(0.0, color="black", linewidth=1)
    ax.margins(y=0.15)
    _threads_axis(ax, sorted(d["threads"].unique()))
    baseline = placement_mod.baseline_of(placement)
    ax.set_ylabel(f"% {metric.name} degradation vs {baseline}\n(+ = {metric.worse}, − = better)")
    _titles(
        ax,
        f"% {metric.title} Loss per dtype, {placement} (BS={batch_size})",
        _sub(model, metric.of(deg_stat(d, tables)), "one line per optimization"),
    )
    _finish(fig, ax, drawn, _sig_notes(d, "Hollow markers") + _not_value_note(d, "pct_status"))
    return fig


# -- entry ----------------------------------------------------------------------------------

# the comparison's and the node-pair matrix's drawers
from numa_effects.report import compare_plots, node_pair_plots  # noqa: E402, F401


def draw(family: str, tables: Tables, wildcards: dict):
    """The matplotlib figure of ``family`` for ``wildcards`` (model, opt, placement, batch_size):
    the family's registered draw function (``registry.DRAWERS``) with its metric."""
    if family not in registry.BY_NAME:
        raise ValueError(f"unknown figure family {family!r}")
    fam = registry.BY_NAME[family]
    fn = registry.DRAWERS.get(family)
    if fn is None:
        raise ValueError(f"figure family {family!r} has no draw function (registry.drawer)")
    w = {k: wildcards[k] for k in fam.wildcards}
    if "batch_size" in w:
        w["batch_size"] = int(w["batch_size"])
    return fn(tables, metric=fam.metric, **w)


def save(fig, png: str, svg: str | None = None) -> None:
    """PNG (and SVG) without timestamps, so re-drawing the same data gives the same files.
    Cropped to the figure's tight box plus 0.15 in, found once for both files
    (``bbox_inches="tight"`` draws the figure an extra time per file to find it: a quarter of
    the report's drawing time)."""
    fig.set_dpi(DPI)
    bbox = fig.get_tightbbox(fig.canvas.get_renderer()).padded(0.15)
    for path, kw in (
        (png, {"dpi": DPI, "metadata": {"Software": None}}),
        (svg, {"metadata": {"Date": None}}),
    ):
        if path is None:
            continue
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        tmp = f"{path}.tmp{os.path.splitext(path)[1]}"
        fig.savefig(tmp, bbox_inches=bbox, **kw)
        os.replace(tmp, path)
    plt.close(fig)
