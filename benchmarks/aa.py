"""Benchmark, aa: false positives where the truth is known. The grid measured by the pipeline
with ``interleave`` beside ``sequential`` at the thread counts where the two give the same
binding on this machine (``plan.binding``: one thread everywhere, every thread count on one
NUMA node), each placement measured on its own (config key ``same_bindings: each``): the same
cell twice under two names, in the same rounds, compared by degradation.csv as any placement
is. No difference is real, so every significant degradation is a false positive.

Goal: not significant in >= 95 % of cells. The line also gives the chance of at least the
observed number of significant cells if each comparison had exactly a 5 % false-positive rate
(one-sided binomial): with a dozen cells one false positive is 46 % likely, so a miss of the
goal by one cell is no evidence against the intervals; the simulation in
tests/test_false_positives.py measures their rate on thousands of comparisons. Each row
carries both cells' binding as recorded (``planned_cpus``, ``mem_policy``, ``planned_mems``),
so the truth is checked, not assumed (``same_binding``)."""

from __future__ import annotations

import math

import pandas as pd

from numa_effects import stats
from numa_effects.plan import binding, grid, placement, topology
from numa_effects.plan.grid import KEYS

from .common import Context, pipeline, show

NAME = "aa"
GOAL_SHARE = 0.95
RATE = 0.05  # the false-positive rate of a 95 % interval
A, B = placement.BASELINE, "interleave"  # B is compared with A
BINDING = ["planned_cpus", "mem_policy", "planned_mems"]


def aa_threads(config: dict, topo) -> list[int]:
    """The grid's thread counts at which ``B`` binds like ``A`` on ``topo`` (the planner's
    plans, ``binding.same``)."""
    use_smt = bool(config.get("use_smt"))
    out = []
    for t in grid.thread_counts(config, topo):
        a, b = (placement.plan(topo, t, p, use_smt) for p in (A, B))
        if isinstance(a, placement.Plan) and isinstance(b, placement.Plan) and binding.same(a, b):
            out.append(t)
    return out


def overrides(config: dict, topo) -> dict:
    """The A/A run's config over the benchmark grid's: the two placements at their common
    bindings, each measured (no peak, no packing, no deploy answer: only the comparisons count
    here; no budget: the grid runs as given)."""
    return {
        "placements": [A, B],
        "threads": aa_threads(config, topo),
        "same_bindings": binding.EACH,
        "peak": False,
        "packing": {"enabled": False},
        "deploy": {"enabled": False},
        "budget": None,
    }


def verdict(cells: pd.DataFrame, degradation: pd.DataFrame) -> pd.DataFrame:
    """One row per A/A comparison (``B`` against ``A`` in degradation.csv): its keys, the
    degradation with its CI and method, ``significant``, and ``same_binding``: both cells ran
    with the same CPUs and memory policy (cells.csv, as recorded)."""
    deg = grid.fill_keys(degradation)
    deg = deg[(deg["placement"] == B) & (deg["baseline"] == A)]
    c = grid.fill_keys(cells)[[*KEYS, *BINDING]].astype({"threads": int, "batch_size": int})
    on = [k for k in KEYS if k != "placement"]
    both = c[c["placement"] == B].merge(c[c["placement"] == A], on=on, suffixes=("", "_a"))
    same = pd.Series(True, index=both.index)
    for b in BINDING:
        same &= both[b].astype(str).eq(both[f"{b}_a"].astype(str))
    both["same_binding"] = same
    cols = ["latency_degradation_pct", "latency_degradation_ci_low_pct"]
    cols += ["latency_degradation_ci_high_pct", "ci_method", "significant"]
    deg = deg.astype({"threads": int, "batch_size": int})[[*KEYS, *cols]]
    out = deg.merge(both[[*KEYS, "planned_cpus", "planned_mems", "same_binding"]], on=KEYS)
    # None: no interval (one process per cell), never counted as not significant
    out["significant"] = out["significant"].map(stats.as_bool)
    return out.reset_index(drop=True)


def chance(k: int, n: int, rate: float = RATE) -> float:
    """P(X >= k) for X ~ Binomial(n, rate): how likely ``k`` or more false positives are at
    exactly ``rate``."""
    return float(sum(math.comb(n, i) * rate**i * (1 - rate) ** (n - i) for i in range(k, n + 1)))


def line(df: pd.DataFrame) -> str:
    judged = df[df["significant"].notna()]
    n, k = len(judged), int(judged["significant"].astype(bool).sum())
    quiet = (n - k) / n if n else float("nan")
    unjudged = f"; {len(df) - n} without an interval" if len(df) > n else ""
    methods = ", ".join(f"{m} {c}" for m, c in df["ci_method"].value_counts().items())
    return (
        f"A/A ({B} vs {A}, the same binding in {int(df['same_binding'].sum())}/{n} cells as "
        f"recorded): not significant in {n - k}/{n} = {quiet:.0%} (goal >= {GOAL_SHARE:.0%})"
        f"{unjudged}; "
        f"{k} significant, P(>= {k} | {RATE:.0%} each) = {chance(k, n):.2f}; degradation "
        f"{df['latency_degradation_pct'].min():+.1f} ... {df['latency_degradation_pct'].max():+.1f}"
        f" %; intervals: {methods}"
    )


def run(ctx: Context):
    topo = topology.current()
    over = overrides(ctx.grid(), topo)
    aa = pipeline(ctx, NAME, over, target="tables/degradation.csv")
    if aa.returncode != 0:
        raise RuntimeError(f"the A/A pipeline run failed (exit {aa.returncode}): {aa.log}")
    df = verdict(aa.cells(), pd.read_csv(aa.results / "tables" / "degradation.csv"))
    show(f"aa: {B} vs {A} where they bind alike (threads {over['threads']})", df)
    print(line(df))
    return df
