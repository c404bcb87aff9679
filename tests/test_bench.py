"""The benchmarks' own logic (benchmarks/judge.py, load.py, bias.py) on small tables; the
benchmarks themselves run with ``make bench`` (docs/performance.md)."""

import sys

import numpy as np
import pandas as pd
import pytest
from conftest import REPO

sys.path.insert(0, str(REPO))

from benchmarks import bias, judge, load


def cells(medians, lo=None, hi=None, **flags):
    rows = []
    for i, m in enumerate(medians):
        rows.append(
            {
                "model": "resnet50",
                "opt": "none",
                "placement": "sequential",
                "threads": 1,
                "batch_size": i + 1,
                "status": "ok",
                "latency_median_ms": m,
                "latency_ci_low_ms": lo[i] if lo else m * 0.97,
                "latency_ci_high_ms": hi[i] if hi else m * 1.03,
                **{k: v[i] for k, v in flags.items()},
            }
        )
    return pd.DataFrame(rows)


def test_second_median_inside_or_outside_the_first_ci():
    first = cells([100.0, 100.0, 100.0])
    second = cells([102.0, 104.0, 97.0])
    t = judge.against_ci(first, second)
    assert list(t["inside_ci"]) == [True, False, True]
    assert t["diff_pct"].tolist() == pytest.approx([2.0, 4.0, -3.0])
    assert t["spread_over_ci"].tolist() == pytest.approx([2 / 3, 4 / 3, 1.0])
    assert judge.share(t["inside_ci"]) == pytest.approx(2 / 3)


def test_noise_verdict_requires_every_deviation_to_be_flagged():
    quiet = cells([100.0, 100.0, 100.0], contended=[False] * 3, noisy=[False] * 3)
    loaded = cells(
        [101.0, 110.0, 108.0], contended=[False, True, False], noisy=[False, False, False]
    )
    v = judge.noise_verdict(judge.against_ci(quiet, loaded), goal_pct=3.0)
    assert list(v["within_goal"]) == [True, False, False]
    assert list(v["flagged"]) == [False, True, False]
    assert list(v["explained"]) == [True, True, False]  # the third moved 8 % unflagged


def test_duty_cycle_plan_and_bounds():
    assert load.plan(0.25, 0.1) == pytest.approx((0.025, 0.075))
    with pytest.raises(ValueError):
        load.plan(1.5, 0.1)


def test_background_load_stops_by_itself():
    """Bounded in time: the busy loops exit on their own at max_seconds (no one kills them)."""
    ld = load.DutyCycleLoad([0], 0.25, 0.1, max_seconds=0.5)
    ld.__enter__()
    try:
        assert [p.wait(timeout=60) for p in ld.procs] == [0]
    finally:
        ld.__exit__(None, None, None)


def test_cell_cpus_from_planned_cpus():
    df = pd.DataFrame({"planned_cpus": ["0", "0-1", None, "4,6"]})
    assert load.cell_cpus(df) == [0, 1, 4, 6]


def test_bias_analysis_tells_a_window_effect_from_a_stopping_rule_effect():
    """A process that slows down by 6 % over its 100 iterations: a short window reads low
    (replay_pct < 0) while the rule on the same iterations shuffled does not."""
    rng = np.random.default_rng(0)
    x = 0.1 * np.linspace(1.0, 1.06, 100) * np.exp(rng.normal(0, 0.005, 100))
    fixed = pd.DataFrame(
        {
            "model": "resnet50",
            "opt": "none",
            "placement": "sequential",
            "threads": 1,
            "batch_size": 1,
            "iteration": range(100),
            "latency_ms": x * 1000,
        }
    )
    df = bias.analyse(fixed, {"target_rel_ci": 0.02, "warmup": 2})
    r = df.iloc[0]
    assert r["replay_pct"] < -1.0 and r["window_pct"] < -1.0
    assert abs(r["shuffled_pct"]) < 0.5
    assert r["rho"] > 0.8


def test_the_precision_note_reads_speedups_peaks_and_efficiency_before_and_after(tmp_path):
    """benchmarks.precision_note: issue 19's numbers from a run's tables only."""
    from benchmarks import precision_note

    t = tmp_path / "tables"
    t.mkdir()
    pd.DataFrame(
        {
            "model": ["resnet50"] * 2, "placement": ["sequential"] * 2, "threads": [1, 1],
            "batch_size": [16, 16], "opt": ["bf16", "none"], "allocator": ["default", "tcmalloc"],
            "speedup": [3.9, 1.4], "speedup_ci_low": [3.7, 1.3], "speedup_ci_high": [4.1, 1.5],
            "ci_method": ["two-level"] * 2, "native": [False, True],
            "dtype_verified": [False, True], "contended": [False, False], "noisy": [False, True],
        }
    ).to_csv(t / "precision.csv", index=False)  # fmt: skip
    pd.DataFrame(
        {
            "placement": ["sequential"] * 2, "threads": [1, 1], "dtype": ["float32", "bfloat16"],
            "status": ["ok", "ok"], "peak_gflop_per_s": [120.0, 400.0],
            "peak_kernel": ["conv3x3_prepacked", "conv1x1_cl_autocast"],
            "kernels": ["mm 100.0; conv3x3_prepacked 120.0", "conv1x1_cl_autocast 400.0"],
            "mm_gflop_per_s": [100.0, None], "theoretical_gflop_per_s": [78.3, 156.6],
        }
    ).to_csv(t / "peak.csv", index=False)  # fmt: skip
    pd.DataFrame(
        {
            "placement": ["sequential"] * 2, "threads": [1, 1], "status": ["ok", "ok"],
            "gflop_per_s": [110.0, 300.0], "efficiency": [110 / 120, 300 / 400],
            "load_1m": [0.1, 0.2],
        }
    ).to_csv(t / "cells.csv", index=False)  # fmt: skip
    text = precision_note.render(tmp_path)
    assert "bf16               sequential  t1 bs16     3.90x [3.70, 4.10]     two-level" in text
    assert "(non-native, dtype not verified)" in text
    assert "none+tcmalloc" in text and "(disturbed)" in text
    assert "measured    120.0 (conv3x3_prepacked), theoretical     78.3" in text
    assert "efficiency before (float32 torch.mm alone): 1.10 - 3.00" in text
    assert "efficiency after (the cell's dtype's peak):  0.75 - 0.92" in text
