"""PackRat's question from the user's own grid: for a total batch of B images and a budget of C
physical cores, which ⟨instances, threads, batch⟩ minimises latency?

A configuration is k concurrent instances, instance j running t_j intra-op threads on its own
t_j cores and b_j images, with Σ t_j ≤ C and Σ b_j = B (unequal splits allowed). Its predicted
latency is max_j L(t_j, b_j), where L is the measured latency of the ``sequential`` cell with
t_j threads and batch b_j (PackRat, Bhardwaj et al., ICML 2025, section 4: a dynamic programme
over (cores, images)). Only measured (t, b) points are used: a point the grid has but whose
cell failed or is absent is reported in ``missing``, never interpolated.

Pure logic, no I/O: ``latency_table`` reads a cells table (``tables/cells.csv`` or PackRat's
imported one), ``optimize`` runs the dynamic programme, ``brute_force`` enumerates every
configuration (for tests), ``budgets`` names the core budgets of a topology.

The dynamic programme, for the latency table L over measured points P:

    f(c, 0) = 0;   f(c, n) = min over (t, b) in P, t <= c, b <= n of max(L(t, b), f(c - t, n - b))

f(C, B) is the minimal predicted latency L*. Among the configurations reaching L* a second
programme picks the fewest instances, then the fewest cores (both additive, so optimal
substructure holds; a lexicographic tie-break inside the first programme would not).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from functools import cache

BASELINE_PLACEMENT = "sequential"
# The latency statistic of a cell: the median; PackRat's imported cells have only the mean.
STATISTICS = ("latency_median_ms", "latency_mean_ms")

Table = Mapping[tuple[int, int], float]  # (threads, batch) -> latency in seconds


@dataclass(frozen=True, order=True)
class Instance:
    threads: int
    batch: int
    latency_s: float  # predicted: the measured L(threads, batch)


@dataclass(frozen=True)
class Choice:
    """The best configuration for one (budget, total batch)."""

    budget: int
    batch: int
    instances: tuple[Instance, ...]  # sorted by (threads, batch) descending
    latency_s: float  # predicted latency of the configuration: max over instances
    fat_latency_s: float  # L(budget, batch): one instance on all budget cores; nan if unmeasured
    missing: tuple[tuple[int, int], ...] = field(default=())

    @property
    def k(self) -> int:
        return len(self.instances)

    @property
    def cores(self) -> int:
        return sum(i.threads for i in self.instances)

    @property
    def speedup(self) -> float:
        """Predicted fat latency / predicted plan latency (nan when the fat point is missing)."""
        return self.fat_latency_s / self.latency_s if self.latency_s > 0 else math.nan

    @property
    def is_fat(self) -> bool:
        return self.k == 1 and self.instances[0].threads == self.budget

    def label(self) -> str:
        """``2x(t1,b8)`` style: the instances grouped, largest first."""
        groups: dict[tuple[int, int], int] = {}
        for i in self.instances:
            groups[(i.threads, i.batch)] = groups.get((i.threads, i.batch), 0) + 1
        return " + ".join(f"{n}x(t{t},b{b})" for (t, b), n in groups.items())

    def to_dict(self) -> dict:
        return {
            "budget": self.budget,
            "batch": self.batch,
            "k": self.k,
            "cores": self.cores,
            "label": self.label(),
            "instances": [asdict(i) for i in self.instances],
            "latency_s": self.latency_s,
            "fat_latency_s": self.fat_latency_s,
            "speedup": self.speedup,
            "is_fat": self.is_fat,
            "missing": [list(p) for p in self.missing],
        }

    @classmethod
    def from_dict(cls, d: dict) -> Choice:
        return cls(
            budget=int(d["budget"]),
            batch=int(d["batch"]),
            instances=tuple(Instance(**i) for i in d["instances"]),
            latency_s=float(d["latency_s"]),
            fat_latency_s=float(d["fat_latency_s"]),
            missing=tuple(tuple(p) for p in d.get("missing", ())),
        )


# -- the latency table -------------------------------------------------------------------------
def statistic(cells) -> str:
    """The latency column used: the median, or the mean where no cell has a median (PackRat;
    ``stats.table_statistic``)."""
    from numa_effects import stats  # numpy: not at the workflow's parse time

    col = stats.latency_column(stats.table_statistic(cells))
    if col not in cells.columns or not cells[col].notna().any():
        raise ValueError(f"the cells table has none of {', '.join(STATISTICS)}")
    return col


def latency_table(
    cells, model: str, opt: str, placement: str = BASELINE_PLACEMENT, allocator: str = "default"
) -> dict:
    """{(threads, batch): seconds} of the ``ok`` cells of one (model, opt, placement) with
    glibc's allocator (``allocator``: packing groups run with it; a table without the column
    is glibc's)."""
    sel = cells[
        (cells["model"] == model) & (cells["opt"] == opt) & (cells["placement"] == placement)
    ]
    if "allocator" in sel.columns:
        sel = sel[sel["allocator"].fillna("default") == allocator]
    if "status" in sel.columns:
        sel = sel[sel["status"] == "ok"]
    if sel.empty:
        return {}
    col = statistic(sel)
    sel = sel[sel[col].notna() & (sel[col] > 0)]
    return {
        (int(r.threads), int(r.batch_size)): float(getattr(r, col)) / 1e3
        for r in sel.itertuples(index=False)
    }


