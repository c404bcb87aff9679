"""The NUMA Effects section's figures: each placement against its baseline (``placement.
baseline_of``) as a % degradation heatmap over threads x batch size, as lines per placement, and
as the % loss per placement. Registered for their families with ``@drawer``."""

from __future__ import annotations

from numa_effects.plan import placement as placement_mod
from numa_effects.report import style
from numa_effects.report.data import Tables, comparison, deg_stat
from numa_effects.report.drawers import drawer
from numa_effects.report.drawing import (
    SAME_NOTE,
    clipped_note,
    disturbed_note,
    draw_lines,
    finish,
    footnote,
    grey_note,
    heatmap_grid,
    new_figure,
    not_significant_legend,
    not_value_note,
    sig_notes,
    subtitle,
    threads_axis,
    threads_metric_axes,
    titles,
)
from numa_effects.report.metrics import Metric
from numa_effects.report.style import opt_label, pct1, placement_color, placement_order


def _baselines(placements) -> str:
    """The baseline(s) the placements are compared with, for a label: ``sequential``."""
    bases = sorted({placement_mod.baseline_of(p) for p in placements} - {None})
    return " / ".join(bases) if len(bases) <= 2 else "their baselines"


@drawer("latency_degradation_heatmap", "throughput_degradation_heatmap")
def heatmap(tables: Tables, model: str, opt: str, placement: str, metric: Metric):
    """% degradation of ``placement`` vs its baseline, x = threads, y = batch size."""
    d = comparison(tables, model, opt, metric)
    d = d[d["placement"] == placement]
    baseline = placement_mod.baseline_of(placement)
    fig, ax, vmax, extend = heatmap_grid(d, f"% {metric.name} degradation (+ = {metric.worse})")
    titles(
        ax,
        f"% {metric.title} Degradation, {placement} (opt={opt})",
        subtitle(model, metric.degradation(placement, baseline, deg_stat(d, tables))),
    )
    notes = sig_notes(d, "Hatched cells") + clipped_note(vmax, extend)
    notes += disturbed_note(d["disturbed"] & d["pct_status"].eq("ok"), "either cell of the pair")
    same = d["pct_status"].eq(style.SAME_BINDING)
    notes += [SAME_NOTE.replace("'='", "Same binding")] if same.any() else []
    bad = d[d["pct_status"].ne("ok") & ~same]["pct_status"]
    what = "has no value" if "contended" in set(bad) else "is not measured"
    notes += grey_note(bad, f": either cell of the pair {what}")
    footnote(ax, notes)
    return fig


@drawer("numa_latency_per_batch", "numa_throughput_per_batch")
def numa_per_batch(tables: Tables, model: str, opt: str, batch_size: int, metric: Metric):
    """x = threads, one line per placement (the baselines included)."""
    u = tables.universe(model)
    d = u[(u["opt"] == opt) & (u["batch_size"] == batch_size)]
    places = sorted(d["placement"].unique(), key=placement_order)
    fig, ax = new_figure()
    drawn = draw_lines(ax, d, "placement", places, placement_color, str, metric.key, annotate=True)
    name = threads_metric_axes(ax, tables, d, metric)
    titles(
        ax,
        f"Threads vs {name} by Placement (BS={batch_size}, opt={opt})",
        subtitle(model, opt_label(opt), "one line per placement"),
    )
    finish(fig, ax, drawn, not_value_note(d, f"{metric.key}_status"))
    return fig


@drawer("numa_latency_loss", "numa_throughput_loss")
def numa_loss(tables: Tables, model: str, opt: str, batch_size: int, metric: Metric):
    """x = threads, y = % degradation vs each placement's baseline, one line per placement."""
    d = comparison(tables, model, opt, metric)
    d = d[d["batch_size"] == batch_size]
    places = sorted(d["placement"].unique(), key=placement_order)
    fig, ax = new_figure()
    drawn = draw_lines(
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
    threads_axis(ax, sorted(d["threads"].unique()))
    ax.set_ylabel(
        f"% {metric.name} degradation vs {_baselines(places)}\n(+ = {metric.worse}, − = better)"
    )
    titles(
        ax,
        f"Threads vs % {metric.title} Loss (BS={batch_size}, opt={opt})",
        subtitle(
            model,
            opt_label(opt),
            metric.of(deg_stat(d, tables)),
            "error bars: CI where samples exist",
        ),
    )
    extra = not_significant_legend(d["sig"])
    finish(
        fig,
        ax,
        drawn,
        sig_notes(d, "Hollow markers") + not_value_note(d, "pct_status"),
        extra=extra,
    )
    return fig
