"""Packing measured for real: a tiny grid run by snakemake on this machine, the
optimizer's plans measured as concurrent pinned instances, and tables/packing.csv. The thread
counts, budgets and core sets are derived from this machine's topology and the planner. And the
one measuring stack: a group of one instance is recorded as a cell is, a group beside
a real busy loop is measured again and flagged, its instances run under the supervisor's rules
(own session, address-space limit, parent-death signal, interruption)."""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import robust
from conftest import REPO, foreign_share_pct, load_config, snakemake

from numa_effects.analysis import packing
from numa_effects.analysis import planner as planner_mod
from numa_effects.measure import job as job_mod
from numa_effects.measure import record
from numa_effects.plan import allocators, grid, paths, placement, topology
from numa_effects.plan import packing as packing_jobs
from numa_effects.plan import spec as spec_mod
from numa_effects.tables import interference as profile
from numa_effects.tables import packing as packing_table

pytestmark = pytest.mark.integration

TOPO = topology.current()
# two thread counts: 1 and all cores of one node (the planner's `threads: auto` maximum)
THREADS = sorted({1, placement.max_threads(TOPO)})
BUDGETS = packing_jobs.budgets(TOPO)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if len(THREADS) < 2:
        pytest.skip("a 1-core node: nothing to pack")
    workdir = tmp_path_factory.mktemp("packing")
    cfg = {
        **load_config("tiny"),
        "optimizations": ["none"],
        "threads": THREADS,
        "batch_sizes": [1, 2],
        "max_seconds_per_cell": 2,
        "min_iterations": 6,  # the smallest n with a 95 % CI of the median
        "max_iterations": 8,
        "peak": False,  # efficiency is not what this test is about: no peak jobs
    }
    snakemake(workdir, cfg, "--cores", "2", "results/tables/packing.csv")
    return workdir, cfg


def test_packing_is_on_by_default_with_two_thread_counts(run):
    _, cfg = run
    s = packing_jobs.settings(cfg, TOPO, grid.thread_counts(cfg, TOPO))
    assert s["enabled"] and s["budgets"] == BUDGETS
    off = packing_jobs.settings({**cfg, "threads": [1]}, TOPO, [1])
    assert not off["enabled"] and packing_jobs.jobs(off) == []


def test_the_interference_profile_is_measured_first_and_tabulated(run):
    """One profile job per (budget, thread count with room for two): one instance
    alone, then k identical instances side by side (pinned, disjoint, verified), replicate by
    replicate; tables/interference.csv holds the slowdown recomputed here from the JSON."""
    workdir, cfg = run
    s = packing_jobs.settings(cfg, TOPO, THREADS)
    jobs = packing_jobs.interference_jobs(s)
    assert jobs and {j["threads"] for j in jobs} == {1}
    df = pd.read_csv(workdir / "results/tables/interference.csv")
    assert len(df) == sum(len(j["instances"]) for j in jobs)  # one node per group here
    for j in jobs:
        path = workdir / "results" / paths.INTERFERENCE_RUN.format(**j)
        res, typed = json.loads(path.read_text()), record.read_group(path)
        assert res["status"] == "ok" and res["job"]["batch"] == s["interference"]["batch"]
        assert sorted(res["runs"]) == sorted(["k1", *(f"k{k}" for k in j["instances"])])
        for name, recs in res["runs"].items():
            k = int(name[1:])
            assert len(recs) == cfg["replicates"]
            want = placement.pack(TOPO, [j["threads"]] * k, j["budget"])
            for r in recs:
                assert [i["plan"]["cpus"] for i in r["instances"]] == [list(p.cpus) for p in want]
                assert all(i["verification"]["ok"] for i in r["instances"])
        for k in j["instances"]:
            row = df[(df["budget"] == j["budget"]) & (df["k"] == k)].iloc[0]
            assert row.status == "ok" and row.x == j["threads"] * (k - 1)
            alone = packing_table.clean_rounds(typed.runs["k1"][0])
            rec = typed.runs[f"k{k}"][0]
            group_rounds = profile.node_rounds(rec, "0")
            assert row.slowdown == pytest.approx(np.median(group_rounds) / np.median(alone))
            assert row.slowdown_ci_low <= row.slowdown <= row.slowdown_ci_high
            assert row.job_s > 0


