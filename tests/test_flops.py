"""FLOP counts against published values, and the efficiency join."""

import math
from pathlib import Path

import pandas as pd
import pytest

from numa_effects.measure.workloads import dtype_peaks
from numa_effects.tables import flops


@pytest.mark.parametrize(
    ("model", "gmacs"),
    [("resnet18", 1.82), ("resnet50", 4.11)],  # torchvision's model docs / the ResNet paper
)
def test_flops_match_published_gmacs(model, gmacs):
    n, device = flops.count(model, 1, 224)
    assert device == "meta"
    # FlopCounterMode counts 2 FLOPs per multiply-accumulate
    assert n / 2 / 1e9 == pytest.approx(gmacs, rel=0.02)


def test_resnet50_is_about_8_2_gflop_per_image_and_linear_in_batch():
    one, _ = flops.count("resnet50", 1, 224)
    four, _ = flops.count("resnet50", 4, 224)
    assert one / 1e9 == pytest.approx(8.18, abs=0.05)
    assert four == 4 * one
    small, _ = flops.count("resnet50", 1, 112)
    # convs scale with pixels, up to rounding of odd feature maps (112 / 32 = 3.5 -> 4)
    assert small / one == pytest.approx(0.25, rel=0.1)


def test_flops_table_counts_each_combination_once():
    combos = [{"model": "resnet18", "batch_size": b, "image_size": 64} for b in (2, 1, 2, 1)]
    t = flops.table(combos)
    assert t[["model", "batch_size", "image_size"]].values.tolist() == [
        ["resnet18", 1, 64],
        ["resnet18", 2, 64],
    ]
    assert t["gflop"].iloc[1] == pytest.approx(2 * t["gflop"].iloc[0])


def test_add_efficiency_joins_flops_and_the_peak_of_each_cells_dtype():
    cells = pd.DataFrame(
        {
            "model": ["resnet50"] * 4,
            "opt": ["none", "script", "none", "int8"],
            "placement": ["sequential", "sequential", "interleave", "sequential"],
            "threads": [1, 1, 2, 1],
            "batch_size": [4, 4, 4, 4],
            "allocator": ["default"] * 4,
            "image_size": [224] * 4,
            "latency_median_ms": [1000.0, 800.0, 500.0, 250.0],
            "throughput_ips": [4.0, 5.0, 8.0, 16.0],
            "stop_reason": ["target_ci"] * 4,
        }
    )
    fl = pd.DataFrame(
        {"model": ["resnet50"], "batch_size": [4], "image_size": [224], "gflop": [32.0]}
    )
    pk = pd.DataFrame(
        {
            "placement": ["sequential", "sequential"],
            "threads": [1, 1],
            "dtype": ["float32", "int8"],
            "status": ["ok", "ok"],
            "peak_gflop_per_s": [64.0, 160.0],
            "peak_kernel": ["conv3x3_prepacked", "conv1x1_pt2e_int8"],
            "theoretical_gflop_per_s": [78.3, 156.5],
        }
    )
    out = flops.add_efficiency(cells, fl, pk)
    cols = list(out.columns)
    assert cols[cols.index("throughput_ips") + 1 : cols.index("stop_reason")] == [
        "gflop",
        "gflop_per_s",
        "peak_gflop_per_s",
        "peak_kernel",
        "theoretical_gflop_per_s",
        "efficiency",
        "efficiency_note",
    ]
    assert out["gflop_per_s"].tolist() == [32.0, 40.0, 64.0, 128.0]
    assert out["efficiency_note"].isna().all()  # every efficiency a fact (<= 1.05)
    assert out["efficiency"].iloc[0] == pytest.approx(0.5)
    assert out["efficiency"].iloc[1] == pytest.approx(40 / 64)
    # int8 against int8's own peak, not float32's (FLOPs are the same work in any dtype)
    assert out["efficiency"].iloc[3] == pytest.approx(128 / 160)
    assert out["peak_kernel"].iloc[3] == "conv1x1_pt2e_int8"
    assert out["theoretical_gflop_per_s"].iloc[0] == pytest.approx(78.3)
    assert math.isnan(out["peak_gflop_per_s"].iloc[2])  # no peak measured there: empty
    assert math.isnan(out["efficiency"].iloc[2])
    # a peak table from before per-dtype peaks (no dtype column) is float32's
    old = pk.drop(columns=["dtype", "peak_kernel", "theoretical_gflop_per_s"]).iloc[:1]
    out = flops.add_efficiency(cells, fl, old)
    assert out["efficiency"].iloc[0] == pytest.approx(0.5) and math.isnan(out["efficiency"][3])


def peak_instance(dtype: str):
    """The instance of a peak spec of ``dtype`` at 1 thread on this machine."""
    from numa_effects.plan import placement, spec, topology

    plan = placement.plan(topology.current(), 1, "sequential")
    (inst,) = spec.peak(plan, dtype, {}).instances
    return inst


