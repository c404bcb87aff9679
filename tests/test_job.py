"""The front door (``measure.job``): a workload is one registry entry and its module, and any
workload goes through the same door -- preflight, the pinned instance driven by the runner,
the workload's summary and check, the status decided once, the atomic write. A toy workload
(a few lines of pure Python, no torch) added as one entry runs for real here: numactl, a real
instance process, its binding verified."""

from __future__ import annotations

import dataclasses
import json
import shutil
import textwrap

import pytest

from numa_effects.measure import job, record, workloads
from numa_effects.plan import placement, topology
from numa_effects.plan import spec as spec_mod

pytestmark = pytest.mark.skipif(shutil.which("numactl") is None, reason="needs numactl")

TOY = textwrap.dedent(
    '''
    """A toy workload: each step sums ``n`` integers; its check refuses a result of ``n`` 13."""
    import os
    import sys
    import time

    from numa_effects.measure import timing
    from numa_effects.measure.causes import Cause
    from numa_effects.measure.workloads import Built

    TORCH = False


    def prepare(instance):
        return {"toy": {"prepared_in": os.getpid()}}


    def build(instance, settings):
        n, times = int(instance.options["n"]), []

        def step():
            t0 = time.perf_counter()
            sum(range(n))
            times.append([time.perf_counter() - t0])

        def report():
            here = {"pid": os.getpid(), "torch_loaded": "torch" in sys.modules}
            return {"n": n, "times_s": times, "resolved": instance.resolved["toy"], **here}

        return Built(step, {"build_s": 0.0, "prepare_s": 0.0}, [], report)


    def summary(instance, report, measurement, clean):
        rep = report or {}
        steps = timing.clean_steps(rep, measurement, clean)
        return {"n": rep.get("n"), "clean_steps": len(steps), "torch": rep.get("torch_loaded")}


    def check(summary):
        if summary and summary["n"] == 13:
            return Cause.ERROR, "the toy refuses 13"
        return None
    '''
)
SETTINGS = {
    "protocol": "fixed",
    "warmup": 1,
    "fixed_iterations": 5,
    "max_seconds_per_cell": 10,
    "contended_retries": 0,
    "exclude_foreign_pct": 100,  # whatever else runs here: the steps count
}


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The toy's module importable here and in the instance, and its one registry entry."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "toy_workload.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(src))
    monkeypatch.setenv("PYTHONPATH", str(src))  # the instance's (the runner adds the package)
    entry = workloads.Workload("toy", "toy_workload", "toy", keep_report=True)
    monkeypatch.setitem(workloads.WORKLOADS, "toy", entry)
    return entry


N = 300_000  # a step of a few ms: many scheduler ticks for the contention probe


def toy_spec(n: int) -> spec_mod.Spec:
    plan = placement.plan(topology.current(), 1, "sequential")
    cell = {"kind": "toy", "placement": "sequential", "threads": 1}
    return spec_mod.one("toy", cell, plan, SETTINGS, options={"n": n}, code="toy-code")


def test_a_toy_workload_is_one_registry_entry_through_the_front_door(toy, tmp_path):
    out, log = tmp_path / "toy" / "r1.json", tmp_path / "toy" / "r1.log"
    rec = job.run(toy_spec(N), out, log, timeout_s=120)
    assert rec.status == "ok", rec.failure
    # the summary is the toy's, over the runner's clean timed steps (an iteration the probe
    # saw at more than 100 % foreign is excluded even here: a loaded machine's tick rounding)
    clean = 5 - rec.contention["excluded_iterations"]
    assert rec.workload == "toy" and rec.stats["n"] == clean >= 3
    assert rec.summary == {"n": N, "clean_steps": clean, "torch": False}
    assert len(rec.report["times_s"]) == 1 + 5  # the first call, then the timed steps
    # prepared by the front door here, built and run in a pinned process of its own
    assert rec.report["resolved"]["prepared_in"] != rec.report["pid"]
    plan = placement.plan(topology.current(), 1, "sequential")
    assert rec.provenance["command"][:3] == ["numactl", *plan.numactl_args()]
    assert rec.verification["ok"] and rec.binding["cpus_allowed_list"] == plan.to_dict()["cpu_list"]
    # one atomic write of the record, its summary under the workload's key; the spec beside
    # the log is the one the instance read, with what the front door resolved
    back = record.read(out).to_json()
    assert json.dumps(back) == json.dumps(rec.to_json())  # (text: a CI of 5 steps is NaN)
    assert json.loads(out.read_text())["toy"] == rec.summary
    assert rec.code == json.loads(out.read_text())["code"] == "toy-code"  # its measuring code
    ran = spec_mod.Spec.from_json(json.loads(job.spec_path(log).read_text()))
    assert ran.instances[0].resolved["module"] == "toy_workload"
    assert ran.instances[0].resolved["toy"] == rec.report["resolved"]


