"""Shared test helpers: the repository root, a real `snakemake` runner for integration tests,
the runs several test files read (``quick_run``: one per session), and a busy loop pinned to a
CPU (``busy_loop``, ``hog``) for the contention tests."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from numa_effects.slurmconf import NO_CONTROLLER

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"

TEST_CONFIGS = REPO / ".test" / "config"

# Every Snakemake the tests start (and any in this process) reads a Slurm config that refuses at
# once instead of the machine's, unless SLURM_CONF is set already: Snakemake's Slurm plugin runs
# `scontrol show config` when it is imported, at every start of Snakemake, and with no
# controller running that waits ~10 s of connection retries (numa_effects.slurmconf).
# tests/test_slurm.py puts the machine's config back for its cluster (MACHINE_SLURM_CONF).
MACHINE_SLURM_CONF = os.environ.get("SLURM_CONF")
os.environ.setdefault("SLURM_CONF", str(NO_CONTROLLER))


def load_config(name: str, **over) -> dict:
    """A named test config (``.test/config/<name>.yaml``) with the keys ``over`` replaced."""
    with open(TEST_CONFIGS / f"{name}.yaml") as fh:
        return {**yaml.safe_load(fh), **over}


def snakemake(
    workdir: Path, config: dict | None, *args: str, check: bool = True, timeout: float = 900
) -> subprocess.CompletedProcess:
    """Run the real workflow with `config` written to workdir/config.yaml, outputs in workdir."""
    workdir.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
    ]
    if config is not None:
        cfg = workdir / "config.yaml"
        cfg.write_text(yaml.safe_dump(config))
        cmd += ["--configfile", str(cfg)]
    cmd += list(args)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(
        cmd, cwd=workdir, capture_output=True, text=True, env=env, timeout=timeout
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake failed ({proc.returncode}): {' '.join(cmd)}\n"
            f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
        )
    return proc


DOT_NODE = re.compile(r'^\s*\d+\[label = "([^"\\]+)[^"]*",.*style="([^"]*)"\];$', re.M)


def dag_jobs(dot: str) -> Counter:
    """{rule: jobs to run} from Snakemake's ``--dag`` output (Graphviz): every job of the DAG
    is a node, and those that need not run are drawn ``dashed``. Empty when nothing would
    run; a text without a graph is an error, never "nothing to do"."""
    if "digraph snakemake_dag" not in dot:
        raise AssertionError(f"no DAG in snakemake's output:\n{dot[-2000:]}")
    return Counter(rule for rule, style in DOT_NODE.findall(dot) if "dashed" not in style)


def planned(workdir: Path, config: dict | None, *args: str, target: str = "all") -> Counter:
    """{rule: jobs a run of ``target`` would execute}, from Snakemake's DAG (``dag_jobs``)."""
    return dag_jobs(snakemake(workdir, config, *args, "--dag", "dot", target).stdout)


# -- the 2-node guest boots beside the host tests (tests/guest_boot.py) ---------------------------
def _is_numa_vm(item) -> bool:
    return item.get_closest_marker("numa_vm") is not None


def _is_slurm(item) -> bool:
    return item.get_closest_marker("slurm") is not None


def pytest_collection_modifyitems(session, config, items):
    """The slurm tests first and the numa_vm tests last, each in their order. The numa_vm tests
    wait for the guest that boots meanwhile. The slurm tests mostly wait on the test cluster's
    status polling: alone, their ~3 min kept 0.8 of the 2 cores busy, and no free core makes
    them faster. So they run while the guest keeps the machine busy, and the tests that do
    run faster on a free machine are the ones left for the end, after the guest is done
    (docs/development.md)."""
    first = [i for i in items if _is_slurm(i) and not _is_numa_vm(i)]
    last = [i for i in items if _is_numa_vm(i)]
    middle = [i for i in items if not _is_slurm(i) and not _is_numa_vm(i)]
    items[:] = first + middle + last


MACHINE_BEFORE = pytest.StashKey[dict]()


def machine_env() -> dict:
    """The environment a user's Snakemake has here (this process points SLURM_CONF elsewhere)."""
    env = {k: v for k, v in os.environ.items() if k != "SLURM_CONF"}
    return env if MACHINE_SLURM_CONF is None else {**env, "SLURM_CONF": MACHINE_SLURM_CONF}


def pytest_collection_finish(session):
    """Before a session that runs the slurm or numa_vm tests (they install, configure and start
    things on this machine), take the machine's state (tests/machine_state.py: compared at the
    session's end); then start the guest's boot if a test needs it."""
    if not session.config.option.collectonly and any(
        _is_slurm(i) or _is_numa_vm(i) for i in session.items
    ):
        import machine_state

        session.config.stash[MACHINE_BEFORE] = machine_state.snapshot(machine_env())
    _start_guest(session)


