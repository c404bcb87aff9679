"""Every statistic of a run (a comparison of runs adds ``compare.statistics``), by section below.
numpy only at import (the measuring child imports it); scipy and pandas inside the functions
that need them. Keys ending in ``_s`` are latencies in seconds (``latency_<name>_ms`` columns).

The median's CI is the distribution-free order-statistic interval ``[x_(j), x_(n-j+1)]``, which
covers the true median with probability ``1 - 2 P(B <= j-1)``, ``B ~ Binomial(n, 1/2)``, for
latencies of any shape; ``j`` is the largest rank whose coverage still reaches the level, so it
is conservative (its exact coverage is ``ci_coverage``). It assumes independent samples: a
drifting stream makes it too narrow, which is why the stopping rule has caps and the tables keep
every raw sample. Below n = 6 no 95 % interval exists: the bounds are NaN there.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

NOISY_IQR_OVER_MEDIAN = 0.10  # torch.utils.benchmark warns at this IQR/median ratio
CONFIDENCE = 0.95
MEDIAN, MEAN = "median", "mean"  # the latency statistics (``latency_statistic``)


def t_quantile(df: float, confidence: float = CONFIDENCE) -> float:
    """The t quantile of a two-sided ``confidence`` interval; normal for df inf, NaN or <= 0."""
    from scipy.special import stdtrit  # Student t quantile, without scipy.stats' import time

    return float(stdtrit(df if df == df and df > 0 else math.inf, 0.5 + confidence / 2))


def t_halfwidth(var: float, df: float, n: int) -> float:
    """The half-width of the t interval of a mean of ``n`` values: t(df) * sqrt(var / n)."""
    return t_quantile(df) * math.sqrt(var / n)


@functools.lru_cache(maxsize=8192)
def median_ci_ranks(n: int, confidence: float = CONFIDENCE) -> tuple[int, int, float] | None:
    """0-based ranks ``(lo, hi)`` bounding the median's CI and its exact coverage, or None when
    ``n`` samples cannot reach ``confidence``. The binomial CDF is summed here, not taken from
    scipy: importing scipy cost every cell's launcher 0.28 s, once per replicate."""
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
    # k: the largest j with P(B <= j-1) <= alpha/2
    return (k - 1, n - k, 1.0 - 2.0 * cdf) if k >= 1 else None


def median_ci(latencies: Sequence[float]) -> tuple[float, float]:
    """Order-statistic confidence interval of the median; (nan, nan) when n is too small."""
    a = np.asarray(latencies, dtype=float)
    ranks = median_ci_ranks(int(a.size))
    if ranks is None:
        return math.nan, math.nan
    lo, hi, _ = ranks
    part = np.partition(a, (lo, hi))
    return float(part[lo]), float(part[hi])


def summarize(latencies_s: Sequence[float]) -> dict:
    a = np.asarray(latencies_s, dtype=float)
    if a.size == 0:
        raise ValueError("no latency samples to summarize")
    q10, q25, q50, q75, q90, q99 = np.percentile(a, [10, 25, 50, 75, 90, 99])
    mean = float(a.mean())
    std = float(a.std(ddof=1)) if a.size > 1 else 0.0
    iqr = float(q75 - q25)
    lo, hi = median_ci(a)
    ranks = median_ci_ranks(int(a.size))
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
        "ci_level": CONFIDENCE,
        "ci_coverage": ranks[2] if ranks else math.nan,
        "ci_halfwidth_pct": halfwidth_pct(q50, lo, hi),
        "cv": std / mean if mean > 0 else float("nan"),
        "noisy": bool(q50 > 0 and iqr / q50 > NOISY_IQR_OVER_MEDIAN),
    }


def halfwidth_pct(median: float, low: float, high: float) -> float:
    """Half the CI's width relative to the median, in percent (the adaptive target's unit)."""
    return (high - low) / 2.0 / median * 100.0 if median > 0 else math.nan


def rates(images: float, median: float, low: float, high: float) -> dict:
    """Images per time unit: ``images`` / the median latency, its CI from the latency's."""
    return {
        "ips": images / median,
        "ci_low_ips": images / high if high > 0 else math.nan,
        "ci_high_ips": images / low if low > 0 else math.nan,
    }


