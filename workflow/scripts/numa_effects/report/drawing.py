"""The drawing helpers the figure modules share (matplotlib + seaborn, Agg backend). A cell with
no value is marked below the x axis or as a grey heatmap cell, never drawn as 0; a disturbed or
not significant one is ringed, hollow or hatched (``report.style``)."""

from __future__ import annotations

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
from numa_effects.report.data import Tables  # noqa: E402
from numa_effects.report.metrics import Metric  # noqa: E402


def titles(ax, title: str, subtitle: str) -> None:
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


def footnote(ax, notes: list[str]) -> None:
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


def not_value_note(df: pd.DataFrame, status_col: str) -> list[str]:
    same = df[status_col].eq(style.SAME_BINDING)
    notes = [SAME_NOTE] if same.any() else []
    bad = df[~df[status_col].isin(["ok", style.SAME_BINDING])]
    if bad.empty:
        return notes
    counts = bad[status_col].value_counts().sort_index().items()
    parts = [f"{n} {style.STATUS_TEXT.get(s, s)}" for s, n in counts]
    reasons = sorted({str(r) for r in bad.get("reason", pd.Series()).dropna()})
    why = f" ({'; '.join(reasons)[:110]})" if reasons else ""
    what = "No value" if "contended" in set(bad[status_col]) else "Not measured"
    return [*notes, f"{what}: {', '.join(parts)}{why}; marked along the x axis, never drawn as 0."]


SAME_NOTE = (
    "'=': the placement binds like its baseline there (the same CPUs and memory nodes), so "
    "the two are one measurement: no difference, none drawn."
)


def draw_lines(
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
    ``<value>_hi`` and status ``<value>_status``); returns the marks drawn (for the legend).
    ``style_of``: a hue value's line style (None: solid)."""
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
        drawn |= _point_marks(ax, d, xs, y, color, sig)
        lo, hi = f"{value}_lo", f"{value}_hi"
        if lo in d and hi in d and d[lo].notna().any():
            err = np.vstack([y - d[lo].to_numpy(float), d[hi].to_numpy(float) - y])
            ax.errorbar(xs, y, yerr=np.abs(err), fmt="none", ecolor=color, capsize=3, lw=1)
        if annotate:
            _annotate_values(ax, xs, y, color, fmt or style.fmt, below=i % 2 == 1)
        st = d[f"{value}_status"].fillna("missing")
        for xv, s in zip(xs, st, strict=True):
            if s != "ok":
                drawn.add(s)
                no_value.setdefault(xv, []).append((s, color))
    _no_value_marks(ax, no_value)
    return drawn


def _point_marks(ax, d: pd.DataFrame, xs: list, y: np.ndarray, color, sig: str | None) -> set:
    """One line's hollow (not significant) and ringed (disturbed) points; the marks drawn."""
    x = np.asarray(xs)
    if sig is not None and sig in d:
        hollow = d[sig].map(lambda s: s is False).to_numpy(dtype=bool) & ~np.isnan(y)
        if hollow.any():
            ax.plot(
                x[hollow], y[hollow], ls="none", marker="o", ms=7, mfc="white", mec=color, mew=1.5
            )
    if "disturbed" in d:
        ring = d["disturbed"].eq(True).to_numpy(dtype=bool) & ~np.isnan(y)
        if ring.any():
            ax.plot(x[ring], y[ring], **style.DISTURBED_MARK)
            return {style.DISTURBED}
    return set()


def _annotate_values(ax, xs: list, y: np.ndarray, color, fmt, below: bool) -> None:
    """Each point's value printed above it (``below``: under it)."""
    for j, (xv, yv) in enumerate(zip(xs, y, strict=True)):
        if not np.isnan(yv):
            ax.annotate(
                fmt(yv),
                (xv, yv),
                textcoords="offset points",
                xytext=(0, -13 if below else 7),
                ha="center",
                fontsize=7,
                color=color,
                alpha=0.9 if j % 2 == 0 else 0.75,
            )


