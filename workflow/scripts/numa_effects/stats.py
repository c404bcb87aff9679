"""Every statistic of the project, and the one reader of its tables (the bottom layer):

- summary statistics of one cell's latency samples (seconds) and the confidence interval of the
  median used by the adaptive stopping rule (``measure``);
- a cell's two-level CI from its replicates (``combine_replicates``), and how many replicates a
  cell needs for a target width (``stein_replicates``, ``stein_interval``);
- the CI of a ratio of two cells (``two_level_ratio_ci``, ``bootstrap_ratio``): degradation.csv,
  opt_speedup.csv, packing.csv;
- one cell measured by two runs (``run_ratio``, ``verdict``) and the geometric mean over the
  matched cells (``geomean_ratio``): the comparison of runs (``tables.compare_runs``);
- which latency statistic a table or a comparison uses: the median, else the mean
  (``latency_statistic``, ``table_statistic``);
- ``read_table``: a results CSV with its boolean and integer columns typed one way (``as_bool``).

Cheap to import in the measuring child: numpy only (scipy and pandas inside the functions that
need them).

Keys ending in ``_s`` are latencies in seconds; the tidy tables turn every such key into a
``latency_<name>_ms`` column, so new statistics flow into the tables without further code.

The CI of the median is the distribution-free order-statistic interval: for sorted samples
``x_(1) <= ... <= x_(n)`` the interval ``[x_(j), x_(n-j+1)]`` covers the true median with
probability ``1 - 2 P(B <= j-1)``, ``B ~ Binomial(n, 1/2)`` (scipy's binomial CDF), whatever the
shape of the distribution, so it is valid for skewed, heavy-tailed and multi-modal latencies.
``j`` is the largest rank whose coverage is still >= the requested level, so the interval is
conservative (its exact coverage is recorded as ``ci_coverage``). It assumes independent samples:
a drifting stream makes it too narrow for the mean of the drift, which is why the stopping rule
still has caps and the tables keep every raw sample. Below n = 6 no 95 % interval exists (the
min..max interval of 5 samples covers only 93.75 %): the bounds are NaN there.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

NOISY_IQR_OVER_MEDIAN = 0.10  # torch.utils.benchmark warns at this IQR/median ratio
CONFIDENCE = 0.95
MEDIAN, MEAN = "median", "mean"  # the latency statistics (``latency_statistic``)


@functools.lru_cache(maxsize=8192)
def median_ci_ranks(n: int, confidence: float = CONFIDENCE) -> tuple[int, int, float] | None:
    """0-based ranks ``(lo, hi)`` of the order statistics bounding the median's CI and the
    interval's exact coverage, or None when ``n`` samples cannot reach ``confidence``.
    The binomial CDF is summed here from the lower tail (log-gamma terms, only up to the rank
    it needs), not taken from scipy: importing scipy cost every cell's launcher 0.28 s and
    more under load, once per replicate (tests/test_stats.py checks it against scipy's)."""
    if n < 1:
        return None
    half_alpha = (1.0 - confidence) / 2.0
    log_norm = math.lgamma(n + 1) - n * math.log(2.0)
    cdf = 0.0  # P(B <= k - 1)
    k = 0
    while k <= n // 2:
        p = math.exp(log_norm - math.lgamma(k + 1) - math.lgamma(n - k + 1))
        if cdf + p > half_alpha:
            break
        cdf += p
        k += 1
    j = k  # the largest j with P(B <= j-1) <= alpha/2
    if j < 1:
        return None
    return j - 1, n - j, 1.0 - 2.0 * cdf


def median_ci(latencies: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Order-statistic confidence interval of the median; (nan, nan) when n is too small."""
    a = np.asarray(latencies, dtype=float)
    ranks = median_ci_ranks(int(a.size), confidence)
    if ranks is None:
        return math.nan, math.nan
    lo, hi, _ = ranks
    part = np.partition(a, (lo, hi))
    return float(part[lo]), float(part[hi])


def summarize(latencies_s: Sequence[float], confidence: float = CONFIDENCE) -> dict:
    a = np.asarray(latencies_s, dtype=float)
    if a.size == 0:
        raise ValueError("no latency samples to summarize")
    q10, q25, q50, q75, q90, q99 = np.percentile(a, [10, 25, 50, 75, 90, 99])
    mean = float(a.mean())
    std = float(a.std(ddof=1)) if a.size > 1 else 0.0
    iqr = float(q75 - q25)
    lo, hi = median_ci(a, confidence)
    ranks = median_ci_ranks(int(a.size), confidence)
    return {
        "n": int(a.size),
        "min_s": float(a.min()),
        "p10_s": float(q10),
        "median_s": float(q50),
        "mean_s": mean,
        "p90_s": float(q90),
        "p99_s": float(q99),
        "max_s": float(a.max()),
        "std_s": std,
        "iqr_s": iqr,
        "ci_low_s": lo,
        "ci_high_s": hi,
        "ci_level": confidence,
        "ci_coverage": ranks[2] if ranks else math.nan,
        # half the CI width relative to the median, in percent (the adaptive target's unit)
        "ci_halfwidth_pct": (hi - lo) / 2.0 / q50 * 100.0 if q50 > 0 else math.nan,
        "cv": std / mean if mean > 0 else float("nan"),
        "noisy": bool(q50 > 0 and iqr / q50 > NOISY_IQR_OVER_MEDIAN),
    }


def throughput(batch_size: int, latencies_s: Sequence[float], median_s: float) -> dict:
    """Images per second: batch / median latency with its CI (batch / the median's CI bounds,
    swapped), and PackRat's batch x n / total timed seconds."""
    total = float(np.sum(latencies_s))
    lo, hi = median_ci(latencies_s)
    return {
        "ips": batch_size / median_s,
        "ci_low_ips": batch_size / hi if hi > 0 else math.nan,
        "ci_high_ips": batch_size / lo if lo > 0 else math.nan,
        "total_ips": batch_size * len(latencies_s) / total,
    }


def ci_within(
    latencies: Sequence[float], rel: float, confidence: float = CONFIDENCE
) -> tuple[bool, float]:
    """(both bounds of the median's CI lie within ``rel`` (a fraction) of the median, median).
    One partial sort per call: the adaptive loop calls this after every timed iteration."""
    a = np.asarray(latencies, dtype=float)
    n = int(a.size)
    ranks = median_ci_ranks(n, confidence)
    lo_i, hi_i = (ranks[0], ranks[1]) if ranks else (0, n - 1)
    mid_hi, mid_lo = n // 2, (n - 1) // 2
    part = np.partition(a, sorted({lo_i, hi_i, mid_lo, mid_hi}))
    median = float(0.5 * (part[mid_lo] + part[mid_hi]))
    if ranks is None or median <= 0:
        return False, median
    return bool(max(median - part[lo_i], part[hi_i] - median) <= rel * median), median


# -- two levels: replicates (independent processes) of one cell ----------------------------------
#
# Each replicate (one pinned process) gives a median m_r of its clean iterations. On the log
# scale y_r = ln m_r = mu + b_r + e_r: b_r the process-level effect (memory layout, page
# placement, frequency, neighbours, slow drift between rounds; between-process variance
# sigma_b^2) and e_r the sampling error of the median within the process (sigma_w^2, from the
# replicate's order-statistic CI). The cell's latency is exp(mean y_r) and its 95 % CI a t
# interval for mu with the variance of y_r (both levels, as in Kalibera & Jones, "Rigorous
# benchmarking in reasonable time", ISMM 2013: the variance of the replicate means holds both).
# With 2 or 3 replicates a cell's own variance has 1 or 2 degrees of freedom (t = 12.7 or
# 4.3), so it is moderated with a pooled replicate variance (tables.cells.pooled_variances: the
# ln-medians of the cells of its batch-size series, relative, so cells of any latency pool)
# given PRIOR_DF degrees of freedom: the estimate is
# (df_c s_c^2 + PRIOR_DF s_pool^2) / (df_c + PRIOR_DF) with df_c + PRIOR_DF degrees of freedom.
# PRIOR_DF = 2 keeps every cell's coverage >= 94 % in simulation when cells' between-process
# SDs differ as on the quiet Xeon (1.0 - 3.5 %); more weight on the pool narrows CIs but
# under-covers the noisiest cells (tests/test_stats.py). One replicate and no pool: only the
# within-process CI exists, and ``ci_method`` says so.

PRIOR_DF = 2
# A cell's CI that is a t interval of its ln-median, symmetric on the log scale, with ``ci_df``
# degrees of freedom: ``combine_replicates``' and, under two_stage, ``stein_interval``'s. The
# ratio and run comparisons (``two_level_ratio_ci``, ``run_ratio``) take either.
T_INTERVALS = ("two-level", "two-stage")


def within_log_var(median_s: float, ci_low_s: float, ci_high_s: float) -> float:
    """Variance of ln(median) of one replicate from its order-statistic 95 % CI (the CI's width
    on the log scale / (2 x 1.96), squared); NaN without a CI."""
    if not (ci_low_s > 0 and ci_high_s > 0 and median_s > 0):
        return math.nan
    return ((math.log(ci_high_s) - math.log(ci_low_s)) / (2 * 1.959964)) ** 2


def pooled_replicate_var(groups: Sequence[Sequence[float]]) -> tuple[float, int]:
    """(pooled variance of ln-medians within cells, its degrees of freedom) over cells with >= 2
    replicates; (nan, 0) when none has."""
    ss, df = 0.0, 0
    for medians in groups:
        y = np.log(np.asarray(medians, dtype=float))
        if y.size >= 2:
            ss += float(((y - y.mean()) ** 2).sum())
            df += int(y.size - 1)
    return (ss / df, df) if df else (math.nan, 0)


def combine_replicates(
    medians_s: Sequence[float],
    within_vars: Sequence[float] = (),
    pooled: tuple[float, int] = (math.nan, 0),
    confidence: float = CONFIDENCE,
    prior_df: int = PRIOR_DF,
) -> dict:
    """The cell's median and two-level CI from its replicates' medians (see above).
    ``within_vars``: each replicate's ``within_log_var`` (only for the variance components);
    ``pooled``: ``pooled_replicate_var`` of the run. Returns median_s, ci_low_s, ci_high_s,
    ci_df, ci_method ("two-level" or "within-process" when nothing measures the process
    level), replicates, and the components as relative SDs in %: ``replicate_sd_pct`` (a
    replicate's median around the cell's), ``within_sd_pct`` (its part from the iterations
    within the process) and ``between_sd_pct`` (the process level: sqrt(max(0, total -
    within)))."""
    from scipy.special import stdtrit  # Student t quantile, without scipy.stats' import time

    y = np.log(np.asarray(medians_s, dtype=float))
    r = int(y.size)
    if r == 0:
        raise ValueError("no replicate medians to combine")
    wv = np.asarray([v for v in within_vars if v == v], dtype=float)
    w = float(wv.mean()) if wv.size else math.nan
    s2 = float(y.var(ddof=1)) if r >= 2 else math.nan
    pool_var, pool_df = pooled
    d0 = min(prior_df, pool_df) if pool_var == pool_var else 0
    df_c = r - 1
    if df_c + d0 == 0:
        var, df, method = math.nan, 0, "within-process"
    else:
        own = df_c * s2 if df_c else 0.0
        var = (own + d0 * pool_var) / (df_c + d0)
        df, method = df_c + d0, "two-level"
    centre = float(y.mean())
    if df:
        half = float(stdtrit(df, 0.5 + confidence / 2)) * math.sqrt(var / r)
        lo, hi = math.exp(centre - half), math.exp(centre + half)
    else:
        lo = hi = math.nan
    total = s2 if r >= 2 else var
    return {
        "median_s": math.exp(centre),
        "ci_low_s": lo,
        "ci_high_s": hi,
        "ci_df": df,
        "ci_method": method,
        "replicates": r,
        "replicate_sd_pct": 100 * math.sqrt(total) if total == total else math.nan,
        "within_sd_pct": 100 * math.sqrt(w) if w == w else math.nan,
        "between_sd_pct": (
            100 * math.sqrt(max(0.0, total - w)) if total == total and w == w else math.nan
        ),
        "log_var": var,
    }


# -- how many replicates a cell needs: Stein's two-stage rule -------------------------------------
#
# Replicates "where the noise is" (issue 23 item 2): a first stage of ``r0`` replicates of every
# cell estimates the cell's log variance (``combine_replicates``: its own replicates and the
# run's pool, ``log_var`` with ``ci_df`` degrees of freedom); from it alone the cell's total
# ``N`` is fixed so that the CI's half-width will be at most the target (``stein_replicates``);
# after the other N - r0 replicates the CI is centred on all N and its half-width is
# t(df) * sqrt(var / N) with the FIRST stage's variance and degrees of freedom
# (``stein_interval``). Because N depends on the data only through that variance, which is
# independent of the replicates' mean for normal log medians, the interval's coverage is exact
# (Stein 1945), capped N included. The naive rule -- add a replicate until the usual t interval
# of all replicates so far is narrow enough -- stops when the spread happens to look small and
# under-covers (tests/test_stats.py simulates both). Not wired into the workflow yet.


def stein_replicates(
    log_var: float,
    df: int,
    target_rel: float,
    r0: int,
    cap: int,
    confidence: float = CONFIDENCE,
) -> int:
    """Total replicates of a cell under Stein's rule: the smallest N >= r0 with
    t(df) * sqrt(log_var / N) <= ln(1 + target_rel), at most ``cap``. ``log_var``, ``df``: the
    first stage's variance of one replicate's ln-median and its degrees of freedom."""
    from scipy.special import stdtrit

    if not (log_var == log_var and df >= 1):
        return cap  # nothing estimates the spread: as many as allowed
    h = math.log1p(target_rel)
    t = float(stdtrit(df, 0.5 + confidence / 2))
    need = math.ceil(t * t * log_var / (h * h) - 1e-12)
    return int(min(cap, max(r0, need)))


def stein_halfwidth(log_var: float, df: int, n: int, confidence: float = CONFIDENCE) -> float:
    """The half-width (log scale) of the CI of ``n`` replicates with the first stage's
    ``log_var`` and ``df``: t(df) * sqrt(log_var / n)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, 0.5 + confidence / 2)) * math.sqrt(log_var / n)


def stein_interval(
    medians_s: Sequence[float], log_var: float, df: int, confidence: float = CONFIDENCE
) -> tuple[float, float, float]:
    """(median, low, high) of a cell after Stein's second stage: the geometric mean of all its
    replicates' medians, with the first stage's ``log_var`` and ``df`` (``stein_replicates``)."""
    y = np.log(np.asarray(medians_s, dtype=float))
    centre = float(y.mean())
    half = stein_halfwidth(log_var, df, y.size, confidence)
    return math.exp(centre), math.exp(centre - half), math.exp(centre + half)


# -- ratios of two cells: CIs of compared / baseline ---------------------------------------------
#
# Two cells' latencies compared (a placement against its baseline, an optimization against eager,
# a packed plan against the fat instance). With two-level CIs on both sides (replicates), the
# ratio's CI is the same two-level interval over both (``two_level_ratio_ci``); with one process
# per cell, a percentile bootstrap of both cells' samples (``bootstrap_ratio``), which covers
# only the within-process noise. The tables say which (``ci_method``).

N_BOOTSTRAP = 2000
SEED = 0
CHUNK = 4_000_000  # resampled values held in memory at once


def log_se(low: float, high: float, df: float, confidence: float = CONFIDENCE) -> float:
    """The standard error of a cell's ln-median from its symmetric (log scale) t interval."""
    from scipy.special import stdtrit

    return (np.log(high) - np.log(low)) / 2.0 / float(stdtrit(df, 0.5 + confidence / 2))


def log_ratio_interval(
    baseline: tuple[float, float, float],
    compared: tuple[float, float, float],
    confidence: float = CONFIDENCE,
) -> tuple[float, float, float]:
    """(ln(compared / baseline), the half-width of its CI, its degrees of freedom) from each
    cell's two-level CI ``(ci_low, ci_high, ci_df)`` (``combine_replicates``; the point
    estimate is the CI's log-centre): ln(compared / baseline) +- t x sqrt(se_c^2 + se_b^2),
    degrees of freedom by Welch-Satterthwaite (inf when both standard errors are 0)."""
    from scipy.special import stdtrit

    (bl, bh, bdf), (cl, ch, cdf) = baseline, compared
    sb, sc = log_se(bl, bh, bdf, confidence), log_se(cl, ch, cdf, confidence)
    centre = float((np.log(cl) + np.log(ch)) / 2.0 - (np.log(bl) + np.log(bh)) / 2.0)
    var = float(sb**2 + sc**2)
    if var == 0:
        return centre, 0.0, math.inf
    df = var**2 / (sb**4 / bdf + sc**4 / cdf)  # Welch-Satterthwaite
    return centre, float(stdtrit(df, 0.5 + confidence / 2)) * math.sqrt(var), float(df)


def two_level_ratio_ci(
    baseline: tuple[float, float, float],
    compared: tuple[float, float, float],
    confidence: float = CONFIDENCE,
) -> tuple[float, float]:
    """CI of compared / baseline from each cell's two-level CI ``(ci_low, ci_high, ci_df)``
    (``log_ratio_interval``)."""
    centre, half, _ = log_ratio_interval(baseline, compared, confidence)
    return float(np.exp(centre - half)), float(np.exp(centre + half))


def bootstrap_ratio(
    baseline: np.ndarray,
    compared: np.ndarray,
    statistic: str = "median",
    n_boot: int = N_BOOTSTRAP,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
) -> tuple[float, float]:
    """Percentile-bootstrap CI of stat(compared) / stat(baseline), resampling each sample
    independently with replacement (``statistic``: ``median`` or ``mean``)."""
    fn = np.median if statistic == MEDIAN else np.mean
    rng = np.random.default_rng(seed)

    def boot(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        rows = max(1, CHUNK // max(1, x.size))
        out = []
        for start in range(0, n_boot, rows):
            k = min(rows, n_boot - start)
            out.append(fn(x[rng.integers(0, x.size, size=(k, x.size))], axis=1))
        return np.concatenate(out)

    ratio = boot(compared) / boot(baseline)
    alpha = 1.0 - confidence
    lo, hi = np.quantile(ratio, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


# -- two runs: one cell measured by a baseline run and by a compared run -------------------------
#
# Each run measured the cell with its own replicates (independent processes) and recorded its
# two-level CI (``combine_replicates``: a t interval on the ln replicate medians, the cell's own
# variance moderated with the run's pooled process-level variance, ``PRIOR_DF``). The two runs'
# processes are independent, so ln(compared / baseline) has the variance se_b^2 + se_c^2, and the
# interval is the Welch-Satterthwaite one of ``log_ratio_interval`` -- the same model as the
# cells' and degradation.csv's CIs. Its level holds: the iterations inside each process, the
# process-to-process variation (memory layout, frequency, neighbours, drift between rounds) of
# each run. It does not hold what every process of one run shares (the machine's state that day,
# a changed setting): that is what a comparison of runs is meant to show.
#
# ``significant``: the CI excludes 1. The verdict also asks for a minimum effect: ``slower`` or
# ``faster`` when significant and the change is at least ``min_effect_pct`` (default 2 %),
# else ``no significant change``. Without a two-level CI on both sides (one process per cell
# and nothing to pool, PackRat's min/avg/max) nothing covers the process level, so no test is
# made (``not assessed``): a within-process interval would call most cells significant, as
# pooling iterations does (pyperf's t-test on all values; tests/test_stats.py).
#
# The geometric mean over cells (``geomean_ratio``) is exp(mean of the cells' ln ratios) with a
# t interval over the cells (n - 1 degrees of freedom): it treats the matched cells as a sample
# of cells, so it holds each cell's measurement noise and the differences between the cells'
# effects, and it needs no per-cell CI (each cell is its own process on each side: an imported
# PackRat pair has one too). It does not hold a shift shared by every cell of one run.

FASTER, SLOWER, NO_CHANGE, NOT_ASSESSED = (
    "faster",
    "slower",
    "no significant change",
    "not assessed",
)
MIN_EFFECT_PCT = 2.0  # the default minimum effect of a verdict (config key compare.min_effect_pct)


def run_ratio(
    baseline: tuple[float, float, float],
    compared: tuple[float, float, float],
    confidence: float = CONFIDENCE,
) -> dict:
    """compared / baseline of one cell measured by two runs, from each run's two-level CI
    ``(ci_low, ci_high, ci_df)`` (see above): ``ratio`` (the ratio of the cells' medians, the
    geometric means of their replicate medians), ``ci_low``, ``ci_high``, ``ci_df``
    (Welch-Satterthwaite) and ``significant`` (the CI excludes 1)."""
    centre, half, df = log_ratio_interval(baseline, compared, confidence)
    lo, hi = math.exp(centre - half), math.exp(centre + half)
    return {
        "ratio": math.exp(centre),
        "ci_low": lo,
        "ci_high": hi,
        "ci_df": df,
        "significant": bool(lo > 1.0 or hi < 1.0),
    }


# -- paired ratios: a placement and its baseline measured side by side, round by round ----------
#
# In round r the compared cell's replicate and its baseline's run next to each other (ABBA
# order, plan.grid.job_order), so what drifts between rounds (the host's clock, a neighbour VM)
# moves both: y_c,r = mu_c + s_r + e_c,r and y_b,r = mu_b + s_r + e_b,r on the log scale, and the
# per-round difference d_r = y_c,r - y_b,r = (mu_c - mu_b) + e_c,r - e_b,r has lost s_r. Its
# variance is estimated like a cell's (``combine_replicates``): the comparison's own s_d^2 over
# its R - 1 degrees of freedom, moderated with the pool of all comparisons' s_d^2
# (``pooled_paired_var``) at PRIOR_DF; the interval is d_bar +- t x sqrt(var / R). Valid when
# the rounds pair adjacent processes; it helps when they share noise (``adjacent_correlation``
# > 0: the pooled paired variance below the sum of the cells' pooled variances) and the tables
# fall back to the independent two-level interval where they do not (``prefer_paired``).


def paired_log_ratios(baseline: dict, compared: dict) -> np.ndarray:
    """ln(compared_r / baseline_r) for every round r (replicate number) that both cells have a
    median for, in round order."""
    rounds = sorted(set(baseline) & set(compared))
    return np.asarray([math.log(compared[r]) - math.log(baseline[r]) for r in rounds], dtype=float)


def pooled_paired_var(groups: Sequence[np.ndarray]) -> tuple[float, int]:
    """(pooled variance of the per-round log ratios within comparisons, its degrees of freedom)
    over comparisons with >= 2 paired rounds; (nan, 0) when none has."""
    ss, df = 0.0, 0
    for d in groups:
        d = np.asarray(d, dtype=float)
        if d.size >= 2:
            ss += float(((d - d.mean()) ** 2).sum())
            df += int(d.size - 1)
    return (ss / df, df) if df else (math.nan, 0)


def adjacent_correlation(pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> float:
    """The pooled within-comparison correlation of the baseline's and the compared cell's
    ln-medians over the rounds (each comparison centred on its own means): how much noise the
    two adjacent processes of a round share. NaN without a comparison of >= 2 rounds."""
    sbc = sbb = scc = 0.0
    for b, c in pairs:
        b, c = np.log(np.asarray(b, dtype=float)), np.log(np.asarray(c, dtype=float))
        if b.size >= 2 and b.size == c.size:
            b, c = b - b.mean(), c - c.mean()
            sbc += float((b * c).sum())
            sbb += float((b * b).sum())
            scc += float((c * c).sum())
    return sbc / math.sqrt(sbb * scc) if sbb > 0 and scc > 0 else math.nan


def paired_ratio_ci(
    d: np.ndarray,
    pooled: tuple[float, int] = (math.nan, 0),
    confidence: float = CONFIDENCE,
    prior_df: int = PRIOR_DF,
) -> dict:
    """The ratio compared / baseline and its CI from the per-round log ratios ``d``
    (``paired_log_ratios``), the comparison's own variance moderated with ``pooled``
    (``pooled_paired_var``) as ``combine_replicates`` does. Returns ratio, ci_low, ci_high,
    ci_df, ci_method ``paired`` (NaN bounds and df 0 when nothing estimates the variance)."""
    from scipy.special import stdtrit

    d = np.asarray(d, dtype=float)
    r = int(d.size)
    if r == 0:
        raise ValueError("no paired rounds")
    pool_var, pool_df = pooled
    d0 = min(prior_df, pool_df) if pool_var == pool_var else 0
    df_c = r - 1
    centre = float(d.mean())
    if df_c + d0 == 0:
        return {
            "ratio": math.exp(centre),
            "ci_low": math.nan,
            "ci_high": math.nan,
            "ci_df": 0,
            "ci_method": "paired",
        }
    own = df_c * float(d.var(ddof=1)) if df_c else 0.0
    var = (own + (d0 * pool_var if d0 else 0.0)) / (df_c + d0)
    df = df_c + d0
    half = float(stdtrit(df, 0.5 + confidence / 2)) * math.sqrt(var / r)
    return {
        "ratio": math.exp(centre),
        "ci_low": math.exp(centre - half),
        "ci_high": math.exp(centre + half),
        "ci_df": df,
        "ci_method": "paired",
    }


def prefer_paired(
    paired_pool: tuple[float, int], cells_pool: tuple[float, int], alpha: float = 0.05
) -> bool:
    """Use the paired interval when the pooled variance of the per-round log ratios is clearly
    below what two independent cells would give (twice the cells' pooled replicate variance):
    one-sided F test at ``alpha`` with the pools' degrees of freedom, i.e. the adjacent
    processes share noise. False when either pool is empty."""
    from scipy.special import fdtri

    (vd, dfd), (vc, dfc) = paired_pool, cells_pool
    if not (dfd and dfc and vd == vd and vc == vc and vc > 0):
        return False
    return bool(vd / (2.0 * vc) < float(fdtri(dfd, dfc, alpha)))


def verdict(ratio: float, significant: bool | None, min_effect_pct: float = MIN_EFFECT_PCT) -> str:
    """``faster`` / ``slower`` (latency; significant and changed by at least
    ``min_effect_pct``), ``no significant change``, or ``not assessed`` (no test: None)."""
    if significant is None or not _present(ratio):
        return NOT_ASSESSED
    change = (float(ratio) - 1.0) * 100.0
    if significant and change >= min_effect_pct:
        return SLOWER
    if significant and change <= -min_effect_pct:
        return FASTER
    return NO_CHANGE


def geomean_ratio(ratios: Sequence[float], confidence: float = CONFIDENCE) -> dict:
    """The geometric mean of ``ratios`` (one per cell) and its t interval over the cells (see
    above): ``geomean``, ``ci_low``, ``ci_high``, ``ci_df`` (cells - 1; the bounds are NaN below
    2 cells), ``cells``, ``significant`` (None without a CI)."""
    from scipy.special import stdtrit

    y = np.log(np.asarray([r for r in ratios if _present(r) and r > 0], dtype=float))
    n = int(y.size)
    out = {"geomean": math.nan, "ci_low": math.nan, "ci_high": math.nan, "ci_df": max(0, n - 1)}
    out.update(cells=n, significant=None)
    if n == 0:
        return out
    centre = float(y.mean())
    out["geomean"] = math.exp(centre)
    if n >= 2:
        half = float(stdtrit(n - 1, 0.5 + confidence / 2)) * float(y.std(ddof=1)) / math.sqrt(n)
        out.update(ci_low=math.exp(centre - half), ci_high=math.exp(centre + half))
        out["significant"] = bool(out["ci_low"] > 1.0 or out["ci_high"] < 1.0)
    return out


# -- which latency statistic: the median, else the mean ------------------------------------------
#
# A measured cell has the median of its clean iterations; PackRat's imported cells have only
# min/mean/max. Every table and figure uses the median where it exists, else the mean, and
# says which (``latency_statistic``): decided here only.


def latency_column(statistic: str) -> str:
    """The cells.csv column of a latency statistic: ``latency_median_ms``, ``latency_mean_ms``."""
    return f"latency_{statistic}_ms"


def _present(v) -> bool:
    try:
        return v is not None and not math.isnan(float(v))
    except (TypeError, ValueError):
        return False


def latency_statistic(medians, *, every: bool = False) -> str:
    """``median`` when the cells whose ``latency_median_ms`` values are ``medians`` have a
    median -- any of them (a table: its figures), or ``every`` one (the cells of one
    comparison) -- else ``mean``."""
    have = [_present(v) for v in medians]
    return MEDIAN if (all(have) if every else any(have)) and have else MEAN


def table_statistic(table) -> str:
    """``latency_statistic`` of a table of cells (a DataFrame; no median column: ``mean``)."""
    col = latency_column(MEDIAN)
    return latency_statistic(table.get(col, ()))


# -- reading the tidy tables ---------------------------------------------------------------------
#
# Every results CSV is read by ``read_table``: booleans become True / False / None (blank) in
# every column that holds them, whatever wrote them (pandas' True/False, true/false, 0/1), and
# integer columns are integers (pandas' nullable Int64 where some rows are blank).

BOOLEAN_COLUMNS = frozenset(
    {
        "contended",
        "noisy",
        "significant",
        "verified",
        "warmup_stable",
        "use_smt",
        "is_fat",
        "excluded",
        "native",
        "dtype_verified",
        "numerics_ok",
    }
)
INTEGER_COLUMNS = frozenset(
    {
        "threads",
        "batch_size",
        "image_size",
        "n",
        "iteration",
        "replicate",
        "replicates",
        "warmup_iterations",
        "torch_num_threads",
        "thread_count",
        "runnable_others",
        "interop_threads",
        "instance_id",
        "returncode",
        "signal",
        "budget",
        "k",
        "cores",
        "rounds",
        "fat_rounds",
        "reps",
        "matrix_size",
    }
)
_TRUE, _FALSE = frozenset({"true", "1", "yes"}), frozenset({"false", "0", "no"})


def as_bool(v) -> bool | None:
    """One value of a boolean column: True, False, or None when blank or not a boolean."""
    if isinstance(v, bool | np.bool_):
        return bool(v)
    if isinstance(v, str):
        s = v.strip().lower()
        return True if s in _TRUE else False if s in _FALSE else None
    if isinstance(v, int | float | np.integer | np.floating) and _present(v):
        return bool(v)
    return None


def read_table(path, columns=()):
    """A tidy table (pandas DataFrame) with typed columns: booleans parsed by ``as_bool``
    (object dtype: True, False, None), integers as integers. A missing, empty or header-less
    file is an empty frame with ``columns``."""
    import os

    import pandas as pd

    if path is None or not os.path.exists(path) or os.path.getsize(path) <= 1:
        return pd.DataFrame(columns=list(columns))
    try:
        df = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame(columns=list(columns))
    return typed(df)


def typed(df):
    """``df`` with the boolean and integer columns typed as ``read_table`` does (a copy)."""
    import pandas as pd

    df = df.copy()
    for c in df.columns:
        if c in BOOLEAN_COLUMNS:
            df[c] = pd.Series([as_bool(v) for v in df[c]], index=df.index, dtype=object)
        elif c in INTEGER_COLUMNS and df[c].dtype.kind not in "iu":
            num = pd.to_numeric(df[c], errors="coerce")
            given = num.notna()
            if given.sum() != df[c].notna().sum() or not (num[given] % 1 == 0).all():
                continue  # not integers: left as read
            df[c] = num.astype("int64" if given.all() else "Int64")
    return df