def test_the_workloads_check_decides_the_status_once(toy, tmp_path):
    """A measured toy whose check refuses it: failed with the check's cause, no statistics,
    its timings kept."""
    rec = job.run(toy_spec(13), tmp_path / "r1.json", tmp_path / "r1.log", timeout_s=120)
    assert rec.status == "failed" and rec.failure.cause == "error"
    assert rec.failure.message == "the toy refuses 13" and rec.failure.command_line
    assert rec.stats is None and rec.throughput is None
    assert len(rec.measurement["latencies_s"]) == 5 and rec.summary["n"] == 13


def test_a_workload_that_cannot_run_here_is_skipped_before_anything_starts(
    toy, tmp_path, monkeypatch
):
    def cannot(instance):
        raise workloads.Skip("no toys here")

    monkeypatch.setattr(toy.runtime(), "prepare", cannot)
    monkeypatch.setattr(job.runner, "measure", lambda *a, **k: pytest.fail("it started"))
    rec = job.run(toy_spec(N), tmp_path / "r1.json", tmp_path / "r1.log", timeout_s=120)
    assert rec.status == "skipped" and rec.skip_reason == "no toys here" and rec.failure is None
    assert job.outcome_line(rec, "toy", "", "sum") == "toy: SKIPPED, no sum: no toys here"


def test_the_run_host_verifies_the_plan_it_is_given_and_never_plans_again(
    toy, tmp_path, monkeypatch
):
    """A job measures with the plan its spec carries: every planning function raises while a
    real toy job runs, and it still measures, bound as that plan says."""
    spec = toy_spec(N)

    def planning(*a, **k):
        raise AssertionError("the run host planned again")

    for fn in ("plan", "pack", "max_threads", "expand"):
        monkeypatch.setattr(placement, fn, planning)
    monkeypatch.setattr(spec_mod, "plans_for", planning)
    monkeypatch.setattr(spec_mod.packing_mod, "profile_plan", planning)
    rec = job.run(spec, tmp_path / "r1.json", tmp_path / "r1.log", timeout_s=120)
    assert rec.status == "ok", rec.failure
    assert rec.provenance["command"][:3] == ["numactl", *spec.plan.numactl_args()]


def test_a_plan_that_does_not_hold_here_is_refused_before_anything_starts(
    toy, tmp_path, monkeypatch
):
    """CPUs this machine lacks, CPUs on another node than planned, memory nodes it lacks, CPUs
    not allowed to the job: each a plan-mismatch, no instance started."""
    topo = topology.current()
    plan = spec_mod.Plan.from_dict(toy_spec(N).plan.to_dict())
    last, absent = max(c.cpu for c in topo.cpus), max(topo.all_nodes) + 1
    wrong = {
        "are not on this machine": dataclasses.replace(plan, cpus=(last + 5,)),
        "not as planned": dataclasses.replace(plan, cpu_nodes=(absent,)),
        "memory nodes": dataclasses.replace(plan, mem_policy="bind", mem_nodes=(absent,)),
    }
    monkeypatch.setattr(job.runner, "measure", lambda *a, **k: pytest.fail("it started"))
    for why, bad in wrong.items():
        spec = spec_mod.one("toy", toy_spec(N).cell, bad, SETTINGS)
        rec = job.run(spec, tmp_path / "r1.json", tmp_path / "r1.log", timeout_s=120)
        assert (rec.status, rec.failure.cause) == ("failed", "plan-mismatch"), why
        assert why in rec.failure.message
    others = {c.cpu for c in topo.cpus} - set(plan.cpus)
    refused = job.unverified(toy_spec(N).configuration, topo, allowed=others)
    assert refused and "not allowed" in refused
    assert job.unverified(toy_spec(N).configuration, topo, allowed=set(plan.cpus)) is None


def test_a_job_serialises_its_spec_once_per_process_boundary(toy, tmp_path, monkeypatch):
    """The rule's params are read once (one ``from_json``) and the instance's spec file written
    once (one ``to_json``), which the instance reads: the spec beside the log is the job's."""
    params, calls = toy_spec(N).to_json(), []
    for name in ("to_json", "from_json"):
        real = getattr(spec_mod.Spec, name)
        counted = (lambda f, n: lambda *a, **k: calls.append(n) or f(*a, **k))(real, name)
        monkeypatch.setattr(spec_mod.Spec, name, counted)
    sm = type("Rule", (), {})()
    sm.params, sm.config = type("Params", (), {"spec": params})(), {}
    sm.output, sm.log = [str(tmp_path / "r1.json")], [str(tmp_path / "r1.log")]
    rec = job.run_rule(sm, 120)
    assert rec.status == "ok", rec.failure
    assert sorted(calls) == ["from_json", "to_json"]
    written = json.loads(job.spec_path(tmp_path / "r1.log").read_text())
    assert {k: v for k, v in written.items() if k != "instances"} == {
        k: v for k, v in params.items() if k != "instances"
    }
