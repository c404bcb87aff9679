"""Nothing measured is ever lost, on a real ``git clone``: a change to the measuring code
re-measures every record (by design); a dry run before says how many and why, with an estimate;
the run keeps every previous record in results/history/<old digest>/ before Snakemake deletes
it, the tables read the new records only, and the previous ones compare with the new
(numa_effects.tables.history). A results folder from another machine is refused by a run that
would measure into it, and nothing in it changes."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from conftest import FIXTURES, RERUN_GRID, clone_snakemake

from numa_effects.plan import paths
from numa_effects.plan import topology as topology_mod
from numa_effects.tables import history, tidy

pytestmark = pytest.mark.integration
QEMU = FIXTURES / "topology" / "qemu-2node-2x2x2-smt-adjacent"


GRID = RERUN_GRID  # the clone's grid (conftest.finished_clone runs it once per session)
snakemake = clone_snakemake


def records(results: Path) -> dict[str, bytes]:
    return {rel: (results / rel).read_bytes() for rel in history.measured_files(results)}


def change_the_measuring_code(checkout: Path) -> None:
    """An edit that changes what the measuring code is (its syntax tree), not what it does."""
    timing = checkout / "workflow/scripts/numa_effects/measure/timing.py"
    timing.write_text(timing.read_text() + "\nEDITED_BY_THE_HISTORY_TEST = 1\n")


def tree(folder: Path) -> list[tuple]:
    """Every path below ``folder`` with its size, modification time and inode."""
    return sorted(
        (str(p.relative_to(folder)), p.lstat().st_size, p.lstat().st_mtime_ns, p.lstat().st_ino)
        for p in folder.rglob("*")
    )


@pytest.fixture
def finished(finished_clone, tmp_path) -> Path:
    """The session's finished clone, copied whole (``cp -a``) for a test that changes it."""
    copy = tmp_path / "a"
    subprocess.run(["cp", "-a", str(finished_clone), str(copy)], check=True)
    return copy


def test_a_code_change_keeps_every_previous_record_and_compares_before_with_after(finished):
    results = finished / "results"
    before = records(results)
    assert len(before) == 3  # sequential and n0m0 cells, the n0m0 memory probe
    (old,) = {json.loads(b)["code"] for b in before.values()}
    change_the_measuring_code(finished)

    # what the check needs of a run (the figures and page are not): every record, the tables
    targets = [f"results/{p}" for p in (paths.SUMMARY, paths.table("memory_matrix"))]
    dry = snakemake(finished, GRID, "-n", *targets).stderr
    m = re.search(
        r"a run would measure (\d+) job\(s\) \(2 cell, 1 memory\): (\d+) code changed; "
        r"about (\d+) s \((\d+) timed by their previous record",
        dry,
    )
    assert m, dry[-3000:]
    assert int(m.group(1)) == int(m.group(2)) == int(m.group(4)) == len(before)
    assert int(m.group(3)) > 0
    assert not (results / history.HISTORY).exists()  # a dry run keeps nothing

    run = snakemake(finished, GRID, "--cores", "1", *targets).stderr
    assert f"the 3 this run replaces are in results/history/{old}/" in run
    after = records(results)
    assert set(after) == set(before)
    for rel, content in before.items():
        assert (results / history.HISTORY / old / rel).read_bytes() == content, rel
        assert json.loads(after[rel])["code"] != old, rel  # measured again by the new code
    # the tables read the new records only
    cells = tidy.read(results / paths.table("cells"))
    assert len(cells) == 2 and all(p.startswith("results/cells/") for p in cells["cell_json"])
    new_starts = {json.loads(after[r])["provenance"]["started_at"] for r in after if "cells/" in r}
    assert set(cells["started_at"]) <= new_starts

    summary = (results / paths.SUMMARY).read_text()
    assert f"previous records (replaced by a re-run): results/history/{old}/" in summary
    command = history.compare_command("results", old)
    assert command in summary
    # before vs after: the comparison's tables from the command the summary gives
    config = re.search(r"--config (.*)$", command).group(1)
    target = "results-compare/compare/before-vs-after/tables/compare.csv"
    args = ["--cores", "1", target, "--config", *_split(config)]
    snakemake(finished, GRID, *args)
    compared = tidy.read(finished / target)
    assert len(compared) == 2 and compared["ratio"].notna().all()


def _split(config: str) -> list[str]:
    """The --config items of a command line as the shell splits them (single quotes only)."""
    return [p.strip("'") for p in re.findall(r"'[^']*'|\S+", config)]


def test_another_machines_results_folder_is_refused_and_left_as_it_was(finished_clone, tmp_path):
    guest = topology_mod.from_sysfs(QEMU)
    if history.same_machine(topology_mod.current(), guest):
        pytest.skip("this machine is the folder's")
    moved = tmp_path / "moved"
    subprocess.run(["cp", "-a", str(finished_clone), str(moved)], check=True)
    machine = moved / "results" / paths.MACHINE
    data = json.loads(machine.read_text())
    data.update(topology=guest.to_dict(), summary=guest.summary(), host={"hostname": "elsewhere"})
    machine.write_text(json.dumps(data))
    change_the_measuring_code(moved)
    state = tree(moved / "results")

    dry = snakemake(moved, GRID, "-n", "all").stderr
    assert re.search(r"records another machine \(QEMU.*a run would measure \d+ job", dry), dry
    proc = snakemake(moved, GRID, "--cores", "1", "all", check=False)
    assert proc.returncode == 1
    refusals = [line for line in proc.stderr.splitlines() if "is refused" in line]
    assert len(refusals) == 1 and "Traceback" not in proc.stderr
    assert str(Path("results") / paths.MACHINE) in refusals[0]
    assert tree(moved / "results") == state


def test_a_results_folder_of_another_version_is_one_line_and_left_as_it_was(
    finished_clone, tmp_path
):
    """An older cells.csv (no allocator column, as before that axis): a dry run says what a run
    would meet, the run is refused in one line naming the table and what to do, and nothing in
    the folder changes; doing what the line says rebuilds the tables and measures nothing. A
    record of a newer format is named the same way (tests/test_formats.py: every case)."""
    older = tmp_path / "older"
    subprocess.run(["cp", "-a", str(finished_clone), str(older)], check=True)
    results = older / "results"
    table = results / paths.table("cells")
    cells = tidy.read(table)
    cells.drop(columns=["allocator"]).to_csv(table, index=False)
    kept = records(results)
    state = tree(results)

    dry = snakemake(older, GRID, "-n", "all").stderr
    assert "(no allocator column); a run would be refused" in dry, dry
    proc = snakemake(older, GRID, "--cores", "1", "all", check=False)
    lines = [line for line in proc.stderr.splitlines() if "written by another version" in line]
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert len(lines) == 1 and str(Path("results") / paths.table("cells")) in lines[0]
    assert "--forcerun tables" in lines[0] and tree(results) == state

    snakemake(older, GRID, "--cores", "1", "all", "--forcerun", "tables")
    assert "allocator" in tidy.read(table).columns and records(results) == kept

    newer = results / sorted(kept)[0]
    data = json.loads(newer.read_bytes())
    newer.write_text(json.dumps({**data, "format": 99}))
    dry = snakemake(older, GRID, "-n", "all").stderr
    assert f"{newer.relative_to(older)}: result format 99 is newer" in dry, dry
