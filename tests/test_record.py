"""The typed job and its record (``plan.spec``, ``measure.record``): what a job measures and what
it records, each a frozen dataclass with a format version. Results of format 1 (written before
the records were typed: tests/fixtures/cells, the packing fixtures) read as they are and give
the same table rows as their format-2 rewrite; a file of a newer format, or none of this
workflow, is refused with one line that names it and says what to do."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from numa_effects.measure import job, record
from numa_effects.measure.record import Failure, Record
from numa_effects.plan import placement, topology
from numa_effects.plan import spec as spec_mod
from numa_effects.tables import cells as tidy
from numa_effects.tables import peak as peak_table

FIX = Path(__file__).parent / "fixtures"
CELLS = sorted((FIX / "cells").glob("*.json")) + sorted((FIX / "cells_numa_vm").glob("*.json"))
GROUPS = sorted((FIX / "packing_interference" / "packing").rglob("c*/**/*.json"))


@pytest.mark.parametrize("path", CELLS, ids=lambda p: p.stem)
def test_a_format_1_record_reads_as_it_is_and_its_rewrite_gives_the_same_row(path, tmp_path):
    data = json.loads(path.read_text())
    assert data["schema_version"] == 1 and "format" not in data
    old = record.read(path)
    assert old.workload == spec_mod.MODEL and old.summary == data.get("precision")
    assert old.failure == Failure.from_json(data.get("failure"))
    record.write(tmp_path / "r.json", old)
    rewritten = json.loads((tmp_path / "r.json").read_text())
    assert rewritten["format"] == record.FORMAT and rewritten["workload"] == "model"
    new = record.read(tmp_path / "r.json")
    assert new == old
    same = json.dumps(tidy.cell_row(new, "x"), default=str)  # NaN != NaN: compare the text
    assert same == json.dumps(tidy.cell_row(old, "x"), default=str)
    assert list(tidy.sample_rows(new)) == list(tidy.sample_rows(old))


def test_a_format_1_peak_knows_its_workload_by_its_cells_kind():
    data = {
        "schema_version": 1,
        "status": "ok",
        "cell": {"kind": "peak", "placement": "sequential", "threads": 1, "dtype": "float32"},
        "peak": {"peak_gflop_per_s": 80.0, "peak_kernel": "mm", "kernels": {}},
        "report": {"dtype": "float32", "times_s": [[0.1]]},
        "failure": None,
    }
    rec = Record.from_json(data)
    assert rec.workload == spec_mod.PEAK and rec.summary == data["peak"]
    assert rec.report == data["report"]  # a peak keeps its per-step times
    assert peak_table.row(rec)["peak_gflop_per_s"] == 80.0
    assert Record.from_json(rec.to_json()) == rec and rec.to_json()["peak"] == data["peak"]


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"format": 3, "status": "ok", "cell": {}}, "result format 3 is newer than this workflow"),
        ({"status": "ok", "cell": {}}, "not a result of this workflow (no format)"),
    ],
    ids=["newer", "none"],
)
def test_a_record_this_code_cannot_read_is_refused_in_one_line(tmp_path, data, says):
    path = tmp_path / "r1.json"
    path.write_text(json.dumps(data))
    with pytest.raises(record.FormatError) as exc:
        record.read(path)
    line = str(exc.value)
    assert "\n" not in line and line.startswith(f"{path}: ") and says in line
    assert "re-run" in line


@pytest.mark.parametrize("path", GROUPS, ids=lambda p: p.stem)
def test_a_format_1_group_record_reads_with_its_runs_typed(path, tmp_path):
    data = json.loads(path.read_text())
    old = record.read_group(path)
    assert old.kind == data.get("kind", "packing") and old.status == data["status"]
    assert {n: len(rs) for n, rs in old.runs.items()} == {
        n: len(rs) for n, rs in data["runs"].items()
    }
    assert all(isinstance(r, Record) for rs in old.runs.values() for r in rs)
    record.write(tmp_path / "g.json", old)
    assert record.read_group(tmp_path / "g.json") == old


def test_a_failure_names_its_details_and_only_them():
    f = Failure("timeout", "no result after 42 s", returncode=-9, signal="SIGKILL")
    assert f.to_json() == {
        "cause": "timeout",
        "message": "no result after 42 s",
        "returncode": -9,
        "signal": "SIGKILL",
    }
    assert Failure.from_json(f.to_json()) == f and Failure.from_json(None) is None
    assert f.prefixed("fat").message == "fat: no result after 42 s"


# -- the spec -------------------------------------------------------------------------------------
def one_plan() -> placement.Plan:
    return placement.plan(topology.current(), 1, "sequential")


def test_a_spec_round_trips_and_refuses_another_format_in_one_line():
    key = {"model": "m", "opt": "none", "placement": "sequential", "threads": 1, "batch_size": 2}
    spec = spec_mod.cell(key, one_plan(), {"seed": 0}, 3, image_size=32, use_smt=False, code="c")
    back = spec_mod.from_json(json.loads(json.dumps(spec.to_json())))
    assert back == spec and back.replicate == 3 and back.plan == one_plan()
    assert back.cell == {**key, "image_size": 32, "use_smt": False}
    with pytest.raises(spec_mod.SpecError) as exc:
        spec_mod.Spec.from_json({**spec.to_json(), "format": 1})
    assert "\n" not in str(exc.value) and "re-run the job" in str(exc.value)


def test_a_group_configuration_may_mix_optimizations_and_allocators():
    """What the "what to deploy" answer needs: instances of one configuration with their own
    model, optimization, allocator, threads, batch and plan; the record's cell keeps what they
    share and sums threads and images."""
    topo = topology.current()
    plans = spec_mod.plans_for(topo, 1, [(1, 1)], False)
    (plan, _), *_ = plans
    a = spec_mod.packed({"model": "m", "opt": "none", "allocator": "default"}, plan, 1)
    b = spec_mod.packed({"model": "m", "opt": "script", "allocator": "jemalloc"}, plan, 3)
    conf = spec_mod.Configuration((a, b))
    assert conf.cell == {"model": "m", "placement": "packed", "threads": 2, "batch_size": 4}
    assert [i.allocator for i in conf.instances] == ["default", "jemalloc"]
    g = spec_mod.group(
        "packing", {"model": "m"}, {"mixed": conf, "one": spec_mod.Configuration((a,))}, {}, 2
    )
    abba = dataclasses.replace(g, schedule=(("mixed", 1), ("one", 1), ("one", 2), ("mixed", 2)))
    assert [(n, s.replicate) for n, s in abba.measurements()] == list(abba.schedule)
    assert spec_mod.GroupSpec.from_json(json.loads(json.dumps(abba.to_json()))) == abba


def test_a_spec_planned_for_another_machine_is_caught_before_anything_runs():
    topo = topology.current()
    plan = one_plan()
    cell = {"model": "m", "opt": "none", "placement": "sequential", "threads": 1, "batch_size": 1}
    spec = spec_mod.one(spec_mod.MODEL, cell, plan, {})
    assert job.unverified(spec.configuration, topo) is None
    moved = spec_mod.one(spec_mod.MODEL, cell, dataclasses.replace(plan, cpus=(999,)), {})
    assert "are not on this machine" in job.unverified(moved.configuration, topo)
    (packed, images), *_ = spec_mod.plans_for(topo, 1, [(1, 1)], False)
    inst = spec_mod.packed({"model": "m", "opt": "none"}, packed, images)
    conf = spec_mod.Configuration((inst,), spec_mod.Packing(1))
    assert job.unverified(conf, topo) is None
    wrong = dataclasses.replace(inst, plan=dataclasses.replace(packed, cpus=(999,)))
    wrong_conf = spec_mod.Configuration((wrong,), conf.packing)
    assert "are not on this machine" in job.unverified(wrong_conf, topo)
