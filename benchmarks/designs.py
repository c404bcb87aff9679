"""The deploy job's two designs on the same host in one run: the same configurations measured
in rounds of new processes (one configuration's processes after another's, ABBA over the
rounds: the design before the blocks, ``spec.deploy``'s schedule run by the group runner) and
in blocks of warm processes timed in ABBA slices (``measure.deploy.run``), one after the other,
each with the same number of replicates (rounds or blocks) and the same timed seconds per
configuration. Each is judged by the same table (``tables.deploy.table``): the median and
widest half-width of its distinct gains' CIs, its wall time, and the half-width scaled to one
minute of wall time (``width x sqrt(minutes)``, the precision per minute).

The configurations are those of a finished run's deploy plan (``--deploy-results DIR``, by
default ``results/``: its ``deploy/plan.json`` and the settings its ``deploy/run.json``
recorded)."""

from __future__ import annotations

import dataclasses
import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from numa_effects.measure import deploy, record
from numa_effects.measure import job as job_mod
from numa_effects.plan import slices
from numa_effects.plan import spec as spec_mod
from numa_effects.tables import deploy as table_mod

from . import common

NAME = "designs"
REPLICATES = 2  # rounds or blocks of each design: equal, and the pair within ~45 min on 2 vCPUs
TIMEOUT_S = 900.0


def job_of(run: dict, replicates: int) -> dict:
    """The deploy job's parameters as the finished run had them, at ``replicates`` and with no
    stop before them."""
    return {
        "image_size": run["job"]["image_size"],
        "settings": run["settings"],
        "rounds": replicates,
        "max_rounds": replicates,
        "target_pct": 0.0,
        "allowance_s": None,
        "compile_cache_opts": [],
        "code": None,
    }


def in_rounds(spec: spec_mod.GroupSpec, rounds: int) -> spec_mod.GroupSpec:
    """The rounds design's order: every configuration once per round (each a new process run
    alone), every other round reversed (ABBA over the rounds)."""
    names = list(spec.configurations)
    order = slices.order(names, rounds)
    return dataclasses.replace(
        spec, schedule=tuple((n, k // len(names) + 1) for k, n in enumerate(order))
    )


def widths(plan: dict, rec) -> list[float]:
    """The half-widths (%) of the distinct gains' CIs of the table judged from ``rec``."""
    df = table_mod.table(plan, rec)
    g = df.dropna(subset=["gain_ci_low", "gain_ci_high"]).drop_duplicates(["objective", "config"])
    bounds = zip(g.gain_ci_low, g.gain_ci_high, strict=True)
    return [(math.sqrt(h / lo) - 1) * 100 for lo, h in bounds]


def measure(design: str, plan: dict, job: dict, out: Path):
    """Run one design into ``out``; (its record, wall seconds, load before and after)."""
    before, t0 = common.load(), time.monotonic()
    path, log = out / f"{design}.json", out / f"{design}.log"
    if design == "rounds":
        spec = in_rounds(spec_mod.deploy(job, plan["configurations"]), job["max_rounds"])
        job_mod.run(spec, path, log, TIMEOUT_S)
    else:
        deploy.run(job, plan, path, log, TIMEOUT_S)
    return record.read_group(path), time.monotonic() - t0, before, common.load()


def run(ctx) -> pd.DataFrame:
    src = Path(getattr(ctx, "deploy_results", None) or common.ROOT / "results")
    plan = json.loads((src / "deploy" / "plan.json").read_text())
    job = job_of(json.loads((src / "deploy" / "run.json").read_text()), REPLICATES)
    out = ctx.work / NAME
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for design in ("rounds", "blocks"):
        rec, wall, before, after = measure(design, plan, job, out)
        w = widths(plan, rec)
        med = float(np.median(w)) if w else math.nan
        rows.append(
            {
                "design": design,
                "configurations": len(plan["configurations"]),
                "replicates": deploy.rounds(rec),
                "gains": len(w),
                "median_halfwidth_pct": med,
                "widest_halfwidth_pct": max(w) if w else math.nan,
                "wall_min": wall / 60,
                "median_halfwidth_pct_per_minute": med * math.sqrt(wall / 60),
                "load1_before": before["load1"],
                "load1_after": after["load1"],
            }
        )
        print(f"[designs] {design}: {rows[-1]}", flush=True)
    return pd.DataFrame(rows)