def throughput(batch_size: int, latencies_s: Sequence[float], median_s: float) -> dict:
    """Images per second: batch / median with its CI, and PackRat's batch x n / total seconds."""
    total = float(np.sum(latencies_s))
    lo, hi = median_ci(latencies_s)
    return {
        **rates(batch_size, median_s, lo, hi),
        "total_ips": batch_size * len(latencies_s) / total,
    }


def ci_within(latencies: Sequence[float], rel: float) -> tuple[bool, float]:
    """(both bounds of the median's CI lie within ``rel`` of the median, median). One partial
    sort: the adaptive loop calls this after every timed iteration."""
    a = np.asarray(latencies, dtype=float)
    n = int(a.size)
    ranks = median_ci_ranks(n)
    lo_i, hi_i = (ranks[0], ranks[1]) if ranks else (0, n - 1)
    mid_hi, mid_lo = n // 2, (n - 1) // 2
    part = np.partition(a, sorted({lo_i, hi_i, mid_lo, mid_hi}))
    median = float(0.5 * (part[mid_lo] + part[mid_hi]))
    if ranks is None or median <= 0:
        return False, median
    return bool(max(median - part[lo_i], part[hi_i] - median) <= rel * median), median


# -- two levels: replicates (independent processes) of one cell ----------------------------------
#
# On the log scale a replicate's median is y_r = mu + b_r + e_r: the process-level effect (memory
# layout, frequency, neighbours, drift) and the median's sampling error within the process. The
# cell's CI is a t interval for mu with the variance of y_r, which holds both levels (Kalibera &
# Jones, ISMM 2013). With 2 or 3 replicates that variance has 1 or 2 df, so it is moderated with
# the run's pooled replicate variance given PRIOR_DF df. PRIOR_DF = 2 keeps every cell's coverage
# >= 94 % in simulation when cells' between-process SDs differ (1.0 - 3.5 %); more weight on the
# pool under-covers the noisiest cells (tests/test_stats.py).

PRIOR_DF = 2
# The ``ci_method``s of a cell's or a ratio's CI (tables' column ``ci_method``).
TWO_LEVEL, TWO_STAGE, WITHIN = "two-level", "two-stage", "within-process"
PAIRED, BOOTSTRAP = "paired", "within-process bootstrap"
# those that are a t interval of a cell's ln-median with ``ci_df`` degrees of freedom
T_INTERVALS = (TWO_LEVEL, TWO_STAGE)


def within_log_var(latencies_s: Sequence[float]) -> float:
    """Variance of a replicate's ln(median), from its samples: the log width of the median's
    95 % CI (``median_ci``) over 2 x 1.96, squared; NaN when too few samples give no CI."""
    lo, hi = median_ci(latencies_s)
    if not (lo > 0 and hi > 0):
        return math.nan
    return ((math.log(hi) - math.log(lo)) / (2 * 1.959964)) ** 2


def pooled_replicate_var(groups: Sequence[Sequence[float]]) -> tuple[float, int]:
    """``pooled_var`` of the cells' ln-medians."""
    return pooled_var(np.log(np.asarray(m, dtype=float)) for m in groups)


def pooled_var(groups) -> tuple[float, int]:
    """(pooled within-group variance, its df) over groups of >= 2 values; (nan, 0) if none."""
    ss, df = 0.0, 0
    for y in groups:
        y = np.asarray(y, dtype=float)
        if y.size >= 2:
            ss += float(((y - y.mean()) ** 2).sum())
            df += int(y.size - 1)
    return (ss / df, df) if df else (math.nan, 0)


def _moderated(y: np.ndarray, pooled: tuple[float, int]) -> tuple[float, int, float]:
    """(the variance of ``y`` moderated with the run's ``pooled`` variance at ``PRIOR_DF``, its
    df, the half-width of mean(y)'s CI); NaN, 0 and NaN when nothing estimates the variance."""
    r = int(y.size)
    pool_var, pool_df = pooled
    d0 = min(PRIOR_DF, pool_df) if pool_var == pool_var else 0
    df = r - 1 + d0
    if not df:
        return math.nan, 0, math.nan
    own = (r - 1) * float(y.var(ddof=1)) if r > 1 else 0.0
    var = (own + (d0 * pool_var if d0 else 0.0)) / df
    return var, df, t_halfwidth(var, df, r)


