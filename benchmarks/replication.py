"""Benchmark, replication: the grid measured by two independent pipeline runs in different job
orders (``order_seed`` 0 and 1: the groups of each round shuffled differently); per cell, is the
second run's median inside the first run's reported 95 % CI, and how large is the observed
run-to-run difference compared with that CI (``spread_over_ci``: |difference| / half-width).

Goal: inside on >= 90 % of cells (before replicates: 1 of 12 on the quiet Xeon). Two runs of
a perfect pipeline meet it only just (the second median is a mean with its own noise: about
89 % at equal replicates and 3 degrees of freedom), so the line also gives the interval of the
difference of the two means, which holds it with 95 % (``judge``). Nothing but the job order
differs between the runs, so a shift every cell shares is the machine's speed between them:
the next line estimates it and judges the cells again without it (``judge.with_shift``).

With the canary (config key ``canary``, on by default) the same judgement at run 1's reference
speed (``judge.against_speed``: run 2's replicates moved there along run 2's own slope, against the
CI of ``speed_latency_ms``), then the median CI half-width per thread count, plain and at the
reference speed (``judge.width_line``). Columns ``speed_diff_pct``, ``inside_speed_ci`` and
``inside_speed_agreement`` (empty without the canary)."""

from __future__ import annotations

from .common import Context, pipeline, show
from .judge import against_ci, agreement_line, at_reference_speed, share, shift_line, with_shift

NAME = "replication"
GOAL_SHARE = 0.90


def run(ctx: Context):
    first = pipeline(ctx, "adaptive", {})
    second = pipeline(ctx, "replication", {"order_seed": 1}, target="tables/cells.csv")
    df, shift = with_shift(against_ci(first.cells(), second.cells()))
    show("replication: run 2 (order_seed 1) vs run 1's two-level 95 % CI", df)
    print(
        f"run 2 median inside run 1's CI: {int(df['inside_ci'].sum())}/{len(df)} = "
        f"{share(df['inside_ci']):.0%} (goal >= {GOAL_SHARE:.0%}); |difference| / CI half-width:"
        f" median {df['spread_over_ci'].median():.2f}, max {df['spread_over_ci'].max():.2f}; "
        f"difference {df['diff_pct'].min():+.1f} ... {df['diff_pct'].max():+.1f} %"
    )
    print(agreement_line(df, "run 2 median"))
    print(shift_line(df, shift, "run 2", "run 1", "the machine's speed between the runs"))
    speed_cols = {
        "diff_pct": "speed_diff_pct",
        "inside_ci": "inside_speed_ci",
        "inside_agreement": "inside_speed_agreement",
    }
    df, lines, speed_shift = at_reference_speed(
        df,
        (first.cells(), first.samples()),
        second.samples(),
        ("run 1", "run 2"),
        "what the canary does not see of the machine's speed between the runs",
        speed_cols,
    )
    print(*lines, sep="\n")
    df.attrs.update(shift)
    df.attrs["speed"] = speed_shift
    return df
