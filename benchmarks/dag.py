"""Benchmark 4, DAG scale: wall time of ``snakemake -n`` (parse, validate, plan the grid, build
the DAG, print the dry run) for ``config/packrat.yaml`` planned against a 2 x 16-core topology
file (704 cells) and for a >= 10 000-cell grid on the same topology. Nothing is measured on the
machine, so this runs the same on any grid option.

Goals: <= 10 s (704 cells) and <= 60 s (10 000 cells)."""

from __future__ import annotations

import re
import resource
import subprocess
import sys
import time

import pandas as pd
import yaml

from .common import ROOT, Context, load, show

NAME = "dag"
TOPOLOGY = ROOT / "benchmarks" / "data" / "topology-2x16.lscpu"
# 5 models x 16 batch sizes x 2 optimizations x 4 placements x 16 thread counts = 10 240 cells
LARGE = {
    "models": ["resnet18", "resnet34", "resnet50", "resnet101", "resnet152"],
    "batch_sizes": list(range(1, 17)),
    "optimizations": ["none", "script"],
    "threads": "auto",
    "placements": ["sequential", "interleave", "remote", "mem-interleave"],
}
GOALS = {"packrat": 10.0, "large": 60.0}


def _dry_run(configfile, results, log) -> tuple[float, float, int, dict]:
    """Wall and CPU (user + system) seconds of one ``snakemake -n``: on a loaded machine the
    wall time stretches with the load, the CPU time much less."""
    cmd = [sys.executable, "-m", "snakemake", "all", "-n", "--configfile", str(configfile)]
    cmd += ["--config", f"topology={TOPOLOGY}", f"results={results}"]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        rc = subprocess.run(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT).returncode
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    counts = {}
    for line in log.read_text().splitlines():
        if m := re.match(r"^(\w+)\s+(\d+)$", line):
            counts.setdefault(m.group(1), int(m.group(2)))
    return wall, cpu, rc, counts


def run(ctx: Context) -> pd.DataFrame:
    work = ctx.work / "dag"
    work.mkdir(parents=True, exist_ok=True)
    large_cfg = work / "large.yaml"
    large_cfg.write_text(yaml.safe_dump(LARGE, sort_keys=False))
    rows = []
    for name, cfg in (("packrat", ROOT / "config" / "packrat.yaml"), ("large", large_cfg)):
        before = load()
        wall, cpu, rc, counts = _dry_run(cfg, work / f"results-{name}", work / f"{name}.log")
        rows.append(
            {
                "grid": name,
                "cells": counts.get("cell"),
                "jobs": counts.get("total"),
                "wall_s": wall,
                "cpu_s": cpu,
                "goal_s": GOALS[name],
                "met": wall <= GOALS[name] and rc == 0,
                "exit": rc,
                "load1_before": before["load1"],
            }
        )
        print(f"[bench] dag {name}: {wall:.1f} s, {counts.get('cell')} cells", file=sys.stderr)
    df = pd.DataFrame(rows)
    show("dag: snakemake -n wall time (2 x 16-core topology file)", df)
    return df
