"""Nothing measured is ever lost (numa_effects.tables.history) and a dry run says what a run
would measure (numa_effects.plan.remeasure): on results folders made of real cell records
(tests/fixtures/cells_replicates, a packing run of tests/fixtures/packing) and machine.json files
of captured topologies. The whole path on a real clone: tests/test_rerun_history.py."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from test_plan import ONE_NODE, TWO_NODES, make

from numa_effects.compare import runs as compare_runs
from numa_effects.plan import cost, grid, paths, remeasure
from numa_effects.plan import topology as topology_mod
from numa_effects.tables import history

REPO = Path(__file__).resolve().parents[1]
FIX = Path(__file__).parent / "fixtures"
REPLICATES = sorted((FIX / "cells_replicates").glob("none_sequential_t1_bs4_*.json"))
PACKING_RUN = FIX / "packing" / "resnet18" / "none" / "c2" / "bs1.json"
QEMU = FIX / "topology" / "qemu-2node-2x2x2-smt-adjacent"


def cell_path(record: Path, replicate: int) -> str:
    cell = json.loads(record.read_text())["cell"]
    keys = {k: cell.get(k, grid.DEFAULTS.get(k)) for k in grid.KEYS}
    return grid.CELL_PATTERN.format(**keys, replicate=replicate)


def machine_json(topo: topology_mod.Topology, host: str = "h") -> dict:
    return {"topology": topo.to_dict(), "summary": topo.summary(), "host": {"hostname": host}}


@pytest.fixture
def results(tmp_path) -> Path:
    """A results folder: five replicates of one cell, a packing run, their tables beside (not
    records), a write in progress, and this folder's machine.json (the QEMU guest's)."""
    root = tmp_path / "results"
    for r, record in enumerate(REPLICATES, 1):
        dest = root / cell_path(record, r)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(record, dest)
    run = root / paths.PACKING_RUN.format(model="resnet18", opt="none", budget=2, batch_size=1)
    run.parent.mkdir(parents=True)
    shutil.copy2(PACKING_RUN, run)
    (run.parent.parent / "plans.json").write_text("{}")  # a plan, not a measurement
    (root / "tables").mkdir()
    (root / "tables" / "cells.csv").write_text("model\n")
    (dest.parent / ".r9.json.123.tmp").write_text("{")  # a write in progress
    topo = topology_mod.from_sysfs(QEMU)
    (root / paths.MACHINE).write_text(json.dumps(machine_json(topo)))
    return root


def test_measured_files_are_the_records_of_every_measuring_rule(results):
    found = history.measured_files(results)
    assert len(found) == len(REPLICATES) + 1
    assert all(f.startswith("cells/") for f in found[:-1]) and found[-1].startswith("packing/")
    # a record's spec sits beside its log for every measuring rule (where the code is read)
    logs = {
        paths.CELL: paths.CELL_LOG,
        paths.PEAK: paths.PEAK_LOG,
        paths.MEMORY: paths.MEMORY_LOG,
        paths.PACKING_RUN: paths.PACKING_RUN_LOG,
        paths.INTERFERENCE_RUN: paths.INTERFERENCE_RUN_LOG,
        paths.DEPLOY_RUN: paths.DEPLOY_RUN_LOG,
    }
    assert set(logs) == set(remeasure.RULES.values())
    for record, log in logs.items():
        assert log == "logs/" + record.removesuffix(".json") + ".log"


def test_every_measuring_rule_of_the_workflow_writes_its_pattern():
    """RULES names the workflow's rules: each exists and its output is the pattern."""
    text = "\n".join(p.read_text() for p in (REPO / "workflow" / "rules").glob("*.smk"))
    names = {v: k for k, v in vars(paths).items() if isinstance(v, str)}
    for rule, pattern in remeasure.RULES.items():
        block = re.search(rf"rule {rule}:\n(.*?)(?:\n\s*rule |\Z)", text, re.S)
        m = block and re.search(r"output:\s+PLAN\.path\(paths\.(\w+)\)", block.group(1))
        assert m, f"rule {rule} with output PLAN.path(...) not found"
        assert m.group(1) == names[pattern], rule
    assert re.search(rf"checkpoint {remeasure.CHECKPOINT}:", text)


def test_keep_links_every_record_by_its_code_and_is_idempotent(results):
    rel = history.measured_files(results)
    spec = history.spec_beside_log(results, rel[0])
    spec.parent.mkdir(parents=True)
    spec.write_text(json.dumps({"code": "c0ffee"}))  # an older record: its code in the spec
    before = {r: (results / r).read_bytes() for r in rel}
    kept = history.keep(results)
    assert sum(kept.linked.values()) == len(rel) and kept.copied == 0
    assert kept.linked == {"c0ffee": 1, history.UNKNOWN: len(rel) - 1}
    hist = results / history.HISTORY
    assert os.path.samefile(hist / "c0ffee" / rel[0], results / rel[0])
    for r in rel[1:]:
        assert os.path.samefile(hist / history.UNKNOWN / r, results / r)
    assert {r: (results / r).read_bytes() for r in rel} == before  # records untouched
    again = history.keep(results)
    assert not again.linked and not again.replaced
    assert history.kept_line("results", again) is None


