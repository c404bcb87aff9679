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
    latency_s: float  # the measured L(threads, batch): alone
    slowdown: float = 1.0  # s(x) of the interference model at the instance's co-runner cores
    node: int = 0  # index of its node among the budget's nodes (-1: it straddles nodes)

    @property
    def predicted_s(self) -> float:
        """Its latency in the plan: alone latency x slowdown."""
        return self.latency_s * self.slowdown


@dataclass(frozen=True)
class Choice:
    """A configuration for one (budget, total batch): the best one, or a candidate."""

    budget: int
    batch: int
    instances: tuple[Instance, ...]  # sorted by (threads, batch) descending
    latency_s: float  # predicted latency: max over instances of alone x slowdown
    fat_latency_s: float  # L(budget, batch): one instance on all budget cores; nan if unmeasured
    missing: tuple[tuple[int, int], ...] = field(default=())
    alone_latency_s: float = math.nan  # max over instances of the alone latency (nan: = latency_s)
    ci_low_s: float = math.nan  # 95 % interval of latency_s (plan.interference.predict)
    ci_high_s: float = math.nan

    @property
    def alone_s(self) -> float:
        """The prediction from the alone latencies only (no interference)."""
        if self.alone_latency_s == self.alone_latency_s:
            return self.alone_latency_s
        return max(i.latency_s for i in self.instances)

    @property
    def busy(self) -> tuple[int, ...]:
        """Busy cores per node of the budget (index order); straddling instances not counted."""
        nodes = [i.node for i in self.instances if i.node >= 0]
        out = [0] * (max(nodes) + 1 if nodes else 0)
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
            alone_latency_s=num("alone_latency_s"),
            ci_low_s=num("ci_low_s"),
            ci_high_s=num("ci_high_s"),
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


def ok_cells(cells, model: str, opt: str, placement: str, allocator: str | None):
    """The ``ok`` cells of one (model, opt, placement, allocator); a table without the
    allocator column is glibc's (``default``: ``grid.keyed``). ``allocator`` None: the run's
    baseline (``plan.allocators.baseline`` of the table's), the one packing groups run with
    (``plan.build.Plan.packing_job``)."""
    from numa_effects.plan import allocators, grid

    cells = grid.keyed(cells)
    if allocator is None:
        allocator = allocators.baseline(cells["allocator"])
    sel = cells[
        (cells["model"] == model)
        & (cells["opt"] == opt)
        & (cells["placement"] == placement)
        & (cells["allocator"] == allocator)
    ]
    if "status" in sel.columns:
        sel = sel[sel["status"] == "ok"]
    return sel


def latency_table(
    cells, model: str, opt: str, placement: str = BASELINE_PLACEMENT, allocator: str | None = None
) -> dict:
    """{(threads, batch): seconds} of the ``ok`` cells of one (model, opt, placement) with
    ``allocator`` (None: the run's baseline allocator, which packing groups run with; a table
    without the column is glibc's)."""
    sel = ok_cells(cells, model, opt, placement, allocator)
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


# -- the optimizer with interference -----------------------------------------------------------
#
# With the interference model (plan.interference) an instance's latency depends on the other
# busy cores of its node: L(t, b) s(n - t) when its node has n busy cores. For a fixed n that is
# a table of its own, so per node and per n a dynamic programme over (instances k, cores c,
# images m) with exactly n cores in use gives A_n[k][m], the least max-latency of k instances on
# that node serving m images:
#
#     f_n[0][0][0] = 0;
#     f_n[k][c][m] = min over (t, b), t <= c, b <= m of
#                    max(L(t, b) s(n - t), f_n[k-1][c-t][m-b]);      A_n = f_n[.][n][.]
#
# (vectorised over (c, m) with numpy). A node's best for (k, m) is the minimum over n; nodes are
# independent in the model, so a budget of several nodes combines them by a min-max fold over
# the split of instances and images. Then, for each instance count k, a second pass finds the
# fewest cores among the configurations reaching that latency (a min-plus fold of each node's
# fewest n with A_n <= the latency). The result per k is exact in (latency, cores), so the best
# configuration is the least (latency, k, cores), as ``optimize``'s; ``brute_force_nodes``
# enumerates every configuration and node assignment for the tests. An instance wider than every
# node of the budget (it straddles nodes) is only considered alone (k = 1, s = 1).

