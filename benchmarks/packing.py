"""Benchmark ``packing`` (issue 14): are the optimizer's predictions right on this machine?

The pipeline runs on the benchmark grid with every power of two between its smallest and largest
batch size (the default grid's 1, 4, 16 become 1, 2, 4, 8, 16: without the points in between no
batch can be split between instances), the ``sequential`` placement and the first optimization
only. Its ``tables/packing.csv`` holds, per (opt, core budget, batch size), the plan predicted
from the ``sequential`` cells and the plan and the fat instance measured as concurrent pinned
instances.

When the fat instance wins, the plan *is* the fat instance and its prediction error says nothing
about concurrent instances (their shared caches and memory bandwidth, which the prediction
ignores). So for every batch that can be split the benchmark also measures the best *split*
(``packing.optimize(..., min_instances=2)``, e.g. 2x(t1,b8) for B = 16 on 2 cores) with the
runner's own code (``group.measure_replicates``: the one measuring stack, retries included), as
many replicates as the pipeline ran, right after the pipeline; records in
``<work>/packing-splits/``.

Goal (issue 14): prediction error |measured / predicted - 1| <= 10 % on >= 80 % of the measured
batch sizes, for the chosen plans. The same share is printed for the splits, and the measured
speedup over the fat instance per batch size, as it is."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from numa_effects import stats
from numa_effects.measure import group, provenance
from numa_effects.plan import packing, paths
from numa_effects.plan import topology as topology_mod
from numa_effects.tables import packing as packing_table

from .common import Context, load, pipeline, show

NAME = "packing"
GOAL_ERROR = 0.10
GOAL_SHARE = 0.80
TIMEOUT_S = 900.0  # per measured group: process start, model build, rounds


def powers_of_two(batch_sizes) -> list[int]:
    """Every power of two between the smallest and the largest batch size, plus the sizes
    themselves: the points a split of the larger batches needs."""
    lo, hi = min(batch_sizes), max(batch_sizes)
    out = set(batch_sizes)
    b = 1
    while b <= hi:
        if b >= lo:
            out.add(b)
        b *= 2
    return sorted(out)


def overrides(grid: dict) -> dict:
    return {
        "batch_sizes": powers_of_two(grid["batch_sizes"]),
        "placements": ["sequential"],
        "optimizations": list(grid["optimizations"])[:1],
    }


def _split_record(ctx: Context, choice: dict, split, run_json: dict) -> dict:
    """Measure one split configuration (or reuse it with ``--reuse``); returns its record."""
    out = ctx.work / "packing-splits" / choice["model"] / choice["opt"]
    path = out / f"c{choice['budget']}-bs{choice['batch']}.json"
    if ctx.reuse and path.exists():
        return json.loads(path.read_text())
    job = run_json["job"]
    conf = [(i.threads, i.batch) for i in split.instances]
    topo = topology_mod.current()
    got = group.plans_for(topo, split.budget, conf, bool(job["use_smt"]))
    record = {
        "choice": {**choice, **split.to_dict()},
        "settings": run_json["settings"],
        "load_before": load(),
        "started_at": provenance.now(),
        "host": provenance.host(),
    }
    if isinstance(got, str):
        record.update(status="failed", failure={"cause": "plan-mismatch", "message": got})
    else:
        record["placements"] = [p.to_dict() for p, _ in got]
        common = {k: job[k] for k in ("model", "opt", "image_size", "use_smt")}
        runs = group.measure_replicates(
            {"split": got},
            common,
            run_json["settings"],
            out / "logs",
            TIMEOUT_S,
            len(run_json["runs"]["fat"]),
            tag=f"c{split.budget}-bs{split.batch}-",
        )["split"]
        record["runs"] = runs
        record["status"] = "failed" if any(r["status"] == "failed" for r in runs) else "ok"
    record["load_after"] = load()
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1))
    return record


def split_candidates(doc: dict, cells: pd.DataFrame) -> list[tuple[dict, packing.Choice]]:
    """(choice, best split) for every choice of a plans.json document whose plan is a single
    instance and whose batch can be split between two or more instances of measured points."""
    out, tables = [], {}
    for choice in doc["choices"]:
        if not choice.get("instances") or choice.get("k", 1) >= 2:
            continue  # no plan, or the plan is already a split (the pipeline measured it)
        key = (choice["model"], choice["opt"])
        if key not in tables:
            tables[key] = packing.latency_table(cells, *key)
        split = packing.optimize(tables[key], choice["budget"], choice["batch"], min_instances=2)
        if split is not None:
            out.append((choice, split))
    return out


def splits(ctx: Context, results: Path, table: pd.DataFrame) -> pd.DataFrame:
    """Measure the best split of every (model, opt, budget, batch) whose plan is not one."""
    cells = pd.read_csv(results / "tables" / "cells.csv")
    rows = []
    for plans_path in sorted((results / "packing").glob("*/*/plans.json")):
        doc = json.loads(plans_path.read_text())
        for choice, split in split_candidates(doc, cells):
            model, opt, budget, batch = (choice[k] for k in ("model", "opt", "budget", "batch"))
            run_path = results / paths.PACKING_RUN.format(**choice, batch_size=batch)
            if not run_path.exists():
                continue
            run_json = json.loads(run_path.read_text())
            if run_json.get("status") != "ok":
                continue
            rec = _split_record(ctx, choice, split, run_json)
            row = {
                "model": model,
                "opt": opt,
                "budget": budget,
                "batch_size": batch,
                "kind": "split",
                "plan": split.label(),
                "predicted_latency_ms": split.latency_s * 1e3,
                "status": rec["status"],
            }
            fat = table[
                (table["model"] == model)
                & (table["opt"] == opt)
                & (table["budget"] == budget)
                & (table["batch_size"] == batch)
            ]
            groups = [[s["median_s"] for s in packing_table.replicate_stats(rec.get("runs", []))]]
            est = None
            if rec["status"] == "ok":
                est = packing_table.estimate(rec["runs"], stats.pooled_replicate_var(groups))
                row["contended"] = any(packing_table.contended(r) for r in rec["runs"])
                if est is None:  # no replicate had a clean round: not a number
                    row["status"] = "contended"
            if est is not None:
                row.update(
                    latency_ms=est["median_s"] * 1e3,
                    latency_ci_low_ms=est["ci_low_s"] * 1e3,
                    latency_ci_high_ms=est["ci_high_s"] * 1e3,
                )
                row["prediction_error"] = row["latency_ms"] / row["predicted_latency_ms"] - 1
                if not fat.empty:
                    row["fat_latency_ms"] = float(fat["fat_latency_ms"].iloc[0])
                    row["speedup"] = row["fat_latency_ms"] / row["latency_ms"]
            rows.append(row)
    return pd.DataFrame(rows)


def verdict(df: pd.DataFrame) -> str:
    s = packing_table.benchmark_summary(df, GOAL_ERROR)
    share = s["share_within"]
    met = "MET" if share >= GOAL_SHARE else "NOT met"
    pct = "n/a" if math.isnan(share) else f"{share:.0%}"
    return f"{s['within']}/{s['measured']} batch sizes ({pct}; goal >= {GOAL_SHARE:.0%}: {met})"


def run(ctx: Context) -> pd.DataFrame:
    p = pipeline(ctx, "packing", overrides(ctx.grid()))
    path = p.results / "tables" / "packing.csv"
    if not path.exists():
        print(
            "packing: no tables/packing.csv (packing is off for this grid: it needs two thread "
            "counts and the sequential placement)"
        )
        return pd.DataFrame()
    df = pd.read_csv(path)
    df["kind"] = "plan"
    split_df = splits(ctx, p.results, df)
    both = pd.concat([df, split_df], ignore_index=True)
    both["error_pct"] = both["prediction_error"] * 100
    both["within_goal"] = both["prediction_error"].abs() <= GOAL_ERROR
    cols = [
        "model",
        "opt",
        "budget",
        "batch_size",
        "kind",
        "plan",
        "predicted_latency_ms",
        "latency_ms",
        "latency_ci_low_ms",
        "latency_ci_high_ms",
        "error_pct",
        "within_goal",
        "fat_latency_ms",
        "speedup",
        "contended",
        "status",
    ]
    out = both[[c for c in cols if c in both.columns]].sort_values(
        ["model", "opt", "budget", "batch_size", "kind"]
    )
    show("packing: predicted vs measured latency (plan = the optimizer's choice)", out)
    line = f"chosen plans: prediction within +-{GOAL_ERROR:.0%} on {verdict(df)}"
    if not split_df.empty:
        line += f"; best splits: {verdict(split_df)}"
    print(line)
    ok = both[both["status"] == "ok"]
    for label, sel in (
        ("one instance", ok[ok["plan"].str.startswith("1x")]),
        ("several instances", ok[~ok["plan"].str.startswith("1x")]),
    ):
        if len(sel):
            print(
                f"prediction error of {label}: mean {sel['error_pct'].mean():+.1f} %, "
                f"range {sel['error_pct'].min():+.1f} ... {sel['error_pct'].max():+.1f} % "
                f"({len(sel)} measured; a systematic + means concurrent instances slow each "
                "other, which the prediction from cells measured alone ignores)"
            )
    print(
        "measured speedup over the fat instance: "
        + ", ".join(
            f"C={r.budget} B={r.batch_size} {r.kind} {r.plan}: {r.speedup:.2f}x"
            for r in out.itertuples()
            if r.status == "ok" and isinstance(r.speedup, float) and not math.isnan(r.speedup)
        )
    )
    return out
