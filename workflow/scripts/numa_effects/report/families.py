"""The report's figure families and the page sections they stand in: the one registry.

Pure and cheap (no matplotlib, no pandas): the workflow imports it at parse time to generate the
``plot_<name>`` rules (workflow/rules/report.smk) and list the figure targets
(``report.figures``). A family's draw function is registered with ``@drawer(name)``
(``report.drawers``). Adding a family = one entry here + one ``@drawer`` function + its test; a
new wildcard also needs a field of ``figures.Figure``.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from numa_effects.report.empty import (
    PageFacts,
    no_node_pairs,
    no_numa_reason,
    no_precision,
    no_sequential,
    nothing_matched,
    packing_off,
)
from numa_effects.report.metrics import LATENCY, THROUGHPUT, Metric

# The pages: the run's report (results/report/index.html) and a comparison of result folders
# (results/compare/<name>/index.html, ``compare.page``). A section belongs to one of them.
RUN_PAGE, COMPARE_PAGE = "run", "compare"


@dataclass(frozen=True)
class Section:
    heading: str
    anchor: str  # HTML id; the page's navigation links to it
    empty: Callable[[PageFacts], str]  # what the page says when the section has no figure
    tables: tuple[str, ...] = ()  # tables shown (folded) under its figures
    highlight: bool = False  # the section the page is about: it stands out in the navigation
    page: str = RUN_PAGE  # RUN_PAGE or COMPARE_PAGE


# Section key -> Section. Order is the page order.
SECTIONS = {
    "latency": Section("Latency (Sequential)", "latency-sequential", no_sequential),
    "throughput": Section("Throughput (Sequential)", "throughput-sequential", no_sequential),
    "numa": Section(
        "NUMA Effects", "numa-effects", no_numa_reason, ("degradation",), highlight=True
    ),
    "precision": Section(
        "Precision and runtime", "precision-runtime", no_precision, ("precision",)
    ),
    "node_pairs": Section(
        "Node-pair matrix", "node-pair-matrix", no_node_pairs, ("memory_matrix",)
    ),
    "packing": Section("Packing", "packing", packing_off),
    "compare": Section(
        "Comparison", "comparison", nothing_matched, highlight=True, page=COMPARE_PAGE
    ),
}


TABLES = ("cells", "skipped")  # the tables every figure reads (results/tables/<name>.csv)
WITH_DEGRADATION = (*TABLES, "degradation")
WITH_PACKING = (*TABLES, "packing")


@dataclass(frozen=True)
class Family:
    name: str  # rule plot_<name>, folder under report/figures/<model>/
    section: str  # key of SECTIONS
    title: str  # heading in the page and subcategory in `snakemake --report`
    pattern: str  # file path below report/figures/, without extension; its fields = wildcards
    plan: str  # key of PLANS: the cells that support one figure
    caption: str  # RST (``code``, *emphasis* only): the page and `snakemake --report` show it
    metric: Metric = LATENCY  # passed to the draw function
    tables: tuple[str, ...] = TABLES

    @property
    def wildcards(self) -> tuple[str, ...]:
        return tuple(f for _, f, _, _ in string.Formatter().parse(self.pattern) if f)

    @property
    def per(self) -> str:
        """What one figure is per, e.g. ``model x opt x batch size``."""
        return " x ".join(w.replace("_", " ") for w in self.wildcards)

    @property
    def page(self) -> str:
        """The page its section is on (``Section.page``): its tables and figures live there."""
        return SECTIONS[self.section].page


# Each section's shared fields
_latency = partial(Family, section="latency", plan="sequential")
_throughput = partial(Family, section="throughput", plan="sequential", metric=THROUGHPUT)
_numa = partial(Family, section="numa", plan="comparison")
_precision = partial(Family, section="precision")
_node_pairs = partial(Family, section="node_pairs")
_packing = partial(Family, section="packing", plan="packing")
_compare = partial(Family, section="compare", plan="compare", tables=("compare",))

FAMILIES: tuple[Family, ...] = (
    _latency(
        name="latency_per_batch",
        title="Latency per batch",
        pattern="{model}/latency_per_batch/bs{batch_size}",
        caption="One figure per batch size: latency of one batch against the intra-op threads, "
        "one line per optimization, placement ``sequential``; points carry their value. Latency "
        "is the median per batch (the mean for imported PackRat results, which have no median; "
        "the axis label says which). With several allocators, one line per optimization and "
        "allocator (line style: allocator). A dtype this CPU does not compute natively is "
        "marked *non-native* in the legend.",
    ),
    _latency(
        name="latency_per_opt",
        title="Latency per optimization",
        pattern="{model}/latency_per_opt/{opt}",
        caption="One figure per optimization: latency per batch against the intra-op threads, "
        "one line per batch size, placement ``sequential`` (log scale when batch sizes span "
        "orders of magnitude).",
    ),
    _throughput(
        name="throughput_per_batch",
        title="Throughput per batch",
        pattern="{model}/throughput_per_batch/bs{batch_size}",
        caption="One figure per batch size: images per second against the intra-op threads, "
        "one line per optimization, placement ``sequential``.",
    ),
    _throughput(
        name="throughput_per_opt",
        title="Throughput per optimization",
        pattern="{model}/throughput_per_opt/{opt}",
        caption="One figure per optimization: images per second against the intra-op threads, "
        "one line per batch size, placement ``sequential``.",
    ),
    _throughput(
        name="speedup",
        title="Speedup over one thread",
        pattern="{model}/speedup/{opt}",
        caption="Throughput at t threads divided by throughput at the fewest threads measured, "
        "one line per batch size, their mean (dashed) and linear scaling (dotted). A batch size "
        "without a one-thread value has no line.",
    ),
    _throughput(
        name="throughput_per_batch_size",
        title="Throughput per batch size",
        pattern="{model}/throughput_per_batch_size/{opt}",
        caption="Images per second against the batch size (log2 axis), one line per intra-op "
        "thread count, placement ``sequential``.",
    ),
    _numa(
        name="latency_degradation_heatmap",
        title="% latency degradation (heatmap)",
        pattern="{model}/latency_degradation_heatmap/{opt}/{placement}",
        tables=WITH_DEGRADATION,
        caption="% latency degradation of each placement against its baseline (``sequential``; "
        "a placement family's own), (placement − baseline) / baseline × 100, per intra-op "
        "threads (x) and batch size (y). Diverging scale centred on 0: red = slower, blue = "
        "faster than the baseline; values have one decimal. Hatched: not significant (the 95 % "
        "confidence interval includes 0, when raw samples exist; ``ci_method`` in "
        "degradation.csv: per-round paired where the placement and its baseline share noise, "
        "else two-level). Grey: no value (failed, "
        "skipped, contended without a clean iteration, or missing cell).",
    ),
    _numa(
        name="throughput_degradation_heatmap",
        title="% throughput degradation (heatmap)",
        pattern="{model}/throughput_degradation_heatmap/{opt}/{placement}",
        metric=THROUGHPUT,
        tables=WITH_DEGRADATION,
        caption="% throughput degradation of each placement against its baseline "
        "(``sequential``; a placement family's own), (baseline − placement) / baseline × 100, "
        "per intra-op threads (x) and batch size (y). Red = fewer images per second than the "
        "baseline, blue = more. Hatched: not significant; grey: no value (failed, skipped, "
        "contended or missing).",
    ),
    _numa(
        name="numa_latency_per_batch",
        title="Latency per batch, placements vs sequential",
        pattern="{model}/numa_latency_per_batch/{opt}/bs{batch_size}",
        caption="One figure per optimization and batch size: latency per batch against the "
        "intra-op threads, one line per placement (``sequential`` included), so each placement "
        "is read against sequential directly.",
    ),
    _numa(
        name="numa_latency_loss",
        title="% latency loss per batch",
        pattern="{model}/numa_latency_loss/{opt}/bs{batch_size}",
        tables=WITH_DEGRADATION,
        caption="One figure per optimization and batch size: % latency degradation against "
        "each placement's baseline (``sequential``) over the intra-op threads, one line per "
        "placement; positive is slower. Error bars: the 95 % confidence interval where raw "
        "samples exist (``ci_method`` in degradation.csv: per-round paired, two-level or a "
        "within-process bootstrap); hollow markers are not significant.",
    ),
    _numa(
        name="numa_throughput_per_batch",
        title="Throughput per batch, placements vs sequential",
        pattern="{model}/numa_throughput_per_batch/{opt}/bs{batch_size}",
        metric=THROUGHPUT,
        caption="One figure per optimization and batch size: images per second against the "
        "intra-op threads, one line per placement (``sequential`` included).",
    ),
    _numa(
        name="numa_throughput_loss",
        title="% throughput loss per batch",
        pattern="{model}/numa_throughput_loss/{opt}/bs{batch_size}",
        metric=THROUGHPUT,
        tables=WITH_DEGRADATION,
        caption="One figure per optimization and batch size: % throughput degradation against "
        "each placement's baseline (``sequential``) over the intra-op threads, one line per "
        "placement; positive is fewer images per second. Error bars: the 95 % confidence "
        "interval where raw samples exist (``ci_method`` in degradation.csv); hollow markers: "
        "not significant.",
    ),
    _precision(
        name="precision_speedup",
        title="Speedup over float32 eager",
        pattern="{model}/precision_speedup/bs{batch_size}",
        plan="precision",
        tables=(*TABLES, "precision"),
        caption="One figure per batch size: each optimization's and allocator's speedup over "
        "float32 eager on the run's baseline allocator (``baseline`` in precision.csv: glibc "
        "as it comes, ``none`` / ``default``, where the grid has it, else the first of its "
        "allocators in registry order, the default grid's ``glibc_tuned``) against the intra-op "
        "threads, placement ``sequential``; > 1 is faster. Error bars: the 95 % CI of the ratio "
        "(two-level over both cells' replicates: ``ci_method`` in precision.csv); hollow: not "
        "significant. Line style: allocator. A dtype this CPU does not compute natively (bf16 "
        "emulated or on ATen's fallback, int8 without VNNI) is marked *non-native*; a cell whose "
        "outputs disagreed with float32 eager failed (``numerics``) and has no value.",
    ),
    _precision(
        name="precision_numa_loss",
        title="% latency loss per dtype",
        pattern="{model}/precision_numa_loss/{placement}/bs{batch_size}",
        plan="precision_comparison",
        tables=WITH_DEGRADATION,
        caption="One figure per placement and batch size: % latency degradation against the "
        "placement's baseline (``sequential``) over the intra-op threads, one line per "
        "optimization (its dtype in the legend): lower precision moves more of the time into "
        "memory traffic, so its NUMA effect may differ. Error bars: the confidence interval; "
        "hollow markers: not significant.",
    ),
    _node_pairs(
        name="node_pair_heatmap",
        title="CPU node x memory node: latency and % change",
        pattern="{model}/node_pair_heatmap/{opt}/bs{batch_size}",
        plan="node_pairs",
        tables=WITH_DEGRADATION,
        caption="One figure per optimization and batch size, one row of panels per intra-op "
        "thread count: the node-pair cells ``n{cpu}m{mem}`` (threads on CPU node *cpu*, rows; "
        "memory bound to node *mem*, columns). Left: the latency per batch (ms). Right: its % "
        "change against the CPU node's local diagonal ``n{cpu}m{cpu}``, (pair − diagonal) / "
        "diagonal × 100; red = slower. Hatched: not significant (the CI includes 0); "
        "cross-hatched in red: contended or noisy; grey: no value (not selected by "
        "``node_pairs``, skipped, failed or contended).",
    ),
    _node_pairs(
        name="node_pair_memory",
        title="The machine's memory matrix",
        pattern="{model}/node_pair_memory",
        plan="node_pair_memory",
        tables=("memory_matrix",),  # machine facts: no cell needed
        caption="What explains the matrix: the firmware's node distance (10 = local; "
        "``machine.json``), and the memory matrix measured on this machine, one pinned job per "
        "pair (docs/placements.md): the idle latency of a dependent load (ns, a pointer chase "
        "over a buffer 8 x the last-level cache) and one core's sequential read bandwidth "
        "(GB/s), best clean step. Rows: CPU node; columns: memory node. Grey: no job or no "
        "number (skipped without a compiler, failed).",
    ),
    _node_pairs(
        name="node_pair_scatter",
        title="Does the memory matrix predict the inference cost?",
        pattern="{model}/node_pair_scatter/{opt}",
        plan="node_pairs",
        tables=(*WITH_DEGRADATION, "memory_matrix"),
        caption="One point per off-diagonal node-pair cell (thread count: colour; batch size: "
        "marker): its % latency change against the local diagonal (y, 95 % CI; hollow: not "
        "significant) against the pair's firmware distance ratio, measured memory latency ratio "
        "and inverse read bandwidth ratio to the same diagonal (x). Each panel gives Pearson's "
        "r and the least-squares slope over the points with a value; with fewer than three "
        "distinct x values no r is given.",
    ),
    _packing(
        name="packing_latency",
        title="Fat instance vs packed plan: predicted and measured",
        pattern="{model}/packing_latency/{opt}",
        tables=WITH_PACKING,
        caption="PackRat's question from this grid (docs/packing.md): latency against the total "
        "batch B for one instance on all budget cores (*fat*, measured) and the best <instances, "
        "threads, batch> with its three latencies: predicted from the alone latencies of the "
        "``sequential`` cells, predicted with the measured interference (with its 95 % "
        "interval), and measured as concurrent pinned instances; one panel per core budget. "
        "Error bars: 95 % CI (two-level over replicates when there are several: ``ci_method`` "
        "in packing.csv). Stars: the recommendation, the measured best of the fat instance and "
        "the candidates, where it is not the predicted plan. Hollow markers: contended. "
        "Labels: the plan, the recommendation when it differs, and its measured speedup.",
    ),
    _packing(
        name="packing_interference",
        title="Interference: instances side by side",
        pattern="{model}/packing_interference/{opt}",
        tables=(*TABLES, "interference"),
        caption="The interference profile measured on this machine (docs/packing.md): the "
        "slowdown of k identical instances side by side against one alone (per node where a "
        "group spans nodes), against x, the other busy cores of an instance's node; error bars: "
        "two-level 95 % CI over replicates (``ci_method`` in interference.csv). Line and band: "
        "the model the optimizer uses, s(x) = 1 + beta x^2 fitted on these points, with its 95 % "
        "interval; without a profile the predictions assume s = 1.",
    ),
    _packing(
        name="packing_core_map",
        title="Core map of the packed plans",
        pattern="{model}/packing_core_map/{opt}",
        tables=WITH_PACKING,
        caption="Which logical CPUs each instance of the measured plan was pinned to (one row "
        "per core budget and batch size; the number in a box is the instance). No CPU is "
        "shared.",
    ),
    _compare(
        name="compare_forest",
        title="Change per cell",
        pattern="{run}/{model}/compare_forest/{opt}",
        caption="One figure per compared run and optimization: every matched cell's latency "
        "change against the baseline run, (compared − baseline) / baseline × 100 of the median "
        "(the mean for imported PackRat results), with its 95 % confidence interval (two-level: "
        "both runs' processes), cells sorted by the change. Red: *slower*, blue: *faster* "
        "(significant and at least the minimum effect, dotted), grey: no significant change; "
        "hollow, without interval: not assessed (one process per cell: nothing measures the "
        "process level). Ringed in red: contended or noisy in either run.",
    ),
    _compare(
        name="compare_heatmap",
        title="% latency change (heatmap)",
        pattern="{run}/{model}/compare_heatmap/{opt}/{placement}",
        caption="% latency change of the compared run against the baseline run, (compared − "
        "baseline) / baseline × 100, per intra-op threads (x) and batch size (y), one figure per "
        "optimization and placement. Diverging scale centred on 0: red = slower, blue = faster; "
        "values have one decimal. Hatched: not significant or not assessed; cross-hatched with "
        "a red frame: contended or noisy in either run; grey: no value (a cell of one run only, "
        "failed or contended).",
    ),
)
BY_NAME = {f.name: f for f in FAMILIES}

# "What to deploy"'s figure: not a family (none is planned from the cells), drawn from
# tables/loadtest.csv by the rule plot_loadtest (workflow/rules/deploy.smk), shown by
# templates/deploy.html.j2 and in `snakemake --report`
UNDER_LOAD = (
    "The throughput answer under load (MLPerf LoadGen, ``tables/loadtest.csv``): p99 (solid) and "
    "p50 (dashed) latency against the offered Poisson rate of one-image queries, for the "
    "recommendation and its strongest baseline; the star is the highest rate whose p99 met the "
    "bound (grey line), the dotted line each one's Offline images/s."
)


def page_sections(page: str = RUN_PAGE) -> dict[str, Section]:
    """The sections of one page, in page order."""
    return {k: s for k, s in SECTIONS.items() if s.page == page}


def page_families(page: str = RUN_PAGE) -> tuple[Family, ...]:
    """The families of one page's sections, in registry order."""
    return tuple(f for f in FAMILIES if f.page == page)