def _start_guest(session):
    import guest_boot

    config = session.config
    if (
        config.option.collectonly
        or sys.platform != "linux"
        or os.environ.get("NUMA_VM_RESULTS")
        or not guest_boot.background()
        or not any(_is_numa_vm(i) for i in session.items)
    ):
        return
    out = config._tmp_path_factory.mktemp("numa_vm")
    guest_boot.CURRENT = guest_boot.Boot(out).start()
    if guest_boot.CURRENT.started_at is not None:
        print(f"\nnuma_vm: the guest boots in the background into {out}", file=sys.stderr)


def pytest_sessionfinish(session, exitstatus):
    """Stop the guest, then compare the machine with its state before the session: anything
    the tests left behind (a Slurm config, a daemon, a guest, ...) fails the session."""
    import guest_boot

    if guest_boot.CURRENT is not None:
        guest_boot.CURRENT.stop()
    before = session.config.stash.get(MACHINE_BEFORE, None)
    if before is None:
        return
    import machine_state

    left, _ = machine_state.compare(before, machine_state.snapshot(machine_env()))
    for line in left:
        print(f"\nmachine state: left behind: {line}", file=sys.stderr)
    if left and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def tiny_config() -> dict:
    return load_config("tiny")


# -- runs made once per session and shared by the tests that read them ----------------------------
@dataclasses.dataclass(frozen=True)
class Run:
    """A finished real run: its folder (``workdir``, outputs in ``results``), the config it ran
    with, the dry run before it (None if none) and the run itself. Shared between tests: read
    it, never change it; a test that changes the folder changes a ``copy``."""

    workdir: Path
    config: dict
    dry: subprocess.CompletedProcess | None
    done: subprocess.CompletedProcess

    @property
    def results(self) -> Path:
        return self.workdir / "results"

    def copy(self, dest: Path) -> Run:
        """The run's whole folder (``.snakemake/`` too, file times kept) copied to ``dest``."""
        shutil.copytree(self.workdir, dest, symlinks=True)
        return dataclasses.replace(self, workdir=dest)


def quick_config() -> dict:
    """The quick grid: tiny.yaml at two placements (on one node ``interleave`` binds like
    ``sequential`` and is reported from its cells), two replicates per cell, and the deploy
    answer after the cells (its configurations measured in two ABBA rounds)."""
    return load_config(
        "tiny",
        placements=["sequential", "interleave"],
        replicates=2,
        deploy={"rounds": 2, "max_rounds": 2, "max_seconds": 1},
    )


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory) -> Run:
    """The quick grid (``quick_config``) run once per session, `all` after its dry run, on two
    cores; read by tests/test_pipeline.py, test_deploy_pipeline.py and test_compare.py."""
    workdir = tmp_path_factory.mktemp("quick")
    cfg = quick_config()
    dry = snakemake(workdir, cfg, "--cores", "2", "-n", "all")
    return Run(workdir, cfg, dry, snakemake(workdir, cfg, "--cores", "2", "all"))


# The rerun tests' grid (.test/config/one-cell.yaml): one cell, no peak; and the node pair n0m0,
# whose memory job's spec names a cache folder under results/ (as a compiled cell's does): a
# copied run must find it by the same name.
RERUN_GRID = load_config(
    "one-cell",
    warmup=1,
    fixed_iterations=3,
    max_seconds_per_cell=2,
    peak=False,
    placements=["sequential", "node-pairs"],
    node_pairs=[[0, 0]],
    same_bindings="each",  # n0m0 binds like sequential on one node: two cells all the same
)


def clone(dest: Path) -> Path:
    """A ``git clone`` of this repository (its committed state) at ``dest``."""
    subprocess.run(["git", "clone", "-q", str(REPO), str(dest)], check=True)
    return dest


def clone_snakemake(checkout: Path, config: dict, *args: str, check: bool = True):
    """Snakemake of the clone ``checkout`` (its own Snakefile, run in it) with ``config``."""
    cfg = checkout / "test-config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    cmd = [sys.executable, "-m", "snakemake", "--configfile", str(cfg), *args]
    proc = subprocess.run(cmd, cwd=checkout, capture_output=True, text=True, env=env, timeout=900)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="session")
def finished_clone(tmp_path_factory) -> Path:
    """A clone with ``RERUN_GRID`` run (`all`), made once per session for
    tests/test_rerun_clone.py and test_rerun_history.py: read it, or ``cp -a`` it first."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs git and a git checkout of the project")
    checkout = clone(tmp_path_factory.mktemp("rerun") / "a")
    clone_snakemake(checkout, RERUN_GRID, "--cores", "1", "all")
    return checkout


# -- a busy loop pinned to a CPU ----------------------------------------------------------------
def proc_stat(pid: int) -> list[str]:
    """/proc/<pid>/stat's fields after the command name: [0] is field 3 (the state), [1] the
    parent's pid. OSError once the process is gone."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) a process has used: /proc/<pid>/stat fields 14 and 15."""
    fields = proc_stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def last_cpu(pid: int) -> int:
    """The CPU a process last ran on (/proc/<pid>/stat field 39)."""
    return int(proc_stat(pid)[36])


