"""Interruption and resume with real runs: kill -9 of Snakemake or of a running cell, a run
killed between a cell's write and Snakemake's bookkeeping, Ctrl-C, two runs at once; and what a
re-run re-executes after a complete run (nothing; only plots and report after a plot script
edit; the cells after a measurement setting changed; only new cells after a grid grows).

The kill tests build the tables (``tables/cells.csv``) rather than ``all``: whether a cell
re-runs is decided per cell output, the plots and the report add only time."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import robust
from conftest import REPO, load_config

from numa_effects.plan import grid as grid_mod
from numa_effects.plan import peaks, topology

pytestmark = pytest.mark.integration

(ALLOC,) = load_config("one-cell")["allocators"]  # the allocator of every cell's path
TWO_NODES = REPO / "tests" / "fixtures" / "topology" / "2x16-nosmt-alternating.lscpu-p.txt"


def grid(results: Path, **over) -> dict:
    """Three cells of ~2 s of timing each: long enough to be caught running."""
    return {
        **load_config("one-cell"),
        "results": str(results),
        "batch_sizes": [1, 2, 3],
        "fixed_iterations": 100_000,
        "max_seconds_per_cell": 2,
        **over,
    }


def cell_jsons(results: Path) -> list[Path]:
    cells = results / "cells"
    if not cells.exists():
        return []
    # replicate results r<k>.json, not the child's result.json in a cell's temp folder
    return sorted(p for p in cells.rglob("r*.json") if re.fullmatch(r"r\d+\.json", p.name))


def result_of(spec: str) -> Path:
    return Path(spec.replace("/logs/cells/", "/cells/").replace(".spec.json", ".json"))


def one_done_one_running(results: Path):
    done, running = cell_jsons(results), robust.cell_processes(results / "logs" / "cells")
    return (done, running) if done and running else None


def assert_no_partial_results(results: Path):
    for p in results.rglob("*.json"):
        json.loads(p.read_text())  # every JSON there is complete
    assert not [p for p in results.rglob(".r*")], "temp files of a cell left behind"


def resume_and_check(work: Path, cfg: dict, target: str, done: dict[Path, int]):
    """Run again: only the cells without a result run, finished ones are untouched."""
    since = time.time_ns()
    rc, out = robust.run(work, cfg, "--cores", "1", target, log="resume.log")
    assert rc == 0, out[-5000:]
    assert len(robust.written_since(cell_jsons(Path(cfg["results"])), since)) == 3 - len(done)
    for path, mtime in done.items():
        assert path.stat().st_mtime_ns == mtime, f"{path} was re-run"
    cells = pd.read_csv(Path(cfg["results"]) / "tables" / "cells.csv")
    assert list(cells["status"]) == ["ok"] * 3
    return out


def test_kill_9_of_snakemake_resumes_without_rerunning_finished_cells(tmp_path):
    results = tmp_path / "results"
    cfg, target = grid(results), str(results / "tables" / "cells.csv")
    proc = robust.start(tmp_path, cfg, "--cores", "1", target, env=robust.own_tmp(tmp_path))
    done, running = robust.wait_for(
        lambda: one_done_one_running(results), 900, what="a finished and a running cell"
    )
    proc.kill()  # kill -9 of the Snakemake process
    proc.wait()
    # The running cell dies with it: nothing keeps measuring, nothing writes a result later.
    robust.wait_for(
        lambda: not any(robust.alive(p) for p in running.values()), 15, what="the cell to die"
    )
    for spec in running:
        assert not result_of(spec).exists()
    assert_no_partial_results(results)
    mtimes = {p: p.stat().st_mtime_ns for p in done}
    out = resume_and_check(tmp_path, cfg, target, mtimes)
    assert "stale Snakemake lock file(s)" in out  # the dead run's locks did not block it


def test_kill_9_of_a_running_cell_reruns_it_from_scratch(tmp_path):
    results = tmp_path / "results"
    cfg, target = grid(results), str(results / "tables" / "cells.csv")
    proc = robust.start(tmp_path, cfg, "--cores", "1", target)
    _, running = robust.wait_for(
        lambda: one_done_one_running(results), 900, what="a finished and a running cell"
    )
    for pid in running.values():
        os.kill(pid, signal.SIGKILL)
    rc, out = robust.finish(proc)
    # An interruption, not a failure of the cell: no result, the job fails, the run stops.
    assert rc != 0, f"killed {running}, yet the run succeeded:\n{out[-4000:]}"
    assert "the cell process was killed by SIGKILL from outside" in out
    for spec in running:
        assert not result_of(spec).exists()
    assert_no_partial_results(results)
    mtimes = {p: p.stat().st_mtime_ns for p in cell_jsons(results)}
    resume_and_check(tmp_path, cfg, target, mtimes)


def test_a_result_written_but_not_recorded_is_rerun(tmp_path):
    """Snakemake frozen (SIGSTOP) while a cell finishes, then killed: the cell's JSON exists
    but Snakemake never recorded the job as complete. The default profile's rerun-incomplete
    re-runs it from scratch; without that profile Snakemake would refuse to go on."""
    results = tmp_path / "results"
    cfg, target = grid(results), str(results / "tables" / "cells.csv")
    proc = robust.start(tmp_path, cfg, "--cores", "1", target, env=robust.own_tmp(tmp_path))
    running = robust.wait_for(
        lambda: robust.cell_processes(results / "logs" / "cells"), 900, what="a cell"
    )
    os.kill(proc.pid, signal.SIGSTOP)
    victim = result_of(next(iter(running)))
    robust.wait_for(victim.exists, 120, what="the frozen run's cell to write its result")
    robust.wait_for(
        lambda: not any(robust.alive(p) for p in running.values()), 30, what="the cell to end"
    )
    os.kill(proc.pid, signal.SIGKILL)
    os.kill(proc.pid, signal.SIGCONT)
    proc.wait()
    first = json.loads(victim.read_text())["provenance"]["launcher_started_at"]
    rc, out = robust.run(
        tmp_path, cfg, "-n", target, "--workflow-profile", "none", log="no-profile.log"
    )
    assert rc != 0 and "IncompleteFilesException" in out, out[-3000:]
    done = {p: p.stat().st_mtime_ns for p in cell_jsons(results) if p != victim}
    since = time.time_ns()
    rc, out = robust.run(tmp_path, cfg, "--cores", "1", target, log="resume.log")
    assert rc == 0, out[-5000:]
    assert len(robust.written_since(cell_jsons(results), since)) == 3 - len(done)
    assert json.loads(victim.read_text())["provenance"]["launcher_started_at"] != first
    for path, mtime in done.items():
        assert path.stat().st_mtime_ns == mtime


def test_two_runs_at_once_are_refused_and_ctrl_c_leaves_no_cell_running(tmp_path):
    results = tmp_path / "results"
    cfg = grid(results, max_seconds_per_cell=30)
    target = str(results / "tables" / "cells.csv")
    first = robust.start(tmp_path, cfg, "--cores", "1", target, new_session=True)
    running = robust.wait_for(
        lambda: robust.cell_processes(results / "logs" / "cells"), 900, what="a cell"
    )
    rc, out = robust.run(tmp_path, cfg, "--cores", "1", target, log="second.log")
    assert rc != 0
    assert "LockException" in out and "--unlock" in out
    assert "stale" not in out  # a live run's locks are never removed
    assert first.poll() is None, "the first run must go on"
    os.killpg(first.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the foreground group
    first.wait(timeout=120)
    robust.wait_for(
        lambda: not any(robust.alive(p) for p in running.values()), 30, what="the cell to die"
    )
    assert not robust.cell_processes(results)
    for spec in running:
        assert not result_of(spec).exists()  # stopped mid-measurement: no result at all
    assert "cell interrupted (the launcher received SIGINT)" in first.log_path.read_text()


# -- what a re-run re-executes --------------------------------------------------------------------
@pytest.fixture(scope="module")
def complete(tmp_path_factory):
    """A complete `all` run of a private copy of the workflow (so a script can be edited)."""
    root = tmp_path_factory.mktemp("complete")
    snakefile = robust.copy_workflow(root / "wf")
    work = root / "run"
    cfg = {**load_config("one-cell"), "batch_sizes": [1, 2], "results": str(work / "results")}
    rc, out = robust.run(work, cfg, "--cores", "2", "all", snakefile=snakefile, timeout=1800)
    assert rc == 0, out[-5000:]
    return snakefile, work, cfg


def planned(complete, cfg=None, log="dag.log") -> Counter:
    snakefile, work, base = complete
    return robust.planned(work, cfg or base, "all", snakefile=snakefile, log=log)


def test_rerun_after_a_complete_run_executes_nothing(complete):
    snakefile, work, cfg = complete
    outputs = [p for p in (work / "results").rglob("*") if p.is_file()]
    since = time.time_ns()
    rc, out = robust.run(work, cfg, "--cores", "1", "all", snakefile=snakefile, log="again.log")
    assert rc == 0
    assert "Nothing to be done" in out
    assert robust.written_since(outputs, since) == []


def planned_after_editing(complete, script: Path, addition: str, docstring=False) -> Counter:
    """Jobs a run would execute after appending ``addition`` to ``script`` (``docstring``: to
    its module docstring); then the script is put back as it was."""
    original, st = script.read_text(), script.stat()
    if docstring:
        script.write_text(original.replace('"""', '"""' + addition, 1))
    else:
        script.write_text(original + addition)
    try:
        return planned(complete)
    finally:
        script.write_text(original)
        os.utime(script, ns=(st.st_atime_ns, st.st_mtime_ns))


SCRIPTS = "workflow/scripts"


def test_a_comment_or_a_newer_file_reruns_nothing(complete):
    """What "the code changed" means is its content (numa_effects.plan.code): a comment, a
    docstring or a file's modification time (a clone, a checkout, touch) re-runs nothing."""
    root = complete[0].parent
    assert planned_after_editing(complete, root / SCRIPTS / "plot_figure.py", "\n# x\n") == {}
    cell = root / SCRIPTS / "numa_effects/measure/cell.py"
    assert planned_after_editing(complete, cell, "An edit. ", docstring=True) == {}
    os.utime(root / SCRIPTS / "run_cell.py")  # newer than every result
    assert planned(complete) == {}


