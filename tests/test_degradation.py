"""degradation.csv and opt_speedup.csv on hand-checkable cells and samples."""

import io
import math

import numpy as np
import pandas as pd
import pytest

from numa_effects import stats
from numa_effects.tables import degradation
from numa_effects.tables.degradation import DEGRADATION_COLUMNS, OPT_SPEEDUP_COLUMNS


def cell(placement, median, opt="none", threads=2, bs=4, **extra):
    return {
        "model": "resnet50",
        "opt": opt,
        "placement": placement,
        "threads": threads,
        "batch_size": bs,
        "status": "ok",
        "latency_median_ms": median,
        "latency_mean_ms": median,
        **extra,
    }


def samples_of(placement, values, opt="none", threads=2, bs=4):
    return pd.DataFrame(
        {
            "model": "resnet50",
            "opt": opt,
            "placement": placement,
            "threads": threads,
            "batch_size": bs,
            "iteration": range(len(values)),
            "latency_ms": values,
        }
    )


def test_constant_samples_give_a_point_ci():
    cells = pd.DataFrame([cell("sequential", 10.0), cell("interleave", 12.0)])
    samples = pd.concat(
        [samples_of("sequential", [10.0] * 20), samples_of("interleave", [12.0] * 20)]
    )
    d = degradation.degradation_table(cells, samples)
    assert list(d.columns) == DEGRADATION_COLUMNS
    r = d.iloc[0]
    assert (r["placement"], r["baseline"], r["latency_statistic"]) == (
        "interleave",
        "sequential",
        "median",
    )
    assert r["latency_degradation_pct"] == pytest.approx(20.0)
    assert r["throughput_baseline_ips"] == pytest.approx(400.0)  # 4 images / 10 ms
    assert r["throughput_compared_ips"] == pytest.approx(1000 * 4 / 12)
    assert r["throughput_degradation_pct"] == pytest.approx(100 * (1 - 10 / 12))  # 16.67 %
    assert r["latency_degradation_ci_low_pct"] == pytest.approx(20.0)
    assert r["latency_degradation_ci_high_pct"] == pytest.approx(20.0)
    assert r["significant"] is True


def test_bootstrap_ci_by_hand():
    # baseline always 10 ms; compared [11, 11, 13, 13]: a resample's median is 11 (>= 3 of 4
    # draws are 11: p = 5/16), 12 (exactly 2: 6/16) or 13 (5/16). The 2.5 % and 97.5 %
    # quantiles are therefore 11 and 13: latency CI [10 %, 30 %], throughput CI
    # [1 - 10/11, 1 - 10/13] = [9.09 %, 23.08 %]; point estimate 20 % (median 12).
    cells = pd.DataFrame([cell("sequential", 10.0), cell("interleave", 12.0)])
    samples = pd.concat(
        [samples_of("sequential", [10.0] * 4), samples_of("interleave", [11.0, 11.0, 13.0, 13.0])]
    )
    r = degradation.degradation_table(cells, samples).iloc[0]
    assert r["latency_degradation_pct"] == pytest.approx(20.0)
    assert r["latency_degradation_ci_low_pct"] == pytest.approx(10.0)
    assert r["latency_degradation_ci_high_pct"] == pytest.approx(30.0)
    assert r["throughput_degradation_ci_low_pct"] == pytest.approx(100 / 11)
    assert r["throughput_degradation_ci_high_pct"] == pytest.approx(100 * 3 / 13)
    assert r["significant"] is True


def test_overlapping_samples_are_not_significant():
    rng = np.random.default_rng(0)
    a, b = rng.lognormal(np.log(10), 0.1, 40), rng.lognormal(np.log(10), 0.1, 40)
    cells = pd.DataFrame(
        [cell("sequential", float(np.median(a))), cell("interleave", float(np.median(b)))]
    )
    samples = pd.concat([samples_of("sequential", a), samples_of("interleave", b)])
    r = degradation.degradation_table(cells, samples).iloc[0]
    assert r["latency_degradation_ci_low_pct"] < 0 < r["latency_degradation_ci_high_pct"]
    assert r["significant"] is False


def test_bootstrap_ci_covers_a_known_ratio():
    # 2 000-resample CI of median(compared)/median(baseline) for lognormal samples whose true
    # medians are 10 and 11: the true ratio 1.1 is inside in ~95 % of 100 repetitions.
    rng = np.random.default_rng(1)
    hits = 0
    for seed in range(100):
        b, c = rng.lognormal(np.log(10), 0.05, 60), rng.lognormal(np.log(11), 0.05, 60)
        lo, hi = stats.bootstrap_ratio(b, c, "median", n_boot=500, seed=seed)
        hits += lo <= 1.1 <= hi
    assert hits >= 88


def test_without_samples_the_ci_stays_empty():
    cells = pd.DataFrame([cell("sequential", 10.0), cell("interleave", 15.0)])
    d = degradation.degradation_table(cells, None)
    r = d.iloc[0]
    assert r["latency_degradation_pct"] == pytest.approx(50.0)
    assert math.isnan(r["latency_degradation_ci_low_pct"])
    assert math.isnan(r["throughput_degradation_ci_high_pct"])
    assert r["significant"] is None
    buf = io.StringIO()
    d.to_csv(buf, index=False)
    line = buf.getvalue().splitlines()[1]
    # throughput CI low, high, significant and ci_method are empty; not contended, not noisy
    assert line.endswith(",,,,False,False")