def _no_value_marks(ax, marks: dict) -> None:
    """Cells with no value, in a strip just below the x axis (never among the data, whatever the
    y scale): one marker per line with no value there, stacked downwards; the x tick labels
    move down to make room."""
    if not marks:
        return
    for xv, at_x in marks.items():
        for rank, (s, color) in enumerate(at_x):
            below = ScaledTranslation(
                0, -style.STATUS_STEP_PT * (rank + 0.75) / 72, ax.figure.dpi_scale_trans
            )
            ax.scatter(
                [xv],
                [0.0],
                transform=ax.get_xaxis_transform() + below,
                marker=style.STATUS_MARKERS[s],
                s=45,
                facecolors="none" if s in style.HOLLOW_STATUSES else [color],
                edgecolors=[color],
                linewidths=1.5,
                clip_on=False,
                zorder=5,
            )
    depth = max(len(v) for v in marks.values())
    ax.tick_params(axis="x", pad=plt.rcParams["xtick.major.pad"] + style.STATUS_STEP_PT * depth + 1)


def loss_figure(d, hue: str, order: list, color_of, label_of, metric, *, vs, title, extra=None):
    """The % degradation (``pct``) vs ``vs`` over the threads, one line per ``hue`` value,
    with its CI, hollow points where not significant and a line at 0; ``title``: (title,
    subtitle); ``extra``: more legend entries."""
    fig, ax = new_figure()
    drawn = draw_lines(
        ax, d, hue, order, color_of, label_of, "pct", annotate=True, fmt=style.pct1, sig="sig"
    )
    ax.axhline(0.0, color="black", linewidth=1)
    ax.margins(y=0.15)
    threads_axis(ax, sorted(d["threads"].unique()))
    ax.set_ylabel(f"% {metric.name} degradation vs {vs}\n(+ = {metric.worse}, − = better)")
    titles(ax, *title)
    notes = sig_notes(d, "Hollow markers") + not_value_note(d, "pct_status")
    finish(fig, ax, drawn, notes, extra=extra)
    return fig


def y_scale(ax, values: pd.Series) -> str:
    v = values.dropna()
    v = v[v > 0]
    if len(v) and v.max() / v.min() > style.LOG_Y_RATIO:
        ax.set_yscale("log")
        return " (log scale)"
    ax.set_ylim(bottom=0)
    ax.margins(y=0.12)
    return ""


def threads_axis(ax, threads: list[int]) -> None:
    ax.set_xlabel("Intra-op threads")
    if len(threads) <= 24:
        ax.set_xticks(threads)
    else:
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))


LEGEND = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "fontsize": 8, "frameon": False}


def finish(fig, ax, statuses: set[str], notes: list[str], *, extra: list | None = None) -> None:
    handles, _ = ax.get_legend_handles_labels()
    handles = handles + (extra or []) + style.status_legend(statuses)
    if handles:
        ax.legend(handles=handles, ncol=2 if len(handles) > 12 else 1, **LEGEND)
    footnote(ax, notes)


def new_figure(width: float = 8.0, height: float = 4.8):
    return plt.subplots(figsize=(width, height))


def threads_label(t) -> str:
    return f"{int(t)} thread" + ("s" if int(t) > 1 else "")


def subtitle(model: str, *parts: str) -> str:
    return " · ".join([model, *parts])


def metric_figure(
    tables: Tables, d, metric: Metric, lines: tuple, title: str, sub: str, notes=(), **kw
):
    """``metric`` over the threads, one line per value of ``lines`` = (hue, order, color_of,
    label_of) (``draw_lines``, ``kw`` its options), with the notes on cells with no value."""
    fig, ax = new_figure()
    drawn = draw_lines(ax, d, *lines, metric.key, **kw)
    threads_axis(ax, sorted(d["threads"].unique()))
    scale = y_scale(ax, d[metric.key])
    ax.set_ylabel(metric.axis_label(tables.latency_stat) + scale)
    titles(ax, title, sub)
    finish(fig, ax, drawn, not_value_note(d, f"{metric.key}_status") + list(notes))
    return fig


