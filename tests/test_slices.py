"""The deploy job's block-and-slice design (numa_effects.plan.slices), validated by
simulation against known truth (benchmarks/slices.py): its CI covers the true gains, the naive CI
over slices does not where processes differ, and the ABBA order cancels a linear drift."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from benchmarks import slices as sim
from numa_effects.plan import slices


def test_every_configuration_once_per_cycle_and_odd_cycles_reversed():
    got = slices.order(["a", "b", "c"], 4)
    assert got == ["a", "b", "c", "c", "b", "a", "a", "b", "c", "c", "b", "a"]
    with pytest.raises(ValueError):
        slices.order(["a"], 0)


@pytest.mark.parametrize("k", [2, 3, 7])
def test_a_linear_drift_cancels_over_an_even_number_of_cycles(k):
    # slice i runs at time i under a drift of slope 1: a configuration's mean time is what the
    # drift adds to its value; the ABBA order gives every configuration the same mean time
    configs = list(range(k))
    seq = slices.order(configs, 4)
    mean_time = [np.mean([i for i, c in enumerate(seq) if c == x]) for x in configs]
    assert np.allclose(mean_time, (len(seq) - 1) / 2)
    # one cycle alone does not: the first configuration runs earliest
    one = slices.order(configs, 1)
    assert one.index(0) < one.index(k - 1)


def test_block_value_is_the_geometric_mean_of_the_slice_medians():
    assert slices.block_value([1.0, 4.0]) == pytest.approx(2.0)
    assert np.isnan(slices.block_value([]))


def test_cycles_fit_the_time_and_are_even():
    assert slices.cycles_for(10.0, [1.0, 1.0]) == 4  # 5 cycles fit: the even 4
    assert slices.cycles_for(1.0, [1.0, 1.0]) == 2  # never fewer than one ABBA pair


@pytest.mark.parametrize("host", [sim.Host(), sim.PROCESS_BOUND], ids=["drift", "process-bound"])
def test_the_block_ci_covers_the_true_gains(host):
    df = sim.simulate(host, sim.Job(), sims=60, seed=1).set_index("design")
    # 60 jobs x 3 gains: a 95 % interval's coverage lands above 0.88 with > 99 % probability
    assert df.loc["slices", "coverage"] >= 0.88
    assert df.loc["rounds", "coverage"] >= 0.88


def test_the_naive_slice_ci_under_covers_where_processes_differ():
    df = sim.simulate(sim.PROCESS_BOUND, sim.Job(), sims=60, seed=2).set_index("design")
    assert df.loc["naive", "coverage"] < 0.8
    assert df.loc["slices", "coverage"] >= 0.88


def test_slices_narrow_the_ci_where_the_host_drifts():
    # the same machine time: the drift the rounds design cannot pair away cancels in the slices
    df = sim.simulate(sim.Host(), sim.Job(), sims=60, seed=3).set_index("design")
    assert df.loc["slices", "halfwidth_pct"] < 0.6 * df.loc["rounds", "halfwidth_pct"]
    # and without drift or process offsets both designs see only the steps' noise
    quiet = replace(sim.Host(), episode_rate=0.0, walk_sd=0.0, process_sd=0.0)
    assert sim.simulate(quiet, sim.Job(), sims=20, seed=4)["coverage"].min() >= 0.85