def missing_points(
    table: Table, threads: Iterable[int], batch_sizes: Iterable[int]
) -> list[tuple[int, int]]:
    """Grid points (t, b) with no measured latency (failed, skipped or never run)."""
    return [
        (t, b)
        for t in sorted(set(threads))
        for b in sorted(set(batch_sizes))
        if (t, b) not in table
    ]


# -- the optimizer -----------------------------------------------------------------------------
def _points(table: Table, budget: int, total: int) -> list[tuple[int, int, float]]:
    return sorted(
        (t, b, lat)
        for (t, b), lat in table.items()
        if 1 <= t <= budget and 1 <= b <= total and math.isfinite(lat)
    )


def optimize(
    table: Table,
    budget: int,
    total: int,
    missing: Iterable[tuple[int, int]] = (),
    min_instances: int = 1,
) -> Choice | None:
    """The configuration of minimal predicted latency for ``total`` images on ``budget``
    cores, or None when no combination of measured points sums to ``total`` images.
    ``min_instances`` = 2 asks for the best *split* (at least two instances): what the
    ``packing`` benchmark measures when the fat instance wins, to test the prediction of
    concurrent instances."""
    if budget < 1 or total < 1 or min_instances < 1:
        raise ValueError(
            f"budget, batch and min_instances must be >= 1, got {budget}, {total}, {min_instances}"
        )
    points = _points(table, budget, total)

    # ``need``: instances still required from here on (0 once min_instances are placed).
    @cache
    def best(c: int, n: int, need: int) -> float:
        if n == 0:
            return 0.0 if need == 0 else math.inf
        out = math.inf
        for t, b, lat in points:
            if t > c:
                break
            if b <= n and lat < out:
                out = min(out, max(lat, best(c - t, n - b, max(need - 1, 0))))
        return out

    target = best(budget, total, min_instances)
    if not math.isfinite(target):
        return None
    usable = [(t, b, lat) for t, b, lat in points if lat <= target]

    # Fewest instances, then fewest cores, among configurations with every instance <= target.
    @cache
    def fewest(c: int, n: int, need: int) -> tuple[float, float, tuple]:
        if n == 0:
            return (0, 0, ()) if need == 0 else (math.inf, math.inf, ())
        out: tuple[float, float, tuple] = (math.inf, math.inf, ())
        for t, b, lat in usable:
            if t > c:
                break
            if b > n:
                continue
            k, cores, rest = fewest(c - t, n - b, max(need - 1, 0))
            cand = (k + 1, cores + t, ((t, b, lat), *rest))
            if cand[:2] < out[:2]:
                out = cand
        return out

    k, _, chosen = fewest(budget, total, min_instances)
    assert math.isfinite(k), "the second programme must reach the first one's optimum"
    instances = tuple(sorted((Instance(t, b, lat) for t, b, lat in chosen), reverse=True))
    fat = table.get((budget, total), math.nan)
    return Choice(
        budget=budget,
        batch=total,
        instances=instances,
        latency_s=max(i.latency_s for i in instances),
        fat_latency_s=float(fat),
        missing=tuple(sorted(set(missing))),
    )


