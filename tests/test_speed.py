"""numa_effects.tables.speed: the cells' latency at the run's reference speed (config key
canary). Its interval is checked by simulation against known truth, beside the naive one, and
on a real run's samples (tests/fixtures/canary: `bench variance`'s canary run on the 2-vCPU AMD
EPYC, 2026-12-04)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import CANARY_MS, canary_samples

from numa_effects.plan.grid import KEYS
from numa_effects.tables import speed

FIXTURE = Path(__file__).parent / "fixtures" / "canary" / "samples.csv.gz"


def _own_slope_adjusted(cell: pd.DataFrame, ref: float) -> np.ndarray:
    """A cell's replicates moved to ``ref`` along the slope fitted on its own replicates."""
    x, y = cell["x"].to_numpy(), cell["y"].to_numpy()
    return y - np.polyfit(x, y, 1)[0] * (x - ref)


def _naive(reps: pd.DataFrame, ref: float) -> pd.DataFrame:
    """The obvious way: each cell's own slope on its own replicates, the adjusted values then
    taken as plain replicates (t interval, n - 1 degrees of freedom)."""
    from scipy.stats import t

    out = []
    for b, cell in reps.groupby("batch_size"):
        adj = _own_slope_adjusted(cell, ref)
        n = len(adj)
        half = t.ppf(0.975, n - 1) * adj.std(ddof=1) / np.sqrt(n)
        out.append({"batch_size": b, "low": adj.mean() - half, "high": adj.mean() + half})
    return pd.DataFrame(out)


@pytest.mark.parametrize("slope", [0.52, 0.87])
def test_the_interval_covers_the_latency_at_the_reference_speed_and_the_naive_one_does_not(slope):
    """6 cells x 4 replicates (the two-stage cap), the slopes measured at two and one thread:
    the common-slope interval covers each cell's latency at the group's reference speed (mu_c +
    slope x ref, the truth of the simulation given the run's reference) 95 % of the time; each
    cell's own slope treated as exact covers far less (about 83 %); and the interval is as much
    narrower than the plain one (its variance pooled the same way) as the speed's share of the
    spread says."""
    from scipy.stats import t

    rng = np.random.default_rng(11)
    hits, naive_hits, ratio = [], [], []
    for _ in range(200):
        samples, mus = canary_samples(rng, 6, 4, slope)
        reps = speed.replicates(samples)
        fits = speed.fit(reps)
        (f,) = fits.values()
        est = speed.estimates(reps, fits)
        # the canary's own scale is 0.8 ms: the reference speed is ref - log(0.8) in x
        truth = {b: mus[b] + slope * (f["ref"] - np.log(CANARY_MS)) for b in mus}
        # the plain interval at its best: the cells' replicate variance pooled (as the
        # two-level CI pools a series'), so the comparison is the canary's doing alone
        dev = reps["y"] - reps.groupby("batch_size")["y"].transform("mean")
        df = len(reps) - reps["batch_size"].nunique()
        plain = t.ppf(0.975, df) * np.sqrt((dev @ dev) / df / 4)
        for row in est.itertuples():
            hits.append(np.log(row.speed_ci_low_ms) <= truth[row.batch_size])
            hits[-1] &= truth[row.batch_size] <= np.log(row.speed_ci_high_ms)
            ratio.append(np.log(row.speed_ci_high_ms / row.speed_ci_low_ms) / 2 / plain)
        for row in _naive(reps, f["ref"]).itertuples():
            naive_hits.append(row.low <= truth[row.batch_size] <= row.high)
    assert 0.93 <= np.mean(hits) <= 0.975, np.mean(hits)
    assert np.mean(naive_hits) < 0.88, np.mean(naive_hits)
    # the speed's part of the spread is gone: own 3 % against sqrt(3^2 + (slope x 8)^2) %
    expected = 0.03 / np.hypot(0.03, slope * 0.08)
    assert np.median(ratio) == pytest.approx(expected, rel=0.2), (np.median(ratio), expected)


def test_a_canary_that_does_not_follow_the_speed_fits_no_slope_and_widens_nothing():
    """The canary independent of the latency: the fitted slope is near 0, and the interval is
    about the plain one (the adjustment takes out nothing and costs one degree of freedom)."""
    rng = np.random.default_rng(5)
    samples, _ = canary_samples(rng, 6, 8, 0.0)
    (f,) = speed.fit(speed.replicates(samples)).values()
    assert abs(f["slope"]) < 0.3
    assert 0.02 <= np.sqrt(f["s2"]) <= 0.045  # the own 3 %


