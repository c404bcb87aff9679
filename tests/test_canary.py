"""The canary's kernels (measure.cell.make_canary) and the canary benchmark's child and
statistics (benchmarks/canary.py): the effect of a canary on the next step, and which kernel
follows the host's speed. The benchmark itself runs with ``make bench`` (docs/performance.md)."""

import math
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import REPO

sys.path.insert(0, str(REPO))

from benchmarks import canary as bench
from benchmarks import canary_child
from numa_effects.measure import cell


@pytest.mark.parametrize("kernel", list(cell.CANARY_KERNELS))
def test_each_canary_kernel_computes_the_products_it_names(kernel):
    import torch

    canary = cell.make_canary(kernel)
    a, out = canary.operands
    assert a.shape == (cell.CANARY_REPEATS, cell.CANARY_SIZE, cell.CANARY_SIZE)
    out.zero_()
    canary()
    # bmm: every one of the batch's products; mm: the one matrix's, CANARY_REPEATS times
    n = cell.CANARY_REPEATS if kernel == "bmm" else 1
    want = torch.bmm(a[:n], a[:n])
    assert torch.allclose(out[:n], want, rtol=1e-4, atol=1e-4)
    if kernel == "mm":
        assert not out[1:].any()  # nothing else written


def test_an_unknown_canary_kernel_is_an_error():
    with pytest.raises(ValueError, match=r"unknown canary kernel 'fft'.*bmm"):
        cell.make_canary("fft")


def test_the_child_steps_a_real_model_with_a_canary_after_one_step_of_each_pair(tmp_path):
    """The benchmark's child, pinned with numactl as a one-thread cell: a real ResNet-18 at
    64 px. Steps come in pairs with exactly one followed by the kernels (every kernel timed
    then, none otherwise), and ``after_canary`` is the step before's ``canary``."""
    cfg = {"model": "resnet18", "opt": "none", "threads": 1, "batch_size": 1, "image_size": 64}
    rows = bench.run_child(cfg, tmp_path / "steps.json", seed=7, seconds=0.2)
    assert canary_child.MIN_STEPS <= len(rows) <= canary_child.MAX_STEPS and len(rows) % 2 == 0
    for i in range(0, len(rows), 2):
        assert rows[i]["canary"] != rows[i + 1]["canary"]
    assert rows[0]["after_canary"] is None
    assert all(rows[i]["after_canary"] == rows[i - 1]["canary"] for i in range(1, len(rows)))
    for r in rows:
        assert r["latency_s"] > 0
        for k in cell.CANARY_KERNELS:
            assert (r[k] is not None and r[k] > 0) if r["canary"] else r[k] is None


def _steps(rng, effect, processes=8, steps=40, process_sd=0.10, step_sd=0.05, assign=None):
    """Simulated steps: each process its own speed (log SD ``process_sd``), each step its own
    noise; a step after a canary is ``effect`` (log) slower. ``assign``: the canary's indicator
    per (process, step); random halves within pairs by default, as the child does."""
    rows = []
    for p in range(processes):
        speed = rng.normal(0.0, process_sd)
        for s in range(steps):
            after = assign(p, s) if assign else bool(rng.integers(2))
            lat = math.exp(math.log(0.05) + speed + effect * after + rng.normal(0.0, step_sd))
            rows.append({"process": p, "latency_s": lat, "after_canary": after})
    return pd.DataFrame(rows)


def test_the_effect_interval_covers_by_simulation_where_a_comparison_of_runs_does_not():
    """benchmarks.canary.effect on simulated processes (speed SD 10 %, step noise 5 %, a true
    effect of +1 %): the within-process interval covers the truth ~95 % of the time. The naive
    way, a run with the canary against one without, its steps pooled as if independent, sees
    the processes' speeds as an effect and covers far less."""
    from scipy import stats

    rng = np.random.default_rng(11)
    truth = 0.01
    hits, naive = [], []
    for _ in range(300):
        est = bench.effect(_steps(rng, truth))
        hits.append(est["ci_low_pct"] <= (math.exp(truth) - 1) * 100 <= est["ci_high_pct"])
        on = np.log(_steps(rng, truth, assign=lambda p, s: True)["latency_s"])
        off = np.log(_steps(rng, truth, assign=lambda p, s: False)["latency_s"])
        ci = stats.ttest_ind(on, off, equal_var=False).confidence_interval(0.95)
        naive.append(ci.low <= truth <= ci.high)
    assert 0.92 <= np.mean(hits) <= 0.98, np.mean(hits)
    assert np.mean(naive) < 0.5, np.mean(naive)
    # and the interval is as narrow as the step noise allows: about +-2 x 5 % / sqrt(320 / 4)
    est = bench.effect(_steps(rng, truth))
    assert est["ci_high_pct"] - est["ci_low_pct"] < 3.0, est


def test_no_spread_of_the_indicator_gives_no_effect():
    d = _steps(np.random.default_rng(1), 0.0, assign=lambda p, s: True)
    assert math.isnan(bench.effect(d)["effect_pct"])


def test_kernel_fits_find_the_kernel_that_moves_as_the_model_does():
    """Simulated processes whose speed (SD 10 %) slows the model and kernel ``bmm`` alike and
    kernel ``mm`` twice as much, plus noise of their own: ``kernel_fits`` (speed.fit's common
    slope over two batch sizes) gives ``bmm`` a slope near 1 and ``mm`` near 0.5, and both
    leave much less than the plain SD."""
    rng = np.random.default_rng(5)
    rows = []
    for threads in (1, 2):
        for b in (1, 4):
            for p in range(12):
                v = rng.normal(0.0, 0.10)
                for _ in range(10):
                    rows.append(
                        {
                            "threads": threads,
                            "batch_size": b,
                            "process": p,
                            "latency_s": math.exp(math.log(0.01 * b) + v + rng.normal(0, 0.01)),
                            "bmm": math.exp(math.log(0.001) + v + rng.normal(0, 0.01)),
                            "mm": math.exp(math.log(0.001) + 2 * v + rng.normal(0, 0.01)),
                        }
                    )
    fits = bench.kernel_fits(pd.DataFrame(rows), ["bmm", "mm"]).set_index(["threads", "kernel"])
    assert len(fits) == 4 and (fits["processes"] == 24).all()
    for t in (1, 2):
        assert fits.loc[(t, "bmm"), "slope"] == pytest.approx(1.0, abs=0.1)
        assert fits.loc[(t, "mm"), "slope"] == pytest.approx(0.5, abs=0.05)
        for k in ("bmm", "mm"):
            assert fits.loc[(t, k), "r"] > 0.9
            assert fits.loc[(t, k), "adjusted_sd_pct"] < fits.loc[(t, k), "plain_sd_pct"] / 3
        assert fits.loc[(t, "bmm"), "kernel_ms"] == pytest.approx(1.0, rel=0.1)
