"""Benchmark ``advise``: is the answer a run gives (what to deploy, docs/deploy.md) right, and
does it hold from one run to the next?

Two runs of the benchmark grid with the answer on and the default budget, one after the other.
Per run and objective the benchmark prints the recommended configuration with its measured value
and CI, the measured best of the configurations the run compared, whether the recommendation is
that best or not significantly different from it, and the recommendation's gain over one process
on all cores and over each ``run_cpu`` layout with its paired CI; per run the wall time against
the estimate the run printed before its first job.

Goals: in both runs the recommendation is the measured best or within its CI; the median gain
CI half-width <= 3 %; the wall time within +-25 % of the printed estimate and <= 15 minutes."""

from __future__ import annotations

import math
import re

import pandas as pd

from numa_effects import stats

from . import common
from .common import Context

NAME = "advise"
RUNS = ("advise-1", "advise-2")
BUDGET_MIN = 15
GOAL_HALFWIDTH_PCT = 3.0
GOAL_ESTIMATE = 0.25
LAUNCHERS = ("all-cores", "run_cpu-latency", "run_cpu-throughput")
ESTIMATE = re.compile(r"the whole run is estimated at ([0-9.]+) min")


def printed_estimate_s(log) -> float:
    """The estimate a run printed before its first job (its Snakemake log), in seconds."""
    m = ESTIMATE.search(log.read_text(errors="replace"))
    return float(m.group(1)) * 60 if m else math.nan


def halfwidth_pct(lo: float, hi: float) -> float:
    return (math.sqrt(hi / lo) - 1) * 100 if lo == lo and hi == hi and lo > 0 else math.nan


def objective_rows(run_name: str, df: pd.DataFrame) -> list[dict]:
    """One row per objective of one run's recommendation.csv."""
    out = []
    for objective, g in df.groupby("objective", sort=False):
        rec = g[g["role"] == "recommended"]
        if rec.empty:
            continue
        r = rec.iloc[0]
        better = min if objective.startswith("latency") else max
        best = g.loc[g["value"].idxmin() if better is min else g["value"].idxmax()]
        row = {
            "run": run_name,
            "objective": objective,
            "recommended": f"{r['opt']}/{r['allocator']}/{r['layout']}",
            "value": r["value"],
            "ci_low": r["ci_low"],
            "ci_high": r["ci_high"],
            "unit": r["unit"],
            "measured_best": f"{best['opt']}/{best['allocator']}/{best['layout']}",
            # the best itself, or one it is not significantly different from (its note says)
            "is_best_or_within": bool(
                best["config"] == r["config"] or stats.as_bool(best["significant"]) is False
            ),
        }
        named = g["baseline"].fillna("").str.split(" = ")
        for name in LAUNCHERS:
            hit = g[[name in names for names in named]]
            if hit.empty:
                continue
            h = hit.iloc[0]
            row[f"gain_{name}"] = h["gain"]
            row[f"gain_{name}_low"] = h["gain_ci_low"]
            row[f"gain_{name}_high"] = h["gain_ci_high"]
        gains = g[g["role"] != "recommended"]
        widths = [
            halfwidth_pct(a, b)
            for a, b in zip(gains["gain_ci_low"], gains["gain_ci_high"], strict=True)
        ]
        row["gain_halfwidth_median_pct"] = float(pd.Series(widths, dtype=float).median())
        out.append(row)
    return out


def run(ctx: Context) -> pd.DataFrame:
    rows = []
    for name in RUNS:
        r = common.pipeline(ctx, name, {"budget": BUDGET_MIN})
        if r.returncode != 0:
            raise RuntimeError(f"pipeline {name} failed (exit {r.returncode}); see {r.log}")
        est = printed_estimate_s(r.log)
        df = pd.read_csv(r.results / "tables" / "recommendation.csv")
        for row in objective_rows(name, df):
            rows.append({**row, "wall_s": r.wall_s, "estimate_s": est})
    out = pd.DataFrame(rows)
    print(summary(out))
    return out


def summary(df: pd.DataFrame) -> str:
    lines = [f"[{NAME}] per run and objective:"]
    for r in df.itertuples():
        gains = "; ".join(
            f"{n} {getattr(r, f'gain_{n}'.replace('-', '_'), math.nan):.2f}x"
            for n in LAUNCHERS
            if hasattr(r, f"gain_{n}".replace("-", "_"))
        )
        lines.append(
            f"  {r.run} {r.objective}: {r.recommended} {r.value:.4g} {r.unit} "
            f"[{r.ci_low:.4g}, {r.ci_high:.4g}]; best {r.measured_best}; "
            f"{'ok' if r.is_best_or_within else 'NOT the best'}; {gains}"
        )
    walls = df.drop_duplicates("run")
    for r in walls.itertuples():
        ratio = r.wall_s / r.estimate_s if r.estimate_s == r.estimate_s else math.nan
        lines.append(
            f"  {r.run}: wall {r.wall_s / 60:.1f} min, estimate {r.estimate_s / 60:.1f} min "
            f"({ratio:.2f} x; goal within +-{GOAL_ESTIMATE:.0%} and <= {BUDGET_MIN} min)"
        )
    med = float(df["gain_halfwidth_median_pct"].median())
    both = bool(df["is_best_or_within"].all())
    lines.append(
        f"  goals: recommendation the best or within its CI in every run: {both}; median gain "
        f"CI half-width {med:.1f} % (goal <= {GOAL_HALFWIDTH_PCT:g} %)"
    )
    return "\n".join(lines)