def combine_replicates(
    medians_s: Sequence[float],
    within_vars: Sequence[float] = (),
    pooled: tuple[float, int] = (math.nan, 0),
) -> dict:
    """The cell's median and two-level CI from its replicates' medians (see above), with
    ``pooled`` the run's ``pooled_replicate_var``; ``within_vars`` (each replicate's
    ``within_log_var``) only split the replicate SD into within- and between-process parts."""
    y = np.log(np.asarray(medians_s, dtype=float))
    r = int(y.size)
    if r == 0:
        raise ValueError("no replicate medians to combine")
    wv = np.asarray([v for v in within_vars if v == v], dtype=float)
    w = float(wv.mean()) if wv.size else math.nan
    s2 = float(y.var(ddof=1)) if r >= 2 else math.nan
    var, df, half = _moderated(y, pooled)
    centre = float(y.mean())
    total = s2 if r >= 2 else var
    return {
        "median_s": math.exp(centre),
        "ci_low_s": math.exp(centre - half),
        "ci_high_s": math.exp(centre + half),
        "ci_df": df,
        "ci_method": TWO_LEVEL if df else WITHIN,
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
# A first stage of ``r0`` replicates estimates each cell's log variance (``combine_replicates``'
# ``log_var`` and ``ci_df``); from it alone the cell's total N is fixed for the target half-width
# (``stein_replicates``); the final CI is centred on all N with the FIRST stage's variance and df
# (``stein_interval``). N depends on the data only through that variance, independent of the mean
# for normal log medians, so coverage is exact (Stein 1945), capped N included. The naive rule
# (add replicates until the usual t interval is narrow) stops when the spread happens to look
# small and under-covers (tests/test_stats.py simulates both).


def stein_replicates(log_var: float, df: int, target_rel: float, r0: int, cap: int) -> int:
    """The smallest N >= r0 with t(df) * sqrt(log_var / N) <= ln(1 + target_rel), at most
    ``cap``, from the first stage's ``log_var`` and ``df``."""
    if not (log_var == log_var and df >= 1):
        return cap  # nothing estimates the spread: as many as allowed
    h = math.log1p(target_rel)
    t = t_quantile(df)
    need = math.ceil(t * t * log_var / (h * h) - 1e-12)
    return int(min(cap, max(r0, need)))


def stein_interval(
    medians_s: Sequence[float], log_var: float, df: int
) -> tuple[float, float, float]:
    """(median, low, high) after Stein's second stage: the geometric mean of all replicates'
    medians, with the first stage's ``log_var`` and ``df``."""
    y = np.log(np.asarray(medians_s, dtype=float))
    centre = float(y.mean())
    half = t_halfwidth(log_var, df, y.size)
    return math.exp(centre), math.exp(centre - half), math.exp(centre + half)


# -- ratios of two cells: CIs of compared / baseline ---------------------------------------------
#
# With two-level CIs on both sides (replicates) the ratio's CI is two-level too; with one process
# per cell, a percentile bootstrap of both cells' samples, which covers only the within-process
# noise. The tables say which (``ci_method``).

CellCI = tuple[float, float, float]  # a cell's (ci_low, ci_high, ci_df)


def ratio_ci_method(
    statistic: str,
    baseline: str | None,
    compared: str | None,
    *,
    rounds: bool = False,
) -> str | None:
    """Which CI an unpaired ratio compared / baseline gets: ``two-level`` when both cells'
    ``ci_method`` is a t interval of the median, else the bootstrap where the cells have samples
    (``rounds``), else None (no CI, no test)."""
    if statistic == MEDIAN and baseline in T_INTERVALS and compared in T_INTERVALS:
        return TWO_LEVEL
    return BOOTSTRAP if rounds else None


N_BOOTSTRAP = 2000
SEED = 0
CHUNK = 4_000_000  # resampled values held in memory at once


def log_se(low: float, high: float, df: float) -> float:
    """The standard error of ln(value) from its log-symmetric t interval; NaN without one."""
    if not (low > 0 and high > 0):
        return math.nan
    return float((np.log(high) - np.log(low)) / 2.0 / t_quantile(df))


def log_ratio_interval(baseline: CellCI, compared: CellCI) -> tuple[float, float, float]:
    """(ln(compared / baseline), its CI's half-width t x sqrt(se_c^2 + se_b^2), Welch's df)
    from each cell's two-level CI ``(ci_low, ci_high, ci_df)``, centred on the CIs' log-centres."""
    (bl, bh, bdf), (cl, ch, cdf) = baseline, compared
    sb, sc = log_se(bl, bh, bdf), log_se(cl, ch, cdf)
    centre = float((np.log(cl) + np.log(ch)) / 2.0 - (np.log(bl) + np.log(bh)) / 2.0)
    var = float(sb**2 + sc**2)
    if var == 0:
        return centre, 0.0, math.inf
    df = var**2 / (sb**4 / bdf + sc**4 / cdf)  # Welch-Satterthwaite
    return centre, t_quantile(df) * math.sqrt(var), float(df)


def two_level_ratio_ci(baseline: CellCI, compared: CellCI) -> tuple[float, float]:
    """CI of compared / baseline (``log_ratio_interval``)."""
    centre, half, _ = log_ratio_interval(baseline, compared)
    return float(np.exp(centre - half)), float(np.exp(centre + half))


def bootstrap_ratio(
    baseline: np.ndarray,
    compared: np.ndarray,
    statistic: str = "median",
    n_boot: int = N_BOOTSTRAP,
    seed: int = SEED,
) -> tuple[float, float]:
    """Percentile-bootstrap CI of stat(compared) / stat(baseline), each resampled alone."""
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
    alpha = 1.0 - CONFIDENCE
    lo, hi = np.quantile(ratio, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


# -- paired ratios: a placement and its baseline measured side by side, round by round ----------
#
# In round r the two cells' replicates run next to each other (ABBA, plan.grid.job_order), so a
# drift between rounds moves both: y_c,r = mu_c + s_r + e_c,r, y_b,r = mu_b + s_r + e_b,r, and
# d_r = y_c,r - y_b,r has lost s_r. Its variance is moderated with the pool of all comparisons'
# at PRIOR_DF as a cell's is; the interval is d_bar +- t x sqrt(var / R). The tables use it only
# where the adjacent processes share noise (``prefer_paired``).


def paired_log_ratios(baseline: dict, compared: dict) -> np.ndarray:
    """ln(compared_r / baseline_r) for every round both cells have a median for, in order."""
    rounds = sorted(set(baseline) & set(compared))
    return np.asarray([math.log(compared[r]) - math.log(baseline[r]) for r in rounds], dtype=float)


pooled_paired_var = pooled_var  # over the comparisons' per-round log ratios


def adjacent_correlation(pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> float:
    """The pooled within-comparison correlation of the two cells' ln-medians over the rounds:
    how much noise adjacent processes share. NaN without a comparison of >= 2 rounds."""
    sbc = sbb = scc = 0.0
    for b, c in pairs:
        b, c = np.log(np.asarray(b, dtype=float)), np.log(np.asarray(c, dtype=float))
        if b.size >= 2 and b.size == c.size:
            b, c = b - b.mean(), c - c.mean()
            sbc += float((b * c).sum())
            sbb += float((b * b).sum())
            scc += float((c * c).sum())
    return sbc / math.sqrt(sbb * scc) if sbb > 0 and scc > 0 else math.nan


def paired_ratio_ci(d: np.ndarray, pooled: tuple[float, int] = (math.nan, 0)) -> dict:
    """The ratio and its CI from the per-round log ratios ``d``, moderated with ``pooled`` as
    ``combine_replicates`` does (NaN bounds and df 0 when nothing estimates the variance)."""
    d = np.asarray(d, dtype=float)
    if d.size == 0:
        raise ValueError("no paired rounds")
    _, df, half = _moderated(d, pooled)
    centre = float(d.mean())
    return {
        "ratio": math.exp(centre),
        "ci_low": math.exp(centre - half),
        "ci_high": math.exp(centre + half),
        "ci_df": df,
        "ci_method": PAIRED,
    }


def prefer_paired(paired_pool: tuple[float, int], cells_pool: tuple[float, int]) -> bool:
    """Whether the paired pool's variance is clearly below two independent cells' (twice the
    cells' pool): a one-sided F test at the 5 % level. False when either pool is empty."""
    from scipy.special import fdtri

    (vd, dfd), (vc, dfc) = paired_pool, cells_pool
    if not (dfd and dfc and vd == vd and vc == vc and vc > 0):
        return False
    return bool(vd / (2.0 * vc) < float(fdtri(dfd, dfc, 0.05)))


# -- which latency statistic: the median, else the mean (PackRat's cells have no median) ----------


BOUNDS = ("", "_ci_low", "_ci_high")  # the suffixes of a value's column and its CI's (``with_ci``)


def with_ci(stem: str, unit: str = "") -> tuple[str, ...]:
    """A value's column and its CI's: ``<stem><bound><unit>`` for each bound of ``BOUNDS``."""
    return tuple(f"{stem}{bound}{unit}" for bound in BOUNDS)


def latency_column(statistic: str) -> str:
    """The cells.csv column of a latency statistic: ``latency_median_ms``, ``latency_mean_ms``."""
    return f"latency_{statistic}_ms"


def compared_statistics(rows, blank=None):
    """The latency statistics ``rows`` (a table of comparisons) were compared on, from its
    ``latency_statistic`` column: ``median``, ``mean`` or ``mean/median``; ``blank`` when it names
    none."""
    named = rows["latency_statistic"].dropna() if "latency_statistic" in rows else ()
    return "/".join(sorted({str(s) for s in named})) or blank


def present(v) -> bool:
    """A number, not None or NaN."""
    try:
        return v is not None and not math.isnan(float(v))
    except (TypeError, ValueError):
        return False


def latency_statistic(medians, *, every: bool = False) -> str:
    """``median`` when any (or ``every``) one of the cells' ``latency_median_ms`` values is
    present, else ``mean``."""
    have = [present(v) for v in medians]
    return MEDIAN if (all(have) if every else any(have)) and have else MEAN


def table_statistic(table) -> str:
    """``latency_statistic`` of a DataFrame of cells."""
    return latency_statistic(table.get(latency_column(MEDIAN), ()))


# -- the tables' booleans ----------------------------------------------------------------------

_TRUE, _FALSE = frozenset({"true", "1", "yes"}), frozenset({"false", "0", "no"})


def as_bool(v) -> bool | None:
    """One value of a boolean column: True, False, or None when blank or not a boolean."""
    if isinstance(v, bool | np.bool_):
        return bool(v)
    if isinstance(v, str):
        s = v.strip().lower()
        return True if s in _TRUE else False if s in _FALSE else None
    if isinstance(v, int | float | np.integer | np.floating) and present(v):
        return bool(v)
    return None


# -- which of several configurations is best (the deploy answer) ---------------------------------


def prob_best(
    gains: Sequence[tuple[float, float, float, float]], draws: int = 20_000
) -> np.ndarray:
    """P(each configuration is the best) from the best-measured one's paired gains over them
    ``[(gain, ci_low, ci_high, ci_df)]``: each ln(gain) drawn from its t interval, the reference
    at ln(1) = 0 (returned first). A gain without an interval counts as exact."""
    rng = np.random.default_rng(SEED)
    ln = np.zeros((draws, len(gains) + 1))
    for j, (g, lo, hi, df) in enumerate(gains, start=1):
        se = log_se(lo, hi, df)
        ln[:, j] = math.log(g) + (se * rng.standard_t(df, draws) if se == se else 0.0)
    # ln(gain) > 0: the reference is better; the best has the smallest ln(gain)
    wins = np.bincount(ln.argmin(axis=1), minlength=len(gains) + 1)
    return wins / draws


def rounds_to_decide(rounds: int, gain: float, low: float, high: float, margin: float) -> float:
    """The rounds at which a paired gain's CI (half-width ~ 1/sqrt(rounds)) would exclude 1 or
    fall inside ``ratio 1 +- margin`` (equivalence), whichever comes first; inf if neither."""
    if not (low > 0 and high > 0 and rounds > 0):
        return math.inf
    half, centre = math.log(high / low) / 2, abs(math.log(gain))
    room = [x for x in (centre, math.log1p(margin) - centre) if x > 0]
    return rounds * (half / max(room)) ** 2 if room else math.inf
