"""The deploy job in blocks of ABBA slices (numa_effects.measure.slicer, measure.deploy.run):
real pinned processes (resnet18 at 32 x 32, batch 1, one thread, eager and scripted) on a CPU the
project's planner picks for this machine, checked against the design's own definitions: one
record per configuration and block, the block value the geometric mean of the slice medians
(recomputed from the record's steps), the slices in the ABBA order of plan.slices."""

from __future__ import annotations

import itertools
import math
import statistics

import pytest

from numa_effects.analysis import deploy_plan
from numa_effects.measure import deploy, record
from numa_effects.plan import slices, topology
from numa_effects.plan.optimizations import EAGER
from numa_effects.plan.settings import DEFAULTS
from numa_effects.tables import deploy as deploy_table


def tiny_plan() -> dict:
    """Two configurations, eager and scripted, of one instance on one CPU placed here."""
    topo = topology.current()
    node = deploy_plan.node_caps(topo, False)[0][0]
    placed = deploy_plan.place(topo, [(1, 1, node)], False)
    assert not isinstance(placed, str), placed
    configs = {
        cid: deploy_plan.Config("resnet18", opt, "default", placed).to_dict(topo)
        for cid, opt in (("c1", EAGER), ("c2", "script"))
    }
    row = {"objective": "latency", "batch": 1, "name": "latency b1", "model": "resnet18"}
    pred = {"predicted": 1e-3, "predicted_low": 1e-3, "predicted_high": 1e-3}
    cands = [{"config": c} | pred for c in configs]
    return {"objectives": [row | {"candidates": cands, "baselines": []}], "configurations": configs}


def tiny_job(tmp_path) -> dict:
    settings = {**DEFAULTS, "seed": 0, "warmup": 1, "max_seconds_per_cell": 0.4}
    return {
        "image_size": 32,
        "settings": settings,
        **{"rounds": 2, "max_rounds": 2, "target_pct": 0.0, "code": None, "slice_s": 0.05},
        **{"compile_cache_opts": [], "compile_cache_dir": str(tmp_path / "cache")},
    }


def slice_medians(xs: list[float], cuts: list[int]) -> list[float]:
    bounds = [0, *[sum(cuts[: k + 1]) for k in range(len(cuts))]]
    return [statistics.median(xs[a:b]) for a, b in itertools.pairwise(bounds)]


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


@pytest.mark.integration
def test_a_block_measures_warm_configurations_in_abba_slices(tmp_path):
    plan = tiny_plan()
    out = tmp_path / "run.json"
    rec = deploy.run(tiny_job(tmp_path), plan, out, tmp_path / "logs" / "run.log", 300.0)
    assert rec.status == "ok", rec.failure
    assert rec.job["design"] == "slices" and record.read_group(out).runs.keys() == {"c1", "c2"}
    assert {c: [r.replicate for r in recs] for c, recs in rec.runs.items()} == {
        "c1": [1, 2],
        "c2": [1, 2],
    }
    for b in (1, 2):
        starts = []  # (first step's t0, configuration) of every slice of the block
        for cid in ("c1", "c2"):
            r = rec.runs[cid][b - 1]
            m, cuts = r.measurement, r.measurement["slice_steps"]
            assert r.status == "ok" and r.verification["ok"]
            assert len(m["latencies_s"]) == sum(cuts) == len(m["t0_s"])
            want = geomean(slice_medians(m["latencies_s"], cuts))
            assert r.stats["median_s"] == pytest.approx(want, rel=1e-12)
            (inst,) = r.instances
            own = geomean(slice_medians(inst["latencies_s"], cuts))
            assert inst["stats"]["median_s"] == pytest.approx(own, rel=1e-12)
            first = [sum(cuts[:k]) for k in range(len(cuts))]
            starts += [(m["t0_s"][k], cid) for k in first]
        cycles = rec.runs["c1"][b - 1].measurement["cycles"]
        assert cycles >= 2 and cycles % 2 == 0
        assert [c for _, c in sorted(starts)] == slices.order(["c1", "c2"], cycles)
    table = deploy_table.table(plan, rec)
    assert (table["role"] == "recommended").sum() == 1
    assert set(table[table["role"] != "factor"]["rounds"]) == {2}
    assert deploy.round_seconds(rec.runs) > 0


def test_all_configurations_at_once_unless_their_memory_exceeds_the_share():
    names = ["a", "b", "c"]
    avail = deploy.available_mb()
    assert deploy.halves(names, None) == ([names], None)
    if avail is None:
        pytest.skip("no /proc/meminfo")
    fits = {n: 0.25 * avail for n in names}  # 75 % of MemAvailable
    assert deploy.halves(names, fits) == ([names], None)
    over = {n: 0.3 * avail for n in names}  # 90 %
    parts, said = deploy.halves(names, over)
    assert parts == [["a"], ["b", "c"]] and "two halves" in said


def test_the_expected_rss_is_the_largest_of_the_same_model_opt_and_batch(tmp_path):
    cells = tmp_path / "cells.csv"
    cells.write_text(
        "model,opt,batch_size,peak_rss_mb\n"
        "resnet18,none,1,300\nresnet18,none,1,350\nresnet18,none,2,400\nresnet18,script,1,\n"
    )
    inst = {"batch": 1}
    confs = {"x": {"model": "resnet18", "opt": "none", "instances": [inst, inst]}}
    assert deploy.expected_rss_mb(confs, cells) == {"x": 700.0}  # 2 x the larger 350
    confs["y"] = {"model": "resnet18", "opt": "script", "instances": [inst]}
    assert deploy.expected_rss_mb(confs, cells) is None  # no peak RSS of script: not checked
    assert deploy.expected_rss_mb(confs, tmp_path / "none.csv") is None