def test_plans_are_the_optimizers_choice_from_cells_and_the_profile(run):
    workdir, _ = run
    cells = pd.read_csv(workdir / "results/tables/cells.csv")
    table = packing.latency_table(cells, "resnet18", "none")
    curve = profile.curve(
        pd.read_csv(workdir / "results/tables/interference.csv"), "resnet18", "none"
    )
    assert curve.points >= 1  # the plans used the measured interference
    df = pd.read_csv(workdir / "results/tables/packing.csv")
    assert len(df) == len(BUDGETS) * 2
    assert sorted(df["budget"].unique()) == sorted(BUDGETS)
    for r in df.itertuples():
        caps = [k for _, k in packing_jobs.budget_nodes(TOPO, r.budget)]
        planner = planner_mod.Planner(table, caps, curve, max_batch=2)
        want = planner.optimize(r.batch_size)
        assert r.plan == want.label()
        assert r.predicted_ms == pytest.approx(want.latency_s * 1e3)
        assert r.predicted_alone_ms == pytest.approx(want.alone_s * 1e3)
        assert r.interference_model == curve.label()
        assert r.alone_plan == packing.optimize(table, r.budget, r.batch_size).label()
        if (r.budget, r.batch_size) in table:
            assert r.predicted_fat_latency_ms == pytest.approx(
                table[(r.budget, r.batch_size)] * 1e3
            )


def test_the_best_predicted_plans_are_measured_and_the_measured_best_recommended(run):
    """The fat instance and the ``measure_plans`` best predicted configurations (the best of
    each instance count) are measured in each job; the recommendation is the measured best,
    and packing.csv says whether it is the predicted one."""
    workdir, cfg = run
    df = pd.read_csv(workdir / "results/tables/packing.csv")
    cand = pd.read_csv(workdir / "results/tables/packing_candidates.csv")
    n = packing_jobs.settings(cfg, TOPO, THREADS)["measure_plans"]
    for r in df.itertuples():
        mine = cand[(cand["budget"] == r.budget) & (cand["batch_size"] == r.batch_size)]
        plans = json.loads((workdir / "results/packing/resnet18/none/plans.json").read_text())[
            "choices"
        ]
        (choice,) = [c for c in plans if (c["budget"], c["batch"]) == (r.budget, r.batch_size)]
        want = {"fat", *packing_jobs.configurations(choice)}
        assert set(mine["name"]) == want and len(choice["candidates"]) <= n
        assert r.candidates == len(mine)
        # the predicted ranking: candidates in order of predicted latency
        ranked = mine.dropna(subset=["predicted_rank"]).sort_values("predicted_rank")
        assert list(ranked["predicted_ms"]) == sorted(ranked["predicted_ms"])
        measured = mine.dropna(subset=["latency_ms"]).sort_values("latency_ms")
        assert r.recommended_plan == measured["plan"].iloc[0]
        assert r.recommended_latency_ms == pytest.approx(measured["latency_ms"].iloc[0])
        assert r.measured_ranking == " < ".join(measured["plan"])
        assert bool(r.recommended_is_predicted) == (measured["plan"].iloc[0] == r.plan)
        assert r.recommended_gain >= 1.0 - 1e-12


