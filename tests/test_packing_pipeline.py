"""Packing measured for real (issue 14): a tiny grid run by snakemake on this machine, the
optimizer's plans measured as concurrent pinned instances, and tables/packing.csv. The thread
counts, budgets and core sets are derived from this machine's topology and the planner."""

import json
import subprocess
import sys

import pandas as pd
import pytest
from conftest import TINY_CONFIG, snakemake

from numa_effects.measure import group as packing_run
from numa_effects.plan import grid, packing, placement, topology

pytestmark = pytest.mark.integration

TOPO = topology.current()
# two thread counts: 1 and all cores of one node (the planner's `threads: auto` maximum)
THREADS = sorted({1, placement.max_threads(TOPO)})
BUDGETS = packing.budgets(TOPO)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if len(THREADS) < 2:
        pytest.skip("a 1-core node: nothing to pack")
    workdir = tmp_path_factory.mktemp("packing")
    cfg = {
        **TINY_CONFIG,
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
    s = packing.settings(cfg, TOPO, grid.thread_counts(cfg, TOPO))
    assert s["enabled"] and s["budgets"] == BUDGETS
    off = packing.settings({**cfg, "threads": [1]}, TOPO, [1])
    assert not off["enabled"] and packing.jobs(off) == []


def test_plans_are_the_optimizers_choice_from_cells_csv(run):
    workdir, _ = run
    cells = pd.read_csv(workdir / "results/tables/cells.csv")
    table = packing.latency_table(cells, "resnet18", "none")
    df = pd.read_csv(workdir / "results/tables/packing.csv")
    assert len(df) == len(BUDGETS) * 2
    assert sorted(df["budget"].unique()) == sorted(BUDGETS)
    for r in df.itertuples():
        want = packing.optimize(table, r.budget, r.batch_size)
        assert r.plan == want.label()
        assert r.predicted_latency_ms == pytest.approx(want.latency_s * 1e3)
        if (r.budget, r.batch_size) in table:
            assert r.predicted_fat_latency_ms == pytest.approx(
                table[(r.budget, r.batch_size)] * 1e3
            )


def test_plans_measured_as_pinned_disjoint_verified_instances(run):
    workdir, _ = run
    df = pd.read_csv(workdir / "results/tables/packing.csv")
    for r in df.itertuples():
        assert r.status == "ok", r.failure
        if r.rounds >= 6:  # the smallest n with a 95 % CI of the median
            assert r.latency_ci_low_ms <= r.latency_ms <= r.latency_ci_high_ms
        else:  # contended rounds excluded on a loaded machine: too few clean ones for a CI
            assert r.contended and pd.isna(r.latency_ci_low_ms)
        assert r.prediction_error == pytest.approx(r.latency_ms / r.predicted_latency_ms - 1)
        assert r.speedup == pytest.approx(r.fat_latency_ms / r.latency_ms)
        result = json.loads(
            (
                workdir / f"results/packing/resnet18/none/c{r.budget}/bs{r.batch_size}.json"
            ).read_text()
        )
        threads = [int(x.split(":")[0]) for x in r.instances.split()]
        expect = placement.pack(TOPO, sorted(threads, reverse=True), r.budget)
        for name, recs in result["runs"].items():
            for rec in recs:
                cpus = [tuple(i["plan"]["cpus"]) for i in rec["instances"]]
                flat = [c for cs in cpus for c in cs]
                assert len(flat) == len(set(flat))  # no CPU shared between instances
                if name == "plan":
                    assert cpus == [p.cpus for p in expect]
                for inst in rec["instances"]:
                    v = inst["verification"]
                    assert v["ok"], v["problems"]
                    assert inst["binding"]["cpus_allowed_list"] == inst["plan"]["cpu_list"]
                    assert inst["threads_info"]["torch_num_threads"] == inst["threads"]
                    assert len(inst["latencies_s"]) == len(rec["measurement"]["latencies_s"])
                # a round lasts at least as long as its slowest instance
                for whole, slow in zip(
                    rec["measurement"]["latencies_s"], rec["slowest_instance_s"], strict=True
                ):
                    assert whole >= slow


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
        },
        "budget": budget,
        "batch": budget,
        "choice": {"instances": [{"threads": 1, "batch": 1}] * budget, "is_fat": False},
        "placements": {},
    }
    result = packing_run.run(job, tmp_path / "out.json", tmp_path / "logs", 300)
    assert result["status"] == "ok", result.get("failure")
    rec = result["runs"]["plan"][0]
    assert len(rec["instances"]) == budget
    assert sorted(c for i in rec["instances"] for c in i["plan"]["cpus"]) == sorted(
        c for p in placement.pack(TOPO, [budget], budget) for c in p.cpus
    )
    assert all(i["verification"]["ok"] for i in rec["instances"])
    # a placement planned for another machine is refused before anything runs
    wrong = {**job, "placements": {"plan": [{"cpus": [999]}]}}
    result = packing_run.run(wrong, tmp_path / "wrong.json", tmp_path / "logs", 300)
    assert result["status"] == "failed" and result["failure"]["cause"] == "plan-mismatch"


def test_a_group_beside_a_busy_loop_is_measured_again_and_flagged(tmp_path):
    """A real busy loop pinned to the core of a 1-thread fat instance: every round shares that
    core, so the group is contended, measured again after the back-off with new processes, and
    kept flagged, with the earlier attempt summarised (issue 10's rule, applied to groups)."""
    cpu = placement.pack(TOPO, [1], 1)[0].cpus[0]
    hog = subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c", "while True: pass"])
    try:
        job = {
            "model": "resnet18",
            "opt": "none",
            "image_size": 224,  # rounds of tens of ms: each spans many scheduler slices
            "use_smt": False,
            "replicates": 1,
            "settings": {
                "warmup": 1,
                "min_iterations": 3,
                "max_iterations": 6,
                "max_seconds_per_cell": 2,
                "contended_retries": 1,
                "contended_backoff_s": 0.1,
            },
            "budget": 1,
            "batch": 1,
            "choice": {"instances": [{"threads": 1, "batch": 1}], "is_fat": True},
            "placements": {},
        }
        result = packing_run.run(job, tmp_path / "out.json", tmp_path / "logs", 300)
    finally:
        hog.kill()
        hog.wait()
    assert result["status"] == "ok", result.get("failure")
    rec = result["runs"]["fat"][0]
    assert rec["instances"][0]["plan"]["cpus"] == [cpu]
    assert rec["contended"] is True
    assert len(rec["attempts"]) == 1 and rec["attempts"][0]["backoff_s"] == 0.1
    assert rec["attempts"][0]["foreign_pct_median"] > 10  # the hog's share of the core
    assert rec["started_at"] > rec["attempts"][0]["started_at"]  # a new group, measured later
    assert sorted((tmp_path / "logs").glob("fat-r1-i0.log"))  # one log per instance
