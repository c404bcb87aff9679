"""The packing optimizer (numa_effects.packing): the dynamic programme against brute-force
enumeration on random tables, hand-checked cases, core budgets on captured/reconstructed
topologies, and PackRat's published CloudLab table as a realistic input."""

import json
import math
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_packrat import PACKRAT
from test_topology import FIXTURES, load

from numa_effects import packing, packing_table, packrat, placement
from numa_effects.packing import Instance


def check(choice, table, budget, total):
    """Every chosen configuration is one the rules allow, predicted from measured points."""
    assert choice.cores <= budget
    assert sum(i.batch for i in choice.instances) == total
    for i in choice.instances:
        assert table[(i.threads, i.batch)] == i.latency_s
    assert choice.latency_s == max(i.latency_s for i in choice.instances)


# -- dynamic programme == brute force ------------------------------------------------------------
@pytest.mark.parametrize("seed", range(8))
def test_dp_matches_brute_force_on_random_tables(seed):
    rng = random.Random(seed)
    threads = range(1, rng.randint(2, 5) + 1)
    batches = sorted(rng.sample([1, 2, 3, 4, 6, 8], rng.randint(2, 5)))
    # integer latencies: many ties, so the tie-break (fewest instances, then cores) is exercised
    table = {
        (t, b): float(rng.randint(1, 12))
        for t in threads
        for b in batches
        if rng.random() > 0.2  # some points missing, as failed cells are
    }
    compared = 0
    for budget in range(1, max(threads) + 2):
        for total in range(1, 11):
            got = packing.optimize(table, budget, total)
            want = packing.brute_force(table, budget, total)
            if want is None:
                assert got is None
                continue
            check(got, table, budget, total)
            assert (got.latency_s, got.k, got.cores) == want
            compared += 1
    assert compared > 0


# -- hand-checked --------------------------------------------------------------------------------
def test_two_small_instances_beat_the_fat_one():
    # two 1-thread instances of 1 image (0.9 s each, concurrently) vs one 2-thread instance of 2
    table = {(1, 1): 0.9, (2, 1): 0.6, (1, 2): 1.8, (2, 2): 1.0}
    c = packing.optimize(table, 2, 2)
    assert c.instances == (Instance(1, 1, 0.9), Instance(1, 1, 0.9))
    assert c.latency_s == 0.9 and c.fat_latency_s == 1.0
    assert c.speedup == pytest.approx(1.0 / 0.9)
    assert c.label() == "2x(t1,b1)" and not c.is_fat


def test_tie_goes_to_fewer_instances():
    table = {(1, 1): 1.0, (2, 1): 0.6, (1, 2): 1.8, (2, 2): 1.0}
    c = packing.optimize(table, 2, 2)
    assert c.instances == (Instance(2, 2, 1.0),) and c.is_fat and c.speedup == 1.0


def test_unequal_split():
    # 3 images on 3 cores: 3 x (t1,b1) and (t2,b2) + (t1,b1) both take 1.0 s; the latter has
    # fewer instances. The fat instance takes 1.5 s.
    table = {(1, 1): 1.0, (2, 2): 0.8, (3, 3): 1.5, (1, 3): 3.0}
    c = packing.optimize(table, 3, 3)
    assert c.instances == (Instance(2, 2, 0.8), Instance(1, 1, 1.0))
    assert c.latency_s == 1.0 and c.speedup == pytest.approx(1.5)
    assert c.label() == "1x(t2,b2) + 1x(t1,b1)"


def test_budget_limits_instances_and_missing_fat_is_nan():
    table = {(1, 1): 1.0, (1, 2): 1.9}
    c = packing.optimize(table, 1, 2)
    assert c.instances == (Instance(1, 2, 1.9),)  # one core: no room for two instances
    c = packing.optimize(table, 4, 2)
    assert c.instances == (Instance(1, 1, 1.0),) * 2
    assert math.isnan(c.fat_latency_s) and math.isnan(c.speedup)  # L(4, 2) not measured


def test_no_configuration_of_measured_points():
    assert packing.optimize({(1, 2): 1.0, (2, 4): 1.5}, 2, 3) is None