def non_native(tables: Tables, model: str) -> dict:
    """{(opt, allocator): precision note} of ``model``'s cells with ``native`` false."""
    c = tables.cells
    if c.empty or "native" not in c:
        return {}
    bad = c[(c["model"] == model) & c["native"].map(stats.as_bool).eq(False)]
    notes = bad["precision_note"] if "precision_note" in bad else pd.Series(None, index=bad.index)
    return {
        (o, a): (n if isinstance(n, str) else "")
        for o, a, n in zip(bad["opt"], bad["allocator"], notes, strict=True)
    }


def variants(d: pd.DataFrame, non_native: dict):
    """The (opt, allocator) lines of ``d``: hue values, colour, line style and label functions
    (colour by optimization, dash by allocator), and the notes of the non-native ones."""
    d = d.assign(variant=list(zip(d["opt"], d["allocator"], strict=True)))
    # allocators told apart when they vary, or when the one shown is not glibc as it comes
    several = d["allocator"].nunique() > 1 or d["allocator"].ne(allocators_mod.GLIBC).any()
    order = sorted(
        d["variant"].unique(), key=lambda v: (style.opt_order(v[0]), allocators_mod.order(v[1]))
    )

    def label(v):
        text = style.opt_label(v[0]) + (f" · {style.allocator_label(v[1])}" if several else "")
        return text + (f" · {style.NON_NATIVE}" if v in non_native else "")

    def dash(v):
        return style.allocator_linestyle(v[1])

    notes = sorted(
        {f"{style.NON_NATIVE} {v[0]}: {non_native[v]}" for v in order if v in non_native}
    )
    return d, order, (lambda v: style.opt_color(v[0])), label, (dash if several else None), notes


def sig_notes(d: pd.DataFrame, how: str) -> list[str]:
    ok = d[d["pct_status"] == "ok"]
    if ok.empty:
        return []
    known = ok["sig"].map(lambda s: s is not None)
    if not known.any():
        return ["No per-iteration samples: no confidence intervals, significance not assessed."]
    return [f"{how}: {style.NOT_SIGNIFICANT}."]


def _by_cell(d: pd.DataFrame, column: str, bss: list, threads: list) -> pd.DataFrame:
    return d.pivot(index="batch_size", columns="threads", values=column).reindex(
        index=bss, columns=threads
    )


def _annotate_cells(ax, val, status, cmap, norm, text, hatched=None, disturbed=None, fontsize=9):
    marks = (
        (hatched, style.NOT_SIGNIFICANT_HATCH, (0, 0, 0, 0.35), 0),
        (disturbed, style.DISTURBED_HATCH, style.DISTURBED_COLOR, 1.5),
    )
    for i, row in enumerate(val.index):
        for j, col in enumerate(val.columns):
            s = status.loc[row, col]
            if s != "ok":
                ax.add_patch(Rectangle((j, i), 1, 1, facecolor="0.88", edgecolor="white", lw=0.6))
                label = textwrap.fill(style.STATUS_TEXT.get(s, s), 12)
                kw = {"fontsize": fontsize - 1, "color": "0.3", "style": "italic"}
            else:
                v = float(val.loc[row, col])
                r, g, b, _ = cmap(norm(v))
                dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
                label, kw = text(v), {"fontsize": fontsize, "color": "white" if dark else "black"}
                for mask, hatch, edge, lw in marks:
                    if mask is not None and bool(mask.loc[row, col]):
                        ax.add_patch(
                            Rectangle((j, i), 1, 1, fill=False, hatch=hatch, edgecolor=edge, lw=lw)
                        )
            ax.text(j + 0.5, i + 0.5, label, ha="center", va="center", **kw)


