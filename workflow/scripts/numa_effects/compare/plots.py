"""The comparison page's figures (docs/comparing.md) from compare.csv, registered with
``@drawer``: a forest plot of every matched cell's change, and a heatmap of the % change."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D

from numa_effects import stats
from numa_effects.compare import statistics as compare_stats
from numa_effects.plan.grid import KEYS
from numa_effects.report import style
from numa_effects.report.data import Tables, flag, run_change
from numa_effects.report.drawers import drawer
from numa_effects.report.drawing import (
    LEGEND,
    clipped_note,
    disturbed_note,
    footnote,
    grey_note,
    heatmap_grid,
    subtitle,
    titles,
)
from numa_effects.report.metrics import Metric
from numa_effects.report.style import color_limit, opt_label

# Verdict -> colour (style's colour-blind palette: red slower, blue faster, grey no change).
VERDICT_COLORS = {
    compare_stats.SLOWER: "#d55e00",
    compare_stats.FASTER: "#0173b2",
    compare_stats.NO_CHANGE: "#7f7f7f",
    compare_stats.NOT_ASSESSED: "#7f7f7f",
}
MAX_LABELLED_ROWS = 80  # above this a forest plot labels every other row
ACROSS_SUFFIX = "_compared"
CI_BAR = {"fmt": "none", "elinewidth": 1.2, "capsize": 2}
EDGE_LABEL = {"textcoords": "offset points", "va": "center", "fontsize": 7}


def _row_label(r: dict, across: list[str]) -> str:
    text = f"{r['placement']} · {int(r['threads'])} t · bs {int(r['batch_size'])}"
    for a in across:
        text += f" · {a} {r[a]}→{r[a + ACROSS_SUFFIX]}"
    return text


@drawer("compare_forest")
def forest(tables: Tables, run: str, model: str, opt: str, metric: Metric):
    """Every matched cell's % change (compared vs baseline run) with its CI, sorted."""
    c = tables.compare
    d = c[(c["run"].astype(str) == str(run)) & (c["model"] == model) & (c["opt"] == opt)]
    across = [k for k in KEYS if f"{k}{ACROSS_SUFFIX}" in d.columns]
    ok = d[d["status"] == "ok"].sort_values("latency_change_pct", kind="stable")
    n = len(ok)
    row_h = 0.22 if n <= 40 else 0.14
    fig, ax = plt.subplots(figsize=(9.0, min(80.0, max(3.2, 1.9 + row_h * n))))
    y = np.arange(n)
    pct, lo, hi = (ok[c].to_numpy(float) for c in stats.with_ci("latency_change", "_pct"))
    disturbed = flag(ok).to_numpy(bool)
    _verdict_points(ax, pct, lo, hi, y, ok["verdict"].astype(str).to_numpy())
    if disturbed.any():
        ring = {**style.DISTURBED_MARK, "markersize": 9 if n <= 80 else 6}
        ax.plot(pct[disturbed], y[disturbed], **ring)
    given = d["min_effect_pct"].dropna()
    min_effect = float(given.iloc[0]) if not given.empty else 0.0
    beyond = _clip_axis(ax, pct, lo, hi, y)
    ax.grid(axis="y", visible=False)
    ax.axvline(0.0, color="black", linewidth=1)
    if min_effect:
        for x in (-min_effect, min_effect):
            ax.axvline(x, color="0.45", linewidth=0.8, linestyle=":")
    labels = [_row_label(r, across) for r in ok.to_dict("records")]
    step = 1 if n <= MAX_LABELLED_ROWS else 2
    ax.set_yticks(y[::step], labels[::step], fontsize=7 if n <= 40 else 5)
    ax.set_ylim(-0.8, max(n - 0.2, 0.8))
    base = str(d["baseline_run"].iloc[0]) if len(d) else "the baseline"
    ax.set_xlabel(f"% latency change of {run} vs {base} (+ = slower)")
    stat = stats.compared_statistics(ok, "median")
    sub = subtitle(model, opt_label(opt), f"{stat} latency", f"{n} matched cells, sorted")
    titles(ax, f"{run} vs {base}: change per cell (opt={opt})", sub)
    _forest_legend(ax, min_effect, disturbed.any())
    notes = _forest_notes(d, ok, beyond) + (
        ["Every other row is labelled (too many to label all)."] if step > 1 else []
    )
    footnote(ax, [textwrap.fill(t, 110) for t in notes])
    return fig


