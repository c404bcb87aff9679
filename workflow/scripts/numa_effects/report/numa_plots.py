"""The NUMA Effects section's figures: each placement against its baseline (``placement.
baseline_of``) as a % degradation heatmap over threads x batch size, as lines per placement, and
as the % loss per placement. Registered for their families with ``@drawer``."""

from __future__ import annotations

from numa_effects import stats
from numa_effects.plan import placement as placement_mod
from numa_effects.report import drawing, style
from numa_effects.report.data import Tables, comparison
from numa_effects.report.drawers import drawer
from numa_effects.report.metrics import Metric
from numa_effects.report.style import opt_label, placement_color, placement_order


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
    fig, ax, vmax, extend = drawing.heatmap_grid(
        d, f"% {metric.name} degradation (+ = {metric.worse})"
    )
    stat = stats.compared_statistics(d, tables.latency_stat)
    drawing.titles(
        ax,
        f"% {metric.title} Degradation, {placement} (opt={opt})",
        drawing.subtitle(model, metric.degradation(placement, baseline, stat)),
    )
    notes = drawing.sig_notes(d, "Hatched cells") + drawing.clipped_note(vmax, extend)
    notes += drawing.disturbed_note(
        d["disturbed"] & d["pct_status"].eq("ok"), "either cell of the pair"
    )
    same = d["pct_status"].eq(style.SAME_BINDING)
    notes += [drawing.SAME_NOTE.replace("'='", "Same binding")] if same.any() else []
    bad = d[d["pct_status"].ne("ok") & ~same]["pct_status"]
    what = "has no value" if "contended" in set(bad) else "is not measured"
    notes += drawing.grey_note(bad, f": either cell of the pair {what}")
    drawing.footnote(ax, notes)
    return fig


@drawer("numa_latency_per_batch", "numa_throughput_per_batch")
def numa_per_batch(tables: Tables, model: str, opt: str, batch_size: int, metric: Metric):
    """x = threads, one line per placement (the baselines included)."""
    u = tables.universe(model)
    d = u[(u["opt"] == opt) & (u["batch_size"] == batch_size)]
    places = sorted(d["placement"].unique(), key=placement_order)
    return drawing.metric_figure(
        tables,
        d,
        metric,
        ("placement", places, placement_color, str),
        f"Threads vs {metric.title} by Placement (BS={batch_size}, opt={opt})",
        drawing.subtitle(model, opt_label(opt), "one line per placement"),
        annotate=True,
    )


@drawer("numa_latency_loss", "numa_throughput_loss")
def numa_loss(tables: Tables, model: str, opt: str, batch_size: int, metric: Metric):
    """x = threads, y = % degradation vs each placement's baseline, one line per placement."""
    d = comparison(tables, model, opt, metric)
    d = d[d["batch_size"] == batch_size]
    places = sorted(d["placement"].unique(), key=placement_order)
    return drawing.loss_figure(
        d,
        "placement",
        places,
        placement_color,
        lambda p: f"{p} vs {placement_mod.baseline_of(p)}",
        metric,
        vs=_baselines(places),
        title=(
            f"Threads vs % {metric.title} Loss (BS={batch_size}, opt={opt})",
            drawing.subtitle(
                model,
                opt_label(opt),
                metric.of(stats.compared_statistics(d, tables.latency_stat)),
                "error bars: CI where samples exist",
            ),
        ),
        extra=drawing.not_significant_legend(d["sig"]),
    )
