"""``numa-effects loadtest`` (numa_effects.loadtest): the deploy answer driven by MLPerf's
LoadGen. The bisection and the choice of the baseline are checked against hand-derived truths;
the integration test runs real LoadGen against real pinned instances (resnet18, batch 1, one
thread) of a deploy plan made by the project's planner for this machine's topology."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from numa_effects import loadtest
from numa_effects.analysis import deploy_plan
from numa_effects.plan import paths, topology
from numa_effects.plan.optimizations import EAGER
from numa_effects.report import loadtest_plots
from numa_effects.tables import deploy as deploy_table

FIXTURE = Path(__file__).parent / "fixtures" / "deploy"


def results_of(folder: Path, plan: dict, table: pd.DataFrame) -> Path:
    """A results folder holding a deploy answer where a run writes it."""
    (folder / paths.DEPLOY_PLAN).parent.mkdir(parents=True, exist_ok=True)
    (folder / paths.DEPLOY_PLAN).write_text(json.dumps(plan))
    (folder / "tables").mkdir(exist_ok=True)
    table.to_csv(folder / paths.table("recommendation"), index=False)
    return folder


def test_the_strongest_baseline_is_the_one_the_recommendation_gains_least_over(tmp_path):
    """The fixture's throughput row: the recommendation (c7) is 5.35x all-cores, 2.91x mlperf
    and 3.06x packrat (its gain column), so mlperf (c8) is the strongest baseline."""
    plan = json.loads((FIXTURE / "plan.json").read_text())
    results = results_of(tmp_path, plan, pd.read_csv(FIXTURE / "recommendation.csv"))
    rec, _ = loadtest.pick(results, "throughput", "recommended")
    base, conf = loadtest.pick(results, "throughput", "baseline")
    assert rec["config"] == "c7"
    assert base["config"] == "c8" and conf["allocator"] == "jemalloc"
    with pytest.raises(loadtest.LoadtestError, match="latency b1"):
        loadtest.pick(results, "latency b2", "recommended")


def test_the_bisection_finds_the_highest_rate_under_the_bound():
    """A simulated server meets the bound up to 37 queries/s. Bisection in (0, 100] over 5
    runs tries 50 (no), 25 (yes), 37.5 (no), 31.25 (yes), 34.375 (yes): found 34.375, within
    100 / 2**5 of the truth and never above it."""
    tried = []

    def serve(rate):
        tried.append(rate)
        return {"target_qps": rate, "meets_bound": rate <= 37.0}

    rows = loadtest.bisect(serve, 100.0, 50.0, runs=5)
    assert tried == [50.0, 25.0, 37.5, 31.25, 34.375]
    found = [r for r in rows if r["found"]]
    assert [r["target_qps"] for r in found] == [34.375]
    assert 37.0 - 100 / 2**5 <= found[0]["target_qps"] <= 37.0
    # nothing meets the bound: nothing is found
    assert not any(r["found"] for r in loadtest.bisect(lambda r: serve(r + 100), 100.0, 1.0, 3))


def tiny_results(folder: Path) -> Path:
    """A deploy answer of one configuration placed by the planner on this machine: one
    instance of resnet18, one thread, batch 1, as the throughput recommendation (predicted)."""
    topo = topology.current()
    node = deploy_plan.node_caps(topo, False)[0][0]
    placed = deploy_plan.place(topo, [(1, 1, node)], False)
    assert not isinstance(placed, str), placed
    config = deploy_plan.Config("resnet18", EAGER, "default", placed)
    row = {"objective": "throughput", "batch": None, "name": "throughput", "model": "resnet18"}
    cand = {"config": "c1", "predicted": 30.0, "predicted_low": 20.0, "predicted_high": 40.0}
    plan = {"objectives": [row | {"candidates": [cand], "baselines": []}]}
    plan["configurations"] = {"c1": config.to_dict(topo)}
    return results_of(folder, plan, deploy_table.table(plan, None))


@pytest.mark.integration
def test_loadgen_drives_the_recommendation(tmp_path):
    results = tiny_results(tmp_path)
    argv = ["--results", str(results), "--role", "recommended", "--min-duration-s", "2"]
    assert loadtest.main([*argv, "--min-queries", "20", "--server-runs", "3"]) == 0
    table = pd.read_csv(results / loadtest.TABLE)
    off = table[table["scenario"] == loadtest.OFFLINE].iloc[0]
    assert off["achieved"] > 0 and off["configuration"] == "c1"
    summary = (Path(off["logs"]) / "mlperf_log_summary.txt").read_text()
    said = re.search(r"^Result is : (VALID|INVALID)$", summary, re.M)
    assert said and said.group(1) == off["valid"]
    server = table[table["scenario"] == loadtest.SERVER]
    assert len(server) == 3
    found = server[server["found"]]
    assert len(found) == 1, server  # resnet18 at one image meets 3x its own latency at some rate
    f = found.iloc[0]
    # LoadGen's own p99 of that run, read from its summary, within the bound
    text = (Path(f["logs"]) / "mlperf_log_summary.txt").read_text()
    p99_ms = int(re.search(r"^99\.00 percentile latency \(ns\)\s*:\s*(\d+)", text, re.M)[1]) / 1e6
    assert p99_ms <= f["bound_ms"] and f["target_qps"] <= off["achieved"]
    assert (server[~server["meets_bound"]]["target_qps"] > f["target_qps"]).all()
    prov = json.loads((results / "loadtest" / "recommended" / "provenance.json").read_text())
    assert prov["versions"]["mlcommons-loadgen"] and len(prov["loadavg_before"]) == 3
    # its figure beside LoadGen's logs (make loadtest's second step): one per (model, objective)
    assert loadtest_plots.main([str(results)]) == 0
    drawn = results / "loadtest" / "latency-throughput-resnet18-throughput.png"
    assert drawn.stat().st_size > 0


def test_the_default_bound_is_three_times_the_deploy_runs_tail():
    """No --bound-ms, no config: 3 x the tail recommendation.csv gives (40 ms -> 120 ms); a
    row without one: 3 x the warm step measured here (10 ms -> 30 ms)."""
    args = loadtest.parser().parse_args([])
    row = pd.Series({"tail_ms": 40.0, "tail_kind": "p99"})
    assert loadtest.bound_of(args, row, 0.01) == (120.0, "3 x the deploy run's p99")
    bound, said = loadtest.bound_of(args, pd.Series({"tail_ms": float("nan")}), 0.01)
    assert bound == pytest.approx(30.0) and said == "3 x the warm step measured here"
