"""Summary statistics and the order-statistic CI of the median."""

import math

import numpy as np
import pytest
from scipy.stats import quantile_test

from numa_effects import stats
from numa_effects.compare import statistics as compare_stats
from numa_effects.measure import timing as measure
from numa_effects.tables import tidy


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


def test_median_ci_ranks_equal_scipys_binomial_cdf():
    """The ranks and coverage from the summed CDF equal those from scipy's ``bdtr`` for every
    n up to 1000 and a few large ones (100 000 is a fixed protocol's count), at 90/95/99 %."""
    from scipy.special import bdtr

    def by_scipy(n, confidence):
        cdf = bdtr(np.arange(0, n // 2 + 1), n, 0.5)
        j = int(np.searchsorted(cdf, (1 - confidence) / 2, side="right"))
        return None if j < 1 else (j - 1, n - j, 1 - 2 * float(cdf[j - 1]))

    for confidence in (0.90, 0.95, 0.99):
        for n in [*range(1, 1001), 2733, 10_007, 100_000]:
            got, want = stats.median_ci_ranks(n, confidence), by_scipy(n, confidence)
            if want is None:
                assert got is None, (n, confidence)
            else:
                assert got[:2] == want[:2], (n, confidence)
                assert got[2] == pytest.approx(want[2], abs=1e-9), (n, confidence)


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


# -- two-level CI over replicates ---------------------------------------------------

# Between-process SDs of 12 cells, spread like the quiet Xeon's (1.2 %, 2.7 %, 3.5 % measured in
# ../shared/measurements/quiet-2core-xeon-2026-11-30/replicates); iterations 2.5 % around
# their process's median.
SIGMA_B = np.array([1.2, 2.7, 3.5, 2.0, 1.5, 3.0, 2.5, 1.0, 2.2, 3.2, 1.8, 2.8]) / 100
SIGMA_ITER = 0.025


def simulate_run(rng, replicates, n=10):
    """One run of 12 cells: per cell, ``replicates`` processes of ``n`` iterations. True median
    of every cell: 1.0 (process medians exp(b), b ~ N(0, sigma_b))."""
    cells = []
    for sb in SIGMA_B:
        reps = []
        for _ in range(replicates):
            b = rng.normal(0, sb)
            reps.append(np.exp(b + rng.normal(0, SIGMA_ITER, n)))
        cells.append(reps)
    return cells


def two_level(cells):
    meds = [[float(np.median(x)) for x in reps] for reps in cells]
    pooled = stats.pooled_replicate_var(meds)
    out = []
    for reps, m in zip(cells, meds, strict=True):
        wv = [stats.within_log_var(x) for x in reps]
        out.append(stats.combine_replicates(m, wv, pooled))
    return out


@pytest.mark.parametrize("replicates", [2, 3])
def test_two_level_ci_covers_the_true_median_and_the_within_process_ci_does_not(replicates):
    """1000 simulated runs with known variance components: the two-level CI covers the true
    median >= 93 % (every cell >= 90 %); the CI of the same iterations pooled as if they came
    from one process (what a single-process protocol reports) fails that test."""
    rng = np.random.default_rng(10)
    hit = np.zeros(len(SIGMA_B))
    naive = np.zeros(len(SIGMA_B))
    sims = 1000
    for _ in range(sims):
        cells = simulate_run(rng, replicates)
        for i, c in enumerate(two_level(cells)):
            hit[i] += c["ci_low_s"] <= 1.0 <= c["ci_high_s"]
            lo, hi = stats.median_ci(np.concatenate(cells[i]))
            naive[i] += lo <= 1.0 <= hi
    cover, naive_cover = hit / sims, naive / sims
    assert cover.mean() >= 0.93 and cover.min() >= 0.90, cover
    assert naive_cover.mean() < 0.80, naive_cover


def test_variance_components_are_recovered():
    rng = np.random.default_rng(11)
    reps = [np.exp(rng.normal(0, 0.03) + rng.normal(0, 0.02, 40)) for _ in range(300)]
    meds = [float(np.median(x)) for x in reps]
    wv = [stats.within_log_var(x) for x in reps]
    c = stats.combine_replicates(meds, wv)
    assert c["between_sd_pct"] == pytest.approx(3.0, rel=0.15)
    # the median of 40 normal iterations: 1.25 x 2 % / sqrt(40) ~ 0.4 %
    assert c["within_sd_pct"] == pytest.approx(0.4, rel=0.35)
    assert c["ci_method"] == "two-level" and c["replicates"] == 300
    # with no run pool the CI is the replicates' own, finite
    assert c["ci_low_s"] < c["median_s"] < c["ci_high_s"] and c["ci_df"] == 299


def test_one_replicate_uses_the_runs_pool_or_says_it_has_only_the_within_ci():
    alone = stats.combine_replicates([0.1], [1e-4])
    assert alone["ci_method"] == "within-process" and np.isnan(alone["ci_low_s"])
    pooled = stats.combine_replicates([0.1], [1e-4], (0.03**2, 12))
    assert pooled["ci_method"] == "two-level" and pooled["ci_df"] == 2
    assert pooled["ci_low_s"] < 0.1 < pooled["ci_high_s"]


# -- one reader, one "median else mean" ----------------------------------------------------------


def test_read_table_types_booleans_one_way_and_integers_as_integers(tmp_path):
    import pandas as pd

    path = tmp_path / "cells.csv"
    path.write_text(
        "model,threads,batch_size,n,contended,noisy,significant,verified,latency_median_ms\n"
        "m,1,8,10,True,false,,1,1.5\n"
        "m,2,8,,False,TRUE,True,0,\n"
    )
    df = tidy.read(path)
    assert df["threads"].dtype == "int64" and df["batch_size"].tolist() == [8, 8]
    assert str(df["n"].dtype) == "Int64" and df["n"].iloc[0] == 10 and df["n"].isna().iloc[1]
    assert df["contended"].tolist() == [True, False]
    assert df["noisy"].tolist() == [False, True]
    assert df["significant"].tolist() == [None, True]
    assert df["verified"].tolist() == [True, False]
    assert all(type(v) is bool for v in df["contended"])  # not numpy.bool_, not strings
    assert tidy.read(tmp_path / "absent.csv", ["model"]).columns.tolist() == ["model"]
    (tmp_path / "empty.csv").write_text("")
    assert tidy.read(tmp_path / "empty.csv").empty
    assert [stats.as_bool(v) for v in ("yes", "0", 1.0, float("nan"), None, "maybe")] == [
        True,
        False,
        True,
        None,
        None,
        None,
    ]
    typed = tidy.typed(pd.DataFrame({"contended": ["True", None], "threads": [1.0, 2.0]}))
    assert typed["contended"].tolist() == [True, None] and typed["threads"].dtype == "int64"


def test_the_median_is_used_where_it_exists_else_the_mean():
    import pandas as pd

    nan = float("nan")
    assert stats.latency_statistic([1.0, nan]) == "median"  # a table: any cell has one
    assert stats.latency_statistic([1.0, nan], every=True) == "mean"  # a pair: both must
    assert stats.latency_statistic([nan, None]) == "mean"
    assert stats.latency_statistic([]) == "mean"
    assert stats.table_statistic(pd.DataFrame({"latency_mean_ms": [3.0]})) == "mean"
    assert stats.latency_column(stats.table_statistic(pd.DataFrame({"latency_median_ms": [1]})))
    assert stats.latency_column("median") == "latency_median_ms"


# -- two runs compared --------------------------------------------------------------
#
# Two runs of the same 12 cells, each cell measured as the pipeline measures it (``replicates``
# processes, their medians combined by ``combine_replicates`` with the run's pool), compared by
# ``run_ratio``: between-process SDs 1.0 - 3.5 % as on the quiet Xeon at 1 thread (SIGMA_B).


def default_replicates() -> int:
    import yaml
    from conftest import REPO

    from numa_effects.plan import grid

    return grid.replicates(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))


def compare_runs(a, b):
    """``run_ratio`` of every cell of run b against run a (two_level outputs)."""
    return [
        compare_stats.run_ratio(
            (x["ci_low_s"], x["ci_high_s"], x["ci_df"]), (y["ci_low_s"], y["ci_high_s"], y["ci_df"])
        )
        for x, y in zip(a, b, strict=True)
    ]


def pooled_t_significant(a_cells, b_cells) -> np.ndarray:
    """What `pyperf compare_to` does (pyperf._utils.is_significant): every value of both runs
    in one Student t-test, pooled variance, n1 + n2 - 2 degrees of freedom, 95 %; here on the
    iterations of all processes of each cell (each cell's processes flattened)."""
    from scipy.special import stdtrit

    a = np.asarray(a_cells).reshape(len(a_cells), -1)
    b = np.asarray(b_cells).reshape(len(b_cells), -1)
    n1, n2 = a.shape[1], b.shape[1]
    pooled = ((n1 - 1) * a.var(axis=1, ddof=1) + (n2 - 1) * b.var(axis=1, ddof=1)) / (n1 + n2 - 2)
    t = (a.mean(axis=1) - b.mean(axis=1)) / np.sqrt(pooled * (1 / n1 + 1 / n2))
    return np.abs(t) >= stdtrit(n1 + n2 - 2, 0.975)


def run_of(rng, replicates: int, n: int = 10, shift: float = 0.0):
    """One run of the 12 cells (``simulate_run``'s model, vectorised): each cell's iterations
    (processes x iterations) and its two-level CI as cells.csv records it (the replicate
    medians combined with the run's pool by ``combine_replicates``)."""
    b = rng.normal(0.0, SIGMA_B[:, None, None], (len(SIGMA_B), replicates, 1))
    iters = np.exp(shift + b + rng.normal(0.0, SIGMA_ITER, (len(SIGMA_B), replicates, n)))
    medians = np.median(iters, axis=2)
    pooled = stats.pooled_replicate_var(medians)
    return iters, [stats.combine_replicates(m, (), pooled) for m in medians]


def simulate_comparisons(replicates: int, shift: float, sims: int, seed: int) -> dict:
    """``sims`` pairs of runs (the second slower by ``shift``, a fraction of the latency):
    per cell the rate of ``significant``, of a ``faster``/``slower`` verdict, of the pooled
    t-test's significance, and the rate at which the geometric mean's CI excludes 1."""
    rng = np.random.default_rng(seed)
    sig, verdict, pooled_t = (np.zeros(len(SIGMA_B)) for _ in range(3))
    geo = 0
    for _ in range(sims):
        a_iters, a = run_of(rng, replicates)
        b_iters, b = run_of(rng, replicates, shift=math.log1p(shift))
        rows = compare_runs(a, b)
        sig += [r["significant"] for r in rows]
        verdict += [
            compare_stats.verdict(r["ratio"], r["significant"]) != compare_stats.NO_CHANGE
            for r in rows
        ]
        pooled_t += pooled_t_significant(a_iters, b_iters)
        geo += bool(compare_stats.geomean_ratio([r["ratio"] for r in rows])["significant"])
    return {
        "significant": sig / sims,
        "verdict": verdict / sims,
        "pooled_t": pooled_t / sims,
        "geomean": geo / sims,
    }


def test_two_runs_of_the_same_distribution_are_rarely_called_different_and_pooling_fails():
    """The same cells measured twice (no change): at the default replicates the two-level
    comparison calls <= 5 % of cells significant (every cell <= 9 %: the noisiest ones, whose
    own variance the pool understates, a little above 5 %); the pooled-iterations t-test of
    `pyperf compare_to` calls far more than 5 % (the processes' own level is ignored)."""
    r = simulate_comparisons(default_replicates(), 0.0, sims=1000, seed=20)
    assert r["significant"].mean() <= 0.05 and r["significant"].max() <= 0.09, r["significant"]
    assert r["verdict"].mean() <= r["significant"].mean()  # a verdict needs significance
    assert r["geomean"] <= 0.07, r["geomean"]
    assert r["pooled_t"].mean() > 0.20, r["pooled_t"]  # fails the 5 % bound by far


@pytest.mark.parametrize(("replicates", "per_cell"), [(2, 0.25), (3, 0.45), (5, 0.70)])
def test_a_real_5_percent_shift_is_detected(replicates, per_cell):
    """A 5 % slower second run: the share of cells called significantly slower (the power)
    grows with the replicates (simulated: ~30 % per cell at 2, the default; ~55 % at 3; ~80 %
    at 5), and the geometric mean over the 12 cells detects it every time."""
    r = simulate_comparisons(replicates, 0.05, sims=400, seed=21 + replicates)
    assert r["verdict"].mean() >= per_cell, r["verdict"]
    assert r["geomean"] >= 0.99, r["geomean"]


def test_run_ratio_is_the_two_level_interval_and_the_verdict_needs_the_minimum_effect():
    a, b = (0.95, 1.05, 3), (1.0, 1.2, 4)
    r = compare_stats.run_ratio(a, b)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx(stats.two_level_ratio_ci(a, b))
    assert r["ratio"] == pytest.approx(math.sqrt(1.0 * 1.2) / math.sqrt(0.95 * 1.05))
    assert 4 < r["ci_df"] < 7  # Welch-Satterthwaite between min(3, 4) and 3 + 4
    assert compare_stats.verdict(1.03, True) == compare_stats.SLOWER
    assert compare_stats.verdict(1.03, True, min_effect_pct=5) == compare_stats.NO_CHANGE
    assert compare_stats.verdict(0.97, True) == compare_stats.FASTER
    assert compare_stats.verdict(0.90, False) == compare_stats.NO_CHANGE
    assert compare_stats.verdict(0.90, None) == compare_stats.NOT_ASSESSED
    g = compare_stats.geomean_ratio([0.5, 2.0, 1.0, float("nan")])
    assert g["geomean"] == pytest.approx(1.0) and g["cells"] == 3 and g["ci_df"] == 2
    assert g["ci_low"] < 1 < g["ci_high"] and g["significant"] is False
    one = compare_stats.geomean_ratio([1.2])
    assert one["geomean"] == pytest.approx(1.2) and math.isnan(one["ci_low"])
    assert one["significant"] is None


def test_stein_two_stage_replicates_cover_and_the_naive_add_until_narrow_rule_does_not():
    """Replicates where the noise is: 4000 simulated cells whose replicate
    ln-medians are N(0, 2 %), target +-3 %, cap 20. Stein's rule (a first stage of 3, then N
    fixed from its variance alone, the CI with the first stage's variance) covers the true
    median 95 % and its half-width is within the target whenever N is not capped; the naive
    rule (start with 2, add one until the t interval of all so far is within the target) stops
    when the spread happens to look small and under-covers."""
    from scipy.special import stdtrit

    rng = np.random.default_rng(23)
    sims, sigma, target, r0, cap = 4000, 0.02, 0.03, 3, 20
    h = math.log1p(target)
    y = rng.normal(0.0, sigma, (sims, cap))  # every replicate a cell could take
    stein_hit, naive_hit, used, within = 0, 0, [], 0
    for row in y:
        first = row[:r0]
        var = float(first.var(ddof=1))
        n = stats.stein_replicates(var, r0 - 1, target, r0, cap)
        used.append(n)
        med, lo, hi = stats.stein_interval(np.exp(row[:n]), var, r0 - 1)
        stein_hit += lo <= 1.0 <= hi
        within += n == cap or math.log(hi / med) <= h + 1e-12
        for r in range(2, cap + 1):  # the naive rule
            s = row[:r]
            half = float(stdtrit(r - 1, 0.975)) * float(s.std(ddof=1)) / math.sqrt(r)
            if half <= h or r == cap:
                naive_hit += abs(float(s.mean())) <= half
                break
    assert 0.94 <= stein_hit / sims <= 0.96, stein_hit / sims
    assert within == sims
    # 4000 cells: a coverage's standard error is ~0.35 points
    assert naive_hit / sims < 0.93 and (stein_hit - naive_hit) / sims > 0.02, naive_hit / sims
    # quiet cells stop at the first stage, noisy ones take more, none beyond the cap
    assert min(used) == r0 and max(used) <= cap and np.median(used) > r0
    assert stats.stein_replicates(1e-6, 2, target, r0, cap) == r0
    assert stats.stein_replicates(1.0, 2, target, r0, cap) == cap
    assert stats.stein_replicates(math.nan, 0, target, r0, cap) == cap