def test_latency_table_and_missing_points_from_cells_csv():
    cells = pd.DataFrame(
        [
            ("m", "none", "sequential", 1, 1, "ok", 10.0),
            ("m", "none", "sequential", 1, 2, "ok", 19.0),
            ("m", "none", "sequential", 2, 2, "failed", None),  # failed: missing, not 0
            ("m", "none", "interleave", 2, 1, "ok", 1.0),  # not the baseline placement
            ("m", "script", "sequential", 2, 1, "ok", 1.0),  # another optimization
        ],
        columns=[*packrat.KEYS, "status", "latency_median_ms"],
    )
    table = packing.latency_table(cells, "m", "none")
    assert table == {(1, 1): 0.010, (1, 2): 0.019}
    assert packing.missing_points(table, [1, 2], [1, 2]) == [(2, 1), (2, 2)]
    rows = packing.choices(cells, "m", "none", [2], [1, 2, 5], [1, 2])
    assert [r["label"] for r in rows[:2]] == ["1x(t1,b1)", "2x(t1,b1)"]
    assert rows[2]["instances"] == [] and "5 images" in rows[2]["reason"]
    assert rows[0]["missing"] == [[1, 5], [2, 1], [2, 2], [2, 5]]  # the grid has batch 5
    back = packing.Choice.from_dict(rows[1])
    assert back.label() == rows[1]["label"] and back.latency_s == rows[1]["latency_s"]
    assert back.instances == (Instance(1, 1, 0.010),) * 2 and back.missing[1:3] == ((2, 1), (2, 2))


# -- budgets on topologies -------------------------------------------------------------------------
def test_budgets_on_2x16_and_the_one_node_vm():
    assert packing.budgets(load("2x16-nosmt-alternating")) == {16: ["node"], 32: ["all"]}
    assert packing.budgets(load("2x18-smt-offset36"), use_smt=True) == {36: ["node"], 72: ["all"]}
    # one node: both budgets are the same cores, so one budget
    assert packing.budgets(load("host-1node-kvm")) == {2: ["node", "all"]}
    assert packing.budgets(load("host-1node-kvm"), ["node", 1]) == {1: ["1"], 2: ["node"]}


# -- PackRat's CloudLab table (2 x 16 cores, t = 1..16, B = 1..1024) ----------------------------
@pytest.fixture(scope="module")
def cloudlab():
    folder = PACKRAT / "cloudlab_large-batches"
    if not folder.is_dir():
        pytest.skip(f"PackRat reference data not found at {folder}")
    return packrat.cells_table([folder])


def test_packrat_cloudlab_plans(cloudlab):
    topo = load("2x16-nosmt-alternating")
    budgets = packing.budgets(topo)
    batches = sorted(cloudlab["batch_size"].unique())
    # PackRat has no median: the mean is used, read back from the CSV's latency(avg)
    assert packing.statistic(cloudlab) == "latency_mean_ms"
    for opt in ("none", "script"):
        table = packing.latency_table(cloudlab, "resnet50", opt)
        assert len(table) == 16 * len(batches)
        for budget in budgets:
            for total in batches:
                c = packing.optimize(table, budget, total)
                check(c, table, budget, total)
                if budget == 16:
                    # the fat instance is a candidate: the plan is never predicted slower
                    assert c.latency_s <= c.fat_latency_s
                    # the paper's claim, in this table's terms: several instances win for B >= 2
                    assert total < 2 or (c.k > 1 and c.speedup > 1.0)
                else:
                    # 32 cores: no cell had 32 threads, and no instance straddles two nodes
                    assert math.isnan(c.fat_latency_s)
                    assert max(i.threads for i in c.instances) <= 16
                if total <= 8:
                    assert (c.latency_s, c.k, c.cores) == packing.brute_force(table, budget, total)


# -- disjoint core sets for concurrent instances (placement.pack) ----------------------------------
def cpus_of(plans):
    return [p.cpus for p in plans]


