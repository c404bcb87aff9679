"""A tiny grid submitted through profiles/slurm to a real single-node Slurm on this machine.

The module's fixture starts Slurm with tests/slurm/start-slurm (installs munge, slurmctld, slurmd
and slurm-client if missing; root, or passwordless sudo) and stops the daemons it started with
tests/slurm/stop-slurm after this module, which conftest.py runs first (its run mostly waits on
the cluster, beside the guest's boot). The workflow then runs exactly as the README tells users:
capture the compute node's topology with the `machine` job, then `all` planned against it,
layered with tests/slurm/profile-ci (status polling without an accounting database).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import MACHINE_SLURM_CONF, REPO, dag_jobs, load_config, snakemake

pytestmark = pytest.mark.slurm

SLURM_DIR = REPO / "tests" / "slurm"
PARTITION = "numatest"
PROFILES = (
    "--profile",
    str(REPO / "profiles" / "slurm"),
    "--profile",
    str(SLURM_DIR / "profile-ci"),
)
# Two cells, one peak (same placement and threads) in its windows and the light jobs: a few
# minutes on 2 CPUs, since every benchmark job holds the only node exclusively.
CONFIG = {
    **load_config("tiny"),
    "batch_sizes": [1, 2],
    "optimizations": ["none"],
    "threads": [1],
    "placements": ["sequential"],
}


def _as_root() -> list[str] | None:
    """Command prefix that runs as root: [] when we are root, sudo -n if allowed, else None."""
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"]).returncode == 0:
        return ["sudo", "-n"]
    return None


@pytest.fixture(scope="module")  # stopped, and SLURM_CONF restored, after this module
def slurm_cluster(tmp_path_factory):
    # The machine's Slurm config, not conftest's controller-less one, from the cluster's start
    # to its stop: its daemons, our scontrol calls and the jobs (which inherit it) all read it.
    with pytest.MonkeyPatch.context() as mp:
        if MACHINE_SLURM_CONF is None:
            mp.delenv("SLURM_CONF", raising=False)
        else:
            mp.setenv("SLURM_CONF", MACHINE_SLURM_CONF)
        yield from _slurm_cluster(tmp_path_factory.mktemp("slurm-daemon-logs"))


def _slurm_cluster(logs: Path):
    root = _as_root()
    if root is None:
        why = "starting a test Slurm needs root or passwordless sudo (tests/slurm/start-slurm)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(why)  # under CI a missing prerequisite fails (docs/development.md)
        pytest.skip(why)
    # stop-slurm undoes whatever start-slurm got to (packages, config, daemons, folders), so it
    # runs after any start, one that failed or was interrupted included; the daemons' logs are
    # copied into ``logs`` first (pytest keeps its folders of a run that failed).
    try:
        start = subprocess.run(
            [*root, "env", f"PARTITION={PARTITION}", str(SLURM_DIR / "start-slurm")],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if start.returncode == 3:
            pytest.skip(f"this machine runs its own Slurm; not touching it: {start.stderr.strip()}")
        if start.returncode != 0:
            pytest.fail(f"tests/slurm/start-slurm failed ({start.returncode}):\n{start.stderr}")
        yield PARTITION
    finally:
        subprocess.run(
            [*root, str(SLURM_DIR / "stop-slurm"), "--logs-to", str(logs)], timeout=300, check=False
        )


def scontrol(kind: str, name: str) -> dict[str, str]:
    """`scontrol show <kind> <name>` as {key: value} ({} once Slurm has forgotten a job)."""
    proc = subprocess.run(
        ["scontrol", "-o", "show", kind, name], capture_output=True, text=True, check=False
    )
    return dict(re.findall(r"(\S+?)=(\S*)", proc.stdout)) if proc.returncode == 0 else {}


def _slurm_logs(workdir: Path) -> str:
    logs = sorted((workdir / ".snakemake" / "slurm_logs").rglob("*.log"))
    return "\n".join(f"--- {p} ---\n{p.read_text(errors='replace')[-1500:]}" for p in logs)


@pytest.fixture(scope="module")
def slurm_run(slurm_cluster, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("slurm")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NUMA_SLURM_PARTITION", slurm_cluster)

        def run(*args, check=True):
            proc = snakemake(workdir, CONFIG, *PROFILES, *args, check=False, timeout=900)
            if check and proc.returncode != 0:
                raise AssertionError(
                    f"snakemake {' '.join(args)} failed ({proc.returncode})\n"
                    f"--- stderr ---\n{proc.stderr[-6000:]}\n{_slurm_logs(workdir)}"
                )
            return proc

        # 1. Without a topology file the run refuses to submit benchmark jobs.
        refused = run("all", check=False)
        # 2. The README's two steps: the compute node's topology, then the grid planned on it.
        capture = run("machine")
        topology = workdir / "results" / "machine.json"
        grid = run("all", "--config", f"topology={topology}")
        # 3. Everything is up to date afterwards: the node planned nothing the submit host would
        #    plan differently (a different plan would re-run the cells).
        again = run("--dag", "dot", "all", "--config", f"topology={topology}")
    return {
        "workdir": workdir,
        "results": workdir / "results",
        "refused": refused,
        "capture": capture,
        "grid": grid,
        "again": again,
    }


def _cells(results: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((results / "cells").rglob("*.json"))]


def test_refuses_to_plan_a_cluster_grid_against_the_submit_host(slurm_run):
    refused = slurm_run["refused"]
    assert refused.returncode != 0
    assert "need the compute nodes' topology" in refused.stderr
    assert "has been submitted with SLURM jobid" not in refused.stderr


def test_topology_is_captured_by_a_slurm_job(slurm_run):
    machine = json.loads((slurm_run["results"] / "machine.json").read_text())
    assert machine["slurm"]["SLURM_JOB_ID"].isdigit()
    assert machine["slurm"]["SLURM_JOB_PARTITION"] == PARTITION
    assert machine["summary"]["logical_cpus"] == os.cpu_count()


def test_every_cell_ran_in_its_own_slurm_job_on_the_node(slurm_run):
    cells = _cells(slurm_run["results"])
    assert len(cells) == 2
    ids = set()
    for cell in cells:
        assert cell["status"] == "ok", cell.get("failure")
        slurm = cell["provenance"]["slurm"]
        assert slurm["SLURM_JOB_ID"].isdigit()
        assert slurm["SLURM_JOB_PARTITION"] == PARTITION
        assert slurm["SLURMD_NODENAME"] == socket.gethostname().split(".")[0]
        # The job step spans the whole node, so numactl may bind to any CPU of it.
        assert cell["provenance"]["env"]["SLURM_CPUS_PER_TASK"] == str(os.cpu_count())
        ids.add(slurm["SLURM_JOB_ID"])
    assert len(ids) == len(cells)
    table = pd.read_csv(slurm_run["results"] / "tables" / "cells.csv", dtype={"slurm_job_id": str})
    assert set(table["slurm_job_id"]) == ids


def test_benchmark_jobs_are_exclusive_with_all_memory_and_light_jobs_are_shared(slurm_run):
    node = scontrol("node", socket.gethostname().split(".")[0])
    whole = {"cpu": node["CPUTot"], "mem": f"{node['RealMemory']}M"}
    seen = 0
    for cell in _cells(slurm_run["results"]):
        job = scontrol("job", cell["provenance"]["slurm"]["SLURM_JOB_ID"])
        if not job:  # forgotten after MinJobAge (300 s)
            continue
        seen += 1
        assert job["OverSubscribe"] == "NO", job  # --exclusive
        tres = dict(kv.split("=") for kv in job["TRES"].split(","))
        assert {k: tres[k] for k in whole} == whole, job  # all CPUs and all memory
        # The time limit comes from the cell's budget (3 x max_seconds_per_cell + 120 s, plus
        # the job's start-up), not from the partition's (here: infinite) limit.
        hours, minutes, _ = map(int, job["TimeLimit"].split(":"))
        assert (3 * CONFIG["max_seconds_per_cell"] + 120) / 60 < hours * 60 + minutes <= 15, job
    assert seen, "Slurm forgot every cell job before the check"
    # Light jobs: their Slurm logs are kept by the CI profile and named by job id.
    logs = sorted((slurm_run["workdir"] / ".snakemake/slurm_logs/rule_tables").rglob("*.log"))
    assert logs
    job = scontrol("job", logs[-1].stem)
    if job:
        assert job["OverSubscribe"] == "OK", job
        assert job["TRES"].startswith("cpu=1,mem=4000M"), job


def test_cells_never_overlapped(slurm_run):
    spans = sorted(
        (c["provenance"]["launcher_started_at"], c["provenance"]["finished_at"])
        for c in _cells(slurm_run["results"])
    )
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end <= start


def test_tables_and_summary_were_built(slurm_run):
    results = slurm_run["results"]
    for name in ("cells.csv", "samples.csv", "skipped.csv"):
        assert (results / "tables" / name).stat().st_size > 0
    assert "2 measured, 0 failed" in (results / "summary.txt").read_text()


def test_nothing_left_to_do_after_the_cluster_run(slurm_run):
    # Every target of `all` (tables, plots and report included, whatever the workflow has)
    # exists and is up to date as seen from the submit host.
    again = slurm_run["again"]
    # (`--dag` draws every job of `all`, those that need not run dashed: none may be solid)
    assert dag_jobs(again.stdout) == {}, again.stdout + again.stderr


def test_a_stale_slurm_config_makes_snakemake_wait_and_the_entry_point_does_not(
    slurm_cluster, tmp_path, monkeypatch
):
    """With Slurm's real client installed, a slurm.conf whose controller does not answer makes
    every start of a plain Snakemake wait (its Slurm plugin's `scontrol show config`), and the
    workflow says so in one line; the entry point (`make run`'s) finds it first, reads the
    refusing config instead and says so once."""
    with socket.socket() as s:  # a port where nothing listens
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        f"ClusterName=stale\nSlurmctldHost=gone(127.0.0.1)\nSlurmctldPort={port}\n"
        "MessageTimeout=5\nNodeName=gone CPUs=1\nPartitionName=p Nodes=gone\n"
    )
    env = {**os.environ, "SLURM_CONF": str(conf)}

    def timed(cmd):
        start = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
        return proc, time.monotonic() - start

    python = Path(sys.executable)
    plain, plain_s = timed([str(python.parent / "snakemake"), "--version"])
    entry, entry_s = timed([str(python), "workflow/scripts/check_config.py", "--run", "--version"])
    assert plain.returncode == entry.returncode == 0, (plain, entry)
    assert entry.stdout == plain.stdout
    assert plain_s - entry_s > 2.5, (plain_s, entry_s)  # MessageTimeout=5 of retries
    (note,) = entry.stderr.splitlines()
    assert note.startswith(f"note: the Slurm config {conf} names the controller 127.0.0.1:")
    assert "this run reads" in note
    # A plain Snakemake reading the workflow waits, then says why in one line.
    monkeypatch.setenv("SLURM_CONF", str(conf))
    dry = snakemake(tmp_path / "dry", CONFIG, "-n", "all", check=False, timeout=300)
    notes = [line for line in dry.stderr.splitlines() if line.startswith("note: the Slurm")]
    assert dry.returncode == 0 and len(notes) == 1, dry.stderr[-2000:]
    assert f"export SLURM_CONF={REPO}/tools/slurm-no-controller.conf" in notes[0]