def test_a_record_measured_again_by_the_same_code_goes_to_the_next_snapshot(results):
    rel = history.measured_files(results)[0]
    record = json.loads((results / rel).read_text())
    (results / rel).write_text(json.dumps({**record, "code": "abc"}))
    history.keep(results)
    old = (results / rel).read_bytes()
    # a re-measurement with the same code: Snakemake removed the file, the job wrote a new one
    (results / rel).unlink()
    (results / rel).write_text(json.dumps({**record, "code": "abc", "replicate": 7}))
    kept = history.keep(results, replaced=[str(results / rel)])
    assert kept.linked == {"abc.2": 1}
    assert (results / history.HISTORY / "abc" / rel).read_bytes() == old
    assert os.path.samefile(results / history.HISTORY / "abc.2" / rel, results / rel)


def test_a_snapshot_whose_records_are_replaced_is_a_result_folder_compare_reads(results):
    rel = history.measured_files(results)
    kept = history.keep(results, replaced=[f"{results}/{r}" for r in rel[:2]])
    assert kept.replaced == {history.UNKNOWN: 2} and kept.tables_problem is None
    snapshot = results / history.HISTORY / history.UNKNOWN
    assert compare_runs.folder_problem(snapshot) is None
    run = compare_runs.read_run(snapshot, "before")
    assert len(run.cells) == 1 and int(run.cells["replicates"].iloc[0]) == len(REPLICATES)
    assert history.comparable(results) == [history.UNKNOWN]
    (line,) = history.summary_lines(str(results))
    assert f"{results}/history/unknown/" in line and "compare --config" in line
    assert history.compare_command("r", history.UNKNOWN) in history.kept_line("r", kept)


def test_across_filesystems_the_history_holds_copies(results):
    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == results.stat().st_dev:
        pytest.skip("needs /dev/shm on another filesystem than the tests' temporary folder")
    elsewhere = Path(shm, f"history-test-{os.getpid()}")
    (results / history.HISTORY).symlink_to(elsewhere, target_is_directory=True)
    elsewhere.mkdir()
    try:
        kept = history.keep(results)
        rel = history.measured_files(results)
        assert kept.copied == len(rel)
        for r in rel:
            kept_copy = results / history.HISTORY / history.UNKNOWN / r
            assert kept_copy.read_bytes() == (results / r).read_bytes()
            assert not os.path.samefile(kept_copy, results / r)
        assert not history.keep(results).linked  # a copy is recognised on the next run
    finally:
        shutil.rmtree(elsewhere)


def test_record_seconds_come_from_the_provenance(results):
    data = json.loads(REPLICATES[0].read_text())
    prov = data["provenance"]
    seconds = history.record_seconds(data)
    start = min(prov[k] for k in ("started_at", "launcher_started_at") if k in prov)
    assert 0 < seconds < 3600 and start <= prov["finished_at"]
    assert history.record_seconds({"status": "failed", "failure": {}}) is None
    packed = json.loads(PACKING_RUN.read_text())
    assert history.record_seconds(packed) is None or history.record_seconds(packed) > 0


def test_another_machines_folder_is_told_apart_from_this_one(results, tmp_path):
    qemu = topology_mod.from_sysfs(QEMU)
    vm = topology_mod.load(ONE_NODE)
    assert history.machine_problem(results, qemu) is None
    problem = history.machine_problem(results, vm)
    assert str(results / paths.MACHINE) in problem and "QEMU" in problem and "host h" in problem
    # an lscpu capture names no CPU model: the layout decides
    capture = topology_mod.from_lscpu((QEMU / "lscpu-p.txt").read_text())
    assert history.same_machine(qemu, capture) and not history.same_machine(qemu, vm)
    assert history.machine_problem(tmp_path, vm) is None  # no machine.json: cannot say


def test_the_start_of_a_run_refuses_another_machines_folder_and_changes_nothing(results):
    if history.same_machine(topology_mod.current(), topology_mod.from_sysfs(QEMU)):
        pytest.skip("this machine is the folder's")
    plan = make(TWO_NODES, results=str(results))  # planned for a 2 x 16 server, not the guest
    rel = history.measured_files(results)[0]
    raw = [{"rule": "cell", "output": f"{results}/{rel}", "forced": True}]
    files = sorted(p for p in results.rglob("*"))
    stamps = [(p, p.stat().st_mtime_ns, p.stat().st_size) for p in files]
    with pytest.raises(history.Refused, match="records another machine"):
        history.start(plan, raw)
    assert sorted(results.rglob("*")) == files
    assert [(p, p.stat().st_mtime_ns, p.stat().st_size) for p in files] == stamps
    lines = history.dry_run_lines(plan, raw)
    assert len(lines) == 2 and "would measure 1 job" in lines[0] and "refused" in lines[1]
    # nothing to measure: nothing refused, nothing kept
    assert history.start(plan, []) == [] and not (results / history.HISTORY).exists()