def test_editing_the_report_code_reruns_only_plots_and_report(complete):
    script = complete[0].parent / SCRIPTS / "plot_figure.py"
    jobs = planned_after_editing(complete, script, "\nEDITED_BY_TEST = 1\n")
    assert jobs.pop("report_page") == 1
    assert jobs.pop("all") == 1
    assert jobs and all(rule.startswith("plot_") for rule in jobs), jobs
    assert planned(complete) == {}


def test_editing_the_table_code_reruns_the_tables_not_the_cells(complete):
    script = complete[0].parent / SCRIPTS / "write_summary.py"
    jobs = planned_after_editing(complete, script, "\nEDITED_BY_TEST = 1\n")
    assert jobs["summary"] == 1 and jobs["tables"] == 1
    assert "cell" not in jobs and "machine" not in jobs


def test_editing_the_measuring_code_remeasures_every_cell(complete):
    script = complete[0].parent / SCRIPTS / "numa_effects/measure/runner.py"
    jobs = planned_after_editing(complete, script, "\nEDITED_BY_TEST = 1\n")
    assert jobs["cell"] == 2 and jobs["tables"] == 1


def test_changing_max_seconds_per_cell_reruns_every_cell(complete):
    _, _, cfg = complete
    jobs = planned(complete, cfg={**cfg, "max_seconds_per_cell": 3})
    assert jobs["cell"] == 2
    assert "peak" not in jobs and "flops" not in jobs


