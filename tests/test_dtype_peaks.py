"""measure.workloads.dtype_peaks: the timing loop and the choice of the best kernel on fakes; the
real kernels of each dtype as integration tests (short: a fraction of a second each)."""

from __future__ import annotations

import itertools
import warnings

import pytest

from numa_effects.measure.workloads import dtype_peaks as dp
from numa_effects.measure.workloads import error_text, warning_entries


class FakeClock:
    def __init__(self, durations):
        self.t = 0.0
        self.durations = itertools.cycle(durations)
        self.calls = 0

    def __call__(self):
        return self.t

    def run(self):
        self.calls += 1
        self.t += next(self.durations)


def test_time_kernel_reports_the_best_and_median_rate_after_warmup():
    clock = FakeClock([0.5, 0.25, 1.0])  # warm-up calls advance the clock too
    got = dp.time_kernel(clock.run, flop=1e9, seconds=2.0, min_reps=3, warmup=2, clock=clock)
    assert clock.calls == got["reps"] + 2
    assert got["peak_gflop_per_s"] == pytest.approx(4.0)  # 1 GFLOP in 0.25 s
    # timed: 1.0, 0.5, 0.25 (1.75 s < 2 s), 1.0 -> rates 1, 2, 4, 1
    assert got["reps"] == 4 and got["median_gflop_per_s"] == pytest.approx(1.5)
    assert got["measure_s"] >= 2.0 and got["flop_per_call"] == 1e9 and not got["slow"]


def test_time_kernel_needs_min_reps_within_the_budget():
    clock = FakeClock([0.1])
    got = dp.time_kernel(clock.run, flop=1e9, seconds=0.2, min_reps=5, warmup=0, clock=clock)
    assert got["reps"] == 5 and got["peak_gflop_per_s"] == pytest.approx(10.0)


def test_a_slow_kernel_gets_one_warmup_and_two_timed_calls():
    clock = FakeClock([10.0])
    got = dp.time_kernel(clock.run, flop=1e9, seconds=2.0, min_reps=5, warmup=2, clock=clock)
    assert (clock.calls, got["reps"], got["slow"]) == (3, 2, True)
    assert got["peak_gflop_per_s"] == pytest.approx(0.1)


def test_the_peak_is_the_best_kernel_and_failed_ones_are_skipped():
    per = {
        "mm": {"peak_gflop_per_s": 90.0},
        "conv1x1_cl": {"peak_gflop_per_s": 120.0},
        "broken": {"error": "RuntimeError: no"},
    }
    assert dp.best(per) == {"peak_gflop_per_s": 120.0, "peak_kernel": "conv1x1_cl"}
    assert dp.best({"x": {"skipped": "needs torchao"}}) == {
        "peak_gflop_per_s": None,
        "peak_kernel": None,
    }


def test_measure_skips_kernels_whose_requirements_are_missing_and_survives_errors(monkeypatch):
    def ok(threads):
        return (lambda: None), 1e6

    def boom(threads):
        raise RuntimeError("oneDNN refused\nsecond line")

    monkeypatch.setitem(
        dp.KERNELS,
        "int8",
        (
            dp.Kernel("needs_ao", "int8", ok, requires=("torchao",)),
            dp.Kernel("fails", "int8", boom),
            dp.Kernel("works", "int8", ok),
        ),
    )
    got = dp.measure("int8", seconds=0.01, available={"torchao": False})
    assert got["kernels"]["needs_ao"] == {"skipped": "needs torchao"}
    assert got["kernels"]["fails"] == {"error": "RuntimeError: oneDNN refused"}
    assert got["peak_kernel"] == "works" and got["dtype"] == "int8"


def test_a_kernel_raising_without_a_message_is_recorded_and_the_others_still_run(monkeypatch):
    def silent(threads):
        raise AssertionError  # str(exc) == "": no first line to take

    def ok(threads):
        return (lambda: None), 1e6

    kernels = (dp.Kernel("silent", "int8", silent), dp.Kernel("works", "int8", ok))
    monkeypatch.setitem(dp.KERNELS, "int8", kernels)
    got = dp.measure("int8", seconds=0.01, available={})
    assert got["kernels"]["silent"] == {"error": "AssertionError"}
    assert got["peak_kernel"] == "works"


def test_warnings_and_errors_keep_their_first_line_and_survive_an_empty_message():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("", UserWarning, stacklevel=1)
        warnings.warn("first\nsecond", UserWarning, stacklevel=1)
        warnings.warn("first\nother", UserWarning, stacklevel=1)
    assert warning_entries(caught) == [
        {"category": "UserWarning", "message": ""},
        {"category": "UserWarning", "message": "first"},
    ]
    assert error_text(RuntimeError("no\nmore")) == "RuntimeError: no"
    assert error_text(RuntimeError()) == "RuntimeError"


