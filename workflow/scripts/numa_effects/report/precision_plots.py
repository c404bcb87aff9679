"""The Precision and runtime section's figures: every optimization and allocator against float32
eager on the run's baseline allocator (``report.baselines.base_variant``; precision.csv), and
the NUMA loss per dtype. Registered for their families with ``@drawer``."""

from __future__ import annotations

import pandas as pd

from numa_effects import stats
from numa_effects.plan import placement as placement_mod
from numa_effects.report import drawing, style
from numa_effects.report.baselines import dtype_of
from numa_effects.report.data import Tables, comparison, precision_rows
from numa_effects.report.drawers import drawer
from numa_effects.report.metrics import Metric
from numa_effects.report.style import opt_color, opt_label, opt_order


@drawer("precision_speedup")
def precision_speedup(tables: Tables, model: str, batch_size: int, metric: Metric):
    """x = threads, y = speedup over the baseline variant, one line per other (opt, allocator),
    sequential placement; statuses from the cells."""
    d, base_alloc = precision_rows(tables, model, batch_size, metric)
    d, order, color, label, dash, notes = drawing.variants(d, drawing.non_native(tables, model))
    fig, ax = drawing.new_figure()
    drawn = drawing.draw_lines(
        ax, d, "variant", order, color, label, "speedup", annotate=True, sig="sig", style_of=dash
    )
    ax.axhline(1.0, color="black", linewidth=1)
    drawing.threads_axis(ax, sorted(d["threads"].unique()))
    scale = drawing.y_scale(ax, d["speedup"])
    base_label = style.allocator_label(base_alloc)
    ax.set_ylabel(
        f"Speedup over float32 eager, {base_label} ({tables.latency_stat} latency){scale}"
    )
    drawing.titles(
        ax,
        f"Speedup over float32 Eager (BS={batch_size})",
        drawing.subtitle(model, "placement sequential", "error bars: 95 % CI of the ratio"),
    )
    sig = drawing.sig_notes(d.assign(pct_status=d["speedup_status"]), "Hollow markers")
    notes = sig + drawing.not_value_note(d, "speedup_status") + notes
    drawing.finish(fig, ax, drawn, notes, extra=drawing.not_significant_legend(d["sig"]))
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
    marked = {o for o, a in drawing.non_native(tables, model) if a == tables.allocator}
    stat = stats.compared_statistics(d, tables.latency_stat)

    def label(o):
        return f"{opt_label(o)} [{dtype_of(o)}]" + (f" · {style.NON_NATIVE}" if o in marked else "")

    return drawing.loss_figure(
        d,
        "opt",
        opts,
        opt_color,
        label,
        metric,
        vs=placement_mod.baseline_of(placement),
        title=(
            f"% {metric.title} Loss per dtype, {placement} (BS={batch_size})",
            drawing.subtitle(model, metric.of(stat), "one line per optimization"),
        ),
    )
