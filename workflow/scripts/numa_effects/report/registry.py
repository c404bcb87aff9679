"""The report's figure families: the one registry, and which figures a grid supports.

Pure and cheap (no matplotlib, no pandas): the workflow imports this at parse time to list the
figure targets from the config's grid (or the imported cells), so only figures whose data exist
are requested. Everything about a family is its ``Family`` entry in ``FAMILIES``:

- the Snakemake rule ``plot_<name>`` (generated in a loop in workflow/rules/report.smk; its
  inputs are ``tables``, its outputs ``pattern`` .png/.svg below ``results/report/figures/``);
- the report page's section, heading and description (``numa_effects.report.page``) and the
  ``snakemake --report`` category, subcategory and caption (workflow/report/figure.rst renders
  ``caption``): one caption text for both;
- the drawing: ``draw`` names a function ``"<module>.<function>"`` of this package, called as
  ``function(tables, metric=metric, **wildcards)`` (``numa_effects.report.plots.draw``);
- which figures exist: ``plan`` names a function of ``PLANS`` that lists the wildcard values the
  cells support.

Adding a family = one entry here + one draw function + its test (tests/test_report_figures.py
builds a throwaway family this way). A new section is one entry of ``SECTIONS``; a family that
needs other cells than ``PLANS`` offers adds a plan function there; a new wildcard also needs a
field of ``Figure`` and an entry of ``WILDCARD_CONSTRAINTS``. Captions are RST: only ````code````
and ``*emphasis*`` markup (the page renders those two).
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

BASELINE = "sequential"
SMT_SUFFIX = "+smt"  # cells run with use_smt are labelled <placement>+smt (placement.label)


def baseline_of(placement: str) -> str:
    """The placement a cell is compared against: ``sequential`` (``sequential+smt`` for SMT)."""
    return BASELINE + SMT_SUFFIX if str(placement).endswith(SMT_SUFFIX) else BASELINE


def is_baseline(placement: str) -> bool:
    return placement in (BASELINE, BASELINE + SMT_SUFFIX)


class Section(NamedTuple):
    heading: str
    anchor: str  # HTML id; the page's navigation links to it
    empty: str = ""  # what the page says when the section has no figure (numa: computed)


# Section key -> Section. Order is the page order.
SECTIONS = {
    "latency": Section(
        "Latency (Sequential)",
        "latency-sequential",
        "No sequential cell was run, so this section has no figure.",
    ),
    "throughput": Section(
        "Throughput (Sequential)",
        "throughput-sequential",
        "No sequential cell was run, so this section has no figure.",
    ),
    "numa": Section("NUMA Effects", "numa-effects"),
    "packing": Section(
        "Packing",
        "packing",
        "packing is off (it needs at least two thread counts and the sequential placement; "
        "config key packing, docs/packing.md).",
    ),
}

TABLES = ("cells", "skipped")  # the tables every figure reads (results/tables/<name>.csv)


@dataclass(frozen=True)
class Family:
    name: str  # rule plot_<name>, folder under report/figures/<model>/
    section: str  # key of SECTIONS
    title: str  # heading in the page and subcategory in `snakemake --report`
    pattern: str  # file path below report/figures/, without extension; its fields = wildcards
    draw: str  # "<module>.<function>" in numa_effects
    metric: str  # passed to the draw function: "lat" (latency) or "thr" (throughput)
    plan: str  # key of PLANS: the cells that support one figure
    caption: str  # RST, one text for the page and `snakemake --report`
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


_D = (*TABLES, "degradation")
_F = Family
FAMILIES: tuple[Family, ...] = (
    _F("latency_per_batch", "latency", "Latency per batch",
       "{model}/latency_per_batch/bs{batch_size}", "plots.per_batch", "lat", "sequential",
       "One figure per batch size: latency of one batch against the intra-op threads, one line "
       "per optimization, placement ``sequential``; points carry their value. Latency is the "
       "median per batch (the mean for imported PackRat results, which have no median; the axis "
       "label says which)."),
    _F("latency_per_opt", "latency", "Latency per optimization",
       "{model}/latency_per_opt/{opt}", "plots.per_opt", "lat", "sequential",
       "One figure per optimization: latency per batch against the intra-op threads, one line "
       "per batch size, placement ``sequential`` (log scale when batch sizes span orders of "
       "magnitude)."),
    _F("throughput_per_batch", "throughput", "Throughput per batch",
       "{model}/throughput_per_batch/bs{batch_size}", "plots.per_batch", "thr", "sequential",
       "One figure per batch size: images per second against the intra-op threads, one line per "
       "optimization, placement ``sequential``."),
    _F("throughput_per_opt", "throughput", "Throughput per optimization",
       "{model}/throughput_per_opt/{opt}", "plots.per_opt", "thr", "sequential",
       "One figure per optimization: images per second against the intra-op threads, one line "
       "per batch size, placement ``sequential``."),
    _F("speedup", "throughput", "Speedup over one thread",
       "{model}/speedup/{opt}", "plots.speedup", "thr", "sequential",
       "Throughput at t threads divided by throughput at the fewest threads measured, one line "
       "per batch size, their mean (dashed) and linear scaling (dotted). A batch size without a "
       "one-thread value has no line."),
    _F("throughput_per_batch_size", "throughput", "Throughput per batch size",
       "{model}/throughput_per_batch_size/{opt}", "plots.throughput_per_batch_size", "thr",
       "sequential",
       "Images per second against the batch size (log2 axis), one line per intra-op thread "
       "count, placement ``sequential``."),
    _F("latency_degradation_heatmap", "numa", "% latency degradation (heatmap)",
       "{model}/latency_degradation_heatmap/{opt}/{placement}", "plots.heatmap", "lat",
       "comparison",
       "% latency degradation of each placement against ``sequential``, (placement − "
       "sequential) / sequential × 100, per intra-op threads (x) and batch size (y). Diverging "
       "scale centred on 0: red = slower, blue = faster than sequential; values have one "
       "decimal. Hatched: not significant (the confidence interval includes 0, when raw samples "
       "exist). Grey: no value (failed, skipped or missing cell).", _D),
    _F("throughput_degradation_heatmap", "numa", "% throughput degradation (heatmap)",
       "{model}/throughput_degradation_heatmap/{opt}/{placement}", "plots.heatmap", "thr",
       "comparison",
       "% throughput degradation of each placement against ``sequential``, (sequential − "
       "placement) / sequential × 100, per intra-op threads (x) and batch size (y). Red = fewer "
       "images per second than sequential, blue = more. Hatched: not significant; grey: no "
       "value (failed, skipped or missing).", _D),
    _F("numa_latency_per_batch", "numa", "Latency per batch, placements vs sequential",
       "{model}/numa_latency_per_batch/{opt}/bs{batch_size}", "plots.numa_per_batch", "lat",
       "comparison",
       "One figure per optimization and batch size: latency per batch against the intra-op "
       "threads, one line per placement (``sequential`` included), so each placement is read "
       "against sequential directly."),
    _F("numa_latency_loss", "numa", "% latency loss per batch",
       "{model}/numa_latency_loss/{opt}/bs{batch_size}", "plots.numa_loss", "lat", "comparison",
       "One figure per optimization and batch size: % latency degradation against "
       "``sequential`` over the intra-op threads, one line per placement; positive is slower. "
       "Error bars are the bootstrap confidence interval where raw samples exist; hollow "
       "markers are not significant.", _D),
    _F("numa_throughput_per_batch", "numa", "Throughput per batch, placements vs sequential",
       "{model}/numa_throughput_per_batch/{opt}/bs{batch_size}", "plots.numa_per_batch", "thr",
       "comparison",
       "One figure per optimization and batch size: images per second against the intra-op "
       "threads, one line per placement (``sequential`` included)."),
    _F("numa_throughput_loss", "numa", "% throughput loss per batch",
       "{model}/numa_throughput_loss/{opt}/bs{batch_size}", "plots.numa_loss", "thr",
       "comparison",
       "One figure per optimization and batch size: % throughput degradation against "
       "``sequential`` over the intra-op threads, one line per placement; positive is fewer "
       "images per second. Error bars: confidence interval where raw samples exist; hollow "
       "markers: not significant.", _D),
    _F("packing_latency", "packing", "Fat instance vs packed plan",
       "{model}/packing_latency/{opt}", "packing_plots.latency", "lat", "packing",
       "PackRat's question from this grid (docs/packing.md): latency against the total batch B "
       "for one instance on all budget cores (*fat*, measured), the best <instances, threads, "
       "batch> predicted from the ``sequential`` cells, and that plan measured as concurrent "
       "pinned instances; one panel per core budget. Error bars: 95 % CI of the median round "
       "latency (two-level over replicates when there are several: ``ci_method`` in "
       "packing.csv). Hollow markers: contended. Labels: the plan and the measured speedup.",
       (*TABLES, "packing")),
    _F("packing_core_map", "packing", "Core map of the packed plans",
       "{model}/packing_core_map/{opt}", "packing_plots.core_map", "lat", "packing",
       "Which logical CPUs each instance of the measured plan was pinned to (one row per core "
       "budget and batch size; the number in a box is the instance). No CPU is shared.",
       (*TABLES, "packing")),
)  # fmt: skip
BY_NAME = {f.name: f for f in FAMILIES}

# Wildcard values never contain a slash; numbers are plain integers.
WILDCARD_CONSTRAINTS = {
    "model": r"[A-Za-z0-9_.-]+",
    "opt": r"[A-Za-z0-9_.-]+",
    "placement": r"[A-Za-z0-9_.-]+",
    "batch_size": r"\d+",
}


@dataclass(frozen=True, order=True)
class Figure:
    """One figure target: a family and the values of its wildcards."""

    family: str
    model: str
    opt: str = ""
    placement: str = ""
    batch_size: int = 0

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
        }


def _order(fig: Figure) -> tuple:
    return (fig.model, list(BY_NAME).index(fig.family), fig)


def _key_values(keys: Iterable) -> list[dict]:
    out = []
    for k in keys:
        get = k.get if isinstance(k, dict) else lambda a, k=k: getattr(k, a)
        out.append(
            {
                "model": get("model"),
                "opt": get("opt"),
                "placement": get("placement"),
                "batch_size": int(get("batch_size")),
            }
        )
    return out


def plan_sequential(keys: list[dict]) -> list[dict]:
    """Wildcard values of the cells run with a baseline placement (sequential[+smt])."""
    return [k for k in keys if is_baseline(k["placement"])]


def plan_comparison(keys: list[dict]) -> list[dict]:
    """Wildcard values of the cells of another placement that have a baseline cell to compare
    with at the same model, opt and batch size (an SMT cell only with sequential+smt)."""
    seq = {(k["model"], k["opt"], k["placement"], k["batch_size"]) for k in keys}
    return [
        k
        for k in keys
        if not is_baseline(k["placement"])
        and (k["model"], k["opt"], baseline_of(k["placement"]), k["batch_size"]) in seq
    ]


def plan_packing(keys: list[dict]) -> list[dict]:
    """None by default: which (model, opt) were packed depends on the config key ``packing``,
    so workflow/rules/packing.smk replaces this entry with ``packing.figure_plan``."""
    return []


PLANS: dict[str, Callable[[list[dict]], list[dict]]] = {
    "sequential": plan_sequential,
    "comparison": plan_comparison,
    "packing": plan_packing,
}


def figures(keys: Iterable, families: Iterable[Family] | None = None) -> list[Figure]:
    """Every figure the cells ``keys`` support, in page order.

    ``keys``: objects with ``model, opt, placement, threads, batch_size`` attributes (grid
    ``CellKey``) or dicts with those keys: the cells that run (or ran). Skipped cells are not
    keys: a 1-node machine lists no interleaved cell, hence gets no NUMA figure.
    """
    families = FAMILIES if families is None else tuple(families)
    values = _key_values(keys)
    planned = {p: PLANS[p](values) for p in {f.plan for f in families}}
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
    )