def test_plans_measured_as_pinned_disjoint_verified_instances(run):
    workdir, _ = run
    df = pd.read_csv(workdir / "results/tables/packing.csv")
    cells = pd.read_csv(workdir / "results/tables/cells.csv")
    # the groups run with the allocator of the cells the plan predicts from, proven in each
    alloc = allocators.baseline(cells["allocator"])
    for r in df.itertuples():
        assert r.status == "ok", r.failure
        if r.rounds >= 6:  # the smallest n with a 95 % CI of the median
            assert r.latency_ci_low_ms <= r.latency_ms <= r.latency_ci_high_ms
        else:  # contended rounds excluded on a loaded machine: too few clean ones for a CI
            assert r.contended and pd.isna(r.latency_ci_low_ms)
        assert r.prediction_error == pytest.approx(r.latency_ms / r.predicted_ms - 1)
        assert r.prediction_error_alone == pytest.approx(r.latency_ms / r.predicted_alone_ms - 1)
        assert r.speedup == pytest.approx(r.fat_latency_ms / r.latency_ms)
        result = json.loads(
            (
                workdir / f"results/packing/resnet18/none/c{r.budget}/bs{r.batch_size}.json"
            ).read_text()
        )
        confs = packing_jobs.configurations(result["choice"])
        assert result["job"]["allocator"] == result["allocator"]["name"] == alloc
        for name, recs in result["runs"].items():
            conf = confs[name]
            expect = spec_mod.plans_for(TOPO, r.budget, conf["instances"], False, conf["nodes"])
            for rec in recs:
                cpus = [tuple(i["plan"]["cpus"]) for i in rec["instances"]]
                flat = [c for cs in cpus for c in cs]
                assert len(flat) == len(set(flat))  # no CPU shared between instances
                assert cpus == [p.cpus for p, _ in expect]  # where the optimizer put them
                assert rec["allocator"]["name"] == rec["cell"]["allocator"] == alloc
                for inst in rec["instances"]:
                    v = inst["verification"]
                    assert v["ok"], v["problems"]
                    assert v["allocator"]["name"] == alloc
                    assert inst["binding"]["cpus_allowed_list"] == inst["plan"]["cpu_list"]
                    assert inst["threads_info"]["torch_num_threads"] == inst["threads"]
                    assert len(inst["latencies_s"]) == len(rec["measurement"]["latencies_s"])
                # a round lasts at least as long as its slowest instance (same clock)
                own = zip(*(i["latencies_s"] for i in rec["instances"]), strict=True)
                for whole, mine in zip(rec["measurement"]["latencies_s"], own, strict=True):
                    assert whole >= max(mine)
                if len(rec["instances"]) == 1:  # one instance: exactly its own time
                    assert rec["measurement"]["latencies_s"] == rec["instances"][0]["latencies_s"]


def test_one_instance_per_core_runs_concurrently(run, tmp_path):
    """Whatever the optimizer chose above: a plan of one 1-thread instance per core of the
    budget, run directly, starts its instances together and verifies each one."""
    _, cfg = run
    budget = min(BUDGETS)
    job = {
        "model": "resnet18",
        "opt": "none",
        "image_size": cfg["image_size"],
        "use_smt": False,
        "replicates": 1,
        "settings": {
            "warmup": 1,
            "min_iterations": 3,
            "max_iterations": 5,
            "max_seconds_per_cell": 2,
            "contended_retries": 0,  # concurrency and verification are tested here
        },
    }
    choice = {"instances": [{"threads": 1, "batch": 1}] * budget, "is_fat": False}
    spec = packing_spec(job, budget, budget, choice)
    result = job_mod.run(spec, tmp_path / "out.json", tmp_path / "logs", 300)
    assert result.status == "ok", result.failure
    rec = result.runs["plan"][0]
    assert len(rec.instances) == budget
    assert sorted(c for i in rec.instances for c in i["plan"]["cpus"]) == sorted(
        c for p in placement.pack(TOPO, [budget], budget) for c in p.cpus
    )
    assert all(i["verification"]["ok"] for i in rec.instances)
    # a placement planned for another machine is refused before anything runs
    plan = spec.configurations["plan"]
    elsewhere = dataclasses.replace(plan.instances[0].plan, cpus=(999,))
    bad = dataclasses.replace(plan.instances[0], plan=elsewhere)
    bad = dataclasses.replace(plan, instances=(bad, *plan.instances[1:]))
    wrong = dataclasses.replace(spec, configurations={**spec.configurations, "plan": bad})
    result = job_mod.run(wrong, tmp_path / "wrong.json", tmp_path / "logs", 300)
    assert result.status == "failed" and result.failure.cause == "plan-mismatch"
    assert result.runs == {}  # nothing ran


COMMON = {"model": "resnet18", "opt": "none", "image_size": 32, "use_smt": False}


def packing_spec(job: dict, budget: int, batch: int, choice: dict) -> spec_mod.GroupSpec:
    """A packing job's spec as run_packing.py builds it, its configurations placed on this
    machine as plan_packing.py places them."""
    row = {**choice, "budget": budget, "batch": batch}
    choice = {**choice, "placements": spec_mod.placements(row, TOPO, job["use_smt"])}
    return spec_mod.packing(job, budget, batch, choice)


