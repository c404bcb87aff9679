"""Benchmark 2, fidelity: for every cell of the grid, this pipeline's median latency vs the
median of ``torch.utils.benchmark.Timer(...).blocked_autorange()`` in a process pinned the same
way (same ``numactl`` binding, same ``OMP_NUM_THREADS``, same model and input built by the same
code). The two are measured back to back for each cell (alternating which goes first), so a
change in the shared machine's load between them is as small as it can be.

Goals (judged against the CI): the ``blocked_autorange`` median inside the pipeline's reported
95 % CI (the Snakemake run's two-level CI, cells.csv) on >= 90 % of cells (``timer_inside_ci``);
for reference, within +-3 % of the back-to-back single pipeline process. The Timer's median is
one process, so it is also judged against the interval one more process of the run falls in
with 95 % (``timer_inside_pi``; ``judge``: inside the CI of the mean it lands less often even
when it measures the same thing, and the line says how often)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .common import KEYS, Context, key_label, pinned_child, pipeline, show
from .judge import against_ci, agreement_line

NAME = "fidelity"
GOAL_PCT = 3.0
GOAL_SHARE = 0.90


def run_timer(spec_path: Path, out: Path, threads: int, plan) -> dict:
    """The Timer child pinned with ``plan`` (``placement.Plan``) timing the cell of
    ``spec_path``."""
    return pinned_child("benchmarks.timer_child", plan, threads, ["--spec", str(spec_path)], out)


def first_spec(results: Path, row) -> Path:
    """The spec the pipeline ran a cell's first replicate with (``job.spec_path`` beside the
    log the grid's pattern names)."""
    from numa_effects.measure import job
    from numa_effects.plan.grid import CellKey

    return job.spec_path(CellKey.from_record(dict(row)).log_path(str(results), 1))


def run(ctx: Context) -> pd.DataFrame:
    from numa_effects.measure import job
    from numa_effects.plan.spec import Spec

    adaptive = pipeline(ctx, "adaptive", {})
    cells = adaptive.cells()
    cells = cells[cells["status"] == "ok"].reset_index(drop=True)
    work = ctx.work / "fidelity"
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, row in cells.iterrows():
        label = key_label(row)
        spec_path = first_spec(adaptive.results, row)
        spec = Spec.from_json(json.loads(spec_path.read_text()))
        tag = label.replace("/", "_")
        results = {}
        order = ("pipeline", "timer") if i % 2 == 0 else ("timer", "pipeline")
        for which in order:
            if which == "pipeline":
                r = job.run(spec, work / f"{tag}.cell.json", work / f"{tag}.cell.log", 3600)
                results["pipeline"] = r.to_json()
            else:
                results["timer"] = run_timer(
                    spec_path, work / f"{tag}.timer.json", int(row["threads"]), spec.plan
                )
        p, t = results["pipeline"], results["timer"]
        if p["status"] != "ok":
            why = p["failure"] or (p.get("contention") or {}).get("contended_reason")
            print(f"[bench] fidelity {label}: pipeline cell {p['status']}: {why}", file=sys.stderr)
            continue
        p_med = p["stats"]["median_s"] * 1e3
        t_med = t["median_s"] * 1e3
        rows.append(
            {
                **{k: row[k] for k in KEYS},
                "first": order[0],
                "pipeline_median_ms": p_med,
                "pipeline_n": p["stats"]["n"],
                "pipeline_ci_hw_pct": p["stats"]["ci_halfwidth_pct"],
                "pipeline_stop": p["measurement"]["stop_reason"],
                "timer_median_ms": t_med,
                "timer_blocks": t["blocks"],
                "timer_number_per_run": t["number_per_run"],
                "diff_pct": (p_med / t_med - 1) * 100,
                "snakemake_run_median_ms": row["latency_median_ms"],
                "snakemake_run_ci_hw_pct": row["ci_halfwidth_pct"],
                "timer_inside_ci": bool(
                    row["latency_ci_low_ms"] <= t_med <= row["latency_ci_high_ms"]
                ),
            }
        )
        # written after every cell, so an interrupted run still leaves its rows
        pd.DataFrame(rows).to_csv(ctx.out / f"{NAME}.partial.csv", index=False)
        print(
            f"[bench] fidelity {label}: pipeline {p_med:.2f} ms, timer {t_med:.2f} ms",
            file=sys.stderr,
            flush=True,
        )
    df = pd.DataFrame(rows).astype({"threads": int, "batch_size": int})
    timer = df[KEYS].assign(latency_median_ms=df["timer_median_ms"], replicates=1)
    judged = against_ci(cells, timer)
    df = df.merge(
        judged[[*KEYS, "inside_agreement"]].rename(columns={"inside_agreement": "timer_inside_pi"}),
        on=KEYS,
        how="left",
    )
    df["within_goal"] = df["diff_pct"].abs() <= GOAL_PCT
    show("fidelity: pipeline median vs torch.utils.benchmark blocked_autorange median", df)
    d = df["diff_pct"].to_numpy()
    q = np.percentile(d, [0, 10, 50, 90, 100])
    share = df["within_goal"].mean()
    print(
        f"diff_pct distribution: min {q[0]:+.2f}, p10 {q[1]:+.2f}, median {q[2]:+.2f}, "
        f"p90 {q[3]:+.2f}, max {q[4]:+.2f}; within +-{GOAL_PCT} %: {df['within_goal'].sum()}"
        f"/{len(df)} = {share:.0%}; timer median inside the pipeline run's two-level CI: "
        f"{int(df['timer_inside_ci'].sum())}/{len(df)} = {df['timer_inside_ci'].mean():.0%} "
        f"(goal >= {GOAL_SHARE:.0%})"
    )
    print(agreement_line(judged, "timer median"))
    return df
