"""The Latency and Throughput sections' figures (the ``sequential`` cells): latency or throughput
against the threads per batch size and per optimization, the speedup over the fewest threads,
and throughput against the batch size. Registered for their families with ``@drawer``."""

from __future__ import annotations

import numpy as np

from numa_effects.report.data import Tables, sequential
from numa_effects.report.drawers import drawer
from numa_effects.report.drawing import (
    draw_lines,
    finish,
    new_figure,
    non_native,
    not_value_note,
    subtitle,
    threads_axis,
    threads_label,
    threads_metric_axes,
    titles,
    variants,
    y_scale,
)
from numa_effects.report.metrics import THROUGHPUT, Metric
from numa_effects.report.style import batch_color, opt_label, thread_color


@drawer("latency_per_batch", "throughput_per_batch")
def per_batch(tables: Tables, model: str, batch_size: int, metric: Metric):
    """x = threads, one line per optimization (and allocator), sequential placement."""
    u = sequential(tables.universe(model, every_allocator=True))
    d = u[u["batch_size"] == batch_size]
    d, order, color, label, dash, notes = variants(d, non_native(tables, model))
    fig, ax = new_figure()
    drawn = draw_lines(
        ax, d, "variant", order, color, label, metric.key, annotate=True, style_of=dash
    )
    name = threads_metric_axes(ax, tables, d, metric)
    titles(
        ax,
        f"Threads vs {name} (BS={batch_size})",
        subtitle(
            model,
            "placement sequential",
            "one line per optimization" + (" and allocator" if dash else ""),
        ),
    )
    finish(fig, ax, drawn, not_value_note(d, f"{metric.key}_status") + notes)
    return fig


@drawer("latency_per_opt", "throughput_per_opt")
def per_opt(tables: Tables, model: str, opt: str, metric: Metric):
    """x = threads, one line per batch size."""
    u = sequential(tables.universe(model))
    d = u[u["opt"] == opt]
    bss = sorted(d["batch_size"].unique())
    fig, ax = new_figure()
    drawn = draw_lines(
        ax, d, "batch_size", bss, lambda b: batch_color(b, bss), lambda b: f"BS={b}", metric.key
    )
    name = threads_metric_axes(ax, tables, d, metric)
    titles(
        ax,
        f"Threads vs {name} (opt={opt})",
        subtitle(model, opt_label(opt), "placement sequential", "one line per batch size"),
    )
    finish(fig, ax, drawn, not_value_note(d, f"{metric.key}_status"))
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
    fig, ax = new_figure()
    drawn = draw_lines(
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
    threads_axis(ax, threads)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(f"Speedup ({metric.name} / {metric.name} at {threads_label(t0)})")
    titles(
        ax,
        f"Speedup over {threads_label(t0).title()} (opt={opt})",
        subtitle(model, opt_label(opt), "placement sequential", "one line per batch size"),
    )
    notes = not_value_note(d, "speedup_status")
    no_base = sorted(set(bss) - set(base.dropna().index))
    if no_base:
        notes.append(
            f"No {t0}-thread baseline for BS={', '.join(map(str, no_base))}: "
            "no speedup drawn for those batch sizes."
        )
    finish(fig, ax, drawn, notes)
    return fig


@drawer("throughput_per_batch_size")
def throughput_per_batch_size(tables: Tables, model: str, opt: str, metric: Metric = THROUGHPUT):
    """x = batch size (log2), y = images/s, one line per thread count."""
    u = sequential(tables.universe(model))
    d = u[u["opt"] == opt]
    threads = sorted(d["threads"].unique())
    fig, ax = new_figure(10.0, 5.6)
    drawn = draw_lines(
        ax,
        d,
        "threads",
        threads,
        lambda t: thread_color(t, threads),
        lambda t: threads_label(t),
        metric.key,
        x="batch_size",
    )
    bss = sorted(d["batch_size"].unique())
    ax.set_xscale("log", base=2)
    ax.set_xticks(bss, [str(b) for b in bss])
    ax.minorticks_off()
    ax.set_xlabel("Batch size (images, log2 scale)")
    ax.set_ylabel(metric.axis_label(tables.latency_stat) + y_scale(ax, d[metric.key]))
    titles(
        ax,
        f"Batch Size vs {metric.title} (opt={opt})",
        subtitle(model, opt_label(opt), "placement sequential", "one line per thread count"),
    )
    finish(fig, ax, drawn, not_value_note(d, f"{metric.key}_status"))
    return fig