def test_peak_workload_times_each_kernel_and_the_summary_keeps_the_best_clean_rate(monkeypatch):
    """The peak's workload (built in the pinned instance) calls every kernel of the dtype back
    to back in each step, as often as its probe says (``calls``); the summary takes each
    kernel's best rate over the clean timed steps (the instance's last n steps are the runner's
    timed ones) and the best kernel as the peak."""
    calls = []

    def kernel(name, flop):
        def build(threads):
            return (lambda: calls.append(name)), flop

        return build

    monkeypatch.setitem(
        dtype_peaks.KERNELS,
        "float32",
        (
            dtype_peaks.Kernel("a", "float32", kernel("a", 1e9)),
            dtype_peaks.Kernel("b", "float32", kernel("b", 2e9)),
            dtype_peaks.Kernel("c", "float32", kernel("c", 1e9), requires=("torchao",)),
        ),
    )
    inst = peak_instance("float32")
    built = dtype_peaks.build(inst, {}, available={"torchao": False})
    assert built.timings["prepare_s"] == 0.0 and built.warnings == []
    calls.clear()
    for _ in range(5):
        built.step()
    rep = built.report()
    n = {k: rep["kernels"][k]["calls"] for k in ("a", "b")}
    assert n["a"] >= dtype_peaks.MIN_CALLS and n["b"] >= dtype_peaks.MIN_CALLS
    assert calls == (["a"] * n["a"] + ["b"] * n["b"]) * 5
    assert rep["order"] == ["a", "b"] and len(rep["times_s"]) == 5
    assert rep["kernels"]["c"] == {"skipped": "needs torchao"}
    # the runner timed the last 3 steps and excluded the middle one
    rep["times_s"] = [[9, 9], [9, 9], [0.01, 0.04], [0.001, 0.001], [0.02, 0.01]]
    m = {"latencies_s": [0.05, 0.002, 0.03], "excluded": [False, True, False]}
    s = dtype_peaks.summary(inst, rep, m, True)
    assert s["kernels"]["a"]["peak_gflop_per_s"] == pytest.approx(1e9 / 0.01 / 1e9)
    assert s["kernels"]["b"]["peak_gflop_per_s"] == pytest.approx(2e9 / 0.01 / 1e9)
    assert s["kernels"]["a"]["reps"] == 2  # the excluded step's 0.001 s never counts
    assert (s["peak_kernel"], s["peak_gflop_per_s"]) == ("b", pytest.approx(200.0))
    assert dtype_peaks.summary(inst, rep, m, False)["peak_gflop_per_s"] is None  # contended
    assert s["theoretical"]["cores"] == inst.plan.cores  # the instance's cores, for reference


def test_a_kernel_far_below_the_best_at_the_probe_is_dropped(monkeypatch):
    import time

    def slow(threads):
        def call():
            time.sleep(0.02)

        return call, 1e6  # 0.05 GFLOP/s

    def fast(threads):
        return (lambda: None), 1e9

    monkeypatch.setitem(
        dtype_peaks.KERNELS,
        "bfloat16",
        (
            dtype_peaks.Kernel("slow", "bfloat16", slow),
            dtype_peaks.Kernel("fast", "bfloat16", fast),
        ),
    )
    monkeypatch.setattr(dtype_peaks, "PROBE_SECONDS", 0.05)
    rep = dtype_peaks.build(peak_instance("bfloat16"), {}).report()
    assert rep["order"] == ["fast"] and "cannot be the peak" in rep["kernels"]["slow"]["dropped"]


def test_the_plan_asks_one_peak_per_dtype_of_the_grid():
    from numa_effects.plan import build, peaks, settings, topology

    topo = topology.load(Path(__file__).parent / "fixtures/topology/this-vm-2cpu-1node.lscpu")
    cfg = {
        "models": ["resnet18"], "batch_sizes": [1], "optimizations": ["none", "script", "int8"],
        "threads": [1], "placements": ["sequential"], "results": "r", "image_size": 32,
        "use_smt": False,
    }  # fmt: skip
    plan = build.build(cfg, topo)
    assert sorted(plan.peak) == [("sequential", 1, "float32"), ("sequential", 1, "int8")]
    windows = range(1, peaks.WINDOWS + 1)
    assert plan.peak_outputs() == [
        f"r/peak/sequential/t1/{d}/w{w}.json" for w in windows for d in ("float32", "int8")
    ]
    spec = plan.peak_spec("sequential", 1, "int8", window=2)
    (inst,) = spec.instances
    assert inst.workload == "dtype_peaks" and spec.settings == settings.PEAK_SETTINGS
    assert inst.cell["dtype"] == "int8" and inst.plan == plan.peak[("sequential", 1, "int8")]
    assert inst.cell["window"] == 2  # the record says which window it is
    assert spec.settings["min_timed_seconds"] == settings.PEAK_SECONDS


def test_bf16_peak_kernels_compute_in_bf16_and_count_their_flops():
    """Each bf16 peak kernel built for real: its FLOPs per call are what FlopCounterMode counts
    (the models' convention), and the kernels on the frozen graphs' path take bf16 weights
    and inputs and return bf16 (no float32 computation standing in for the peak)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    for k in dtype_peaks.KERNELS["bfloat16"]:
        call, flop = k.build(1)
        with FlopCounterMode(display=False) as counter:
            out = call()
        assert counter.get_total_flops() == pytest.approx(flop), k.name
        assert out.dtype == torch.bfloat16, k.name
    names = [k.name for k in dtype_peaks.KERNELS["bfloat16"]]
    assert {"conv1x1_cl_bf16", "conv3x3_cl_bf16"} <= set(names)
