"""False positives where the truth is known: A/A comparisons (two placements with the same
binding, as ``same_bindings: each`` measures them; ``benchmarks/aa.py`` runs them through the
real pipeline) simulated and judged by the project's own tables code
(``tables.degradation.degradation_table``: the paired or two-level interval over the cells'
replicates), beside a naive interval from the iterations of one process per cell (the
within-process bootstrap the tables fall back to with one process), which fails.

The model is a run's: per round a drift both adjacent processes share, per process its own
level (the spread between processes: allocator state, layout, the host), per iteration its
noise around the process's level. Both placements have the same true latency: every
significant degradation is a false positive."""

from __future__ import annotations

import math
import sys

import numpy as np
import pandas as pd
import pytest
from test_paired import simulated_cell

from numa_effects import stats
from numa_effects.tables import degradation

G = 24  # comparisons per run: the default grid's (batch sizes x optimizations x threads)
ITERATIONS = 20  # clean iterations per process
PLACES = ("sequential", "interleave")  # interleave compared with sequential


def aa_run(rng, rounds: int, drift_sd: float, own_sd: float, iter_sd: float):
    """One simulated run: cells.csv with each cell's two-level CI over its ``rounds``
    processes (the run's pooled process variance, as the tables compute it) and samples.csv."""
    samples, medians = [], {}
    for bs in range(1, G + 1):
        drift = rng.normal(0.0, drift_sd, rounds)
        for place in PLACES:
            key = {"model": "m", "opt": "none", "placement": place, "threads": 1, "batch_size": bs}
            for r in range(rounds):
                level = math.log(100.0) + drift[r] + rng.normal(0.0, own_sd)
                lat = np.exp(level + rng.normal(0.0, iter_sd, ITERATIONS))
                samples += [
                    {**key, "replicate": r + 1, "iteration": i, "latency_ms": v}
                    for i, v in enumerate(lat)
                ]
                medians.setdefault((place, bs), []).append(float(np.median(lat)))
    pool = stats.pooled_replicate_var([np.asarray(v) / 1000 for v in medians.values()])
    cells = []
    for (place, bs), meds in medians.items():
        cells.append(simulated_cell("none", place, bs, meds, pool))
    return pd.DataFrame(cells), pd.DataFrame(samples)


def one_process(cells: pd.DataFrame, samples: pd.DataFrame):
    """The same run as if each cell were one process (its first): the median and CI of that
    process's iterations alone (``ci_method`` ``within-process``)."""
    first = samples[samples["replicate"] == 1]
    rows = []
    for _, c in cells.iterrows():
        lat = first[
            (first["placement"] == c["placement"]) & (first["batch_size"] == c["batch_size"])
        ]["latency_ms"].to_numpy()
        lo, hi = stats.median_ci(lat)
        rows.append(
            {
                **c.to_dict(),
                "latency_median_ms": float(np.median(lat)),
                "ci_method": "within-process",
            }
            | {"latency_ci_low_ms": lo, "latency_ci_high_ms": hi, "ci_df": 0}
        )
    return pd.DataFrame(rows), first


def false_positive_rate(runs: int, rounds: int, naive: bool, seed: int, **noise) -> float:
    rng = np.random.default_rng(seed)
    significant = []
    for _ in range(runs):
        cells, samples = aa_run(rng, rounds, **noise)
        if naive:
            cells, samples = one_process(cells, samples)
        deg = degradation.degradation_table(cells, samples)
        assert len(deg) == G and deg["significant"].notna().all()
        significant += list(deg["significant"].astype(bool))
    return float(np.mean(significant))


@pytest.mark.parametrize(
    ("rounds", "drift_sd", "own_sd"),
    [(2, 0.02, 0.015), (2, 0.0, 0.02), (4, 0.03, 0.01)],
    ids=["2-processes-drift", "2-processes-no-shared-noise", "4-processes-drift-dominates"],
)
def test_a_a_degradations_are_significant_in_at_most_about_5_percent(rounds, drift_sd, own_sd):
    """The project's interval (paired where adjacent processes share noise, else two-level)
    calls about 5 % of A/A comparisons significant, as a 95 % interval must (the bound leaves
    room for the simulation's own error: 1440 comparisons, SE ~0.6 %); a CI from the
    iterations of one process per cell, blind to the spread between processes, calls most of
    them significant."""
    noise = {"drift_sd": drift_sd, "own_sd": own_sd, "iter_sd": 0.01}
    ours = false_positive_rate(60, rounds, naive=False, seed=rounds, **noise)
    assert ours <= 0.065, ours
    naive = false_positive_rate(10, rounds, naive=True, seed=rounds, **noise)
    assert naive > 0.3, naive


# -- the A/A benchmark (benchmarks/aa.py): its plan and its judgement ------------------------------
def test_the_a_a_benchmark_plans_interleave_where_it_binds_like_sequential():
    """Derived from the planner: every thread count of one node on a one-node machine, one
    thread on a two-node one (where interleave at two threads spans the nodes)."""
    from conftest import REPO
    from test_topology import load

    sys.path.insert(0, str(REPO))
    from benchmarks import aa

    cfg = {"threads": [1, 2], "use_smt": False}
    assert aa.aa_threads(cfg, load("this-vm-2cpu-1node")) == [1, 2]
    assert aa.aa_threads(cfg, load("2x16-nosmt-alternating")) == [1]
    over = aa.overrides(cfg, load("2x16-nosmt-alternating"))
    assert over["same_bindings"] == "each" and over["placements"] == ["sequential", "interleave"]


def test_the_a_a_benchmark_counts_false_positives_and_checks_the_binding_as_recorded():
    from conftest import REPO

    sys.path.insert(0, str(REPO))
    from benchmarks import aa

    cells, samples = aa_run(np.random.default_rng(3), 2, 0.02, 0.015, 0.01)
    cells = cells.assign(allocator="default", planned_cpus="0", mem_policy="bind", planned_mems="0")
    deg = degradation.degradation_table(cells, samples)
    df = aa.verdict(cells, deg)
    assert len(df) == G and df["same_binding"].all()
    assert df["significant"].sum() == deg["significant"].astype(bool).sum()
    text = aa.line(df)
    assert f"the same binding in {G}/{G} cells" in text and "goal >= 95%" in text
    # a cell whose record shows another binding is not an A/A comparison: said, not hidden
    moved = cells.copy()
    moved.loc[(moved["placement"] == "interleave") & (moved["batch_size"] == 1), "planned_cpus"] = (
        "1"
    )
    assert aa.verdict(moved, deg)["same_binding"].sum() == G - 1
    # the chance of k or more false positives at exactly 5 % each
    assert aa.chance(0, 12) == pytest.approx(1.0)
    assert aa.chance(1, 12) == pytest.approx(1 - 0.95**12)
    assert aa.chance(3, 12) < 0.05