INF = math.inf


class Planner:
    """The best configurations of one latency table on one budget: ``caps`` = the cores of each
    of the budget's nodes (``budget_nodes``), ``curve`` the interference model (None: s = 1),
    ``alone`` {(t, b): interference.Alone} for the intervals (None: no intervals), ``max_batch``
    the largest total batch that will be asked for."""

    def __init__(self, table: Table, caps, curve=None, alone=None, max_batch: int = 1):
        from numa_effects.plan import interference

        self.table = {k: float(v) for k, v in table.items() if math.isfinite(v) and v > 0}
        self.caps = tuple(int(c) for c in caps if int(c) > 0)
        if not self.caps:
            raise ValueError("a budget has at least one core")
        self.curve = curve or interference.NONE
        self.alone = alone
        self.M = int(max_batch)
        self._nodes: dict[int, tuple] = {}  # cap -> (A per n, V, Vn)
        self._dp_cache: dict[int, tuple] = {}

    @property
    def budget(self) -> int:
        return sum(self.caps)

    # -- one node ----------------------------------------------------------------------------
    def _points(self, n: int) -> list[tuple[int, int, float]]:
        s = self.curve.s
        return sorted(
            (
                (t, b, lat * s(n - t))
                for (t, b), lat in self.table.items()
                if t <= n and b <= self.M
            ),
            reverse=True,
        )

    def _dp(self, n: int):
        """f_n[k][c][m] for n busy cores on the node (the latencies scaled by s(n - t)): the
        least max-latency of k instances using c cores and serving m images; and the points."""
        if n in self._dp_cache:
            return self._dp_cache[n]
        import numpy as np

        pts = self._points(n)
        K = min(n, self.M)
        f = np.full((K + 1, n + 1, self.M + 1), INF)
        f[0, 0, 0] = 0.0
        for k in range(1, K + 1):
            prev, cur = f[k - 1], f[k]
            for t, b, lat in pts:
                cand = np.maximum(lat, prev[: n + 1 - t, : self.M + 1 - b])
                np.minimum(cur[t:, b:], cand, out=cur[t:, b:])
        if len(self._dp_cache) > 4:
            self._dp_cache.pop(next(iter(self._dp_cache)))
        self._dp_cache[n] = (f, pts)
        return f, pts

    def _node(self, cap: int):
        """(A: {n: array (k, m)} for n = 0..cap, V = min over n, Vn = its least n)."""
        if cap in self._nodes:
            return self._nodes[cap]
        import numpy as np

        K = min(cap, self.M)
        A = {0: np.full((K + 1, self.M + 1), INF)}
        A[0][0, 0] = 0.0
        for n in range(1, cap + 1):
            f, _ = self._dp(n)
            a = np.full((K + 1, self.M + 1), INF)
            a[: f.shape[0]] = f[:, n, :]
            A[n] = a
        V = np.full((K + 1, self.M + 1), INF)
        Vn = np.zeros((K + 1, self.M + 1), dtype=int)
        for n in range(0, cap + 1):  # ascending, strictly better: ties go to fewer cores
            better = A[n] < V
            V[better], Vn[better] = A[n][better], n
        self._nodes[cap] = (A, V, Vn)
        return self._nodes[cap]

    def _fewest_cores(self, cap: int, target: float):
        """C[k][m]: the fewest cores n of the node with A_n[k][m] <= target (INF: none)."""
        import numpy as np

        A, V, _ = self._node(cap)
        C = np.full(V.shape, INF)
        for n in range(cap, -1, -1):  # descending: the last one written is the least n
            C[A[n] <= target] = n
        return C

    # -- nodes combined ------------------------------------------------------------------------
    @staticmethod
    def _fold(acc, vec, op, target=None):
        """Combine two nodes' (k, m) arrays: out[k][m] = min over ka + kb = k, ma + mb = m of
        op(acc[ka][ma], vec[kb][mb]) with its split (ka, ma); at m = ``target`` only when given
        (then out has one column)."""
        import numpy as np

        Ka, Kb, M1 = acc.shape[0], vec.shape[0], acc.shape[1]
        cols = [target] if target is not None else list(range(M1))
        out = np.full((Ka + Kb - 1, len(cols)), INF)
        split = np.zeros((Ka + Kb - 1, len(cols), 2), dtype=int)
        for ci, m in enumerate(cols):
            ma = np.arange(m + 1)
            for ka in range(Ka):
                a = acc[ka, : m + 1]
                if not np.isfinite(a).any():
                    continue
                for kb in range(Kb):
                    v = op(a, vec[kb, m - ma])
                    j = int(np.argmin(v))
                    if v[j] < out[ka + kb, ci]:
                        out[ka + kb, ci] = v[j]
                        split[ka + kb, ci] = (ka, j)
        return out, split

    def _combine(self, arrays, op, total):
        """Fold the nodes' arrays at m = total: (per k value, per k the per-node (k_v, m_v))."""
        import numpy as np

        if len(arrays) == 1:
            col = arrays[0][:, total]
            return col, [[(k, total)] for k in range(len(col))]
        acc = arrays[0]
        splits = []
        for i, vec in enumerate(arrays[1:], start=1):
            last = i == len(arrays) - 1
            acc, sp = self._fold(acc, vec, op, target=total if last else None)
            splits.append(sp)
        values = acc[:, 0]
        parts = []
        for k in range(len(values)):
            per, kk, mm = [], k, total
            for i in range(len(splits) - 1, -1, -1):
                col = 0 if i == len(splits) - 1 else mm
                ka, ma = (int(v) for v in splits[i][kk, col])
                per.append((kk - ka, mm - ma))  # node i + 1
                kk, mm = ka, ma
            per.append((kk, mm))  # node 0
            parts.append(per[::-1])
        return np.asarray(values), parts

    def _backtrack(self, n: int, k: int, m: int, target: float, node: int) -> list[Instance]:
        f, pts = self._dp(n)
        out, c = [], n
        while k > 0:
            for t, b, lat in pts:
                if t <= c and b <= m and lat <= target and f[k - 1, c - t, m - b] <= target:
                    alone = self.table[(t, b)]
                    out.append(Instance(t, b, alone, lat / alone, node))
                    k, c, m = k - 1, c - t, m - b
                    break
            else:  # pragma: no cover - f[k][c][m] <= target guarantees a step
                raise AssertionError("no step back in the packing programme")
        return out

    # -- the answers ---------------------------------------------------------------------------
    def per_k(self, total: int, missing=()) -> dict[int, Choice]:
        """{k: the best configuration of exactly k instances} for ``total`` images: least
        predicted latency, then fewest cores."""
        import numpy as np

        if not 1 <= total <= self.M:
            raise ValueError(f"total batch {total} outside 1..{self.M}")
        caps = self.caps
        arrays = [self._node(c)[1] for c in caps]
        op_max, op_add = np.maximum, np.add
        lat, _ = self._combine(arrays, op_max, total)
        out: dict[int, Choice] = {}
        fat = self.table.get((self.budget, total), math.nan)
        for k in range(1, len(lat)):
            target = float(lat[k])
            if not math.isfinite(target):
                continue
            cores = [self._fewest_cores(c, target) for c in caps]
            fewest, parts = self._combine(cores, op_add, total)
            assert math.isfinite(fewest[k]), "the second pass reaches the first one's optimum"
            instances: list[Instance] = []
            for node, ((kv, mv), cv) in enumerate(zip(parts[k], cores, strict=True)):
                if kv == 0:
                    continue
                instances += self._backtrack(int(cv[kv, mv]), kv, mv, target, node)
            out[k] = self._choice(total, instances, fat, missing)
        # an instance wider than every node, alone: it straddles nodes and has nobody beside it
        for t in range(max(caps) + 1, self.budget + 1):
            lat1 = self.table.get((t, total))
            if lat1 is None:
                continue
            cand = self._choice(total, [Instance(t, total, lat1, 1.0, -1)], fat, missing)
            if 1 not in out or (cand.latency_s, cand.cores) < (out[1].latency_s, out[1].cores):
                out[1] = cand
        return dict(sorted(out.items()))

    def _choice(self, total, instances, fat, missing) -> Choice:
        from numa_effects.plan import interference

        inst = tuple(sorted(instances, reverse=True))
        latency = max(i.predicted_s for i in inst)
        lo = hi = math.nan
        if self.alone is not None:
            xs = interference.co_runners([i.threads for i in inst], [i.node for i in inst])
            xs = [0 if i.node < 0 else x for i, x in zip(inst, xs, strict=True)]
            got = []
            for i, x in zip(inst, xs, strict=True):
                a = self.alone.get((i.threads, i.batch)) or interference.Alone(i.latency_s)
                got.append((a, x))
            pred = interference.predict(got, self.curve)
            lo, hi = pred.ci_low_s, pred.ci_high_s
        return Choice(
            budget=self.budget,
            batch=total,
            instances=inst,
            latency_s=latency,
            fat_latency_s=float(fat),
            missing=tuple(sorted(set(missing))),
            alone_latency_s=max(i.latency_s for i in inst),
            ci_low_s=lo,
            ci_high_s=hi,
        )

    def optimize(self, total: int, missing=(), min_instances: int = 1) -> Choice | None:
        """The least (predicted latency, instances, cores) configuration, or None."""
        got = [c for k, c in self.per_k(total, missing).items() if k >= min_instances]
        if not got:
            return None
        return min(got, key=lambda c: (c.latency_s, c.k, c.cores))

    def candidates(self, total: int, n: int, missing=()) -> list[Choice]:
        """The ``n`` best of the best configurations of each instance count, by predicted
        latency (then fewer instances, fewer cores): the plans worth measuring."""
        got = sorted(self.per_k(total, missing).values(), key=lambda c: (c.latency_s, c.k, c.cores))
        return got[: max(0, int(n))]