def test_fits_are_per_series_and_cells_without_canary_keep_nothing():
    rng = np.random.default_rng(2)
    a, _ = canary_samples(rng, 3, 4, 0.9)
    b, _ = canary_samples(rng, 3, 4, 0.5, placement="interleave")
    c, _ = canary_samples(rng, 3, 4, 0.5, opt="script")
    samples = pd.concat([a, b, c], ignore_index=True)
    fits = speed.fit(speed.replicates(samples))
    at = [speed.SERIES.index(k) for k in ("opt", "placement")]
    assert sorted(tuple(f[i] for i in at) for f in fits) == [
        ("none", "interleave"),
        ("none", "sequential"),
        ("script", "sequential"),
    ]
    # one reference speed per thread count and placement: eager's and TorchScript's the same
    refs = {tuple(f[i] for i in at): fit["ref"] for f, fit in fits.items()}
    assert refs[("none", "sequential")] == refs[("script", "sequential")]
    assert refs[("none", "interleave")] != refs[("none", "sequential")]
    cells = samples.groupby(list(KEYS), as_index=False).size().drop(columns="size")
    extra = cells.iloc[:1].assign(placement="remote")  # measured without the canary
    joined = speed.join(pd.concat([cells, extra], ignore_index=True), samples)
    assert joined["speed_latency_ms"].notna().sum() == len(cells)
    assert joined["speed_latency_ms"].isna().iloc[-1]
    # no canary anywhere: the table is left as it is
    plain = samples.assign(canary_ms=np.nan)
    assert list(speed.join(cells, plain).columns) == list(cells.columns)


def test_on_a_real_run_the_interval_is_narrower_where_the_canary_follows_the_speed():
    """The canary run of `bench variance` (8 processes per cell, ResNet-50 batch 1 eager, 1 and 2
    threads x three allocators): at one thread the fitted slope is positive and the cells'
    intervals at the reference speed are narrower than their plain t intervals."""
    from scipy.stats import t

    samples = pd.read_csv(FIXTURE)
    reps = speed.replicates(samples)
    fits = speed.fit(reps)
    est = speed.estimates(reps, fits)
    assert len(est) == reps.groupby(list(KEYS)).ngroups == 6
    for group, f in fits.items():
        assert 0.2 < f["slope"] < 1.5, (group, f)
    one = est[est["threads"] == 1]
    for row in one.itertuples():
        y = reps.loc[(reps["threads"] == 1) & (reps["allocator"] == row.allocator), "y"]
        plain = 100 * t.ppf(0.975, len(y) - 1) * y.std(ddof=1) / np.sqrt(len(y))
        assert row.speed_ci_halfwidth_pct < plain, (row.allocator, row.speed_ci_halfwidth_pct)


@pytest.mark.parametrize("slope", [0.52, 0.87])
def test_the_ratio_of_two_cells_at_one_speed_covers_and_the_naive_one_does_not(slope):
    """speed.ratio (the opt speedup's ``speed_speedup``): two cells of one group, 4 replicates
    each among 6 cells, both at the same speed. The common-slope contrast covers the true ratio
    (exp(mu_c - mu_1), the same at every speed) 95 % of the time and is narrower than Welch's
    interval of the two cells' plain replicates; each cell's own slope, its adjusted values then
    compared with Welch's interval, covers less (about 87 %)."""
    from scipy.stats import ttest_ind

    rng = np.random.default_rng(17)
    hits, naive_hits, width = [], [], []
    for _ in range(200):
        samples, mus = canary_samples(rng, 6, 4, slope)
        reps = speed.replicates(samples)
        fits = speed.fit(reps)
        base = reps.iloc[0][list(KEYS)].to_dict()
        for c in (2, 4, 6):
            comp = {**base, "batch_size": c}
            got = speed.ratio(reps, fits, comp, {**base, "batch_size": 1})
            truth = mus[c] - mus[1]
            hits.append(np.log(got["ci_low"]) <= truth <= np.log(got["ci_high"]))
            a, b = reps[reps["batch_size"] == c], reps[reps["batch_size"] == 1]
            plain = ttest_ind(a["y"], b["y"], equal_var=False).confidence_interval(0.95)
            width.append(np.log(got["ci_high"] / got["ci_low"]) / (plain.high - plain.low))
            (ref,) = {f["ref"] for f in fits.values()}
            adj = [_own_slope_adjusted(side, ref) for side in (a, b)]
            ci = ttest_ind(adj[0], adj[1], equal_var=False).confidence_interval(0.95)
            naive_hits.append(ci.low <= truth <= ci.high)
    assert 0.93 <= np.mean(hits) <= 0.975, np.mean(hits)
    assert np.mean(naive_hits) < 0.90, np.mean(naive_hits)  # about 0.87
    assert np.median(width) < 0.75, np.median(width)


