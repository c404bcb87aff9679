"""Benchmark ``packing`` (issue 14): are the optimizer's predictions right on this machine?

The grid is measured by the pipeline (the same run as ``cost``'s adaptive one when both run);
its ``tables/packing.csv`` holds, per (opt, core budget, batch size), the plan predicted from the
``sequential`` cells and the plan and the fat instance measured as concurrent pinned instances.

Goal: prediction error |measured / predicted - 1| <= 10 % on >= 80 % of the measured batch
sizes. The measured speedup over the fat instance is printed per batch size, as it is."""

from __future__ import annotations

import pandas as pd

from numa_effects import packing_table

from .common import Context, pipeline, show

NAME = "packing"
GOAL_ERROR = 0.10
GOAL_SHARE = 0.80


def run(ctx: Context) -> pd.DataFrame:
    p = pipeline(ctx, "adaptive", {})
    path = p.results / "tables" / "packing.csv"
    if not path.exists():
        print(
            "packing: no tables/packing.csv (packing is off for this grid: it needs two thread "
            "counts and the sequential placement)"
        )
        return pd.DataFrame()
    df = pd.read_csv(path)
    df["error_pct"] = df["prediction_error"] * 100
    df["within_goal"] = df["prediction_error"].abs() <= GOAL_ERROR
    cols = [
        "model",
        "opt",
        "budget",
        "batch_size",
        "plan",
        "predicted_latency_ms",
        "latency_ms",
        "latency_ci_low_ms",
        "latency_ci_high_ms",
        "error_pct",
        "within_goal",
        "fat_latency_ms",
        "predicted_speedup",
        "speedup",
        "speedup_ci_low",
        "speedup_ci_high",
        "contended",
        "status",
    ]
    out = df[cols]
    show("packing: predicted vs measured plan latency, measured speedup over fat", out)
    s = packing_table.benchmark_summary(df, GOAL_ERROR)
    verdict = "MET" if s["share_within"] >= GOAL_SHARE else "NOT met"
    print(
        f"prediction within +-{GOAL_ERROR:.0%} on {s['within']}/{s['measured']} batch sizes "
        f"({s['share_within']:.0%}; goal >= {GOAL_SHARE:.0%}: {verdict}); measured speedup "
        "over the fat instance per batch size: "
        + ", ".join(
            f"C={r.budget} B={r.batch_size}: {r.speedup:.2f}x"
            for r in df.itertuples()
            if r.status == "ok"
        )
    )
    return out
