"""Shared machinery of the benchmarks: grids, pipeline runs, the machine's load, table output."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pandas as pd
import yaml

from numa_effects.plan.grid import KEYS as CELL_KEYS

ROOT = Path(__file__).resolve().parent.parent


GRID_KEYS = ("models", "batch_sizes", "optimizations", "threads", "placements", "image_size")

# PackRat's protocol: 10 warm-up + 100 timed iterations, no time cap that could cut it short,
# one process per cell (as PackRat).
FIXED = {
    "protocol": "fixed",
    "warmup": 10,
    "fixed_iterations": 100,
    "max_seconds_per_cell": 3600,
    "replicates": 1,  # (config key two_stage is off with one process per cell)
}


def grid(name: str) -> dict:
    """``default``: the grid of config/config.yaml. ``quick``: the same shape on ResNet-18 with
    batch sizes 1 and 4 (8 cells on a 2-core machine), for a shared or slow machine. ``smoke``:
    two tiny cells, to check the benchmarks themselves."""
    default = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    g = {k: default[k] for k in GRID_KEYS if k in default}
    if name == "default":
        return g
    if name == "quick":
        return {**g, "models": ["resnet18"], "batch_sizes": [1, 4], "image_size": 224}
    if name == "smoke":  # seconds: checks that the benchmarks run, measures nothing of interest
        return {**g, "models": ["resnet18"], "batch_sizes": [1], "image_size": 64, "threads": [1]}
    raise ValueError(f"unknown grid {name!r} (default, quick, smoke)")


def load() -> dict:
    """The 1-, 5- and 15-minute load averages and the CPU count, now."""
    one, five, fifteen = os.getloadavg()
    return {"load1": one, "load5": five, "load15": fifteen, "cpus": os.cpu_count()}


@dataclass
class Context:
    grid_name: str = "default"
    out: Path = ROOT / "results" / "bench"
    reuse: bool = False
    cores: int = os.cpu_count() or 1
    bias_data: Path | None = None  # offline data for ``bias`` (a folder with fixed/samples.csv)
    deploy_results: Path | None = None  # ``designs``: a finished run's results folder
    runs: dict = field(default_factory=dict)  # name -> PipelineRun, shared between benchmarks

    @property
    def work(self) -> Path:
        return self.out / "work" / self.grid_name

    def grid(self) -> dict:
        return grid(self.grid_name)


@dataclass
class PipelineRun:
    name: str
    results: Path
    wall_s: float
    returncode: int
    log: Path
    load_before: dict
    load_after: dict

    def cells(self) -> pd.DataFrame:
        """cells.csv, each measurement once: a row reported from another cell's measurement
        (``same_binding_as``, ``plan.binding``) repeats that cell's numbers under a second name
        and would count it twice in a benchmark's shares."""
        cells = pd.read_csv(self.results / "tables" / "cells.csv")
        if "same_binding_as" in cells:
            cells = cells[cells["same_binding_as"].isna()].reset_index(drop=True)
        return cells

    def samples(self) -> pd.DataFrame:
        return pd.read_csv(self.results / "tables" / "samples.csv")

    def cell_json(self, row) -> dict:
        return json.loads(Path(row["cell_json"]).read_text())


def pipeline(
    ctx: Context,
    name: str,
    overrides: dict,
    target: str = "all",
    env: dict | None = None,
    prefix: list[str] | None = None,
) -> PipelineRun:
    """Run the Snakemake pipeline on the context's grid into ``<work>/<name>`` (or reuse an
    earlier run with ``--reuse``) and time it. Earlier results of the same name are removed
    first, so every cell is measured in this run. ``env``: variables added to its environment
    (the cells inherit them and record the relevant ones); ``prefix``: a command Snakemake runs
    under, whose effect its children inherit (``setarch -R``: no address randomization)."""
    if name in ctx.runs:
        return ctx.runs[name]
    results = ctx.work / name
    meta = ctx.work / f"{name}.run.json"
    log = ctx.work / f"{name}.snakemake.log"
    if ctx.reuse and meta.exists() and (results / "tables" / "cells.csv").exists():
        d = json.loads(meta.read_text())
        run = PipelineRun(
            name, results, d["wall_s"], d["returncode"], log, d["load_before"], d["load_after"]
        )
        ctx.runs[name] = run
        return run
    import shutil

    shutil.rmtree(results, ignore_errors=True)
    results.mkdir(parents=True, exist_ok=True)
    # the grid as the benchmark gives it: config.yaml's budget would shrink it (advise sets one)
    cfg = {**ctx.grid(), "budget": None, **overrides, "results": str(results)}
    cfg_path = ctx.work / f"{name}.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    target_path = target if target == "all" else f"{results}/{target}"
    args = [target_path, "--cores", str(ctx.cores), "--keep-going", "--configfile", str(cfg_path)]
    cmd = [*(prefix or []), sys.executable, "-m", "snakemake", *args]
    env = {
        **os.environ,
        **(env or {}),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    before = load()
    print(
        f"[bench] pipeline {name}: {' '.join([*(prefix or []), 'snakemake', *args])}"
        f"  (load {before['load1']:.2f})",
        file=sys.stderr,
        flush=True,
    )
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        rc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT).returncode
    wall = time.perf_counter() - t0
    after = load()
    meta.write_text(
        json.dumps({"wall_s": wall, "returncode": rc, "load_before": before, "load_after": after})
    )
    print(f"[bench] pipeline {name}: {wall:.0f} s, exit {rc}", file=sys.stderr, flush=True)
    run = PipelineRun(name, results, wall, rc, log, before, after)
    ctx.runs[name] = run
    return run


