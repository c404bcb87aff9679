"""The report's figure families: the one registry, and which figures a grid supports.

Pure and cheap (no matplotlib, no pandas): the workflow imports this at parse time to list the
figure targets from the config's grid (or the imported cells), so only figures whose data exist
are requested. Everything about a family is its ``Family`` entry in ``FAMILIES``:

- the Snakemake rule ``plot_<name>`` (generated in a loop in workflow/rules/report.smk; its
  inputs are ``tables``, its outputs ``pattern`` .png/.svg below ``results/report/figures/``);
- the report page's section, heading and description (``numa_effects.report.page``) and the
  ``snakemake --report`` category, subcategory and caption (workflow/report/figure.rst renders
  ``caption``): one caption text for both;
- the drawing: the function registered for the family name with ``@drawer(name)`` (in
  ``numa_effects.report.plots`` or ``packing_plots``), called as
  ``function(tables, metric=family.metric, **wildcards)`` by ``plots.draw``;
- the ``Metric`` it shows (latency or throughput: columns, labels, wording);
- which figures exist: ``plan`` names a function of ``PLANS`` that lists the wildcard values the
  cells support (``figures(keys, packed=...)``; no module state is changed to plan).

A section is on one page (``Section.page``): the run's report, or the comparison of result
folders (``COMPARE_PAGE``: config key ``compare``, ``report.compare_page``); a family is on its
section's page, planned from that page's keys (a comparison's: the matched cells with ``run``,
the compared run) and drawn from that page's tables.

Adding a family = one entry here + one ``@drawer`` function + its test
(tests/test_report_figures.py builds a throwaway family this way). A new section is one entry
of ``SECTIONS`` (its heading, anchor, and what the page says when it has no figure); a family
that needs other cells than ``PLANS`` offers adds a plan function there; a new wildcard also
needs a field of ``Figure`` and an entry of ``WILDCARD_CONSTRAINTS``. Captions are RST: only
````code```` and ``*emphasis*`` markup (the page renders those two).

Placements come from the placement registry (``numa_effects.plan.placement``): a cell is
compared with *its* baseline (``placement.baseline_of``: ``sequential``, ``sequential+smt`` for
an SMT cell, a family's own baseline such as ``n0m0`` for ``n0m1``); the Latency and Throughput
sections show the ``sequential`` cells.

Allocators (the ``allocator`` axis, ``numa_effects.plan.allocators``): the per-batch figures draw
one line per optimization and allocator (colour by optimization, line style by allocator; with
one allocator exactly as without the axis); every other family of the Latency, Throughput and
NUMA sections shows one allocator's cells, ``figure_allocator`` (the run's baseline allocator:
glibc as it comes when the grid has it, else the first in registry order); the Precision and
runtime section compares every optimization and allocator with float32 eager on that allocator
(``tables/precision.csv``) and shows the NUMA loss per dtype.
"""

from __future__ import annotations

import html
import string
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from numa_effects.plan import allocators as allocators_mod
from numa_effects.plan import compare as compare_plan
from numa_effects.plan import grid as grid_mod
from numa_effects.plan import optimizations as optimizations_mod
from numa_effects.plan import placement as placement_mod
from numa_effects.report import style

# the optimization every other is compared with in the Precision and runtime section, on the
# run's baseline allocator (``plan.allocators.baseline``)
BASE_OPT = "none"
# PackRat's grid: a run with only these optimizations and one allocator has no Precision and
# runtime figures (there is nothing beyond PackRat's question to show)
PACKRAT_OPTS = ("none", "script")


def figure_allocator(names: Iterable[str]) -> str:
    """The allocator whose cells the figures that do not tell allocators apart show: the run's
    baseline (``plan.allocators.baseline``: glibc as it comes when present, else the first in
    registry order)."""
    return allocators_mod.baseline(names)


def base_variant(names: Iterable[str]) -> tuple[str, str]:
    """(opt, allocator) of the cells every other is compared with in the Precision and runtime
    section (``tables/precision.csv``'s baseline): float32 eager on the run's baseline
    allocator, of ``names`` (the run's allocators)."""
    return BASE_OPT, figure_allocator(names)


def is_sequential(label: str) -> bool:
    """A cell of the ``sequential`` placement (``sequential+smt`` included): the Latency and
    Throughput sections' cells."""
    return placement_mod.parse_label(str(label))[0] == placement_mod.BASELINE