def test_pack_on_2x16():
    topo = load("2x16-nosmt-alternating")  # node 0: even CPUs, node 1: odd CPUs
    even, odd = tuple(range(0, 32, 2)), tuple(range(1, 32, 2))
    # budget = one node: every instance on node 0, best fit, in the order asked for
    plans = placement.pack(topo, [4, 8, 4], 16)
    assert cpus_of(plans) == [even[8:12], even[:8], even[12:]]
    assert all(p.mem_nodes == (0,) and p.mem_policy == "bind" for p in plans)
    # budget = all cores: two 16-thread instances, one per node, never straddling
    plans = placement.pack(topo, [16, 16], 32)
    assert cpus_of(plans) == [even, odd] and [p.mem_nodes for p in plans] == [(0,), (1,)]
    # four 8-thread instances: two per node
    plans = placement.pack(topo, [8] * 4, 32)
    assert [p.cpu_nodes for p in plans] == [(0,), (0,), (1,), (1,)]
    # an instance larger than a node must straddle; the others stay on one node
    plans = placement.pack(topo, [4, 20], 32)
    assert plans[1].cpu_nodes == (0, 1) and plans[1].mem_nodes == (0, 1)
    assert plans[0].cpu_nodes == (1,)
    assert isinstance(placement.pack(topo, [16, 1], 16), placement.NotApplicable)
    assert isinstance(placement.pack(topo, [1], 33), placement.NotApplicable)


def test_pack_on_the_2_node_test_guest():
    topo = load("qemu-2node-test-guest")  # node 0: CPUs 0-1, node 1: CPUs 2-3
    plans = placement.pack(topo, [2, 2], 4)
    assert [(p.cpus, p.mem_nodes) for p in plans] == [((0, 1), (0,)), ((2, 3), (1,))]
    plans = placement.pack(topo, [3, 1], 4)  # 3 threads cannot fit a 2-core node
    assert [(p.cpus, p.mem_nodes) for p in plans] == [((0, 1, 2), (0, 1)), ((3,), (1,))]
    assert [p.cpus for p in placement.pack(topo, [1, 1], 2)] == [(0,), (1,)]  # budget: node 0


@pytest.mark.parametrize("name", FIXTURES)
def test_pack_is_disjoint_on_every_fixture(name):
    topo = load(name)
    rng = random.Random(name)
    for budget in packing.budgets(topo):
        for _ in range(20):
            threads = []
            while sum(threads) < budget and rng.random() < 0.8:
                threads.append(rng.randint(1, budget - sum(threads)))
            plans = placement.pack(topo, threads, budget)
            used = [c for p in plans for c in p.cpus]
            assert len(used) == len(set(used)) == sum(threads)  # no CPU shared
            assert [p.threads for p in plans] == threads
            assert all(topo.cpu(c).primary for c in used)  # physical cores only
            # within the budget's cores: the first `budget` cores in sequential order
            order = [c for n in topo.nodes for c in topo.node_cpus(n)]
            assert set(used) <= set(order[:budget])
            for p in plans:
                assert p.mem_nodes == p.cpu_nodes
                if p.threads <= min(topo.cores_per_node().values()) and len(plans) == 1:
                    assert len(p.cpu_nodes) == 1  # a lone instance that fits a node stays on it


# -- tables/packing.csv and the report's figures, from a captured run (tests/fixtures/packing) --
PACK_FIX = Path(__file__).parent / "fixtures" / "packing"


def captured():
    plans = [json.loads((PACK_FIX / "resnet18/none/plans.json").read_text())]
    results = {}
    for path in sorted((PACK_FIX / "resnet18/none").glob("c*/bs*.json")):
        r = json.loads(path.read_text())
        j = r["job"]
        results[(j["model"], j["opt"], j["budget"], j["batch"])] = r
    return plans, results