def test_adding_a_batch_size_runs_only_its_cells(complete):
    _, _, cfg = complete
    jobs = planned(complete, cfg={**cfg, "batch_sizes": [1, 2, 4]})
    assert jobs["cell"] == 1
    assert "peak" not in jobs and "machine" not in jobs


def test_adding_a_thread_count_runs_only_its_cells_and_peak(complete):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")
    _, _, cfg = complete
    jobs = planned(complete, cfg={**cfg, "threads": [1, 2]})
    assert jobs["cell"] == 2  # t2 x 2 batch sizes
    assert jobs["peak"] == peaks.WINDOWS  # t2's peak, each of its windows


def test_adding_a_placement_runs_only_its_cells(tmp_path):
    """Planned against a 2-node topology file: adding remote adds exactly its cells; adding
    interleave, which binds like sequential at one thread there (``plan.binding``), adds none,
    only the tables (the dry run is enough; on this 1-node machine remote's cells would fail
    the placement re-check)."""
    results = tmp_path / "results"
    cfg = {**load_config("one-cell"), "batch_sizes": [1, 2], "results": str(results)}
    cfg["topology"] = str(TWO_NODES)
    target = str(results / "tables" / "cells.csv")
    rc, out = robust.run(tmp_path, cfg, "--cores", "2", target)
    assert rc == 0, out[-5000:]
    assert (pd.read_csv(target)["status"] == "ok").all()  # sequential t1 = CPU 0 here too
    more = {**cfg, "placements": ["sequential", "remote"]}
    jobs = robust.planned(tmp_path, more, target)
    assert jobs["cell"] == 2  # remote x 2 batch sizes, nothing else re-measured
    rc, out = robust.run(tmp_path, more, "-n", target, log="dry.log")
    assert rc == 0, out[-3000:]
    outputs = re.findall(r"output: (\S+/cells/\S+\.json)", out)
    assert sorted(Path(p).relative_to(results / "cells").as_posix() for p in outputs) == [
        f"resnet18/none/remote/t1/bs1/{ALLOC}/r1.json",
        f"resnet18/none/remote/t1/bs2/{ALLOC}/r1.json",
    ]
    same = {**cfg, "placements": ["sequential", "interleave"]}
    g = grid_mod.expand(same, topology.load(TWO_NODES))
    assert set(g.cells) == set(grid_mod.expand(cfg, topology.load(TWO_NODES)).cells) and g.same
    jobs = robust.planned(tmp_path, same, target)
    assert "cell" not in jobs and jobs["tables"] == 1, jobs