def test_a_ratio_needs_both_cells_in_one_fitted_group():
    rng = np.random.default_rng(2)
    a, _ = canary_samples(rng, 3, 4, 0.9)
    b, _ = canary_samples(rng, 3, 4, 0.5, placement="interleave")
    reps = speed.replicates(pd.concat([a, b], ignore_index=True))
    fits = speed.fit(reps)
    seq = reps[reps["placement"] == "sequential"].iloc[0][list(KEYS)].to_dict()
    assert speed.ratio(reps, fits, {**seq, "batch_size": 2}, seq)["ratio"] > 1
    assert speed.ratio(reps, fits, {**seq, "placement": "interleave"}, seq) is None
    assert speed.ratio(reps, fits, {**seq, "batch_size": 99}, seq) is None
    assert speed.ratio(reps, {}, {**seq, "batch_size": 2}, seq) is None


def test_series_that_follow_the_canary_differently_each_get_their_own_fit():
    """Eager's processes 6 % apart at the same speed, TorchScript's 2 % (as on the 2-vCPU EPYC,
    2026-12-04), 3 cells x 4 replicates each at one thread count: each series' own fit covers
    its cells' latency at the reference speed 95 % of the time; one fit over both (the first
    design: one per thread count and placement) pools the two variances and covers eager's
    cells far less often and TorchScript's nearly always."""
    rng = np.random.default_rng(31)
    own, pooled = {"none": [], "script": []}, {"none": [], "script": []}
    for _ in range(200):
        eager, mu_e = canary_samples(rng, 3, 4, 0.8, own_sd=0.06)
        script, mu_s = canary_samples(rng, 3, 4, 0.8, own_sd=0.02, opt="script")
        samples = pd.concat([eager, script], ignore_index=True)
        reps = speed.replicates(samples)
        fits = speed.fit(reps)
        (ref,) = {f["ref"] for f in fits.values()}
        truth = {
            o: {b: m + 0.8 * (ref - np.log(CANARY_MS)) for b, m in mus.items()}
            for o, mus in (("none", mu_e), ("script", mu_s))
        }
        for row in speed.estimates(reps, fits).itertuples():
            t = truth[row.opt][row.batch_size]
            own[row.opt].append(np.log(row.speed_ci_low_ms) <= t <= np.log(row.speed_ci_high_ms))
        # the first design: both optimizations one series (their batch sizes kept apart)
        one = reps.assign(
            batch_size=reps["batch_size"] + 10 * (reps["opt"] == "script"), opt="none"
        )
        for row in speed.estimates(one, speed.fit(one)).itertuples():
            o, b = (
                ("script", row.batch_size - 10) if row.batch_size > 10 else ("none", row.batch_size)
            )
            t = truth[o][b]
            pooled[o].append(np.log(row.speed_ci_low_ms) <= t <= np.log(row.speed_ci_high_ms))
    for o in own:
        assert 0.93 <= np.mean(own[o]) <= 0.975, (o, np.mean(own[o]))
    assert np.mean(pooled["none"]) < 0.9, np.mean(pooled["none"])
    assert np.mean(pooled["script"]) > 0.98, np.mean(pooled["script"])


def test_a_ratio_between_two_series_covers_at_the_reference_speed():
    """speed.ratio across series (the opt speedup: eager and TorchScript, each along its own
    slope, 0.6 and 1.0, own SDs 6 % and 2 %, 3 cells x 4 replicates each): Welch's interval of
    the two estimates covers the true ratio at the reference speed 95 % of the time; the
    ratio's own value depends on the reference then (the slopes differ), and the truth is taken
    there."""
    rng = np.random.default_rng(41)
    hits = []
    for _ in range(200):
        eager, mu_e = canary_samples(rng, 3, 4, 0.6, own_sd=0.06)
        script, mu_s = canary_samples(rng, 3, 4, 1.0, own_sd=0.02, opt="script")
        reps = speed.replicates(pd.concat([eager, script], ignore_index=True))
        fits = speed.fit(reps)
        (ref,) = {f["ref"] for f in fits.values()}
        at = ref - np.log(CANARY_MS)
        base = reps.iloc[0][list(KEYS)].to_dict()
        for b in (1, 2, 3):
            got = speed.ratio(
                reps,
                fits,
                {**base, "opt": "script", "batch_size": b},
                {**base, "opt": "none", "batch_size": b},
            )
            truth = (mu_s[b] + 1.0 * at) - (mu_e[b] + 0.6 * at)
            hits.append(np.log(got["ci_low"]) <= truth <= np.log(got["ci_high"]))
    assert 0.93 <= np.mean(hits) <= 0.975, np.mean(hits)