def test_further_replicates_are_announced_only_where_the_cap_allows_them(tmp_path):
    """The checkpoint runs in both plans; only a cap above the first stage adds replicates (the
    budget's first step sets the cap to the first stage)."""
    raw = [{"rule": "cell", "output": f"{tmp_path}/cells/new/r1.json"}]
    later = "(and the further replicates the two-stage checkpoint decides)"
    for cap, announced in ((2, False), (4, True)):
        two_stage = {"enabled": True, "cap": cap}
        plan = make(ONE_NODE, results=str(tmp_path), replicates=2, two_stage=two_stage)
        assert plan.two_stage["first_stage"] == 2 and plan.two_stage["cap"] == cap
        (line,) = history.dry_run_lines(plan, raw, more_later=True)
        assert (later in line) is announced, line


def test_the_start_of_a_run_keeps_the_records_it_replaces(results):
    # planned on the machine the folder records (its lscpu capture)
    plan = make(QEMU / "lscpu-p.txt", results=str(results))
    rel = history.measured_files(results)
    raw = [{"rule": "cell", "output": f"{results}/{r}", "params_changed": True} for r in rel[:2]]
    raw.append({"rule": "cell", "output": f"{results}/cells/new/r1.json"})
    lines = history.start(plan, raw)
    assert "this run measures 3 job(s) (3 cell): 1 new, 2 changed" in lines[0]
    assert "the 2 this run replaces are in" in lines[1]
    for r in rel:
        assert (results / history.HISTORY / history.UNKNOWN / r).is_file()


def test_why_a_job_measures():
    r = remeasure.reason
    assert r(False, True, False, False, None, "a") == "new"
    assert r(True, True, False, True, "b", "a") == "forced"
    assert r(True, False, True, False, "a", "a") == "interrupted"
    assert r(True, False, False, True, "b", "a") == "code changed"
    assert r(True, False, False, True, "a", "a") == "settings changed"
    assert r(True, False, False, False, "a", "a") == "inputs changed"
    assert r(True, False, False, True, None, "a") == "changed"


def test_the_estimate_takes_previous_times_else_the_settings_default():
    plan = make(ONE_NODE, placements=["sequential"], max_seconds_per_cell=3)
    cell = remeasure.default_seconds("cell", plan)
    assert cell == 3 + remeasure.START_S
    for rule in remeasure.RULES:  # every measuring rule has a default from the settings
        assert remeasure.default_seconds(rule, plan) > 0
    pk = plan.packing
    assert remeasure.default_seconds("packing_run", plan) == (
        (1 + pk["measure_plans"]) * plan.replicates * (pk["max_seconds"] + remeasure.START_S)
    )
    jobs = [
        remeasure.Job("cell", "a", "code changed", 20.0, cell),
        remeasure.Job("cell", "b", "new", None, cell),
    ]
    assert remeasure.estimate_seconds(jobs) == 20.0 + remeasure.JOB_OVERHEAD_S + cell
    line = remeasure.line(jobs, dry_run=True, kept_in="results/history/")
    assert line.startswith("numa-effects: a run would measure 2 job(s) (2 cell): 1 new, ")
    assert "1 code changed; about 29 s (1 timed by their previous record, 1 at the " in line
    assert "the 1 record(s) it replaces are kept in results/history/ first" in line
    assert "nothing" in remeasure.line([], dry_run=False)
    assert "two-stage" in remeasure.line(jobs, dry_run=True, more_later=True)
    durations = [cost.duration_text(s) for s in (45, 600, 12_000)]
    assert durations == ["45 s", "10 min", "3 h 20 min"]


def test_jobs_read_the_reason_and_time_of_the_record_they_replace(results):
    plan = make(ONE_NODE, results=str(results))
    rel = history.measured_files(results)[0]
    record = json.loads((results / rel).read_text())
    (results / rel).write_text(json.dumps({**record, "code": "old"}))
    raw = [
        {"rule": "cell", "output": f"{results}/{rel}", "params_changed": True},
        {"rule": "peak", "output": f"{results}/peak/sequential/t1/float32.json"},
    ]
    changed, new = history.jobs(plan, raw)
    assert (changed.why, new.why) == ("code changed", "new")
    assert changed.previous_s == history.record_seconds(record) and new.previous_s is None
    # a job without a record: its rule's share of the run's cost model (plan.cost)
    assert new.default_s == remeasure.defaults(plan)["peak"] > 0
