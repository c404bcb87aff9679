"""PackRat's question from the user's own grid (Bhardwaj et al., ICML 2025, section 4): which k
instances of t_j threads and b_j images (Σ t_j ≤ C, Σ b_j = B) minimise the predicted latency
max_j L(t_j, b_j), L the measured ``sequential`` cells (never interpolated: ``missing``)? The
dynamic programme f(c, n) = min over (t, b) of max(L(t, b), f(c - t, n - b)), then a second
picking the fewest instances, then cores, among those reaching f(C, B) (additive, so optimal
substructure holds; a tie-break inside the first would not). With interference: ``planner``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from functools import cache

from numa_effects import stats
from numa_effects.analysis import interference
from numa_effects.plan import allocators, grid
from numa_effects.plan.packing import BASELINE_PLACEMENT

Table = Mapping[tuple[int, int], float]  # (threads, batch) -> latency in seconds


@dataclass(frozen=True, order=True)
class Instance:
    threads: int
    batch: int
    latency_s: float  # the measured L(threads, batch): alone
    slowdown: float = 1.0  # s(x) of the interference model at the instance's co-runner cores
    node: int = 0  # index of its node among the budget's nodes (-1: it straddles nodes)


@dataclass(frozen=True)
class Choice:
    """A configuration for one (budget, total batch): the best one, or a candidate."""

    budget: int
    batch: int
    instances: tuple[Instance, ...]  # sorted by (threads, batch) descending
    latency_s: float  # predicted latency: max over instances of alone x slowdown
    fat_latency_s: float  # L(budget, batch): one instance on all budget cores; nan if unmeasured
    missing: tuple[tuple[int, int], ...] = field(default=())
    ci_low_s: float = math.nan  # 95 % interval of latency_s (analysis.interference.predict)
    ci_high_s: float = math.nan

    @property
    def alone_s(self) -> float:
        """The prediction from the alone latencies only (no interference)."""
        return max(i.latency_s for i in self.instances)

    @property
    def busy(self) -> tuple[int, ...]:
        """Busy cores per node of the budget (index order); straddling instances not counted."""
        out = [0] * (max(i.node for i in self.instances) + 1)
        for i in self.instances:
            if i.node >= 0:
                out[i.node] += i.threads
        return tuple(out)

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
        return label(self.instances)

    def to_dict(self) -> dict:
        return {
            "budget": self.budget,
            "batch": self.batch,
            "k": self.k,
            "cores": self.cores,
            "label": self.label(),
            "instances": [asdict(i) for i in self.instances],
            "latency_s": self.latency_s,
            "alone_latency_s": self.alone_s,
            "ci_low_s": self.ci_low_s,
            "ci_high_s": self.ci_high_s,
            "fat_latency_s": self.fat_latency_s,
            "speedup": self.speedup,
            "is_fat": self.is_fat,
            "busy": list(self.busy),
            "missing": [list(p) for p in self.missing],
        }

    @classmethod
    def from_dict(cls, d: dict) -> Choice:
        def num(key):
            v = d.get(key)
            return math.nan if v is None else float(v)

        return cls(
            budget=int(d["budget"]),
            batch=int(d["batch"]),
            instances=tuple(Instance(**i) for i in d["instances"]),
            latency_s=float(d["latency_s"]),
            fat_latency_s=float(d["fat_latency_s"]),
            missing=tuple(tuple(p) for p in d.get("missing", ())),
            ci_low_s=num("ci_low_s"),
            ci_high_s=num("ci_high_s"),
        )


def label(instances) -> str:
    """``2x(t1,b8)`` style: the instances grouped, in their order."""
    groups = Counter((i.threads, i.batch) for i in instances)
    return " + ".join(f"{n}x(t{t},b{b})" for (t, b), n in groups.items())


def statistic(cells) -> str:
    """The latency column used: the median, or PackRat's mean (``stats.table_statistic``)."""
    col = stats.latency_column(stats.table_statistic(cells))
    if col not in cells.columns or not cells[col].notna().any():
        names = (stats.latency_column(s) for s in (stats.MEDIAN, stats.MEAN))
        raise ValueError(f"the cells table has none of {', '.join(names)}")
    return col


def ok_cells(cells, model: str, opt: str, placement: str, allocator: str | None):
    """The ``ok`` cells of one (model, opt, placement, allocator; None: the run's baseline)."""
    cells = grid.keyed(cells)
    allocator = allocators.baseline(cells["allocator"]) if allocator is None else allocator
    keys = ["model", "opt", "placement", "allocator"]
    sel = cells[(cells[keys] == [model, opt, placement, allocator]).all(axis=1)]
    if "status" in sel.columns:
        sel = sel[sel["status"] == "ok"]
    return sel


def latency_table(cells, model, opt, placement=BASELINE_PLACEMENT, allocator=None) -> dict:
    """{(threads, batch): seconds} of the ``ok`` cells (``ok_cells``)."""
    return latencies(alone_table(cells, model, opt, placement, allocator))


def latencies(alone: Mapping) -> dict:
    """An ``alone_table``'s latencies: the ``latency_table`` of the same cells."""
    return {key: a.latency_s for key, a in alone.items()}


def missing_points(table: Table, threads: Iterable[int], batch_sizes: Iterable[int]) -> list:
    """Grid points (t, b) with no measured latency (failed, skipped or never run)."""
    batches = sorted(set(batch_sizes))
    return [(t, b) for t in sorted(set(threads)) for b in batches if (t, b) not in table]


def alone_table(cells, model: str, opt: str, placement=BASELINE_PLACEMENT, allocator=None) -> dict:
    """{(threads, batch): interference.Alone} of the ``ok`` cells with a latency, with their
    CIs."""
    sel = ok_cells(cells, model, opt, placement, allocator)
    if sel.empty:
        return {}
    col = statistic(sel)
    out = {}
    for r in sel[sel[col].notna() & (sel[col] > 0)].itertuples(index=False):
        names = ("latency_ci_low_ms", "latency_ci_high_ms", "ci_df")
        lo, hi, df = (getattr(r, c, math.nan) for c in names)
        ci_ok = stats.present(lo) and stats.present(hi) and lo > 0 and hi > 0
        if not stats.present(df) or df <= 0:
            df = math.inf  # a within-process (order-statistic) CI: normal quantile
        lo, hi = (float(v) / 1e3 if ci_ok else math.nan for v in (lo, hi))
        latency = float(getattr(r, col)) / 1e3
        out[(int(r.threads), int(r.batch_size))] = interference.Alone(latency, lo, hi, float(df))
    return out


def measured_points(table: Table, budget: int, total: int) -> list[tuple[int, int, float]]:
    points = ((t, b, lat) for (t, b), lat in table.items() if math.isfinite(lat))
    return sorted(p for p in points if 1 <= p[0] <= budget and 1 <= p[1] <= total)


def optimize(
    table: Table, budget: int, total: int, missing=(), min_instances: int = 1
) -> Choice | None:
    """The configuration of least predicted latency for ``total`` images on ``budget`` cores
    (None: no measured points sum to ``total``); ``min_instances`` = 2: the best split."""
    if budget < 1 or total < 1 or min_instances < 1:
        raise ValueError(
            f"budget, batch and min_instances must be >= 1, got {budget}, {total}, {min_instances}"
        )
    points = measured_points(table, budget, total)

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

    # the second programme: (instances, cores, points chosen), fewest instances then cores
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
    latency, fat = max(i.latency_s for i in instances), table.get((budget, total), math.nan)
    return Choice(budget, total, instances, latency, float(fat), tuple(sorted(set(missing))))