def test_packing_table_rebuilt_from_the_captured_jsons():
    plans, results = captured()
    df = packing_table.table(plans, results, {2: ["node", "all"]})
    want = pd.read_csv(PACK_FIX / "packing.csv")
    assert list(df.columns) == list(want.columns) == packing_table.COLUMNS
    for col in ("plan", "instances", "core_map", "status"):
        assert list(df[col]) == list(want[col])
    for col in ("latency_ms", "fat_latency_ms", "predicted_latency_ms", "speedup"):
        assert np.allclose(df[col], want[col])
    for r in df.itertuples():
        run = results[("resnet18", "none", r.budget, r.batch_size)]
        rounds = [
            x
            for rec in run["runs"].get("plan", run["runs"]["fat"])
            for x in rec["measurement"]["latencies_s"]
        ]
        assert r.latency_ms == pytest.approx(np.median(rounds) * 1e3)
        assert r.prediction_error == pytest.approx(r.latency_ms / r.predicted_latency_ms - 1)
        assert r.speedup_ci_low <= r.speedup <= r.speedup_ci_high
    # a failed job and a job never measured are rows that say so
    key = ("resnet18", "none", 2, 4)
    failed = {**results[key], "status": "failed", "failure": {"cause": "timeout", "message": "x"}}
    df = packing_table.table(plans, {**results, key: failed})
    row = df[df["batch_size"] == 4].iloc[0]
    assert (
        row["status"] == "failed" and row["failure"] == "timeout: x" and np.isnan(row["latency_ms"])
    )
    df = packing_table.table(plans, {})
    assert set(df["status"]) == {"not-measured"} and df["predicted_latency_ms"].notna().all()
    # rounds the contention probe excluded are left out of the statistics
    key1 = ("resnet18", "none", 2, 1)
    run = results[key1]
    rec = run["runs"]["plan"][0]
    n = len(rec["measurement"]["latencies_s"])
    excluded = [i % 2 == 1 for i in range(n)]
    rec = {**rec, "measurement": {**rec["measurement"], "excluded": excluded}}
    clean = [x for x, e in zip(rec["measurement"]["latencies_s"], excluded, strict=True) if not e]
    assert packing_table.clean_rounds(rec) == clean
    df = packing_table.table(
        plans, {**results, key1: {**run, "runs": {**run["runs"], "plan": [rec]}}}
    )
    got = df[df["batch_size"] == 1].iloc[0]
    assert got["latency_ms"] == pytest.approx(np.median(clean) * 1e3) and got["rounds"] == len(
        clean
    )
    # two replicates: the two-level CI of stats.combine_replicates
    two = {**run, "runs": {"fat": run["runs"]["fat"] * 2, "plan": run["runs"]["plan"] * 2}}
    got = packing_table.table(plans, {key1: two}).iloc[0]
    assert got["ci_method"] == "two-level" and got["replicates"] == 2
    s = packing_table.benchmark_summary(pd.read_csv(PACK_FIX / "packing.csv"))
    assert s["measured"] == 3 and s["within"] == 1  # -48 %, -7 %, +27 % on the loaded machine


def test_packing_figures_draw_every_budget_and_instance():
    from matplotlib.collections import PathCollection

    from numa_effects import figure_data, figures, plots

    tables = figure_data.Tables(
        pd.DataFrame(), pd.DataFrame(), None, pd.read_csv(PACK_FIX / "packing.csv")
    )
    assert {f.name for f in figures.FAMILIES if f.section == "packing"} == {
        "packing_latency",
        "packing_core_map",
    }
    fig = plots.draw("packing_latency", tables, {"model": "resnet18", "opt": "none"})
    (ax,) = fig.axes  # one budget on the captured 1-node machine
    assert len(ax.get_legend().get_texts()) == 3  # fat, predicted, measured
    # the captured groups were all contended: drawn hollow (fat and plan at 3 batch sizes)
    hollow = [
        c
        for c in ax.collections
        if isinstance(c, PathCollection) and (c.get_facecolor() == (1, 1, 1, 1)).all()
    ]
    assert sum(len(c.get_offsets()) for c in hollow) == 6 and "contended" in fig.get_suptitle()
    assert sorted(t.get_text().split("\n")[0] for t in ax.texts) == [
        "1x(t1,b1)",
        "1x(t1,b4)",
        "2x(t1,b4)",
    ]
    fig = plots.draw("packing_core_map", tables, {"model": "resnet18", "opt": "none"})
    # one box per (row, CPU of an instance): 1 + 1 + 2
    assert len(fig.axes[0].patches) == 4
    # without the packing config the registry plans no Packing figure
    assert figures.plan_packing([{"model": "m"}]) == []
