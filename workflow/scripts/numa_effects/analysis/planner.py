"""PackRat's question with interference (docs/packing.md): ``Planner``, the best configurations
on a budget of nodes, and ``choices``, the plan's rows. With n busy cores on a node an instance
takes L(t, b) s(n - t), so per node and n a programme over (instances k, cores c, images m),
vectorised over (c, m), gives A_n[k][m] = f_n[k][n][m] where

    f_n[k][c][m] = min over (t, b) of max(L(t, b) s(n - t), f_n[k-1][c-t][m-b])

Nodes are independent, so several nodes fold their minima over n by min-max over the split of
instances and images; a min-plus fold of each node's fewest n then gives the fewest cores per k.
An instance wider than every node straddles nodes and is only considered alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np

from numa_effects.analysis import interference, packing

INF = math.inf


class Planner:
    """The best configurations of one latency table on one budget: ``caps`` = the cores of each
    of its nodes, ``curve`` None: s = 1, ``alone`` {(t, b): interference.Alone} for the
    intervals (None: none), ``max_batch`` the largest total batch asked for."""

    def __init__(self, table: packing.Table, caps, curve=None, alone=None, max_batch: int = 1):
        self.table = {k: float(v) for k, v in table.items() if math.isfinite(v) and v > 0}
        self.caps = tuple(int(c) for c in caps if int(c) > 0)
        if not self.caps:
            raise ValueError("a budget has at least one core")
        self.budget = sum(self.caps)
        self.curve = curve or interference.NONE
        self.alone = alone
        self.M = int(max_batch)
        self._nodes: dict[int, tuple] = {}  # cap -> (A per n, V)
        self._dp_cache: dict[int, tuple] = {}

    def _points(self, n: int) -> list[tuple[int, int, float]]:
        pts = [(t, b, lat * self.curve.s(n - t)) for (t, b), lat in self.table.items() if t <= n]
        return sorted((p for p in pts if p[1] <= self.M), reverse=True)

    def _dp(self, n: int):
        """f_n[k][c][m] for n busy cores on the node (the latencies scaled by s(n - t)): the
        least max-latency of k instances using c cores and serving m images; and the points."""
        if n in self._dp_cache:
            return self._dp_cache[n]
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
        """(A: {n: array (k, m)} for n = 0..cap, V = min over n)."""
        if cap in self._nodes:
            return self._nodes[cap]
        K = min(cap, self.M)
        A = {0: np.full((K + 1, self.M + 1), INF)}
        A[0][0, 0] = 0.0
        for n in range(1, cap + 1):
            f, _ = self._dp(n)
            A[n] = np.full((K + 1, self.M + 1), INF)
            A[n][: f.shape[0]] = f[:, n, :]
        V = np.min(list(A.values()), axis=0)
        self._nodes[cap] = (A, V)
        return self._nodes[cap]

    def _fewest_cores(self, cap: int, target: float):
        """C[k][m]: the fewest cores n of the node with A_n[k][m] <= target (INF: none)."""
        A, V = self._node(cap)
        C = np.full(V.shape, INF)
        for n in range(cap, -1, -1):  # descending: the last one written is the least n
            C[A[n] <= target] = n
        return C

    @staticmethod
    def _fold(acc, vec, op, target=None):
        """Combine two nodes' (k, m) arrays: out[k][m] = min over ka + kb = k, ma + mb = m of
        op(acc[ka][ma], vec[kb][mb]) with its split (ka, ma); at m = ``target`` only when given
        (then out has one column)."""
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
        if len(arrays) == 1:
            col = arrays[0][:, total]
            return col, [[(k, total)] for k in range(len(col))]
        acc, splits = arrays[0], []
        for i, vec in enumerate(arrays[1:], start=1):
            acc, sp = self._fold(acc, vec, op, target=total if i == len(arrays) - 1 else None)
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

    def _backtrack(self, n: int, k: int, m: int, target: float, node: int) -> list:
        f, pts = self._dp(n)
        out, c = [], n
        while k > 0:
            for t, b, lat in pts:
                if t <= c and b <= m and lat <= target and f[k - 1, c - t, m - b] <= target:
                    alone = self.table[(t, b)]
                    out.append(packing.Instance(t, b, alone, lat / alone, node))
                    k, c, m = k - 1, c - t, m - b
                    break
            else:  # pragma: no cover - f[k][c][m] <= target guarantees a step
                raise AssertionError("no step back in the packing programme")
        return out

    def per_k(self, total: int, missing=()) -> dict[int, packing.Choice]:
        """{k: the best (latency, then cores) configuration of k instances} for ``total``."""
        if not 1 <= total <= self.M:
            raise ValueError(f"total batch {total} outside 1..{self.M}")
        caps = self.caps
        lat, _ = self._combine([self._node(c)[1] for c in caps], np.maximum, total)
        out: dict[int, packing.Choice] = {}
        fat = self.table.get((self.budget, total), math.nan)
        for k in range(1, len(lat)):
            target = float(lat[k])
            if not math.isfinite(target):
                continue
            cores = [self._fewest_cores(c, target) for c in caps]
            fewest, parts = self._combine(cores, np.add, total)
            assert math.isfinite(fewest[k]), "the second pass reaches the first one's optimum"
            instances: list[packing.Instance] = []
            for node, ((kv, mv), cv) in enumerate(zip(parts[k], cores, strict=True)):
                if kv:
                    instances += self._backtrack(int(cv[kv, mv]), kv, mv, target, node)
            out[k] = self._choice(total, instances, fat, missing)
        # an instance wider than every node, alone: it straddles nodes and has nobody beside it
        for t in range(max(caps) + 1, self.budget + 1):
            lat1 = self.table.get((t, total))
            if lat1 is None:
                continue
            cand = self._choice(total, [packing.Instance(t, total, lat1, 1.0, -1)], fat, missing)
            if 1 not in out or (cand.latency_s, cand.cores) < (out[1].latency_s, out[1].cores):
                out[1] = cand
        return dict(sorted(out.items()))

    def _choice(self, total, instances, fat, missing) -> packing.Choice:
        inst = tuple(sorted(instances, reverse=True))
        latency = max(i.latency_s * i.slowdown for i in inst)
        lo = hi = math.nan
        if self.alone is not None:
            xs = interference.co_runners([i.threads for i in inst], [i.node for i in inst])
            xs = [0 if i.node < 0 else x for i, x in zip(inst, xs, strict=True)]
            alone = [self.alone.get((i.threads, i.batch)) for i in inst]
            alone = [a or interference.Alone(i.latency_s) for a, i in zip(alone, inst, strict=True)]
            pred = interference.predict(list(zip(alone, xs, strict=True)), self.curve)
            lo, hi = pred.ci_low_s, pred.ci_high_s
        return packing.Choice(
            budget=self.budget,
            batch=total,
            instances=inst,
            latency_s=latency,
            fat_latency_s=float(fat),
            missing=tuple(sorted(set(missing))),
            ci_low_s=lo,
            ci_high_s=hi,
        )

    def optimize(self, total: int, missing=(), min_instances: int = 1) -> packing.Choice | None:
        """The least (predicted latency, instances, cores) configuration, or None."""
        got = [c for k, c in self.per_k(total, missing).items() if k >= min_instances]
        return min(got, key=lambda c: (c.latency_s, c.k, c.cores), default=None)

    def candidates(self, total: int, n: int, missing=()) -> list[packing.Choice]:
        """The ``n`` best of ``per_k``'s configurations: the plans worth measuring."""
        got = sorted(self.per_k(total, missing).values(), key=lambda c: (c.latency_s, c.k, c.cores))
        return got[: max(0, int(n))]


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
    """One row per (budget, batch): the best configuration predicted with interference (``curve``
    None: alone latencies) with the ``measure`` best ``candidates`` of distinct instance counts
    and ``alone_plan``, ``optimize``'s from the alone latencies; or ``instances: []`` and the
    reason. ``caps``: {budget: the cores of each of its nodes} (None = one node)."""
    curve = curve or interference.NONE
    alone = packing.alone_table(cells, model, opt)
    table = packing.latencies(alone)
    batch_sizes = sorted({int(b) for b in batch_sizes})
    missing = packing.missing_points(table, threads, batch_sizes)
    rows = []
    for c in sorted(set(budget_cores)):
        node_caps = list((caps or {}).get(c, [c]))
        planner = Planner(table, node_caps, curve, alone, max(batch_sizes)) if table else None
        for b in batch_sizes:
            base = {"model": model, "opt": opt, "curve": curve.to_dict(), "caps": node_caps}
            cands = planner.candidates(b, max(1, int(measure)), missing) if planner else []
            if not cands:
                why = f"no combination of measured (threads, batch) points serves {b} images"
                none = {"budget": c, "batch": b, "instances": [], "candidates": []}
                missed = [list(p) for p in missing]
                rows.append(base | none | {"missing": missed, "reason": f"{why} on {c} cores"})
                continue
            old = packing.optimize(table, c, b, missing)
            alone_plan = {"label": old.label(), "latency_s": old.latency_s} if old else None
            more = {"candidates": [x.to_dict() for x in cands], "alone_plan": alone_plan}
            rows.append(base | cands[0].to_dict() | more)
    return rows