def brute_force_nodes(table: Table, caps, total: int, curve=None, min_instances: int = 1):
    """(latency, instances, cores) of the best configuration with interference by enumerating
    every multiset of measured points and every assignment of its instances to the budget's
    nodes (an instance wider than every node only alone); exponential, for tests."""
    from numa_effects.plan import interference

    curve = curve or interference.NONE
    caps = tuple(caps)
    budget = sum(caps)
    points = _points(table, budget, total)
    best = None

    def consider(lat, k, cores):
        nonlocal best
        if k >= min_instances and (best is None or (lat, k, cores) < best):
            best = (lat, k, cores)

    def finish(chosen, j=0, nodes=()):
        """Every assignment of the chosen instances to nodes that fits the nodes' cores."""
        if j == len(chosen):
            used = [0] * len(caps)
            for (t, _, _), v in zip(chosen, nodes, strict=True):
                used[v] += t
            if all(u <= c for u, c in zip(used, caps, strict=True)):
                lat = max(
                    a * curve.s(used[v] - t) for (t, _, a), v in zip(chosen, nodes, strict=True)
                )
                consider(lat, len(chosen), sum(used))
            return
        for v in range(len(caps)):
            finish(chosen, j + 1, (*nodes, v))

    def walk(start, cores, images, chosen):
        if images == total:
            finish(chosen)
            return
        for i in range(start, len(points)):
            t, b, lat = points[i]
            if t <= max(caps) and cores + t <= budget and images + b <= total:
                walk(i, cores + t, images + b, [*chosen, (t, b, lat)])

    walk(0, 0, 0, [])
    for t, b, lat in points:  # wider than every node: alone only
        if t > max(caps) and b == total:
            consider(lat, 1, t)
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


