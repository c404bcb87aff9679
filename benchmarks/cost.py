"""Benchmark 1, cost vs the reference protocol: the grid measured twice by the pipeline, with
the adaptive protocol (config defaults) and with PackRat's fixed 10 + 100 iterations; per cell
and in total, timed inference seconds, warm-up seconds and the achieved CI half-width.

Goal: adaptive total <= 0.25 x fixed, with every adaptive cell's CI half-width <= 2 %."""

from __future__ import annotations

import pandas as pd

from .common import FIXED, KEYS, Context, pipeline, show

NAME = "cost"
GOAL_RATIO = 0.25
GOAL_HALFWIDTH_PCT = 2.0


def _side(cells: pd.DataFrame, prefix: str) -> pd.DataFrame:
    ok = cells[cells["status"] == "ok"]
    cols = {
        "n": "n",
        "stop_reason": "stop",
        "timed_s": "timed_s",
        "measure_s": "measure_s",
        "latency_median_ms": "median_ms",
        "ci_halfwidth_pct": "ci_hw_pct",
    }
    out = ok[KEYS + list(cols)].rename(columns={k: f"{prefix}_{v}" for k, v in cols.items()})
    return out


def run(ctx: Context) -> pd.DataFrame:
    adaptive = pipeline(ctx, "adaptive", {})
    fixed = pipeline(ctx, "fixed", FIXED, target="tables/cells.csv")
    a, f = _side(adaptive.cells(), "adaptive"), _side(fixed.cells(), "fixed")
    df = a.merge(f, on=KEYS, how="outer")
    df["median_diff_pct"] = (df["adaptive_median_ms"] / df["fixed_median_ms"] - 1) * 100
    df["timed_ratio"] = df["adaptive_timed_s"] / df["fixed_timed_s"]
    df["measure_ratio"] = df["adaptive_measure_s"] / df["fixed_measure_s"]
    total = {
        "model": "TOTAL",
        "adaptive_n": df["adaptive_n"].sum(),
        "adaptive_stop": f"{(df['adaptive_stop'] == 'target_ci').sum()}/{len(df)} target",
        "adaptive_timed_s": df["adaptive_timed_s"].sum(),
        "adaptive_measure_s": df["adaptive_measure_s"].sum(),
        "adaptive_ci_hw_pct": df["adaptive_ci_hw_pct"].max(),
        "fixed_n": df["fixed_n"].sum(),
        "fixed_timed_s": df["fixed_timed_s"].sum(),
        "fixed_measure_s": df["fixed_measure_s"].sum(),
        "fixed_ci_hw_pct": df["fixed_ci_hw_pct"].max(),
        "median_diff_pct": df["median_diff_pct"].abs().max(),
    }
    total["timed_ratio"] = total["adaptive_timed_s"] / total["fixed_timed_s"]
    total["measure_ratio"] = total["adaptive_measure_s"] / total["fixed_measure_s"]
    df = pd.concat([df, pd.DataFrame([total])], ignore_index=True)
    show("cost: adaptive vs fixed 10+100 (TOTAL row: sums; ci_hw and median_diff: max)", df)
    within = (df["adaptive_ci_hw_pct"].iloc[:-1] <= GOAL_HALFWIDTH_PCT).sum()
    print(
        f"timed seconds ratio {total['timed_ratio']:.3f}, with warm-up "
        f"{total['measure_ratio']:.3f} (goal <= {GOAL_RATIO}); adaptive CI half-width "
        f"<= {GOAL_HALFWIDTH_PCT} % on {within}/{len(df) - 1} cells (max "
        f"{total['adaptive_ci_hw_pct']:.2f} %); fixed protocol max half-width "
        f"{total['fixed_ci_hw_pct']:.2f} %"
    )
    return df