def brute_force(
    table: Table, budget: int, total: int, min_instances: int = 1
) -> tuple[float, int, int] | None:
    """(latency, instances, cores) of the best configuration of at least ``min_instances``
    instances by enumerating every multiset of measured points; exponential, for tests on small
    tables."""
    points = _points(table, budget, total)
    best: tuple[float, int, int] | None = None

    def walk(start: int, cores: int, images: int, lat: float, k: int) -> None:
        nonlocal best
        if images == total and k >= min_instances:
            cand = (lat, k, cores)
            if best is None or cand < best:
                best = cand
            return
        for i in range(start, len(points)):
            t, b, pl = points[i]
            if cores + t <= budget and images + b <= total:
                walk(i, cores + t, images + b, max(lat, pl), k + 1)

    walk(0, 0, 0, 0.0, 0)
    return best


# -- budgets -----------------------------------------------------------------------------------
BUDGET_NAMES = ("node", "all")


def budgets(topo, names: Iterable[str | int] = BUDGET_NAMES, use_smt: bool = False) -> dict:
    """{cores: [names]} of the requested budgets on ``topo``: ``node`` = the usable cores of one
    NUMA node (node 0, as ``threads: auto``), ``all`` = every usable core; an integer is taken
    as it is. Budgets with the same core count are one budget (a 1-node machine has one)."""
    out: dict[int, list[str]] = {}
    for name in names:
        if name == "node":
            cores = len(topo.node_cpus(topo.nodes[0], use_smt))
        elif name == "all":
            cores = sum(len(topo.node_cpus(n, use_smt)) for n in topo.nodes)
        else:
            cores = int(name)
        out.setdefault(cores, []).append(str(name))
    return dict(sorted(out.items()))


def choices(
    cells,
    model: str,
    opt: str,
    budget_cores: Iterable[int],
    batch_sizes: Iterable[int],
    threads: Iterable[int],
) -> list[dict]:
    """One row per (budget, batch): the best configuration (``Choice.to_dict``), or a row with
    ``instances: []`` and the reason when no configuration of measured points exists."""
    table = latency_table(cells, model, opt)
    batch_sizes = sorted({int(b) for b in batch_sizes})
    missing = missing_points(table, threads, batch_sizes)
    rows = []
    for c in sorted(set(budget_cores)):
        for b in batch_sizes:
            choice = optimize(table, c, b, missing)
            base = {"model": model, "opt": opt}
            if choice is None:
                rows.append(
                    {
                        **base,
                        "budget": c,
                        "batch": b,
                        "instances": [],
                        "missing": [list(p) for p in missing],
                        "reason": "no combination of measured (threads, batch) points "
                        f"serves {b} images on {c} cores",
                    }
                )
            else:
                rows.append({**base, **choice.to_dict()})
    return rows


# -- config ------------------------------------------------------------------------------------
DEFAULTS = {
    "enabled": "auto",
    "budgets": list(BUDGET_NAMES),
    "optimizations": None,
    "max_seconds": 10,
}


def settings(config: dict, topo, threads: list[int]) -> dict:
    """The resolved ``packing`` config key (config/README.md, "Packing"): ``enabled`` (``auto``
    = on when the grid has at least two thread counts and measures ``sequential``, the
    optimizer's table), ``budgets`` ({cores: [names]}), ``optimizations`` (null = the grid's
    first one: packing adds measurement jobs, so by default one optimization's worth),
    ``max_seconds`` (per measured configuration: the fat instance and the plan each).
    ``config`` has been checked (``numa_effects.config.checks.packing_problems``)."""
    given = config.get("packing") or {}
    s = {**DEFAULTS, **{k: v for k, v in given.items() if v is not None}}
    use_smt = bool(config.get("use_smt", False))
    enabled = s["enabled"]
    if enabled == "auto":
        sequential = BASELINE_PLACEMENT in config.get("placements", ())
        enabled = len(set(threads)) >= 2 and sequential and not config.get("import")
    opts = s["optimizations"] or list(config.get("optimizations", ()))[:1]
    return {
        "enabled": bool(enabled),
        "budgets": budgets(topo, s["budgets"], use_smt),
        "optimizations": opts,
        "models": list(config.get("models", ())),
        "batch_sizes": sorted({int(b) for b in config.get("batch_sizes", ())}),
        "threads": sorted(set(threads)),
        "use_smt": use_smt,
        "max_seconds": float(s["max_seconds"]),
    }


def jobs(s: dict) -> list[dict]:
    """One measurement job per (model, opt, budget, batch): its wildcards."""
    if not s["enabled"]:
        return []
    return [
        {"model": m, "opt": o, "budget": c, "batch_size": b}
        for m in s["models"]
        for o in s["optimizations"]
        for c in s["budgets"]
        for b in s["batch_sizes"]
    ]