# -- metrics ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    """What a figure shows of a cell: latency or throughput. ``key`` is its column in the
    figure data (``report.data``: ``lat``, ``thr``, with ``<key>_lo``, ``<key>_hi`` and
    ``<key>_status``)."""

    key: str
    name: str  # "latency": in headings, labels and degradation.csv's column names
    value: str  # cells.csv column; {statistic} = median or mean (stats.latency_statistic)
    ci: tuple[str, str]  # cells.csv columns of the value's 95 % CI
    ci_statistic: str | None  # the CI is of this statistic only (None: any)
    axis: str  # y axis label; {statistic} as in ``value``
    worse: str  # what a positive degradation means
    formula: str  # the degradation, with {placement}, {baseline} and {statistic}
    measure: str  # what the degradation is of, with {statistic}

    @property
    def title(self) -> str:
        return self.name.title()

    def column(self, statistic: str) -> str:
        return self.value.format(statistic=statistic)

    def ci_columns(self, statistic: str) -> tuple[str, str] | None:
        return self.ci if self.ci_statistic in (None, statistic) else None

    def axis_label(self, statistic: str) -> str:
        return self.axis.format(statistic=statistic)

    def degradation(self, placement: str, baseline: str, statistic: str) -> str:
        return self.formula.format(placement=placement, baseline=baseline, statistic=statistic)

    def of(self, statistic: str) -> str:
        return self.measure.format(statistic=statistic)

    @property
    def degradation_columns(self) -> dict[str, str]:
        """degradation.csv columns of this metric -> the figure data's ``pct``, ``pct_lo``,
        ``pct_hi``."""
        stem = f"{self.name}_degradation"
        return {
            f"{stem}_pct": "pct",
            f"{stem}_ci_low_pct": "pct_lo",
            f"{stem}_ci_high_pct": "pct_hi",
        }


LATENCY = Metric(
    key="lat",
    name="latency",
    value="latency_{statistic}_ms",
    ci=("latency_ci_low_ms", "latency_ci_high_ms"),
    ci_statistic="median",
    axis="Latency per batch, {statistic} (ms)",
    worse="slower",
    formula="({placement} − {baseline}) / {baseline} × 100 of the {statistic} latency",
    measure="{statistic} latency",
)
THROUGHPUT = Metric(
    key="thr",
    name="throughput",
    value="throughput_ips",
    ci=("throughput_ci_low_ips", "throughput_ci_high_ips"),
    ci_statistic=None,
    axis="Throughput (images/s)",
    worse="fewer images/s",
    formula="({baseline} − {placement}) / {baseline} × 100 of the throughput",
    measure="throughput",
)
METRICS = (LATENCY, THROUGHPUT)


# -- sections -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PageFacts:
    """What a section may say about a run that gave it no figure."""

    cells: Any  # pandas DataFrame of cells.csv
    skipped: Any  # skipped.csv
    placements: Sequence[str]  # the config's (or the imported cells') placements
    imported: bool  # imported PackRat results


def _no_sequential(facts: PageFacts) -> str:
    return "No sequential cell was run, so this section has no figure."


def _e(v) -> str:
    return html.escape(str(v))


def no_numa_reason(facts: PageFacts) -> str:
    """Why a run has no NUMA figure, from the config and the tables (HTML)."""
    if facts.imported:
        return (
            "The imported results have no placement other than sequential with matching "
            "sequential cells, so there is nothing to compare."
        )
    placements = list(facts.placements)
    others = [p for p in placements if not placement_mod.is_baseline(p)]
    bases = sorted({placement_mod.baseline_of(p) for p in others})
    missing = [b for b in bases if b not in placements]
    seq = placement_mod.BASELINE
    if missing == [seq] or not placements:
        return (
            "NUMA effects compare every placement against sequential, and the config's "
            "<code>placements</code> does not list sequential."
        )
    if missing:
        return (
            "NUMA effects compare every placement against its baseline, and the config's "
            f"<code>placements</code> does not list {', '.join(missing)}."
        )
    if not others:
        return (
            "The config's <code>placements</code> lists only sequential: add interleave, remote "
            "or mem-interleave (on a machine with at least 2 NUMA nodes) to measure NUMA effects."
            if all(is_sequential(p) for p in placements)
            else f"The config's <code>placements</code> lists only baselines "
            f"({', '.join(placements)}): add a placement compared against them."
        )
    if same := _same_as_baseline(facts.cells, others):
        return (
            f"Every cell of {', '.join(same)} binds like its baseline on this machine (the same "
            "CPUs and memory nodes), so each pair is one measurement under two names "
            "(<code>same_binding_as</code> in cells.csv): there is no difference to show."
        )
    reasons = []
    skipped = facts.skipped
    if not skipped.empty and "reason" in skipped:
        sk = skipped[~skipped["placement"].map(placement_mod.is_baseline)]
        reasons = sorted(sk["reason"].dropna().astype(str).unique())
    if reasons:
        return (
            "Every cell of "
            + ", ".join(others)
            + " was skipped: "
            + "; ".join(_e(r) for r in reasons)
            + "."
        )
    return f"No cell of {', '.join(others)} has a {' or '.join(bases)} cell to compare with."


def _same_as_baseline(cells, placements) -> list[str]:
    """The ``placements`` whose every cell in ``cells`` is reported from its baseline's
    measurement (``same_binding_as``: ``plan.binding``); [] when any other has a cell."""
    if cells.empty or "same_binding_as" not in cells or "placement" not in cells:
        return []
    rows = cells[cells["placement"].isin(placements)]
    if rows.empty:
        return []
    base = rows["placement"].map(placement_mod.baseline_of)
    if not rows["same_binding_as"].eq(base).all():
        return []
    return sorted(rows["placement"].unique())


def _no_precision(facts: PageFacts) -> str:
    sk = grid_mod.fill_keys(facts.skipped)  # a table without the column is glibc's
    base = figure_allocator([*sk["allocator"], *grid_mod.fill_keys(facts.cells)["allocator"]])
    label = _e(style.allocator_label(base))
    if not sk.empty and {"opt", "reason"} <= set(sk.columns):
        beyond = sk[~sk["opt"].isin(PACKRAT_OPTS) | (sk["allocator"] != base)]
        if not beyond.empty:
            reasons = sorted(beyond["reason"].dropna().astype(str).unique())
            return (
                f"every cell beyond float32 eager and TorchScript with {label} was skipped: "
                + "; ".join(_e(r) for r in reasons)
                + "."
            )
    what = "the imported results have" if facts.imported else "the grid measures"
    others = [f"<code>{n}</code>" for n in allocators_mod.ALLOCATORS if n != base]
    return (
        f"{what} only float32 eager and TorchScript with one allocator ({label}; PackRat's"
        " question): add optimizations (<code>compile</code>, <code>bf16</code>, "
        f"<code>int8</code>, ...) or allocators ({', '.join(others)}) "
        "to see what each buys over float32 eager (docs/precision.md)."
    )


def _packing_off(facts: PageFacts) -> str:
    if facts.imported:
        return "imported results: packing measures its plans on this machine."
    return (
        "packing is off (it needs at least two thread counts and the sequential placement; "
        "config key packing, docs/packing.md)."
    )


def _no_node_pairs(facts: PageFacts) -> str:
    members = [p for p in facts.placements if placement_mod.pair_of(p) is not None]
    if facts.imported or not members:
        return (
            "the grid has no node-pair cell: add <code>node-pairs</code> to "
            "<code>placements</code> (the CPU-node x memory-node matrix, config key "
            "<code>node_pairs</code>; docs/placements.md)."
        )
    return (
        "no node-pair cell ran (a machine with one NUMA node plans only its diagonal, "
        f"{', '.join(_e(m) for m in members)}, and nothing else: see the skipped cells)."
    )


def _nothing_matched(facts: PageFacts) -> str:
    return "no matched cell has a value in both runs."


# The pages: the run's report (results/report/index.html) and a comparison of result folders
# (results/compare/<name>/index.html, report.compare_page). A section belongs to one of them.
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
    "latency": Section(
        heading="Latency (Sequential)", anchor="latency-sequential", empty=_no_sequential
    ),
    "throughput": Section(
        heading="Throughput (Sequential)", anchor="throughput-sequential", empty=_no_sequential
    ),
    "numa": Section(
        heading="NUMA Effects",
        anchor="numa-effects",
        empty=no_numa_reason,
        tables=("degradation",),
        highlight=True,
    ),
    "precision": Section(
        heading="Precision and runtime",
        anchor="precision-runtime",
        empty=_no_precision,
        tables=("precision",),
    ),
    "node_pairs": Section(
        heading="Node-pair matrix",
        anchor="node-pair-matrix",
        empty=_no_node_pairs,
        tables=("memory_matrix",),
    ),
    "packing": Section(heading="Packing", anchor="packing", empty=_packing_off),
    "compare": Section(
        heading="Comparison",
        anchor="comparison",
        empty=_nothing_matched,
        highlight=True,
        page=COMPARE_PAGE,
    ),
}


def page_sections(page: str = RUN_PAGE) -> dict[str, Section]:
    """The sections of one page, in page order."""
    return {k: s for k, s in SECTIONS.items() if s.page == page}


# -- families -----------------------------------------------------------------------------------

TABLES = ("cells", "skipped")  # the tables every figure reads (results/tables/<name>.csv)
WITH_DEGRADATION = (*TABLES, "degradation")
WITH_PACKING = (*TABLES, "packing")
WITH_INTERFERENCE = (*TABLES, "interference")
WITH_PRECISION = (*TABLES, "precision")
WITH_MEMORY = (*WITH_DEGRADATION, "memory_matrix")


@dataclass(frozen=True)
class Family:
    name: str  # rule plot_<name>, folder under report/figures/<model>/
    section: str  # key of SECTIONS
    title: str  # heading in the page and subcategory in `snakemake --report`
    pattern: str  # file path below report/figures/, without extension; its fields = wildcards
    plan: str  # key of PLANS: the cells that support one figure
    caption: str  # RST, one text for the page and `snakemake --report`
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
    def needs_degradation(self) -> bool:
        return "degradation" in self.tables

    @property
    def page(self) -> str:
        """The page its section is on (``Section.page``): its tables and figures live there."""
        return SECTIONS[self.section].page


FAMILIES: tuple[Family, ...] = (
    Family(
        name="latency_per_batch",
        section="latency",
        title="Latency per batch",
        pattern="{model}/latency_per_batch/bs{batch_size}",
        metric=LATENCY,
        plan="sequential",
        caption="One figure per batch size: latency of one batch against the intra-op threads, "
        "one line per optimization, placement ``sequential``; points carry their value. Latency "
        "is the median per batch (the mean for imported PackRat results, which have no median; "
        "the axis label says which). With several allocators, one line per optimization and "
        "allocator (line style: allocator). A dtype this CPU does not compute natively is "
        "marked *non-native* in the legend.",
    ),
    Family(
        name="latency_per_opt",
        section="latency",
        title="Latency per optimization",
        pattern="{model}/latency_per_opt/{opt}",
        metric=LATENCY,
        plan="sequential",
        caption="One figure per optimization: latency per batch against the intra-op threads, "
        "one line per batch size, placement ``sequential`` (log scale when batch sizes span "
        "orders of magnitude).",
    ),
    Family(
        name="throughput_per_batch",
        section="throughput",
        title="Throughput per batch",
        pattern="{model}/throughput_per_batch/bs{batch_size}",
        metric=THROUGHPUT,
        plan="sequential",
        caption="One figure per batch size: images per second against the intra-op threads, "
        "one line per optimization, placement ``sequential``.",
    ),
    Family(
        name="throughput_per_opt",
        section="throughput",
        title="Throughput per optimization",
        pattern="{model}/throughput_per_opt/{opt}",
        metric=THROUGHPUT,
        plan="sequential",
        caption="One figure per optimization: images per second against the intra-op threads, "
        "one line per batch size, placement ``sequential``.",
    ),
    Family(
        name="speedup",
        section="throughput",
        title="Speedup over one thread",
        pattern="{model}/speedup/{opt}",
        metric=THROUGHPUT,
        plan="sequential",
        caption="Throughput at t threads divided by throughput at the fewest threads measured, "
        "one line per batch size, their mean (dashed) and linear scaling (dotted). A batch size "
        "without a one-thread value has no line.",
    ),
    Family(
        name="throughput_per_batch_size",
        section="throughput",
        title="Throughput per batch size",
        pattern="{model}/throughput_per_batch_size/{opt}",
        metric=THROUGHPUT,
        plan="sequential",
        caption="Images per second against the batch size (log2 axis), one line per intra-op "
        "thread count, placement ``sequential``.",
    ),
    Family(
        name="latency_degradation_heatmap",
        section="numa",
        title="% latency degradation (heatmap)",
        pattern="{model}/latency_degradation_heatmap/{opt}/{placement}",
        metric=LATENCY,
        plan="comparison",
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
    Family(
        name="throughput_degradation_heatmap",
        section="numa",
        title="% throughput degradation (heatmap)",
        pattern="{model}/throughput_degradation_heatmap/{opt}/{placement}",
        metric=THROUGHPUT,
        plan="comparison",
        tables=WITH_DEGRADATION,
        caption="% throughput degradation of each placement against its baseline "
        "(``sequential``; a placement family's own), (baseline − placement) / baseline × 100, "
        "per intra-op threads (x) and batch size (y). Red = fewer images per second than the "
        "baseline, blue = more. Hatched: not significant; grey: no value (failed, skipped, "
        "contended or missing).",
    ),
    Family(
        name="numa_latency_per_batch",
        section="numa",
        title="Latency per batch, placements vs sequential",
        pattern="{model}/numa_latency_per_batch/{opt}/bs{batch_size}",
        metric=LATENCY,
        plan="comparison",
        caption="One figure per optimization and batch size: latency per batch against the "
        "intra-op threads, one line per placement (``sequential`` included), so each placement "
        "is read against sequential directly.",
    ),
    Family(
        name="numa_latency_loss",
        section="numa",
        title="% latency loss per batch",
        pattern="{model}/numa_latency_loss/{opt}/bs{batch_size}",
        metric=LATENCY,
        plan="comparison",
        tables=WITH_DEGRADATION,
        caption="One figure per optimization and batch size: % latency degradation against "
        "each placement's baseline (``sequential``) over the intra-op threads, one line per "
        "placement; positive is slower. Error bars: the 95 % confidence interval where raw "
        "samples exist (``ci_method`` in degradation.csv: per-round paired, two-level or a "
        "within-process bootstrap); hollow markers are not significant.",
    ),
    Family(
        name="numa_throughput_per_batch",
        section="numa",
        title="Throughput per batch, placements vs sequential",
        pattern="{model}/numa_throughput_per_batch/{opt}/bs{batch_size}",
        metric=THROUGHPUT,
        plan="comparison",
        caption="One figure per optimization and batch size: images per second against the "
        "intra-op threads, one line per placement (``sequential`` included).",
    ),
    Family(
        name="numa_throughput_loss",
        section="numa",
        title="% throughput loss per batch",
        pattern="{model}/numa_throughput_loss/{opt}/bs{batch_size}",
        metric=THROUGHPUT,
        plan="comparison",
        tables=WITH_DEGRADATION,
        caption="One figure per optimization and batch size: % throughput degradation against "
        "each placement's baseline (``sequential``) over the intra-op threads, one line per "
        "placement; positive is fewer images per second. Error bars: the 95 % confidence "
        "interval where raw samples exist (``ci_method`` in degradation.csv); hollow markers: "
        "not significant.",
    ),
    Family(
        name="precision_speedup",
        section="precision",
        title="Speedup over float32 eager",
        pattern="{model}/precision_speedup/bs{batch_size}",
        metric=LATENCY,
        plan="precision",
        tables=WITH_PRECISION,
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
    Family(
        name="precision_numa_loss",
        section="precision",
        title="% latency loss per dtype",
        pattern="{model}/precision_numa_loss/{placement}/bs{batch_size}",
        metric=LATENCY,
        plan="precision_comparison",
        tables=WITH_DEGRADATION,
        caption="One figure per placement and batch size: % latency degradation against the "
        "placement's baseline (``sequential``) over the intra-op threads, one line per "
        "optimization (its dtype in the legend): lower precision moves more of the time into "
        "memory traffic, so its NUMA effect may differ. Error bars: the confidence interval; "
        "hollow markers: not significant.",
    ),
    Family(
        name="node_pair_heatmap",
        section="node_pairs",
        title="CPU node x memory node: latency and % change",
        pattern="{model}/node_pair_heatmap/{opt}/bs{batch_size}",
        metric=LATENCY,
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
    Family(
        name="node_pair_memory",
        section="node_pairs",
        title="The machine's memory matrix",
        pattern="{model}/node_pair_memory",
        metric=LATENCY,
        plan="node_pair_memory",
        tables=("memory_matrix",),  # machine facts: no cell needed
        caption="What explains the matrix: the firmware's node distance (10 = local; "
        "``machine.json``), and the memory matrix measured on this machine, one pinned job per "
        "pair (docs/placements.md): the idle latency of a dependent load (ns, a pointer chase "
        "over a buffer 8 x the last-level cache) and one core's sequential read bandwidth "
        "(GB/s), best clean step. Rows: CPU node; columns: memory node. Grey: no job or no "
        "number (skipped without a compiler, failed).",
    ),
    Family(
        name="node_pair_scatter",
        section="node_pairs",
        title="Does the memory matrix predict the inference cost?",
        pattern="{model}/node_pair_scatter/{opt}",
        metric=LATENCY,
        plan="node_pairs",
        tables=WITH_MEMORY,
        caption="One point per off-diagonal node-pair cell (thread count: colour; batch size: "
        "marker): its % latency change against the local diagonal (y, 95 % CI; hollow: not "
        "significant) against the pair's firmware distance ratio, measured memory latency ratio "
        "and inverse read bandwidth ratio to the same diagonal (x). Each panel gives Pearson's "
        "r and the least-squares slope over the points with a value; with fewer than three "
        "distinct x values no r is given.",
    ),
    Family(
        name="packing_latency",
        section="packing",
        title="Fat instance vs packed plan: predicted and measured",
        pattern="{model}/packing_latency/{opt}",
        metric=LATENCY,
        plan="packing",
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
    Family(
        name="packing_interference",
        section="packing",
        title="Interference: instances side by side",
        pattern="{model}/packing_interference/{opt}",
        metric=LATENCY,
        plan="packing",
        tables=WITH_INTERFERENCE,
        caption="The interference profile measured on this machine (docs/packing.md): the "
        "slowdown of k identical instances side by side against one alone (per node where a "
        "group spans nodes), against x, the other busy cores of an instance's node; error bars: "
        "two-level 95 % CI over replicates (``ci_method`` in interference.csv). Line and band: "
        "the model the optimizer uses, s(x) = 1 + beta x^2 fitted on these points, with its 95 % "
        "interval; without a profile the predictions assume s = 1.",
    ),
    Family(
        name="packing_core_map",
        section="packing",
        title="Core map of the packed plans",
        pattern="{model}/packing_core_map/{opt}",
        metric=LATENCY,
        plan="packing",
        tables=WITH_PACKING,
        caption="Which logical CPUs each instance of the measured plan was pinned to (one row "
        "per core budget and batch size; the number in a box is the instance). No CPU is "
        "shared.",
    ),
    Family(
        name="compare_forest",
        section="compare",
        title="Change per cell",
        pattern="{run}/{model}/compare_forest/{opt}",
        metric=LATENCY,
        plan="compare",
        tables=("compare",),
        caption="One figure per compared run and optimization: every matched cell's latency "
        "change against the baseline run, (compared − baseline) / baseline × 100 of the median "
        "(the mean for imported PackRat results), with its 95 % confidence interval (two-level: "
        "both runs' processes), cells sorted by the change. Red: *slower*, blue: *faster* "
        "(significant and at least the minimum effect, dotted), grey: no significant change; "
        "hollow, without interval: not assessed (one process per cell: nothing measures the "
        "process level). Ringed in red: contended or noisy in either run.",
    ),
    Family(
        name="compare_heatmap",
        section="compare",
        title="% latency change (heatmap)",
        pattern="{run}/{model}/compare_heatmap/{opt}/{placement}",
        metric=LATENCY,
        plan="compare",
        tables=("compare",),
        caption="% latency change of the compared run against the baseline run, (compared − "
        "baseline) / baseline × 100, per intra-op threads (x) and batch size (y), one figure per "
        "optimization and placement. Diverging scale centred on 0: red = slower, blue = faster; "
        "values have one decimal. Hatched: not significant or not assessed; cross-hatched with "
        "a red frame: contended or noisy in either run; grey: no value (a cell of one run only, "
        "failed or contended).",
    ),
)
BY_NAME = {f.name: f for f in FAMILIES}

# Wildcard values never contain a slash; numbers are plain integers.
WILDCARD_CONSTRAINTS = {
    "model": r"[A-Za-z0-9_.-]+",
    "opt": r"[A-Za-z0-9_.-]+",
    "placement": placement_mod.names_regex(),  # the registry's names and families (+smt)
    "batch_size": r"\d+",
    "run": compare_plan.LABEL,  # a compared run's label (plan.compare)
    "compare": compare_plan.LABEL,  # the comparison's name: its folder
}

# -- draw functions -------------------------------------------------------------------------------

# Family name -> its draw function, filled by ``@drawer`` where the functions are defined
# (report.plots, report.packing_plots: importing plots imports both).
DRAWERS: dict[str, Callable] = {}


def drawer(*families: str):
    """Register the decorated function as the draw function of ``families`` (one each)."""

    def register(fn):
        for name in families:
            old = DRAWERS.get(name)
            if old is not None and (old.__module__, old.__qualname__) != (
                fn.__module__,
                fn.__qualname__,
            ):
                raise ValueError(
                    f"family {name!r} has two draw functions: {old.__qualname__} and "
                    f"{fn.__qualname__}"
                )
            DRAWERS[name] = fn
        return fn

    return register


# -- which figures exist --------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Figure:
    """One figure target: a family and the values of its wildcards."""

    family: str
    model: str
    opt: str = ""
    placement: str = ""
    batch_size: int = 0
    run: str = ""  # the compared run (a comparison's figures)

    @property
    def spec(self) -> Family:
        return BY_NAME[self.family]

    @property
    def wildcards(self) -> dict:
        return {w: getattr(self, w) for w in self.spec.wildcards}

    def path(self, folder: str, ext: str = "png") -> str:
        """File of this figure below ``folder`` (the report's figures/ folder)."""
        return f"{folder}/{self.spec.pattern.format(**self.wildcards)}.{ext}"

    def as_dict(self) -> dict:
        return {
            "family": self.family,
            "section": self.spec.section,
            "model": self.model,
            "opt": self.opt,
            "placement": self.placement,
            "batch_size": self.batch_size,
            "run": self.run,
        }


def _order(fig: Figure) -> tuple:
    return (fig.model, list(BY_NAME).index(fig.family), fig)


def _key_values(keys: Iterable) -> list[dict]:
    out = []
    for k in keys:
        get = k.get if isinstance(k, dict) else lambda a, d=None, k=k: getattr(k, a, d)
        out.append(
            {
                "model": get("model"),
                "opt": get("opt"),
                "placement": get("placement"),
                "batch_size": int(get("batch_size")),
                "run": (k.get("run") if isinstance(k, dict) else getattr(k, "run", "")) or "",
                "allocator": get("allocator", None) or allocators_mod.GLIBC,
            }
        )
    return out


def _of_figure_allocator(keys: list[dict]) -> list[dict]:
    """The keys of the allocator the single-allocator figures show (``figure_allocator``)."""
    alloc = figure_allocator(k["allocator"] for k in keys)
    return [k for k in keys if k["allocator"] == alloc]


def plan_sequential(keys: list[dict], packed: frozenset = frozenset()) -> list[dict]:
    """Wildcard values of the cells of the ``sequential`` placement (``sequential+smt``)."""
    return [k for k in keys if is_sequential(k["placement"])]


def plan_comparison(keys: list[dict], packed: frozenset = frozenset()) -> list[dict]:
    """Wildcard values of the cells of a placement that is not a baseline and whose baseline
    (``placement.baseline_of``) has a cell at the same model, opt and batch size (an SMT cell
    only with sequential+smt; ``n0m1`` with ``n0m0``)."""
    keys = _of_figure_allocator(keys)
    have = {(k["model"], k["opt"], k["placement"], k["batch_size"]) for k in keys}
    out = []
    for k in keys:
        base = placement_mod.baseline_of(k["placement"])
        if base is not None and (k["model"], k["opt"], base, k["batch_size"]) in have:
            out.append(k)
    return out


def plan_packing(keys: list[dict], packed: frozenset = frozenset()) -> list[dict]:
    """One figure per packed (model, opt): ``packed`` (from the config key ``packing``:
    ``plan.build.Plan.packed``); none without packing."""
    return [{"model": m, "opt": o, "placement": "", "batch_size": 0} for m, o in sorted(packed)]


def plan_compare(keys: list[dict], packed: frozenset = frozenset()) -> list[dict]:
    """Wildcard values of the matched cells of a comparison of runs (``run``: the compared
    run; ``tables.compare_runs.matched_keys``); none for a run's own cells."""
    return [k for k in keys if k["run"]]


def beyond_packrat(keys: list[dict]) -> bool:
    """The grid measures more than PackRat's eager and TorchScript with one allocator."""
    return len({k["allocator"] for k in keys}) > 1 or any(
        k["opt"] not in PACKRAT_OPTS for k in keys
    )


def dtype_of(opt: str) -> str:
    entry = optimizations_mod.OPTIMIZATIONS.get(str(opt))
    return entry.dtype if entry else "float32"


def plan_precision(keys: list[dict], packed: frozenset = frozenset()) -> list[dict]:
    """One figure per (model, batch size) whose ``sequential`` cells have the baseline variant
    (float32 eager on the run's baseline allocator) and another one, in a grid beyond
    PackRat's."""
    if not beyond_packrat(keys):
        return []
    seq = [k for k in keys if is_sequential(k["placement"])]
    variant = base_variant(k["allocator"] for k in keys)
    base = {(k["model"], k["batch_size"]) for k in seq if (k["opt"], k["allocator"]) == variant}
    return [
        k
        for k in seq
        if (k["model"], k["batch_size"]) in base and (k["opt"], k["allocator"]) != variant
    ]


def plan_precision_comparison(keys: list[dict], packed: frozenset = frozenset()) -> list[dict]:
    """The comparison cells (``plan_comparison``) of models measured in at least two dtypes."""
    if not beyond_packrat(keys):
        return []
    dtypes: dict[str, set] = {}
    for k in _of_figure_allocator(keys):
        dtypes.setdefault(k["model"], set()).add(dtype_of(k["opt"]))
    return [k for k in plan_comparison(keys) if len(dtypes.get(k["model"], ())) > 1]


def plan_node_pairs(keys: list[dict], packed: frozenset = frozenset()) -> list[dict]:
    """The node-pair cells (``n{cpu}m{mem}``) off the diagonal whose diagonal was run
    (``plan_comparison``): a 1-node machine's diagonal alone has nothing to compare."""
    return [k for k in plan_comparison(keys) if placement_mod.pair_of(k["placement"])]


def plan_node_pair_memory(keys: list[dict], packed: frozenset = frozenset()) -> list[dict]:
    """One figure per model with any node-pair cell, the diagonal's included: the memory jobs
    are planned from the same cells (``plan.build.memory_jobs``)."""
    models = {k["model"] for k in keys if placement_mod.pair_of(k["placement"])}
    return [{"model": m} for m in sorted(models)]


PLANS: dict[str, Callable[..., list[dict]]] = {
    "node_pairs": plan_node_pairs,
    "node_pair_memory": plan_node_pair_memory,
    "sequential": plan_sequential,
    "comparison": plan_comparison,
    "packing": plan_packing,
    "compare": plan_compare,
    "precision": plan_precision,
    "precision_comparison": plan_precision_comparison,
}


def page_families(page: str = RUN_PAGE) -> tuple[Family, ...]:
    """The families of one page's sections, in registry order."""
    return tuple(f for f in FAMILIES if f.page == page)


def figures(
    keys: Iterable,
    families: Iterable[Family] | None = None,
    packed: Iterable[tuple[str, str]] = (),
) -> list[Figure]:
    """Every figure the cells ``keys`` support, in page order.

    ``keys``: objects with ``model, opt, placement, threads, batch_size`` attributes (grid
    ``CellKey``) or dicts with those keys: the cells that run (or ran). Skipped cells are not
    keys, nor a cell compared with itself (``Grid.drawn``): a 1-node machine's interleaved
    cells bind like its sequential ones, hence it gets no NUMA figure. ``packed``: the (model,
    opt) pairs that packing measures (the Packing figures). ``families``: default
    the run page's (``page_families()``); a comparison's are ``page_families(COMPARE_PAGE)``,
    planned from its matched keys (dicts with ``run``).
    """
    families = page_families() if families is None else tuple(families)
    values = _key_values(keys)
    packed = frozenset((str(m), str(o)) for m, o in packed)
    planned = {p: PLANS[p](values, packed) for p in {f.plan for f in families}}
    out = {
        Figure(fam.name, **{w: v[w] for w in fam.wildcards})
        for fam in families
        for v in planned[fam.plan]
    }
    return sorted(out, key=_order)


def from_dict(d: dict) -> Figure:
    return Figure(
        d["family"],
        d["model"],
        d.get("opt", ""),
        d.get("placement", ""),
        int(d.get("batch_size", 0)),
        d.get("run", ""),
    )
