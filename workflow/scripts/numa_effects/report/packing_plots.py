"""The report's Packing figures (docs/packing.md), drawn from ``tables/packing.csv``:

- ``latency``: latency against the total batch B for the fat instance (measured), the plan as
  predicted from the grid and the plan as measured, with their 95 % CIs (round-to-round, see
  ``tables.packing``), one panel per core budget; every B is labelled with the chosen plan;
- ``core_map``: which cores each instance of the measured plan got, one row per (budget, B).

Registered for their families with ``registry.drawer`` (``plots`` imports this module).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np

from numa_effects import stats
from numa_effects.report.data import Tables
from numa_effects.report.registry import LATENCY, Metric, drawer

SERIES = (
    # (column, CI columns, label, style)
    ("fat_latency_ms", ("fat_ci_low_ms", "fat_ci_high_ms"), "fat instance (measured)", "s-"),
    ("predicted_latency_ms", None, "plan, predicted from the grid", "o--"),
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
    fig, axes = plt.subplots(
        1, max(1, len(budgets)), figsize=(7.0 * max(1, len(budgets)), 4.8), squeeze=False
    )
    contended = False
    for ax, c in zip(axes[0], budgets, strict=False):
        b = d[d["budget"] == c]
        x = b["batch_size"].to_numpy(dtype=float)
        for col, ci, label, fmt in SERIES:
            y = b[col].to_numpy(dtype=float)
            if not np.isfinite(y).any():
                continue
            yerr = None
            if ci is not None:
                lo, hi = (b[k].to_numpy(dtype=float) for k in ci)
                yerr = np.vstack([np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)])
                yerr = np.nan_to_num(yerr)
            line = ax.errorbar(x, y, yerr=yerr, fmt=fmt, capsize=3, label=label)
            if ci is not None:  # measured: a contended group is drawn hollow
                hit = b["contended"].map(stats.as_bool).eq(True).to_numpy()
                if hit.any():
                    color = line.lines[0].get_color()
                    ax.scatter(x[hit], y[hit], s=60, facecolors="white", edgecolors=color, zorder=3)
                    contended = True
        for r in b.itertuples():
            if isinstance(r.plan, str):
                top = np.nanmax([r.latency_ms, r.predicted_latency_ms, r.fat_latency_ms])
                speed = f"\n{r.speedup:.2f}x" if np.isfinite(r.speedup) else ""
                ax.annotate(
                    f"{r.plan}{speed}", (r.batch_size, top), textcoords="offset points",
                    xytext=(0, 6), ha="center", fontsize=7,
                )  # fmt: skip
        names = str(b["budget_names"].iloc[0]) if len(b) else ""
        ax.set_title(f"{c} cores ({names})", fontsize=10)
        ax.set_xscale("log", base=2)
        ax.set_xticks(x, [str(int(v)) for v in x])
        ax.set_xlabel("total batch B (images)")
        ax.set_ylabel("latency per batch, median (ms)")
        ax.legend(fontsize=8, loc="upper left")
        ax.grid(alpha=0.3)
    note = "; hollow: contended (other tasks used the CPUs)" if contended else ""
    fig.suptitle(
        f"{model}, {opt}: fat instance vs the packed plan (label: instances x (threads, batch); "
        f"measured speedup){note}",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


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
