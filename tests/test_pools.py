"""Which cells a cell's process-level variance is pooled with (``tables.cells.pooled_variances``):
its batch-size series, then its thread count, then the run."""

import math

import numpy as np

from numa_effects import stats
from numa_effects.tables import cells as tidy

BATCHES = (1, 4, 16, 64)


def _key(opt, threads, batch, placement="sequential", allocator="default"):
    vals = {
        "model": "resnet50",
        "opt": opt,
        "placement": placement,
        "threads": threads,
        "batch_size": batch,
        "allocator": allocator,
    }
    return tuple(vals[k] for k in tidy.KEY_COLUMNS)


def test_a_series_pools_its_own_cells_then_the_thread_count_then_the_run():
    quiet = [0.100, 0.101]  # ln spread ~0.7 %
    noisy = [0.100, 0.120]  # ~13 %
    medians = {
        _key("none", 1, 1): quiet,
        _key("none", 1, 4): quiet,
        _key("bf16", 1, 1): noisy,
        _key("bf16", 1, 4): noisy,
        _key("script", 1, 1): quiet,  # its series has one replicated cell
        _key("script", 1, 4): [0.2],
        _key("none", 2, 1): noisy,  # its thread count has one replicated cell
    }
    pools = tidy.pooled_variances(medians)
    own = {k: stats.pooled_replicate_var([m]) for k, m in medians.items()}
    assert pools[_key("none", 1, 1)] == stats.pooled_replicate_var([quiet, quiet])
    assert pools[_key("bf16", 1, 4)] == stats.pooled_replicate_var([noisy, noisy])
    assert pools[_key("bf16", 1, 1)][0] > 100 * pools[_key("none", 1, 1)][0]
    one_thread = [m for k, m in medians.items() if k[tidy.KEY_COLUMNS.index("threads")] == 1]
    assert pools[_key("script", 1, 1)] == stats.pooled_replicate_var(one_thread)
    assert pools[_key("script", 1, 4)] == stats.pooled_replicate_var(one_thread)
    assert pools[_key("none", 2, 1)] == stats.pooled_replicate_var(list(medians.values()))
    # never a cell pooled with itself alone where other cells have replicates
    assert all(pools[k][1] > own[k][1] for k in medians if own[k][1])


def test_series_pools_cover_each_optimization_and_a_thread_counts_pool_does_not():
    """1000 simulated runs of one thread count: eager's processes spread 1 %, bf16's 6 % (as on
    the AMX Xeon, 1 - 2 % against 2 - 7 %), 4 batch sizes each, 2 replicates per cell; the
    tables' interval (``stats.combine_replicates``, the pool at ``PRIOR_DF``) with the series'
    pool covers the true median at the nominal 95 % for both optimizations (96 % here), and
    eager's CIs are less than half as wide as with the thread count's pool. The thread count's
    pool (the rule before) under-covers the bf16 cells (92.8 %, > 5 standard errors below 95 %)
    and over-covers eager's (99.98 %) at those far wider CIs."""
    rng = np.random.default_rng(12)
    sd = {"none": 0.01, "bf16": 0.06}
    keys = [_key(o, 1, b) for o in sd for b in BATCHES]
    opt_at = tidy.KEY_COLUMNS.index("opt")
    hits = {(rule, o): 0 for rule in ("series", "threads") for o in sd}
    width = {(rule, o): [] for rule in ("series", "threads") for o in sd}
    sims = 1000
    for _ in range(sims):
        medians = {k: list(np.exp(rng.normal(0.0, sd[k[opt_at]], 2))) for k in keys}
        series = tidy.pooled_variances(medians)
        threads = stats.pooled_replicate_var(list(medians.values()))
        for k, meds in medians.items():
            for rule, pool in (("series", series[k]), ("threads", threads)):
                c = stats.combine_replicates(meds, (), pool)
                hits[rule, k[opt_at]] += c["ci_low_s"] <= 1.0 <= c["ci_high_s"]
                width[rule, k[opt_at]].append(math.log(c["ci_high_s"] / c["ci_low_s"]))
    cover = {k: v / (sims * len(BATCHES)) for k, v in hits.items()}
    # 4000 cells per share: a coverage's standard error is ~0.35 points
    assert cover["series", "none"] >= 0.945, cover
    assert cover["series", "bf16"] >= 0.945, cover
    assert cover["threads", "bf16"] < 0.94, cover
    assert cover["threads", "none"] > 0.99, cover
    assert np.median(width["series", "none"]) < 0.5 * np.median(width["threads", "none"])