def foreign_share_pct(cpus, seconds: float = 0.5) -> float:
    """The share of ``cpus`` that tasks other than this (sleeping) test used over ``seconds``,
    as the pipeline's contention watch measures it (numa_effects.measure.contention)."""
    from numa_effects.measure import contention

    watch = contention.Watch(cpus)
    time.sleep(seconds)
    return watch.stop()["foreign_cpu_pct"]


def start_busy_loop(
    cpu: int, procs: list, min_cpu_s: float = 0.3, timeout: float = 120.0
) -> subprocess.Popen:
    """A busy loop (``while True: pass``) pinned to ``cpu`` with taskset, appended to ``procs``
    (the caller kills them), returned once it has really run there: it has used ``min_cpu_s``
    of CPU time and last ran on ``cpu``. On a loaded machine a new process may wait seconds for
    its first slice; a test that measures before then measures an idle CPU."""
    proc = subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c", "while True: pass"])
    procs.append(proc)
    end = time.monotonic() + timeout
    while True:
        try:
            if cpu_seconds(proc.pid) >= min_cpu_s and last_cpu(proc.pid) == cpu:
                return proc
        except (OSError, IndexError, ValueError):
            pass
        if proc.poll() is not None or time.monotonic() > end:
            raise AssertionError(f"the busy loop never ran on CPU {cpu} ({timeout} s)")
        time.sleep(0.05)


@pytest.fixture
def busy_loop():
    """``start(cpu)``: ``start_busy_loop`` on ``cpu``; every loop killed at teardown."""
    procs = []

    def start(cpu: int, min_cpu_s: float = 0.3, timeout: float = 120.0) -> subprocess.Popen:
        return start_busy_loop(cpu, procs, min_cpu_s, timeout)

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


@pytest.fixture
def hog(busy_loop):
    """A busy loop on the CPU the planner gives a 1-thread sequential cell, running."""
    from numa_effects.plan import placement, topology

    cpu = placement.plan(topology.current(), 1, "sequential").cpus[0]
    return busy_loop(cpu)


# -- result folders for comparisons (config key compare) ------------------------------------------
MACHINE = {"summary": {"cpu_model": "Test CPU", "nodes": 1, "physical_cores": 2}, "host": {}}


def result_folder(folder: Path, rows: list[dict], machine: dict | None = None) -> Path:
    """A result folder as a comparison reads it: ``tables/cells.csv`` (one row per dict: the
    cell keys and any cells.csv columns) and ``machine.json``."""
    import json

    import pandas as pd

    (folder / "tables").mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(folder / "tables" / "cells.csv", index=False)
    (folder / "machine.json").write_text(json.dumps(machine or MACHINE))
    return folder


def key(model="resnet18", opt="none", placement="sequential", threads=1, batch_size=1) -> dict:
    return {
        "model": model,
        "opt": opt,
        "placement": placement,
        "threads": threads,
        "batch_size": batch_size,
    }


# -- simulated runs with the canary (config key canary) -------------------------------------------
CANARY_MS = 0.8


def canary_samples(
    rng,
    cells,
    n,
    slope,
    speed_sd=0.08,
    own_sd=0.03,
    placement="sequential",
    speed_mean=0.0,
    opt="none",
):
    """Simulated samples.csv rows with the canary (the tests of tables.speed, of the benchmarks'
    judgement at the reference speed and of compare.csv's speed_ratio): ``cells`` cells at one
    thread count, ``n`` replicates each; replicate r of cell c (batch size c, optimization
    ``opt``) runs at log speed x ~ N(speed_mean, speed_sd) (the canary sees it exactly, plus 1 %
    of its own) and its log latency is mu_c + slope x + N(0, own_sd); 5 clean iterations each.
    Returns (the rows, {batch size: mu_c})."""
    import numpy as np
    import pandas as pd

    from numa_effects.plan import grid

    rows, mus = [], {}
    for c in range(cells):
        mu = np.log(50.0 * (c + 1))
        mus[c + 1] = mu
        for r in range(1, n + 1):
            x = rng.normal(speed_mean, speed_sd)
            y = mu + slope * x + rng.normal(0.0, own_sd)
            for i in range(5):
                rows.append(
                    {
                        **{k: grid.DEFAULTS.get(k) for k in grid.KEYS},
                        "model": "resnet50",
                        "opt": opt,
                        "placement": placement,
                        "threads": 1,
                        "batch_size": c + 1,
                        "replicate": r,
                        "iteration": i,
                        "latency_ms": float(np.exp(y)),
                        "canary_ms": float(CANARY_MS * np.exp(x + rng.normal(0.0, 0.01) * (i > 0))),
                        "excluded": False,
                    }
                )
    return pd.DataFrame(rows), mus
