"""The check of what the tests leave on this machine (tests/machine_state.py): every kind of
leftover is one line, and a machine as it was is silent. The snapshots compared here are this
machine's own, with one leftover added each time (the real ones need the Slurm tests: the
session check of tests/conftest.py runs around them)."""

from __future__ import annotations

import copy
import subprocess
import sys

import machine_state
from conftest import REPO, machine_env


def test_this_machine_now_is_as_it_was():
    before = machine_state.snapshot(machine_env())
    assert machine_state.compare(before, machine_state.snapshot(machine_env())) == ([], [])
    assert set(before) == {"paths", "processes", "packages", "stale_slurm", "tmp"}


def left(change) -> list[str]:
    before = machine_state.snapshot(machine_env())
    after = copy.deepcopy(before)
    change(after)
    lines, _ = machine_state.compare(before, after)
    assert len(lines) == 1, lines
    return lines


def test_each_leftover_is_one_line():
    conf = "/etc/slurm/slurm.conf"

    def config(s):
        s["paths"][conf] = "file 0123"

    assert left(config) == [f"{conf} was not there before the tests (file 0123)"]

    def daemon(s):
        s["processes"]["99999999"] = "slurmctld"

    assert left(daemon) == ["slurmctld (pid 99999999) started during the tests and still runs"]

    def package(s):
        s["packages"] = [*s["packages"], "zz-slurm-client"]

    assert "zz-slurm-client" in left(package)[0]

    def stale(s):
        s["stale_slurm"] = "note: the Slurm config /etc/slurm/slurm.conf names ..."

    assert left(stale)[0].startswith("a Slurm config now makes Snakemake wait: note:")


def test_a_slower_snakemake_start_is_a_leftover_and_noise_is_not():
    base = machine_state.snapshot(machine_env())
    before = {**base, "snakemake_s": 1.2}
    assert machine_state.compare(before, {**base, "snakemake_s": 3.1}) == ([], [])
    lines, _ = machine_state.compare(before, {**base, "snakemake_s": 10.1})
    assert lines == ["`snakemake --version` takes 10.1 s, 1.2 s before the tests"]


def test_new_tmp_entries_are_notes(tmp_path):
    base = machine_state.snapshot(machine_env())
    after = {**base, "tmp": [*base["tmp"], "torchinductor_x", "pytest-of-someone"]}
    notes = ["/tmp/torchinductor_x was created during the tests"]
    assert machine_state.compare(base, after) == ([], notes)


def test_the_command_line_as_ci_runs_it(tmp_path):
    """snapshot, then compare: silent and 0 on an unchanged machine; 1 and the line when
    `snakemake --version` became slower (a stand-in that sleeps past the margin)."""
    env = {**machine_env(), "PYTHONPATH": str(REPO / "workflow" / "scripts")}
    state = tmp_path / "before.json"
    slow = tmp_path / "slow-snakemake"
    slow.write_text(f"#!/bin/sh\nsleep {machine_state.SLOWER_MARGIN_S + 0.1}\n")
    slow.chmod(0o755)

    def run(action, snakemake):
        return subprocess.run(
            [
                sys.executable,
                str(REPO / "tests" / "machine_state.py"),
                action,
                str(state),
                "--snakemake",
                snakemake,
            ],
            capture_output=True,
            text=True,
            env=env,
        )

    assert run("snapshot", "/bin/true").returncode == 0
    same = run("compare", "/bin/true")
    assert same.returncode == 0 and same.stdout.startswith("machine state: as before"), same
    slower = run("compare", str(slow))
    assert slower.returncode == 1, slower
    assert "left behind: `snakemake --version` takes 2." in slower.stderr