def budget_nodes(topo, budget: int, use_smt: bool = False) -> list[tuple[int, int]]:
    """[(node, cores)] of the nodes holding the first ``budget`` cores in ``sequential`` order
    (``placement.pack``'s cores): the budget's nodes and how many of its cores each has."""
    order = [c for n in topo.nodes for c in topo.node_cpus(n, use_smt)][: int(budget)]
    out = [(n, sum(1 for c in order if topo.node_of(c) == n)) for n in topo.nodes]
    return [(n, k) for n, k in out if k > 0]


def alone_table(
    cells, model: str, opt: str, placement: str = BASELINE_PLACEMENT, allocator: str | None = None
) -> dict:
    """{(threads, batch): interference.Alone} of the ``ok`` cells (of ``latency_table``):
    latency (the table's statistic) and the cell's 95 % CI with its degrees of freedom where
    the table has them."""
    from numa_effects.plan import interference

    table = latency_table(cells, model, opt, placement, allocator)
    if not table:
        return {}
    sel = ok_cells(cells, model, opt, placement, allocator)
    out = {}
    for r in sel.itertuples(index=False):
        key = (int(r.threads), int(r.batch_size))
        if key not in table:
            continue
        lo = getattr(r, "latency_ci_low_ms", math.nan)
        hi = getattr(r, "latency_ci_high_ms", math.nan)
        df = getattr(r, "ci_df", math.nan)
        ci_ok = all(v == v and v is not None for v in (lo, hi)) and lo > 0 and hi > 0
        if df != df or df is None or df <= 0:
            df = math.inf  # a within-process (order-statistic) CI: normal quantile
        out[key] = interference.Alone(
            table[key],
            float(lo) / 1e3 if ci_ok else math.nan,
            float(hi) / 1e3 if ci_ok else math.nan,
            float(df),
        )
    return out