_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
_RULE = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):$")
_JOBID = re.compile(r"^\s+jobid: (\d+)$")
_DONE = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)$")


def pinned_child(module: str, plan, threads: int, args: list[str], out: Path):
    """Run ``python -m <module> <args> --out <out>`` pinned as a cell with ``plan``
    (``placement.Plan``: its numactl binding, the cell's ``OMP_NUM_THREADS``, the project's
    modules importable) and return the JSON it wrote to ``out``."""
    from numa_effects.measure import runner

    env = runner.child_env(threads)
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(ROOT)])
    cmd = ["numactl", *plan.numactl_args(), sys.executable, "-m", module, *args]
    cmd += ["--out", str(out)]
    subprocess.run(cmd, env=env, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def replicate_records(results: Path) -> list[dict]:
    """Every replicate's result of a pipeline run (``cells/**/r*.json``), in path order."""
    return [json.loads(p.read_text()) for p in sorted((results / "cells").rglob("r*.json"))]


def process_span_s(provenance: dict) -> float:
    """A replicate's processes' whole life: from its launcher's start to its result."""
    start = datetime.fromisoformat(provenance["launcher_started_at"])
    return (datetime.fromisoformat(provenance["finished_at"]) - start).total_seconds()


def job_times(log: Path) -> pd.DataFrame:
    """Start and end (1 s resolution) of every job in a Snakemake log: jobid, rule, seconds."""
    starts, ends, rules = {}, {}, {}
    stamp = rule = None
    for line in log.read_text(errors="replace").splitlines():
        if m := _STAMP.match(line):
            stamp = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
        elif m := _RULE.match(line):
            rule = m.group(1)
        elif (m := _JOBID.match(line)) and rule and stamp:
            starts[int(m.group(1))] = stamp
            rules[int(m.group(1))] = rule
            rule = None
        elif (m := _DONE.match(line)) and stamp:
            ends[int(m.group(1))] = stamp
    rows = [
        {
            "jobid": j,
            "rule": rules[j],
            "start": starts[j],
            "end": ends[j],
            "seconds": (ends[j] - starts[j]).total_seconds(),
        }
        for j in starts
        if j in ends
    ]
    return pd.DataFrame(rows, columns=["jobid", "rule", "start", "end", "seconds"])


def covered_seconds(jobs: pd.DataFrame) -> float:
    """Wall seconds during which at least one of ``jobs`` ran (their intervals' union)."""
    total, cur_start, cur_end = 0.0, None, None
    for start, end in sorted(zip(jobs["start"], jobs["end"], strict=True)):
        if cur_end is None or start > cur_end:
            if cur_end is not None:
                total += (cur_end - cur_start).total_seconds()
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    if cur_end is not None:
        total += (cur_end - cur_start).total_seconds()
    return total


def show(title: str, df: pd.DataFrame, floatfmt: str = "{:.3g}") -> None:
    """Print one benchmark table."""
    with pd.option_context(
        "display.width",
        200,
        "display.max_columns",
        40,
        "display.max_rows",
        200,
        "display.float_format",
        floatfmt.format,
    ):
        print(f"\n== {title} ==")
        print(df.to_string(index=False))
    sys.stdout.flush()


KEYS = list(CELL_KEYS)  # the cell key columns, defined once in numa_effects.plan.grid


def key_label(row) -> str:
    """A cell's label in messages and file names: its path's segments (``grid.AXES``), e.g.
    ``resnet50/none/sequential/t1/bs1/default``."""
    from numa_effects.plan.grid import AXES, CellKey

    key = CellKey.from_record(dict(row)).as_dict()
    return "/".join(a.segment.format(**key) for a in AXES)