def test_a_group_beside_a_busy_loop_is_measured_again_and_flagged(tmp_path, busy_loop):
    """A real busy loop pinned to the core of a 1-thread fat instance, measured only once it
    really runs there (and the probe sees it): every round shares that core, so the group is
    contended, measured again after the back-off (same processes), and kept flagged with the
    earlier attempt summarised (the same rule for groups as for cells). Rounds
    without a clean iteration never become a number."""
    cpu = placement.pack(TOPO, [1], 1)[0].cpus[0]
    busy_loop(cpu)
    assert foreign_share_pct([cpu]) > 50  # the probe's view of the core: the hog is there
    job = {
        **COMMON,
        "image_size": 224,  # rounds of tens of ms: each spans many scheduler slices
        "replicates": 1,
        "settings": {
            "warmup": 1,
            "min_iterations": 3,
            "max_iterations": 6,
            "max_seconds_per_cell": 2,
            "contended_retries": 1,
            "contended_backoff_s": 0.1,
        },
    }
    choice = {"instances": [{"threads": 1, "batch": 1}], "is_fat": True}
    spec = packing_spec(job, 1, 1, choice)
    result = job_mod.run(spec, tmp_path / "out.json", tmp_path / "logs", 300)
    assert result.status == "ok", result.failure
    rec = result.runs["fat"][0].to_json()
    assert rec["instances"][0]["plan"]["cpus"] == [cpu]
    noise = rec["contention"]
    assert noise["contended"] is True, noise
    (attempt,) = noise["retried_attempts"]
    assert noise["retries"] == 1 and attempt["backoff_s"] == 0.1
    assert attempt["foreign_pct_median"] > 10  # the hog's share of the core
    assert sorted((tmp_path / "logs").glob("fat-r1-i0.log"))  # one log per instance
    if rec["status"] == "contended":  # no clean round at all: no statistics
        assert rec["stats"] is None and all(rec["measurement"]["excluded"])
    else:
        assert rec["status"] == "ok" and rec["stats"]["n"] < len(rec["measurement"]["excluded"])


def shape(record: dict) -> dict:
    """The keys of a record, one level into its dict-valued entries and its first instance."""
    out = {"": sorted(record)}
    for key, value in record.items():
        if isinstance(value, dict) and key not in ("cell", "settings", "plan"):
            out[key] = sorted(value)
    out["instance"] = sorted(record["instances"][0])
    return out


def test_a_group_of_one_is_recorded_as_a_cell_is(tmp_path):
    """The same measuring stack: a cell and a packing group of one instance on the
    same CPU give records of the same shape (keys, measurement, contention, provenance, the
    per-instance record, the allocator proven inside), measured by the same loop under the
    same settings and allocator (glibc tuned: the default grid's, proven by its heap probe)."""
    alloc = "glibc_tuned"
    common = {**COMMON, "allocator": alloc}
    plan = placement.plan(TOPO, 1, "sequential")
    settings = {
        "protocol": "fixed",
        "warmup": 1,
        "fixed_iterations": 6,
        "max_seconds_per_cell": 30,
        "contended_retries": 0,
        "exclude_foreign_pct": 100,
    }
    cell = {**common, "placement": "sequential", "threads": 1, "batch_size": 1}
    spec = spec_mod.one(spec_mod.MODEL, cell, plan, settings)
    cell = job_mod.run(spec, tmp_path / "cell.json", tmp_path / "cell.log", 600).to_json()
    ((one, _),) = spec_mod.plans_for(TOPO, 1, [(1, 1)], False)
    conf = spec_mod.Configuration((spec_mod.packed(common, one, 1),), spec_mod.Packing(1))
    g = spec_mod.group("packing", {}, {"g": conf}, settings, 1)
    got = job_mod.run(g, tmp_path / "g.json", tmp_path / "logs", 600)
    rec = got.runs["g"][0].to_json()
    assert cell["status"] == rec["status"] == "ok", (cell["failure"], rec["failure"])
    assert shape(cell) == shape(rec)
    for r in (cell, rec):
        m = r["measurement"]
        assert len(m["latencies_s"]) == 6 and m["stop_reason"] == "fixed"
        assert m["latencies_s"] == r["instances"][0]["latencies_s"]  # the instance's own clock
        assert m["round_skew_median_s"] == 0.0
        assert r["binding"]["verification"]["ok"]
        assert r["provenance"]["command"][:3] == ["numactl", *plan.numactl_args()]
        assert r["allocator"]["name"] == alloc
        proof = r["instances"][0]["verification"]["allocator"]["heap_probe"]
        assert proof["in_heap"] and proof["bytes"] == allocators.HEAP_PROBE_BYTES
        assert "MALLOC_MMAP_MAX_=0" in r["provenance"]["command_line"]
    assert rec["cell"]["placement"] == placement.PACKED
    assert rec["binding"]["cpus_allowed_list"] == cell["binding"]["cpus_allowed_list"]