def test_packrat_import_uses_the_mean():
    # imported PackRat tables: min/mean/max only, no samples
    cells = pd.DataFrame(
        [
            {
                **{k: v for k, v in cell("sequential", 0).items() if k != "latency_median_ms"},
                "latency_mean_ms": 100.0,
                "source": "imported from PackRat",
            },
            {
                **{k: v for k, v in cell("interleave", 0).items() if k != "latency_median_ms"},
                "latency_mean_ms": 125.0,
                "source": "imported from PackRat",
            },
        ]
    )
    r = degradation.degradation_table(cells, None).iloc[0]
    assert r["latency_statistic"] == "mean"
    assert r["latency_degradation_pct"] == pytest.approx(25.0)
    assert r["throughput_degradation_pct"] == pytest.approx(20.0)


def test_only_matched_ok_cells_are_compared():
    cells = pd.DataFrame(
        [
            cell("sequential", 10.0),
            cell("interleave", 11.0),
            cell("remote", 13.0),
            cell("interleave", 20.0, threads=4),  # no sequential cell at 4 threads
            cell("mem-interleave", 12.0, status="failed"),
        ]
    )
    d = degradation.degradation_table(cells)
    assert d["placement"].tolist() == ["interleave", "remote"]
    assert d["latency_degradation_pct"].tolist() == pytest.approx([10.0, 30.0])


def test_a_median_missing_on_one_side_falls_back_to_the_mean():
    cells = pd.DataFrame(
        [cell("sequential", 10.0), cell("interleave", float("nan"), latency_mean_ms=14.0)]
    )
    r = degradation.degradation_table(cells).iloc[0]
    assert r["latency_statistic"] == "mean"
    assert r["latency_degradation_pct"] == pytest.approx(40.0)


def test_opt_speedup():
    cells = pd.DataFrame(
        [cell("sequential", 10.0, opt="none"), cell("sequential", 8.0, opt="script")]
    )
    samples = pd.concat(
        [
            samples_of("sequential", [10.0] * 10, opt="none"),
            samples_of("sequential", [8.0] * 10, opt="script"),
        ]
    )
    s = degradation.opt_speedup_table(cells, samples)
    assert list(s.columns) == OPT_SPEEDUP_COLUMNS
    r = s.iloc[0]
    assert (r["baseline"], r["opt"]) == ("none", "script")
    assert r["speedup"] == pytest.approx(1.25)
    assert r["speedup_ci_low"] == pytest.approx(1.25) == r["speedup_ci_high"]
    assert r["significant"] is True


def test_empty_cells_give_an_empty_table_with_the_columns():
    d = degradation.degradation_table(pd.DataFrame(columns=["model"]), None)
    assert list(d.columns) == DEGRADATION_COLUMNS and d.empty


def test_smt_cells_are_compared_with_the_smt_baseline_only():
    cells = pd.DataFrame(
        [
            cell("sequential", 10.0),
            cell("interleave", 12.0),
            cell("sequential+smt", 8.0),
            cell("interleave+smt", 6.0),
        ]
    )
    d = degradation.degradation_table(cells).set_index("placement")
    assert sorted(d.index) == ["interleave", "interleave+smt"]
    assert d.loc["interleave", "baseline"] == "sequential"
    assert d.loc["interleave", "latency_degradation_pct"] == pytest.approx(20.0)
    assert d.loc["interleave+smt", "baseline"] == "sequential+smt"
    assert d.loc["interleave+smt", "latency_baseline_ms"] == pytest.approx(8.0)
    assert d.loc["interleave+smt", "latency_degradation_pct"] == pytest.approx(-25.0)


def two_level_cells(rng, ratio, replicates=2, sigma_b=0.025):
    """Baseline and compared cells combined from simulated replicate medians (12 cell pairs, so
    the run's pool moderates each cell's variance) with a true ratio ``ratio``."""
    truth = [1.0] * 12 + [ratio] * 12
    meds = [np.exp(np.log(t) + rng.normal(0, sigma_b, replicates)) for t in truth]
    pooled = stats.pooled_replicate_var(meds)
    return [stats.combine_replicates(m, (), pooled) for m in meds]


def test_two_level_ratio_ci_covers_the_true_degradation_and_the_within_ci_does_not():
    """1000 simulated runs: the ratio CI from both cells' two-level CIs covers the true ratio
    >= 93 %; a CI that ignores the process level (the within-process bootstrap) does not."""
    rng = np.random.default_rng(5)
    hits = naive = total = 0
    for _ in range(1000):
        c = two_level_cells(rng, 1.04)
        b, k = c[0], c[12]
        lo, hi = stats.two_level_ratio_ci(
            (b["ci_low_s"], b["ci_high_s"], b["ci_df"]),
            (k["ci_low_s"], k["ci_high_s"], k["ci_df"]),
        )
        hits += lo <= 1.04 <= hi
        total += 1
        # within-process only: 20 iterations per process with 1 % noise, one process each
        base = b["median_s"] * np.exp(rng.normal(0, 0.01, 20))
        comp = k["median_s"] * np.exp(rng.normal(0, 0.01, 20))
        nlo, nhi = stats.bootstrap_ratio(base, comp, n_boot=200, seed=int(rng.integers(9)))
        naive += nlo <= 1.04 <= nhi
    assert hits / total >= 0.93
    assert naive / total < 0.80


def test_contended_or_noisy_cell_marks_the_comparison():
    cells = pd.DataFrame(
        [
            cell("sequential", 10.0, contended=False, noisy=False),
            cell("interleave", 12.0, contended=True, noisy=False),
            cell("sequential", 10.0, opt="script", contended=False, noisy=True),
        ]
    )
    d = degradation.degradation_table(cells, None)
    assert bool(d["contended"].iloc[0]) and not bool(d["noisy"].iloc[0])
    o = degradation.opt_speedup_table(cells, None)
    assert list(o["contended"]) == [False] and list(o["noisy"]) == [True]
