"""The Latency and Throughput sections' figures (the ``sequential`` cells): latency or throughput
against the threads per batch size and per optimization, the speedup over the fewest threads,
and throughput against the batch size. Registered for their families with ``@drawer``."""

from __future__ import annotations

from numa_effects.report import drawing
from numa_effects.report.data import Tables, sequential, value_status
from numa_effects.report.drawers import drawer
from numa_effects.report.metrics import THROUGHPUT, Metric
from numa_effects.report.style import batch_color, opt_label, thread_color


@drawer("latency_per_batch", "throughput_per_batch")
def per_batch(tables: Tables, model: str, batch_size: int, metric: Metric):
    """x = threads, one line per optimization (and allocator), sequential placement."""
    u = sequential(tables.universe(model, every_allocator=True))
    d = u[u["batch_size"] == batch_size]
    d, order, color, label, dash, notes = drawing.variants(d, drawing.non_native(tables, model))
    return drawing.metric_figure(
        tables,
        d,
        metric,
        ("variant", order, color, label),
        f"Threads vs {metric.title} (BS={batch_size})",
        drawing.subtitle(
            model,
            "placement sequential",
            "one line per optimization" + (" and allocator" if dash else ""),
        ),
        notes,
        annotate=True,
        style_of=dash,
    )


@drawer("latency_per_opt", "throughput_per_opt")
def per_opt(tables: Tables, model: str, opt: str, metric: Metric):
    """x = threads, one line per batch size."""
    u = sequential(tables.universe(model))
    d = u[u["opt"] == opt]
    bss = sorted(d["batch_size"].unique())
    return drawing.metric_figure(
        tables,
        d,
        metric,
        ("batch_size", bss, lambda b: batch_color(b, bss), lambda b: f"BS={b}"),
        f"Threads vs {metric.title} (opt={opt})",
        drawing.subtitle(model, opt_label(opt), "placement sequential", "one line per batch size"),
    )


@drawer("speedup")
def speedup(tables: Tables, model: str, opt: str, metric: Metric = THROUGHPUT):
    """Throughput relative to the fewest threads, one line per batch size + mean."""
    u = sequential(tables.universe(model))
    d = u[u["opt"] == opt].copy()
    t0 = int(d["threads"].min())
    first = d[d["threads"] == t0].set_index("batch_size")
    base = first[metric.key]
    d["speedup"] = d[metric.key] / d["batch_size"].map(base)
    d["disturbed"] = d["disturbed"] | d["batch_size"].map(first["disturbed"]).eq(True)
    d["speedup_status"] = value_status(d[f"{metric.key}_status"], d["speedup"])
    bss = sorted(d["batch_size"].unique())
    fig, ax = drawing.new_figure()
    drawn = drawing.draw_lines(
        ax, d, "batch_size", bss, lambda b: batch_color(b, bss), lambda b: f"BS={b}", "speedup"
    )
    threads = sorted(d["threads"].unique())
    mean = d.groupby("threads")["speedup"].mean()
    ax.plot(
        mean.index, mean.to_numpy(), color="black", lw=3, ls="--", label="mean over batch sizes"
    )
    ax.plot(threads, [t / t0 for t in threads], color="0.55", lw=1, ls=":", label="ideal (linear)")
    drawing.threads_axis(ax, threads)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(f"Speedup ({metric.name} / {metric.name} at {drawing.threads_label(t0)})")
    drawing.titles(
        ax,
        f"Speedup over {drawing.threads_label(t0).title()} (opt={opt})",
        drawing.subtitle(model, opt_label(opt), "placement sequential", "one line per batch size"),
    )
    notes = drawing.not_value_note(d, "speedup_status")
    no_base = sorted(set(bss) - set(base.dropna().index))
    if no_base:
        notes.append(
            f"No {t0}-thread baseline for BS={', '.join(map(str, no_base))}: "
            "no speedup drawn for those batch sizes."
        )
    drawing.finish(fig, ax, drawn, notes)
    return fig


@drawer("throughput_per_batch_size")
def throughput_per_batch_size(tables: Tables, model: str, opt: str, metric: Metric = THROUGHPUT):
    """x = batch size (log2), y = images/s, one line per thread count."""
    u = sequential(tables.universe(model))
    d = u[u["opt"] == opt]
    threads = sorted(d["threads"].unique())
    fig, ax = drawing.new_figure(10.0, 5.6)
    drawn = drawing.draw_lines(
        ax,
        d,
        "threads",
        threads,
        lambda t: thread_color(t, threads),
        drawing.threads_label,
        metric.key,
        x="batch_size",
    )
    bss = sorted(d["batch_size"].unique())
    ax.set_xscale("log", base=2)
    ax.set_xticks(bss, [str(b) for b in bss])
    ax.minorticks_off()
    ax.set_xlabel("Batch size (images, log2 scale)")
    ax.set_ylabel(metric.axis_label(tables.latency_stat) + drawing.y_scale(ax, d[metric.key]))
    drawing.titles(
        ax,
        f"Batch Size vs {metric.title} (opt={opt})",
        drawing.subtitle(
            model, opt_label(opt), "placement sequential", "one line per thread count"
        ),
    )
    drawing.finish(fig, ax, drawn, drawing.not_value_note(d, f"{metric.key}_status"))
    return fig