RUNNER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    sys.path.insert(0, {scripts!r})
    from numa_effects.measure import job
    from numa_effects.plan import spec, topology
    got = spec.plans_for(topology.current(), {budget}, {conf!r}, False)
    settings = {{"protocol": "fixed", "warmup": 0, "fixed_iterations": 10**6,
                 "max_seconds_per_cell": 600, "contended_retries": 0}}
    insts = tuple(spec.packed({common!r}, p, b) for p, b in got)
    hold = spec.Configuration(insts, spec.Packing({budget}))
    g = spec.group("packing", {{}}, {{"hold": hold}}, settings, 1)
    job.run(g, Path({logdir!r}).parent / "hold.json", Path({logdir!r}), 900, max_memory_mb={mb})
    Path({done!r}).write_text("measured")
    """
)


def start_group_runner(tmp_path, mb: int) -> tuple[subprocess.Popen, list[int]]:
    """A runner (its own process) measuring a group of one 1-thread instance per core of the
    smallest budget for minutes; returns it and the instances' pids once all of them run."""
    budget = min(BUDGETS)
    code = RUNNER.format(
        scripts=str(REPO / "workflow" / "scripts"),
        budget=budget,
        conf=[(1, 1)] * budget,
        common=COMMON,
        logdir=str(tmp_path / "logs"),
        mb=mb,
        done=str(tmp_path / "done"),
    )
    runner = subprocess.Popen([sys.executable, "-c", code])

    def instances():
        assert runner.poll() is None, "the runner ended before its instances ran"
        found = robust.cell_processes(tmp_path / "logs")
        return sorted(found.values()) if len(found) == budget else None

    return runner, robust.wait_for(instances, 600, interval=0.2, what="the group's instances")


def limits(pid: int) -> dict[str, str]:
    out = {}
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines()[1:]:
        out[line[:26].strip()] = line[26:].split()[0]
    return out


def session_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[3])


def test_packing_instances_run_supervised_and_die_with_the_runner(tmp_path):
    """Every instance of a group is started by the supervisor: its own session, the
    address-space limit of max_memory_mb (RLIMIT_AS, read back from /proc/<pid>/limits), and
    PR_SET_PDEATHSIG: kill -9 of the runner (no handler can run) takes every instance with it,
    and no result is written. The instances are stopped (SIGSTOP) first, so that none can end
    by itself on the end of its input: only the parent-death signal (SIGKILL) ends a stopped
    process."""
    mb = robust.vm_peak_mb() + 2048
    runner, found = start_group_runner(tmp_path, mb)
    try:
        for pid in found:
            assert limits(pid)["Max address space"] == str(mb * 1024 * 1024), pid
            assert session_of(pid) == pid  # its own session: its whole group can be killed
            assert session_of(pid) != session_of(runner.pid)
            os.kill(pid, signal.SIGSTOP)
        runner.kill()
        runner.wait()
        robust.wait_for(
            lambda: not any(robust.alive(p) for p in found), 30, what="the instances to die"
        )
        assert not (tmp_path / "done").exists()
    finally:
        for pid in found:
            if robust.alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_sigterm_to_the_runner_is_an_interruption_of_the_whole_group(tmp_path):
    """SIGTERM to the runner while a group is timed: every instance is killed (process group),
    the runner exits with status 1 (supervise.Interrupted) and writes nothing."""
    runner, found = start_group_runner(tmp_path, robust.vm_peak_mb() + 2048)
    try:
        t0 = time.monotonic()
        runner.terminate()
        assert runner.wait(timeout=60) == 1
        assert time.monotonic() - t0 < 30
        robust.wait_for(
            lambda: not any(robust.alive(p) for p in found), 30, what="the instances to die"
        )
        assert not (tmp_path / "done").exists()
    finally:
        for pid in found:
            if robust.alive(pid):
                os.kill(pid, signal.SIGKILL)
