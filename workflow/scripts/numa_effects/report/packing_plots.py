"""The Packing figures (docs/packing.md) from ``tables/packing.csv`` and
``tables/interference.csv``: the fat instance against the packed plan (predicted and measured)
per core budget, the interference profile with its fitted curve, and the core map of the
measured plans."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from numa_effects import stats
from numa_effects.report.data import Tables
from numa_effects.report.drawers import drawer
from numa_effects.report.drawing import ci_error_bars
from numa_effects.report.metrics import LATENCY, Metric

SERIES = (
    # (column, CI columns, label, style)
    ("fat_latency_ms", ("fat_ci_low_ms", "fat_ci_high_ms"), "fat instance (measured)", "s-"),
    ("predicted_alone_ms", None, "plan, predicted from alone latencies", "o:"),
    (
        "predicted_ms",
        ("predicted_ci_low_ms", "predicted_ci_high_ms"),
        "plan, predicted with interference",
        "o--",
    ),
    ("latency_ms", ("latency_ci_low_ms", "latency_ci_high_ms"), "plan (measured)", "o-"),
)


def _rows(tables: Tables, model: str, opt: str):
    p = tables.packing
    if p is None:
        raise ValueError("the Packing figures need tables/packing.csv")
    return p[(p["model"] == model) & (p["opt"] == opt)].sort_values(["budget", "batch_size"])


@drawer("packing_latency")
def latency(tables: Tables, model: str, opt: str, metric: Metric = LATENCY):
    d = _rows(tables, model, opt)
    budgets = sorted(d["budget"].unique())
    n = max(1, len(budgets))
    fig, axes = plt.subplots(1, n, figsize=(7.5 * n, 5.0), squeeze=False)
    contended = other = False
    for ax, c in zip(axes[0], budgets, strict=False):
        b = d[d["budget"] == c]
        x = b["batch_size"].to_numpy(dtype=float)
        contended |= _series(ax, b, x)
        other |= _recommended(ax, b, x)
        _plan_labels(ax, b)
        names = str(b["budget_names"].iloc[0]) if len(b) else ""
        model_text = str(b["interference_model"].iloc[0]) if "interference_model" in b else ""
        ax.set_title(f"{c} cores ({names}); interference: {model_text}", fontsize=9)
        ax.set_xscale("log", base=2)
        ax.set_xticks(x, [str(int(v)) for v in x])
        shown = b[[col for col, *_ in SERIES if col in b]].to_numpy(dtype=float)
        shown = shown[np.isfinite(shown) & (shown > 0)]
        if shown.size and shown.max() / shown.min() > 20:  # latencies over orders of magnitude
            ax.set_yscale("log")
        ax.set_xlabel("total batch B (images)")
        ax.set_ylabel("latency per batch, median (ms)")
        ax.legend(fontsize=7, loc="upper left")
        ax.grid(alpha=0.3)
    note = "\nhollow: contended (other tasks used the CPUs)" if contended else ""
    note += "; star: the measured best is another plan" if other else ""
    fig.suptitle(
        f"{model}, {opt}: fat instance vs the packed plan, predicted and measured\n(label: "
        f"instances x (threads, batch); the recommendation; its measured speedup){note}",
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def _series(ax, b, x) -> bool:
    """One budget's ``SERIES`` with their CIs; True when a measured point is contended (drawn
    hollow)."""
    contended = False
    for col, ci, label, fmt in SERIES:
        if col not in b:
            continue
        y = b[col].to_numpy(dtype=float)
        if not np.isfinite(y).any():
            continue
        yerr = ci_error_bars(b, y, ci) if ci is not None else None
        line = ax.errorbar(x, y, yerr=yerr, fmt=fmt, capsize=3, label=label)
        if col in ("fat_latency_ms", "latency_ms"):  # measured: contended drawn hollow
            hit = b["contended"].map(stats.as_bool).eq(True).to_numpy()
            if hit.any():
                color = line.lines[0].get_color()
                ax.scatter(x[hit], y[hit], s=60, facecolors="white", edgecolors=color, zorder=3)
                contended = True
    return contended


def _recommended(ax, b, x) -> bool:
    """The recommendation where the measured best is not the predicted plan (a star); True
    when there is one."""
    if "recommended_is_predicted" not in b:
        return False
    diff = b["recommended_is_predicted"].map(stats.as_bool).eq(False).to_numpy()
    if not diff.any():
        return False
    y = b["recommended_latency_ms"].to_numpy(dtype=float)
    ax.errorbar(
        x[diff],
        y[diff],
        yerr=ci_error_bars(b, y, ("recommended_ci_low_ms", "recommended_ci_high_ms"))[:, diff],
        fmt="*",
        markersize=12,
        capsize=3,
        color="black",
        label="recommended (measured best), where it is another plan",
    )
    return True


def _plan_labels(ax, b) -> None:
    """Each batch labelled with its plan, the recommendation where it differs, and its
    measured speedup."""
    for r in b.itertuples():
        if not isinstance(r.plan, str):
            continue
        tops = ("latency_ms", "predicted_ms", "fat_latency_ms", "predicted_ci_high_ms")
        top = np.nanmax([getattr(r, k, np.nan) for k in tops])
        text = r.plan
        rec = getattr(r, "recommended_plan", None)
        speed = getattr(r, "recommended_speedup", np.nan)
        if isinstance(rec, str) and rec != r.plan:
            text += f"\nbest: {rec}"
        if np.isfinite(speed):
            text += f"\n{speed:.2f}x"
        ax.annotate(
            text, (r.batch_size, top), textcoords="offset points", xytext=(0, 6),
            ha="center", fontsize=7,
        )  # fmt: skip


@drawer("packing_interference")
def interference_curve(tables: Tables, model: str, opt: str, metric: Metric = LATENCY):
    from numa_effects.tables import interference as profile

    d = tables.interference
    fig, ax = plt.subplots(figsize=(7.5, 5.0))
    curve = profile.curve(d, model, opt)  # NONE without a profile
    xmax = 1.0
    if d is not None and not d.empty:
        xmax = _profile_points(ax, d[(d["model"] == model) & (d["opt"] == opt)])
    xs = np.linspace(0, xmax * 1.1, 100)
    if curve.points:
        ys = np.array([curve.s(v) for v in xs])
        band = np.array([curve.ci(v) for v in xs])
        ax.plot(xs, ys, "-", color="black", label=curve.label())
        if np.isfinite(band).all():
            ax.fill_between(xs, band[:, 0], band[:, 1], color="black", alpha=0.12,
                            label="95 % interval of the curve")  # fmt: skip
    else:
        ax.text(0.5, 0.5, "no interference profile: predictions assume s = 1",
                transform=ax.transAxes, ha="center")  # fmt: skip
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("x: other busy cores on the instance's node")
    ax.set_ylabel("slowdown against one instance alone")
    ax.set_title(f"{model}, {opt}: instances side by side slow each other", fontsize=10)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _profile_points(ax, sel) -> float:
    """The profile's slowdowns per (threads, node) with their CIs, and how many groups have
    none; the largest x drawn (1 at least)."""
    xmax = 1.0
    for (t, node), g in sel[sel["status"] == "ok"].groupby(["threads", "node"]):
        x = g["x"].to_numpy(dtype=float)
        y = g["slowdown"].to_numpy(dtype=float)
        yerr = ci_error_bars(g, y, ("slowdown_ci_low", "slowdown_ci_high"))
        ax.errorbar(x, y, yerr=yerr, fmt="o", capsize=3, label=f"t = {t}, node {node}")
        for xi, yi, k in zip(x, y, g["k"], strict=True):
            ax.annotate(f"k={k}", (xi, yi), textcoords="offset points", xytext=(5, -10),
                        fontsize=7)  # fmt: skip
        xmax = max(xmax, float(np.nanmax(x)))
    bad = sel[sel["status"] != "ok"]
    if len(bad):
        ax.text(0.02, 0.02, f"{len(bad)} group(s) without a value: "
                + ", ".join(sorted(set(bad["status"].astype(str)))),
                transform=ax.transAxes, fontsize=8)  # fmt: skip
    return xmax


@drawer("packing_core_map")
def core_map(tables: Tables, model: str, opt: str, metric: Metric = LATENCY):
    from numa_effects.plan import cpulist

    d = _rows(tables, model, opt)
    rows = [r for r in d.itertuples() if isinstance(r.core_map, str) and r.core_map]
    fig, ax = plt.subplots(figsize=(8.0, 0.45 * max(2, len(rows)) + 1.2))
    cmap = plt.get_cmap("tab20")
    ncpu = 1
    for y, r in enumerate(rows):
        for part in r.core_map.split():
            inst, cpus = part.split(":", 1)
            j = int(inst[1:])
            for cpu in cpulist.parse(cpus):
                ncpu = max(ncpu, cpu + 1)
                ax.add_patch(plt.Rectangle((cpu, y - 0.4), 1, 0.8, color=cmap(j % 20)))
                ax.text(cpu + 0.5, y, str(j), ha="center", va="center", fontsize=7)
    ax.set_xlim(0, ncpu)
    ax.set_xticks([c + 0.5 for c in range(ncpu)], [str(c) for c in range(ncpu)])
    ax.set_ylim(-0.6, max(1, len(rows)) - 0.4)
    ax.set_yticks(
        range(len(rows)), [f"C={r.budget} B={r.batch_size}: {r.plan}" for r in rows], fontsize=8
    )
    ax.set_xlabel("logical CPU (number in a box: the instance)")
    ax.set_title(f"{model}, {opt}: cores of each instance of the measured plan", fontsize=10)
    ax.invert_yaxis()
    fig.tight_layout()
    return fig
