"""The report's figure families and which figures a grid supports (no plotting here).

Pure and cheap: the workflow imports this at parse time to list the figure targets from the
config's grid (or the imported cells), so only figures whose data exist are requested. Each
family is drawn by one Snakemake rule (``plot_<name>``) whose wildcards are the family's varying
part; ``numa_effects.plots`` draws them and ``numa_effects.report_html`` lays them out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

BASELINE = "sequential"
SMT_SUFFIX = "+smt"  # cells run with use_smt are labelled <placement>+smt (placement.label)


def baseline_of(placement: str) -> str:
    """The placement a cell is compared against: ``sequential`` (``sequential+smt`` for SMT)."""
    return BASELINE + SMT_SUFFIX if str(placement).endswith(SMT_SUFFIX) else BASELINE


def is_baseline(placement: str) -> bool:
    return placement in (BASELINE, BASELINE + SMT_SUFFIX)


# Section key -> (heading, HTML anchor). Order is the page order.
SECTIONS = {
    "latency": ("Latency (Sequential)", "latency-sequential"),
    "throughput": ("Throughput (Sequential)", "throughput-sequential"),
    "numa": ("NUMA Effects", "numa-effects"),
}


@dataclass(frozen=True)
class Family:
    name: str  # rule plot_<name>, folder under report/figures/<model>/
    section: str  # key of SECTIONS
    title: str  # heading in the page and subcategory in `snakemake --report`
    pattern: str  # file path below report/figures/, without extension
    needs_degradation: bool = False

    @property
    def wildcards(self) -> tuple[str, ...]:
        import string

        return tuple(f for _, f, _, _ in string.Formatter().parse(self.pattern) if f)


_F = Family
FAMILIES: tuple[Family, ...] = (
    _F("latency_per_batch", "latency", "Latency per batch",
       "{model}/latency_per_batch/bs{batch_size}"),
    _F("latency_per_opt", "latency", "Latency per optimization", "{model}/latency_per_opt/{opt}"),
    _F("throughput_per_batch", "throughput", "Throughput per batch",
       "{model}/throughput_per_batch/bs{batch_size}"),
    _F("throughput_per_opt", "throughput", "Throughput per optimization",
       "{model}/throughput_per_opt/{opt}"),
    _F("speedup", "throughput", "Speedup over one thread", "{model}/speedup/{opt}"),
    _F("throughput_per_batch_size", "throughput", "Throughput per batch size",
       "{model}/throughput_per_batch_size/{opt}"),
    _F("latency_degradation_heatmap", "numa", "% latency degradation (heatmap)",
       "{model}/latency_degradation_heatmap/{opt}/{placement}", True),
    _F("throughput_degradation_heatmap", "numa", "% throughput degradation (heatmap)",
       "{model}/throughput_degradation_heatmap/{opt}/{placement}", True),
    _F("numa_latency_per_batch", "numa", "Latency per batch, placements vs sequential",
       "{model}/numa_latency_per_batch/{opt}/bs{batch_size}"),
    _F("numa_latency_loss", "numa", "% latency loss per batch",
       "{model}/numa_latency_loss/{opt}/bs{batch_size}", True),
    _F("numa_throughput_per_batch", "numa", "Throughput per batch, placements vs sequential",
       "{model}/numa_throughput_per_batch/{opt}/bs{batch_size}"),
    _F("numa_throughput_loss", "numa", "% throughput loss per batch",
       "{model}/numa_throughput_loss/{opt}/bs{batch_size}", True),
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
    return (fig.model, [f.name for f in FAMILIES].index(fig.family), fig)


def figures(keys: Iterable) -> list[Figure]:
    """Every figure the cells ``keys`` support, in page order.

    ``keys``: objects with ``model, opt, placement, threads, batch_size`` attributes (grid
    ``CellKey``) or dicts with those keys: the cells that run (or ran). Skipped cells are not
    keys: a 1-node machine lists no interleaved cell, hence gets no NUMA figure.
    """
    seq: set[tuple] = set()  # (model, opt, baseline, batch_size) run with a baseline placement
    other: set[tuple] = set()  # (model, opt, placement, batch_size) run with another placement
    for k in keys:
        get = k.get if isinstance(k, dict) else lambda a, k=k: getattr(k, a)
        model, opt, place, bs = get("model"), get("opt"), get("placement"), int(get("batch_size"))
        if is_baseline(place):
            seq.add((model, opt, place, bs))
        else:
            other.add((model, opt, place, bs))
    out: set[Figure] = set()
    for model, opt, _, bs in seq:
        out |= {
            Figure("latency_per_batch", model, batch_size=bs),
            Figure("throughput_per_batch", model, batch_size=bs),
        }
        for fam in (
            "latency_per_opt",
            "throughput_per_opt",
            "speedup",
            "throughput_per_batch_size",
        ):
            out.add(Figure(fam, model, opt))
    for model, opt, place, bs in other:
        if (model, opt, baseline_of(place), bs) not in seq:
            continue  # nothing to compare against at this batch size
        for fam in ("latency_degradation_heatmap", "throughput_degradation_heatmap"):
            out.add(Figure(fam, model, opt, place))
        for fam in (
            "numa_latency_per_batch",
            "numa_latency_loss",
            "numa_throughput_per_batch",
            "numa_throughput_loss",
        ):
            out.add(Figure(fam, model, opt, batch_size=bs))
    return sorted(out, key=_order)


def from_dict(d: dict) -> Figure:
    return Figure(
        d["family"],
        d["model"],
        d.get("opt", ""),
        d.get("placement", ""),
        int(d.get("batch_size", 0)),
    )