# -- the same without Snakemake's metadata, and values spelled differently -------------
def dry_run(snakefile: Path, work: Path, cfg: dict, log: str) -> tuple[Counter, str]:
    jobs = robust.planned(work, cfg, "all", snakefile=snakefile, log=f"dag-{log}")
    rc, out = robust.run(work, cfg, "-n", "all", snakefile=snakefile, log=log)
    assert rc == 0, out[-3000:]
    return jobs, out


def test_a_grid_change_is_honoured_in_a_fresh_checkout_with_copied_results(complete, tmp_path):
    """Results copied into a fresh checkout (modification times kept, no .snakemake/): the
    same grid runs nothing, one more batch size runs exactly its cell (then the aggregation),
    one batch size fewer re-runs the aggregation only, so the tables drop it."""
    _, work, cfg = complete
    snakefile = robust.copy_workflow(tmp_path / "checkout")
    fresh = tmp_path / "run"
    shutil.copytree(work / "results", fresh / "results")  # copy2: mtimes kept
    assert not (fresh / ".snakemake").exists()
    same = {**cfg, "results": str(fresh / "results")}
    assert dry_run(snakefile, fresh, same, "same.log")[0] == {}
    jobs, out = dry_run(snakefile, fresh, {**same, "batch_sizes": [1, 2, 4]}, "more.log")
    assert jobs["cell"] == 1 and jobs["tables"] == 1, jobs
    cells = re.findall(r"output: (\S+/cells/\S+\.json)", out)
    assert [Path(p).relative_to(fresh / "results" / "cells").as_posix() for p in cells] == [
        f"resnet18/none/sequential/t1/bs4/{ALLOC}/r1.json"
    ]
    jobs, _ = dry_run(snakefile, fresh, {**same, "batch_sizes": [1]}, "fewer.log")
    assert "cell" not in jobs and jobs["tables"] == 1, jobs


def test_an_integral_float_changes_nothing(complete):
    _, _, cfg = complete
    assert cfg.get("seed", 0) == 0 and "seed" not in cfg  # the run used the default, 0
    assert planned(complete, cfg={**cfg, "seed": 0.0, "image_size": float(cfg["image_size"])}) == {}


def test_another_spelling_of_the_results_folder_changes_nothing(complete):
    _, work, cfg = complete
    for spelling in (f"{work}/results/", f"{work}/./results", f"{work}//results"):
        assert planned(complete, cfg={**cfg, "results": spelling}) == {}, spelling


def test_a_cells_unexeced_child_is_not_taken_for_the_cell(tmp_path):
    """A cell's library may fork or vfork a helper (torch's import runs `ldconfig -p`); until
    it execs, the child shows the cell's command line. The kill tests must kill the cell, not
    that child (CI, 2026-12-03: a killed helper left the cell running to a clean result)."""
    spec = str(tmp_path / "r1.spec.json")
    code = "import os, time\nos.fork()\ntime.sleep(60)"  # parent and child both sleep
    argv = [sys.executable, "-c", code, "numa_effects.measure.cell", "--spec", spec]

    def cell_and_child():
        pids = [int(q.name) for q in Path("/proc").iterdir() if q.name.isdigit()]
        same = sorted(p for p in pids if robust.cmdline(p)[: len(argv)] == argv)
        return same if len(same) == 2 else None

    cell = subprocess.Popen(argv)
    try:
        pids = robust.wait_for(cell_and_child, 30, what="the cell and its forked child")
        child = next(p for p in pids if p != cell.pid)
        assert robust.parent(child) == cell.pid
        assert robust.cell_processes(tmp_path) == {spec: cell.pid}
    finally:
        subprocess.run(["pkill", "-KILL", "-P", str(cell.pid)], check=False)
        cell.kill()
        cell.wait()