def _verdict_points(ax, pct, lo, hi, y, verdicts) -> None:
    """Each cell's change coloured by its verdict, with its CI; not assessed ones hollow."""
    n = len(pct)
    for v, color in VERDICT_COLORS.items():
        m = verdicts == v
        if not m.any():
            continue
        has_ci = m & ~np.isnan(lo)
        if has_ci.any():
            err = np.abs(np.vstack([pct[has_ci] - lo[has_ci], hi[has_ci] - pct[has_ci]]))
            ax.errorbar(pct[has_ci], y[has_ci], xerr=err, ecolor=color, **CI_BAR)
        face = "white" if v == compare_stats.NOT_ASSESSED else color  # not assessed: hollow
        size = 5 if n <= 80 else 3.5
        marks = {"markersize": size, "markerfacecolor": face, "markeredgecolor": color}
        ax.plot(pct[m], y[m], linestyle="none", marker="o", label=f"{v} ({int(m.sum())})", **marks)


def _forest_legend(ax, min_effect: float, disturbed: bool) -> None:
    handles, _ = ax.get_legend_handles_labels()
    if min_effect:
        dots = Line2D([], [], color="0.45", linestyle=":", label=f"±{min_effect:g} % (min. effect)")
        handles.append(dots)
    if disturbed:
        handles += style.status_legend({style.DISTURBED})
    ax.legend(handles=handles, **LEGEND)


def _forest_notes(d, ok, beyond: int) -> list[str]:
    """What the forest plot does not show as a point."""
    notes = []
    if (ok["verdict"].astype(str) == compare_stats.NOT_ASSESSED).any():
        why = ok.loc[ok["verdict"] == compare_stats.NOT_ASSESSED, "ci_note"].dropna().astype(str)
        note = f" ({why.iloc[0]})" if not why.empty else ""
        notes.append(f"Hollow, no interval: not assessed{note}.")
    no_value = d[d["status"] != "ok"]
    if not no_value.empty:
        counts = ", ".join(f"{k} {s}" for s, k in no_value["status"].value_counts().items())
        notes.append(f"Not drawn: {len(no_value)} matched cells with no value ({counts}).")
    if beyond:
        notes.append(
            f"The x axis is clipped at the 95th percentile of |change| (a few outliers would "
            f"squash every other cell): {beyond} cells beyond it are drawn at its edge (▶ ◀), "
            "labelled with their change."
        )
    return notes


def _clip_axis(ax, pct, lo, hi, y) -> int:
    """Clip the x axis where a few outliers would squash every other cell (``color_limit``); cells
    beyond are drawn at the edge with their value. Returns how many."""
    vmax, extend = color_limit(pct)
    if extend != "both":
        return 0
    vals = np.concatenate([pct, lo[~np.isnan(lo)], hi[~np.isnan(hi)]])
    left, right = max(float(vals.min()), -1.3 * vmax), min(float(vals.max()), 1.3 * vmax)
    pad = 0.05 * (right - left)
    ax.set_xlim(left - pad, right + pad)
    out = (pct < left) | (pct > right)
    for x, yy in zip(pct[out], y[out], strict=True):
        edge, marker, ha = (right + pad, ">", "right") if x > right else (left - pad, "<", "left")
        ax.plot([edge], [yy], marker=marker, color="0.2", markersize=6, clip_on=False)
        shift = -8 if ha == "right" else 8
        ax.annotate(f"{x:+.0f} %", (edge, yy), xytext=(shift, 0), ha=ha, **EDGE_LABEL)
    return int(out.sum())


@drawer("compare_heatmap")
def change_heatmap(tables: Tables, run: str, model: str, opt: str, placement: str, metric: Metric):
    """% latency change of the compared run, x = threads, y = batch size."""
    d = run_change(tables, run, model, opt)
    d = d[d["placement"] == placement]
    base = d["baseline_run"].dropna()
    base = str(base.iloc[0]) if not base.empty else "the baseline"
    label = f"% latency change vs {base} (+ = slower)"
    fig, ax, vmax, extend = heatmap_grid(d, label, hatched=lambda sig: sig is not True)
    ok = d[d["pct_status"] == "ok"]
    stat = stats.compared_statistics(ok, "median")
    sub = subtitle(model, f"({run} − {base}) / {base} × 100 of the {stat} latency")
    titles(ax, f"{run} vs {base}: % Latency Change, {placement} (opt={opt})", sub)
    notes = []
    if ok["sig"].map(lambda s: s is None).all() and not ok.empty:
        notes.append("Not assessed (no CI: one process per cell): every cell is hatched.")
    else:
        notes.append("Hatched cells: not significant (the CI of the change includes 0).")
    notes += clipped_note(vmax, extend)
    notes += disturbed_note(d["disturbed"] & d["pct_status"].eq("ok"), "either run")
    status = d["pct_status"]
    notes += grey_note(status[status != "ok"], ": missing = in one run only (unmatched.csv)")
    footnote(ax, notes)
    return fig