def heatmap_panel(
    ax, val, status, *, cmap, vmin, vmax, label, extend, center=None, text=style.pct1, **marks
):
    """A seaborn heatmap of ``val`` (``cmap``: a seaborn palette's name; colour bar ``label``);
    over it each cell's value (``text(value)``) in a colour readable on its fill, a cell whose
    ``status`` is not ``ok`` grey and labelled with why, ``marks``' ``hatched`` cells hatched
    (not significant) and ``disturbed`` ones cross-hatched in red."""
    import seaborn as sns

    cmap = sns.color_palette(cmap, as_cmap=True)
    sns.heatmap(
        val.astype(float),
        ax=ax,
        cmap=cmap,
        center=center,
        vmin=vmin,
        vmax=vmax,
        mask=val.isna(),
        linewidths=0.6,
        linecolor="white",
        cbar_kws={"label": label, "shrink": 0.9, "extend": extend},
    )
    norm = matplotlib.colors.Normalize(vmin, vmax)
    _annotate_cells(ax, val, status, cmap, norm, text, **marks)


def heatmap_grid(d: pd.DataFrame, colorbar: str, hatched=lambda sig: sig is False):
    """A % heatmap of the rows ``d`` (``comparison`` or ``data.run_change``): x = threads, y =
    batch size (largest on top), diverging colours centred on 0, ``hatched(sig)`` cells hatched.
    Returns (figure, axes, half-range of the colour scale, the colour bar's ``extend``)."""
    threads = sorted(d["threads"].unique())
    bss = sorted(d["batch_size"].unique(), reverse=True)  # largest on top, like a y axis
    val = _by_cell(d, "pct", bss, threads)
    status = _by_cell(d, "pct_status", bss, threads)
    vmax, extend = style.color_limit(val.to_numpy(float))
    width = min(18.0, 4.0 + 0.62 * len(threads))
    height = min(14.0, 2.6 + 0.45 * len(bss))
    fig, ax = plt.subplots(figsize=(max(width, 8.5), max(height, 4.5)))
    heatmap_panel(
        ax,
        val,
        status,
        cmap="RdBu_r",
        vmin=-vmax,
        vmax=vmax,
        label=colorbar,
        extend=extend,
        center=0.0,
        hatched=_by_cell(d, "sig", bss, threads).map(hatched).astype(bool),
        disturbed=_by_cell(d, "disturbed", bss, threads).eq(True),
        fontsize=9 if len(threads) <= 12 else 8 if len(threads) <= 20 else 6,
    )
    ax.set_xlabel("Intra-op threads")
    ax.set_ylabel("Batch size (images)")
    ax.tick_params(axis="y", rotation=0)
    return fig, ax, vmax, extend


def disturbed_note(disturbed: pd.Series, where: str) -> list[str]:
    """A heatmap's note on its cross-hatched cells (``disturbed``: one bool per cell)."""
    n = int(disturbed.sum())
    if not n:
        return []
    return [
        f"Cross-hatched, red-framed cells ({n}): {style.DISTURBED_TEXT} in {where}; read their "
        "values with care."
    ]


def grey_note(statuses: pd.Series, why: str = "") -> list[str]:
    """A heatmap's note on its grey cells (``statuses``: one per cell with no value)."""
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


def ci_error_bars(b, y, ci):
    """Error bars of ``y`` (never negative, 0 where unknown) from ``b``'s CI columns ``ci``."""
    lo, hi = (b[k].to_numpy(dtype=float) for k in ci)
    return np.nan_to_num(np.vstack([np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)]))


def not_significant_legend(sig: pd.Series) -> list:
    """The legend entry of hollow (not significant) markers, when ``sig`` has a False."""
    if not sig.map(lambda s: s is False).any():
        return []
    return [Line2D([], [], marker="o", ls="none", mfc="white", mec="0.3", label="not significant")]