def choices(
    cells,
    model: str,
    opt: str,
    budget_cores: Iterable[int],
    batch_sizes: Iterable[int],
    threads: Iterable[int],
    *,
    caps: Mapping[int, Iterable[int]] | None = None,
    curve=None,
    measure: int = 1,
) -> list[dict]:
    """One row per (budget, batch): the best configuration by the prediction with interference
    (``Choice.to_dict``; ``curve`` None = alone latencies only) with ``candidates``, the
    ``measure`` best configurations of distinct instance counts (``Planner.candidates``, the
    best first), ``alone_plan``, the plan ``optimize`` picks from the alone latencies (what this
    pipeline recommended before interference was measured), and ``curve``; or a row with
    ``instances: []`` and the reason when no configuration of measured points exists.
    ``caps``: {budget: the cores of each of its nodes} (``budget_nodes``; None = one node)."""
    from numa_effects.plan import interference

    curve = curve or interference.NONE
    table = latency_table(cells, model, opt)
    alone = alone_table(cells, model, opt)
    batch_sizes = sorted({int(b) for b in batch_sizes})
    missing = missing_points(table, threads, batch_sizes)
    rows = []
    for c in sorted(set(budget_cores)):
        node_caps = list((caps or {}).get(c, [c]))
        planner = Planner(table, node_caps, curve, alone, max(batch_sizes)) if table else None
        for b in batch_sizes:
            base = {"model": model, "opt": opt, "curve": curve.to_dict(), "caps": node_caps}
            cands = planner.candidates(b, max(1, int(measure)), missing) if planner else []
            if not cands:
                rows.append(
                    {
                        **base,
                        "budget": c,
                        "batch": b,
                        "instances": [],
                        "candidates": [],
                        "missing": [list(p) for p in missing],
                        "reason": "no combination of measured (threads, batch) points "
                        f"serves {b} images on {c} cores",
                    }
                )
                continue
            old = optimize(table, c, b, missing)
            rows.append(
                {
                    **base,
                    **cands[0].to_dict(),
                    "candidates": [x.to_dict() for x in cands],
                    "alone_plan": (
                        {"label": old.label(), "latency_s": old.latency_s} if old else None
                    ),
                }
            )
    return rows


