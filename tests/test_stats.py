"""Summary statistics and the order-statistic CI of the median."""

import math

import numpy as np
import pytest
from scipy.stats import quantile_test

from numa_effects import measure, stats


@pytest.mark.parametrize("n", [6, 7, 10, 11, 30, 101, 1000])
def test_median_ci_matches_scipy_quantile_test(n):
    x = np.random.default_rng(n).lognormal(0, 0.3, n)
    ci = quantile_test(x, q=float(np.median(x)), p=0.5).confidence_interval(0.95)
    assert stats.median_ci(x) == pytest.approx((ci.low, ci.high))


def test_median_ci_ranks_by_hand():
    # n = 6: [min, max] covers the median with probability 1 - 2/64 = 0.96875
    assert stats.median_ci_ranks(6) == (0, 5, pytest.approx(1 - 2 / 64))
    # n = 5: [min, max] covers only 1 - 2/32 = 0.9375 < 0.95: no interval
    assert stats.median_ci_ranks(5) is None
    assert all(math.isnan(v) for v in stats.median_ci([1, 2, 3, 4, 5]))


@pytest.mark.parametrize("n", [10, 30, 101])
def test_ci_coverage_close_to_nominal_on_skewed_data(n):
    # 4000 simulated cells of lognormal (right-skewed) latencies; the true median is 1.
    rng = np.random.default_rng(100 + n)
    x = np.sort(rng.lognormal(0.0, 0.5, size=(4000, n)), axis=1)
    lo_i, hi_i, exact = stats.median_ci_ranks(n)
    covered = (x[:, lo_i] <= 1.0) & (x[:, hi_i] >= 1.0)
    assert exact >= 0.95
    # the interval's own coverage, within 3 standard errors of the simulation
    assert covered.mean() == pytest.approx(exact, abs=3 * math.sqrt(exact * (1 - exact) / 4000))


def test_coverage_after_adaptive_stopping_stays_close_to_nominal():
    # Stopping when the CI is narrow enough (optional stopping) could bias coverage down;
    # check the procedure end to end on 400 simulated cells with a fake clock (~94 %).
    rng = np.random.default_rng(7)
    covered = 0
    reps = 400
    for _ in range(reps):
        now = [0.0]

        def step(now=now):
            now[0] += rng.lognormal(np.log(0.01), 0.04)

        m = measure.run(step, {"max_seconds_per_cell": 1e9}, clock=lambda now=now: now[0])
        lo, hi = stats.median_ci(m.latencies_s)
        covered += lo <= 0.01 <= hi
    assert covered / reps >= 0.92


def test_summarize_has_every_statistic():
    x = [0.010, 0.011, 0.012, 0.010, 0.013, 0.010, 0.011, 0.030]
    s = stats.summarize(x)
    for key in [
        "n",
        "min_s",
        "p10_s",
        "median_s",
        "mean_s",
        "p90_s",
        "p99_s",
        "max_s",
        "std_s",
        "iqr_s",
        "ci_low_s",
        "ci_high_s",
        "ci_halfwidth_pct",
        "cv",
        "noisy",
    ]:
        assert key in s
    assert s["n"] == 8 and s["median_s"] == pytest.approx(0.0110)
    assert s["ci_low_s"] <= s["median_s"] <= s["ci_high_s"]
    # n = 8: ranks 1 and 8 (P(B <= 1) = 9/256 > 0.025, P(B <= 0) = 1/256)
    assert (s["ci_low_s"], s["ci_high_s"]) == (0.010, 0.030)
    assert s["noisy"] is True  # IQR 2.25 ms / median 11 ms > 10 %


def test_quiet_cell_is_not_noisy():
    s = stats.summarize([0.0100, 0.0101, 0.0102, 0.0100, 0.0101, 0.0100])
    assert s["noisy"] is False


def test_throughput_ci_is_the_median_ci_inverted():
    x = [0.010] * 3 + [0.020] * 3 + [0.011, 0.012]
    s = stats.summarize(x)
    t = stats.throughput(4, x, s["median_s"])
    assert t["ips"] == pytest.approx(4 / s["median_s"])
    assert t["ci_low_ips"] == pytest.approx(4 / s["ci_high_s"])
    assert t["ci_high_ips"] == pytest.approx(4 / s["ci_low_s"])
    assert t["total_ips"] == pytest.approx(4 * 8 / sum(x))


def test_ci_within_uses_both_bounds():
    x = [1.0] * 20 + [1.05] * 5
    ok, median = stats.ci_within(x, 0.02)
    assert median == 1.0 and ok
    ok, _ = stats.ci_within([1.0] * 10 + [1.05] * 10, 0.02)
    assert not ok
    assert stats.ci_within([1.0] * 5, 0.5) == (False, 1.0)  # no 95 % CI at n = 5
