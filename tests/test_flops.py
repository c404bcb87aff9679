"""FLOP counts against published values, and the efficiency join."""

import math
from pathlib import Path

import pandas as pd
import pytest

from numa_effects.measure import peak
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


def test_add_efficiency_joins_flops_and_peak():
    cells = pd.DataFrame(
        {
            "model": ["resnet50", "resnet50", "resnet50"],
            "opt": ["none", "script", "none"],
            "placement": ["sequential", "sequential", "interleave"],
            "threads": [1, 1, 2],
            "batch_size": [4, 4, 4],
            "image_size": [224, 224, 224],
            "latency_median_ms": [1000.0, 800.0, 500.0],
            "throughput_ips": [4.0, 5.0, 8.0],
            "stop_reason": ["target_ci"] * 3,
        }
    )
    fl = pd.DataFrame(
        {"model": ["resnet50"], "batch_size": [4], "image_size": [224], "gflop": [32.0]}
    )
    pk = pd.DataFrame(
        {
            "placement": ["sequential"],
            "threads": [1],
            "status": ["ok"],
            "peak_gflop_per_s": [64.0],
        }
    )
    out = flops.add_efficiency(cells, fl, pk)
    cols = list(out.columns)
    assert cols[cols.index("throughput_ips") + 1 : cols.index("stop_reason")] == [
        "gflop",
        "gflop_per_s",
        "peak_gflop_per_s",
        "efficiency",
    ]
    assert out["gflop_per_s"].tolist() == [32.0, 40.0, 64.0]
    assert out["efficiency"].iloc[0] == pytest.approx(0.5)
    assert out["efficiency"].iloc[1] == pytest.approx(40 / 64)
    assert math.isnan(out["peak_gflop_per_s"].iloc[2])  # no peak measured there: empty
    assert math.isnan(out["efficiency"].iloc[2])


def test_peak_workload_and_summary():
    """The peak's GEMM step (built in the pinned instance: peak.build) and its summary from a
    record of the one measuring stack: best and median rate over the clean products only; none
    when no product was clean (status contended)."""
    step, timings, caught = peak.build({"settings": {"matrix_size": 128}})
    step()
    assert timings["build_s"] >= 0 and caught == []
    times = [0.004, 0.002, 0.001, 0.002]
    record = {
        "status": "ok",
        "settings": {"matrix_size": 128},
        "measurement": {"latencies_s": times, "excluded": [False, False, True, False]},
    }
    s = peak.summary(record)
    flop = 2 * 128**3
    assert s["flop_per_product"] == flop and s["reps"] == 3 and s["times_s"] == times
    assert s["peak_gflop_per_s"] == pytest.approx(flop / 0.002 / 1e9)  # 0.001 was excluded
    assert s["median_gflop_per_s"] == pytest.approx(flop / 0.002 / 1e9)
    record |= {"status": "contended"}
    assert peak.summary(record)["peak_gflop_per_s"] is None


def test_the_plan_asks_the_peak_for_the_gemm_workload():
    from numa_effects.plan import build, settings, topology

    topo = topology.load(Path(__file__).parent / "fixtures/topology/this-vm-2cpu-1node.lscpu")
    cfg = {
        "models": ["resnet18"], "batch_sizes": [1], "optimizations": ["none"], "threads": [1],
        "placements": ["sequential"], "results": "r", "image_size": 32, "use_smt": False,
    }  # fmt: skip
    spec = build.build(cfg, topo).peak_spec("sequential", 1)
    assert spec["workload"] == "gemm" and spec["settings"] == settings.PEAK_SETTINGS
    assert spec["settings"]["min_timed_seconds"] == settings.PEAK_SECONDS