def configurations(row: dict) -> dict[str, dict]:
    """The configurations a packing job measures for one ``choices`` row, by name: ``fat`` (one
    instance of every budget core and the whole batch) and each candidate (``plan``,
    ``plan2``, ...: the best predicted first), each ``{"instances": [(threads, batch)],
    "nodes": [budget node index or None]}``; a candidate that is the fat instance is measured
    once, as ``fat``."""
    out = {"fat": {"instances": [(int(row["budget"]), int(row["batch"]))], "nodes": None}}
    cands = row.get("candidates")
    if cands is None:  # a row of before the candidates (one plan): the row itself
        cands = [row] if row.get("instances") else []
    for i, cand in enumerate(cands):
        if cand.get("is_fat"):
            continue
        name = "plan" if i == 0 else f"plan{i + 1}"
        inst = cand["instances"]
        nodes = [int(x.get("node", 0)) for x in inst]
        out[name] = {
            "instances": [(int(x["threads"]), int(x["batch"])) for x in inst],
            "nodes": None if any(n < 0 for n in nodes) else nodes,
            "candidate": i,
        }
    return out


# -- the interference profile --------------------------------------------------------------------


def _powers_up_to(limit: int) -> list[int]:
    out, k = [], 2
    while k < limit:
        out.append(k)
        k *= 2
    return [*out, limit] if limit >= 2 else out


def profile_threads(given, threads: list[int], budget: int) -> list[int]:
    """Thread counts whose interference is measured on ``budget`` cores: ``auto`` = the grid's
    thread counts that are powers of two (its smallest when none is) with room for two
    instances; a list is taken as given, minus counts with no room for two."""
    if given in (None, "auto"):
        pw = [t for t in threads if t & (t - 1) == 0]
        given = pw or sorted(threads)[:1]
    return sorted({int(t) for t in given if 2 * int(t) <= budget})


def profile_instances(given, threads: int, budget: int) -> list[int]:
    """Group sizes k measured for ``threads``-thread instances on ``budget`` cores: ``auto`` =
    2, 4, 8, ... below the most that fit, and the most that fit (budget // threads); a list
    is taken as given, minus sizes that do not fit."""
    most = budget // threads
    if given in (None, "auto"):
        return _powers_up_to(most)
    return sorted({int(k) for k in given if 2 <= int(k) <= most})


def profile_plan(topo, budget: int, threads: int, k: int, use_smt: bool):
    """The placement of a profile group: ``k`` instances of ``threads`` threads packed on
    ``budget`` cores as ``placement.pack`` places a plan (best fit: node 0 first)."""
    from numa_effects.plan import placement

    return placement.pack(topo, [threads] * k, budget, use_smt)


def profiles(s: dict, topo, given: dict) -> list[dict]:
    """{budget, threads, instances: [k, ...]} of every profile job of one (model, opt). A group
    whose CPU sets a smaller budget already measures is not measured again (on a 2-node
    machine the ``all`` budget adds the groups that span both nodes)."""
    out, seen = [], set()
    for c in s["budgets"]:
        for t in profile_threads(given.get("threads"), s["threads"], c):
            ks = []
            for k in profile_instances(given.get("instances"), t, c):
                got = profile_plan(topo, c, t, k, s["use_smt"])
                if not isinstance(got, list):
                    continue
                key = tuple(p.cpus for p in got)
                if key in seen:
                    continue
                seen.add(key)
                ks.append(k)
            if ks:
                out.append({"budget": c, "threads": t, "instances": ks})
    return out


# -- config ------------------------------------------------------------------------------------
INTERFERENCE_DEFAULTS = {
    "enabled": True,
    "threads": "auto",
    "instances": "auto",
    "batch": "auto",
    "max_seconds": None,
}
DEFAULTS = {
    "enabled": "auto",
    "budgets": list(BUDGET_NAMES),
    "optimizations": None,
    "max_seconds": 10,
    "measure_plans": 2,
    "interference": INTERFERENCE_DEFAULTS,
}