def test_kernel_sizes_grow_with_the_threads_so_each_thread_keeps_its_work():
    """A convolution's batch grows with the threads up to MAX_BATCH, a product's side with
    their cube root: the work per thread stays what it is at one thread."""
    one = dp.scaled(dp.CONV, 1)
    assert one == dp.CONV
    for t in (2, 3, 8):
        got = dp.scaled(dp.CONV, t)
        assert got["n"] == dp.CONV["n"] * t and got["c"] == dp.CONV["c"]
    assert dp.scaled(dp.CONV, 10_000)["n"] == dp.MAX_BATCH
    assert dp.matrix_size(1) == dp.MATRIX_SIZE
    for t in (2, 8, 64):
        side = dp.matrix_size(t)
        assert side % 128 == 0
        per_thread = side**3 / t
        assert dp.MATRIX_SIZE**3 <= per_thread < (dp.MATRIX_SIZE + 128) ** 3 * 1.01
    assert dp.matrix_size(8) == 2 * dp.MATRIX_SIZE


def test_real_kernels_are_built_at_the_sizes_of_their_threads():
    """The FLOPs per call of each float32 kernel built for 2 threads are twice (the product:
    its side's cube) what they are for one: the builders use the sizes for their threads."""
    pytest.importorskip("torch")
    for k in dp.KERNELS["float32"]:
        _, one = k.build(1)
        _, two = k.build(2)
        if k.name == "mm":
            assert two == pytest.approx(2.0 * dp.matrix_size(2) ** 3), k.name
        else:
            assert two == pytest.approx(2 * one), k.name


def test_calls_per_step_give_each_kernel_about_the_same_time():
    assert dp.calls_per_step(dp.KERNEL_STEP_S / 10) == 10
    assert dp.calls_per_step(1.0) == dp.MIN_CALLS  # a slow kernel: still called twice
    assert dp.calls_per_step(1e-9) == dp.MAX_CALLS
    assert dp.calls_per_step(0.0) == dp.MAX_CALLS


def test_a_step_keeps_each_kernels_fastest_call_not_its_first(monkeypatch):
    """The first call of a kernel after another one runs on cold caches: the step keeps the
    fastest of its calls, so a kernel whose first call of each step is slow is not
    under-measured (one call per step put a 1x1 convolution at 144 GFLOP/s where its probe ran
    173 on the 2-vCPU EPYC of tests/fixtures/peak_windows)."""
    import time

    from numa_effects.plan import placement, spec, topology

    def kernel():
        state = {"n": 0}

        def call():  # every other call slow: one of each step's two calls
            state["n"] += 1
            time.sleep(0.05 if state["n"] % 2 else 0.001)

        return call

    def build(threads):
        return kernel(), 1e9

    monkeypatch.setitem(dp.KERNELS, "float32", (dp.Kernel("k", "float32", build),))
    monkeypatch.setattr(dp, "PROBE_SECONDS", 0.02)
    monkeypatch.setattr(dp, "MAX_CALLS", 2)  # exactly 2 calls per step: slow, then fast
    plan = placement.plan(topology.current(), 1, "sequential")
    (inst,) = spec.peak(plan, "float32", {}).instances
    built = dp.build(inst, {}, available={})
    rep = built.report()
    rep["times_s"].clear()
    for _ in range(3):
        built.step()
    assert rep["kernels"]["k"]["calls"] == 2
    assert all(0.001 <= row[0] < 0.05 for row in rep["times_s"]), rep["times_s"]


def test_every_dtype_of_the_registry_has_kernels():
    from numa_effects.plan.optimizations import OPTIMIZATIONS

    assert {o.dtype for o in OPTIMIZATIONS.values()} <= set(dp.KERNELS)
    assert dp.conv_flop(4, 512, 14) == pytest.approx(0.411041792e9)


@pytest.mark.integration
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int8"])
def test_real_kernels_of_each_dtype(dtype):
    import torch

    torch.set_num_threads(1)
    got = dp.measure(dtype, seconds=0.3)
    print(dtype, {k: v.get("peak_gflop_per_s", v) for k, v in got["kernels"].items()})
    if dtype == "int8" and "skipped" in got["kernels"]["conv1x1_pt2e_int8"]:
        pytest.skip(got["kernels"]["conv1x1_pt2e_int8"]["skipped"])
    assert not any("error" in v for v in got["kernels"].values()), got
    assert got["peak_gflop_per_s"] > 0.5