def settings(config: dict, topo, threads: list[int], profile: bool = False) -> dict:
    """The resolved ``packing`` config key (config/README.md, "Packing"): ``enabled`` (``auto``
    = on when the grid has at least two thread counts and measures ``sequential``, the
    optimizer's table), ``budgets`` ({cores: [names]}), ``caps`` ({cores: the cores of each of
    its nodes}), ``optimizations`` (null = the grid's first one: packing adds measurement jobs,
    so by default one optimization's worth), ``max_seconds`` (per measured configuration),
    ``measure_plans`` (candidates measured besides the fat instance) and ``interference``
    (``enabled``, ``batch``, ``max_seconds``, ``profiles``: the profile jobs' budget, threads
    and group sizes, see ``profiles``). ``config`` has been checked
    (``numa_effects.config.checks.packing_problems``)."""
    given = config.get("packing") or {}
    s = {**DEFAULTS, **{k: v for k, v in given.items() if v is not None}}
    use_smt = bool(config.get("use_smt", False))
    enabled = s["enabled"]
    if enabled == "auto":
        sequential = BASELINE_PLACEMENT in config.get("placements", ())
        enabled = len(set(threads)) >= 2 and sequential and not config.get("import")
    opts = s["optimizations"] or list(config.get("optimizations", ()))[:1]
    batch_sizes = sorted({int(b) for b in config.get("batch_sizes", ())})
    out = {
        "enabled": bool(enabled),
        "budgets": budgets(topo, s["budgets"], use_smt),
        "optimizations": opts,
        "models": list(config.get("models", ())),
        "batch_sizes": batch_sizes,
        "threads": sorted(set(threads)),
        "use_smt": use_smt,
        "max_seconds": float(s["max_seconds"]),
        "measure_plans": int(s["measure_plans"]),
    }
    out["caps"] = {c: [k for _, k in budget_nodes(topo, c, use_smt)] for c in out["budgets"]}
    ig = {**INTERFERENCE_DEFAULTS, **{k: v for k, v in (s["interference"] or {}).items()}}
    ig = {k: INTERFERENCE_DEFAULTS[k] if v is None else v for k, v in ig.items()}
    batch = ig["batch"]
    if batch == "auto":
        batch = batch_sizes[(len(batch_sizes) - 1) // 2] if batch_sizes else 1
    # the profile also serves the deploy answer's predictions (``profile``: it is measured)
    on = bool(ig["enabled"]) and (out["enabled"] or profile) and sequential_measured(config)
    out["interference"] = {
        "enabled": on,
        "batch": int(batch),
        "max_seconds": float(ig["max_seconds"] or out["max_seconds"]),
        "profiles": profiles(out, topo, ig) if on else [],
    }
    return out


def sequential_measured(config: dict) -> bool:
    """Does the grid measure the cells packing predicts from (``sequential``, here)?"""
    return BASELINE_PLACEMENT in (config.get("placements") or ()) and not config.get("import")


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


def interference_jobs(s: dict) -> list[dict]:
    """One profile job per (model, opt, budget, threads): its wildcards and group sizes."""
    ig = s.get("interference") or {}
    if not ig.get("enabled"):
        return []
    return [
        {"model": m, "opt": o, "budget": p["budget"], "threads": p["threads"]}
        | {"instances": list(p["instances"])}
        for m in s["models"]
        for o in s["optimizations"]
        for p in ig["profiles"]
    ]


def profile_cost(s: dict, replicates: int) -> dict:
    """What the profile adds: jobs, measured configurations (alone and each group, per
    replicate), instance processes, and the upper bound of their timing (the time cap per
    configuration; process start and model build come on top)."""
    jobs_ = interference_jobs(s)
    configs = sum(1 + len(j["instances"]) for j in jobs_) * int(replicates)
    processes = sum(1 + sum(j["instances"]) for j in jobs_) * int(replicates)
    cap = s["interference"]["max_seconds"] if jobs_ else 0.0
    return {
        "jobs": len(jobs_),
        "configurations": configs,
        "processes": processes,
        "max_timed_s": configs * cap,
    }
