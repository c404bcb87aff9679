"""The interference model (numa_effects.analysis.interference) and the optimizer that uses
it (planner_mod.Planner): the fit and the prediction interval validated by simulation against known
truth (and the naive intervals shown to fail the same check), the optimizer against brute-force
enumeration of every configuration and node assignment, the profile table built from records,
and the model validated on PackRat's own interference data: fitted on k <= 8 concurrent
instances, it predicts k = 10 ... 16."""

import math
import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_packrat import PACKRAT
from test_topology import load

from numa_effects import stats
from numa_effects.analysis import interference, packing
from numa_effects.analysis import planner as planner_mod
from numa_effects.measure import record
from numa_effects.plan import packing as packing_jobs
from numa_effects.plan import placement
from numa_effects.plan import spec as spec_mod
from numa_effects.tables import interference as profile
from numa_effects.tables import packrat, tidy


def brute_force_nodes(table: dict, caps, total: int, curve=None, min_instances: int = 1):
    """(latency, instances, cores) of the best configuration with interference by enumerating
    every multiset of measured points and every assignment of its instances to the budget's
    nodes (an instance wider than every node only alone); exponential, for tests."""
    curve = curve or interference.NONE
    caps = tuple(caps)
    budget = sum(caps)
    points = packing.measured_points(table, budget, total)
    best = None

    def consider(lat, k, cores):
        nonlocal best
        if k >= min_instances and (best is None or (lat, k, cores) < best):
            best = (lat, k, cores)

    def finish(chosen, j=0, nodes=()):
        """Every assignment of the chosen instances to nodes that fits the nodes' cores."""
        if j == len(chosen):
            used = [0] * len(caps)
            for (t, _, _), v in zip(chosen, nodes, strict=True):
                used[v] += t
            if all(u <= c for u, c in zip(used, caps, strict=True)):
                lat = max(
                    a * curve.s(used[v] - t) for (t, _, a), v in zip(chosen, nodes, strict=True)
                )
                consider(lat, len(chosen), sum(used))
            return
        for v in range(len(caps)):
            finish(chosen, j + 1, (*nodes, v))

    def walk(start, cores, images, chosen):
        if images == total:
            finish(chosen)
            return
        for i in range(start, len(points)):
            t, b, lat = points[i]
            if t <= max(caps) and cores + t <= budget and images + b <= total:
                walk(i, cores + t, images + b, [*chosen, (t, b, lat)])

    walk(0, 0, 0, [])
    for t, b, lat in points:  # wider than every node: alone only
        if t > max(caps) and b == total:
            consider(lat, 1, t)
    return best


def holdout(points: list, fit_on, weighted: bool = True) -> list[dict]:
    """Fit on the points for which ``fit_on(point)`` is true and predict the others: one dict
    per held-out point with ``x``, ``k``, ``measured``, ``predicted`` and ``error`` =
    predicted / measured - 1 (of the slowdown, hence of the latency: the same alone latency
    multiplies both)."""
    train = [p for p in points if fit_on(p)]
    curve = interference.fit(train, weighted=weighted)
    out = []
    for p in points:
        if fit_on(p):
            continue
        pred = curve.s(p.x)
        out.append(
            {
                "x": p.x,
                "k": p.k,
                "threads": p.threads,
                "measured": p.slowdown,
                "predicted": pred,
                "error": pred / p.slowdown - 1.0,
                "curve": curve,
            }
        )
    return out


INTERFERENCE = PACKRAT / "cloudlab_multiinstance-interference"


# -- the curve ---------------------------------------------------------------------------------
def test_curve_fit_on_exact_points_and_its_edges():
    pts = [interference.Point(x, 1 + 0.01 * x**2, k=x + 1) for x in (1, 3, 5)]
    c = interference.fit(pts)
    assert c.beta == pytest.approx(0.01) and c.points == 3 and c.method == "unweighted"
    assert c.s(0) == 1.0 and c.s(10) == pytest.approx(2.0)
    assert c.se_beta == pytest.approx(0.0, abs=1e-12)
    assert interference.fit([]) is interference.NONE and interference.NONE.s(7) == 1.0
    # x = 0 (alone on its node while another node was busy) says nothing about beta
    assert interference.fit([interference.Point(0, 1.3)]) is interference.NONE
    # instances never speed each other up: a fit below 1 gives beta = 0
    assert interference.fit([interference.Point(1, 0.97, 0.95, 0.99, 4)]).beta == 0.0
    # one point with its CI: beta from it, its error from the CI (a 2-core machine's profile)
    one = interference.fit([interference.Point(1, 1.08, 1.04, 1.12, 3)])
    assert one.beta == pytest.approx(0.08) and one.df == 3 and one.method == "weighted"
    lo, hi = one.ci(1)
    assert lo == pytest.approx(1.04, rel=0.01) and hi == pytest.approx(1.12, rel=0.01)
    assert interference.Curve.from_dict(one.to_dict()) == one


def test_co_runners_are_the_other_cores_of_the_same_node():
    assert interference.co_runners([1, 1], [0, 0]) == [1, 1]
    assert interference.co_runners([4, 2, 2], [0, 0, 1]) == [2, 4, 0]


# -- simulation: the profile table, the fit and the plan's interval against known truth ----------
def rec(rounds_s: list[list[float]], nodes: list[int]) -> dict:
    """A measured group record as the front door writes it (the fields the tables read): one
    list of own round durations per instance; the round latency is their max."""
    per_round = [max(r) for r in zip(*rounds_s, strict=True)]
    return {
        "format": record.FORMAT,
        "workload": "model",
        "status": "ok",
        "cell": {},
        "measurement": {"latencies_s": per_round, "excluded": [False] * len(per_round)},
        "instances": [
            {"plan": {"cpu_nodes": [n], "cpu_list": str(j)}, "latencies_s": list(r)}
            for j, (r, n) in enumerate(zip(rounds_s, nodes, strict=True))
        ],
        "contention": {"contended": False},
    }


def group(d: dict) -> record.GroupRecord:
    """A group job's JSON as the tables read it."""
    return record.GroupRecord.from_json(d)


ROUND_SD = 0.01  # a round's own variation (log scale)
INSTANCE_SD = 0.003  # an instance's process beside the others of its group (PackRat: +-0.3 %)


def simulated_profile(rng, alone_s, beta, x_of_k, sigma_b, replicates=2, rounds=12):
    """A profile job's record: per replicate one instance alone and, for each k, k instances on
    node 0 whose true median is alone_s (1 + beta x^2); every process group's median moves by
    sigma_b (log scale), each instance of it by INSTANCE_SD more, every round by ROUND_SD."""

    def process(true, k):
        med = true * math.exp(rng.normal(0, sigma_b))
        return [
            list(
                med * math.exp(rng.normal(0, INSTANCE_SD)) * np.exp(rng.normal(0, ROUND_SD, rounds))
            )
            for _ in range(k)
        ]

    runs = {"k1": []} | {f"k{k}": [] for k in x_of_k}
    for _ in range(replicates):
        runs["k1"].append(rec(process(alone_s, 1), [0]))
        for k, x in x_of_k.items():
            runs[f"k{k}"].append(rec(process(alone_s * (1 + beta * x**2), k), [0] * k))
    job = {"model": "m", "opt": "none", "budget": 2, "threads": 1, "batch": 4}
    return group({"job": job | {"instances": list(x_of_k)}, "status": "ok", "runs": runs})


def round_max(k: int, n: int = 200_000) -> float:
    """The median of a round's latency (the slowest of k instances) over one instance's median:
    what a group adds to interference by waiting for its slowest instance. A plan of k
    instances has it too; the profile's s(k), measured per round, includes it."""
    r = np.random.default_rng(k)
    z = r.normal(0, INSTANCE_SD, (n, k)) + r.normal(0, ROUND_SD, (n, k))
    return float(np.median(np.exp(z.max(axis=1))) / np.median(np.exp(z[:, 0])))


def simulated_cells(rng, truth: dict, sigma_b, replicates=2):
    """cells.csv rows: each cell's replicates' medians vary by sigma_b; the two-level CI as the
    tables make it (stats.combine_replicates, pooled per thread count as tidy does)."""
    meds = {key: truth[key] * np.exp(rng.normal(0, sigma_b, replicates)) for key in truth}
    pools = {
        t: stats.pooled_replicate_var([m for (tt, _), m in meds.items() if tt == t])
        for t in {t for t, _ in truth}
    }
    rows = []
    for (t, b), m in meds.items():
        est = stats.combine_replicates(list(m), [], pools[t])
        rows.append(
            {
                "model": "m",
                "opt": "none",
                "placement": "sequential",
                "threads": t,
                "batch_size": b,
                "status": "ok",
                "latency_median_ms": est["median_s"] * 1e3,
                "latency_ci_low_ms": est["ci_low_s"] * 1e3,
                "latency_ci_high_ms": est["ci_high_s"] * 1e3,
                "ci_df": est["ci_df"],
            }
        )
    return pd.DataFrame(rows)


TRUTH = {(1, 1): 0.060, (1, 2): 0.110, (1, 4): 0.215, (2, 2): 0.130, (2, 4): 0.240}


@pytest.mark.parametrize(
    ("case", "x_of_k", "beta", "plan_k"),
    [("2 cores", {2: 1}, 0.088, 2), ("8-core node", {2: 1, 4: 3, 8: 7}, 0.004, 6)],
)
def test_prediction_interval_covers_the_true_plan_latency_and_the_naive_ones_do_not(
    case, x_of_k, beta, plan_k
):
    """400 simulated runs: cells (2 replicates, 3 % process-level SD, two-level CIs) and a
    profile measured by the real table code (2 replicates of alone and each group). The true
    latency of a plan of ``plan_k`` 1-thread instances is L(1, 4) (1 + beta x^2) times the
    wait for the slowest of them in each round (``round_max``). The interval of
    ``interference.predict`` covers it in >= 90 % of runs (nominal 95 %; on the 8-core node the
    plan's k = 6 was not profiled: the curve interpolates). The naive intervals fail the same
    check: the cell's CI times the fitted slowdown (the profile's uncertainty ignored) and the
    cell's CI alone (the prediction before the profile: biased by s(x))."""
    rng = np.random.default_rng(22)
    plan_x = plan_k - 1
    true_plan = TRUTH[(1, 4)] * (1 + beta * plan_x**2) * round_max(plan_k)
    # the curve the estimator should find: the groups' true slowdowns, round wait included
    exact = [interference.Point(x, (1 + beta * x**2) * round_max(k)) for k, x in x_of_k.items()]
    beta_eff = interference.fit(exact, weighted=False).beta
    hits = naive_scaled = naive_alone = 0
    betas = []
    n = 400
    for _ in range(n):
        cells = simulated_cells(rng, TRUTH, 0.03)
        table = profile.table([simulated_profile(rng, 0.215, beta, x_of_k, 0.03)])
        assert set(table["ci_method"]) == {"two-level"}
        curve = profile.curve(table, "m", "none")
        betas.append(curve.beta)
        alone = packing.alone_table(cells, "m", "none")[(1, 4)]
        pred = interference.predict([(alone, plan_x)] * plan_k, curve)
        hits += pred.ci_low_s <= true_plan <= pred.ci_high_s
        s = curve.s(plan_x)
        naive_scaled += alone.ci_low_s * s <= true_plan <= alone.ci_high_s * s
        naive_alone += alone.ci_low_s <= true_plan <= alone.ci_high_s
    print(f"{case}: coverage {hits / n:.3f}, cell CI x s {naive_scaled / n:.3f}, "
          f"cell CI alone {naive_alone / n:.3f}")  # fmt: skip
    assert abs(np.mean(betas) / beta_eff - 1) < 0.1, (case, np.mean(betas), beta_eff)
    assert hits / n >= 0.90, (case, hits / n)
    if len(x_of_k) == 1:  # one profile point: its uncertainty is as large as the cell's
        assert naive_scaled / n < 0.85, (case, naive_scaled / n)
    assert naive_alone / n < 0.5, (case, naive_alone / n)


def test_profile_rows_per_node_for_a_group_spanning_two_nodes():
    """Two instances per node on two nodes: one row per node, x = the other instance on its
    node; node 1's instances slower (an assumption the per-node rows would show false)."""
    r = np.random.default_rng(1)

    def process(true, nodes):
        return [list(true * np.exp(r.normal(0, 0.01, 10))) for _ in nodes], nodes

    runs = {"k1": [], "k4": []}
    for _ in range(2):
        runs["k1"].append(rec(*process(1.0, [0])))
        rounds, nodes = process(1.0, [0, 0, 1, 1])
        rounds[2] = [v * 1.2 for v in rounds[2]]
        rounds[3] = [v * 1.2 for v in rounds[3]]
        runs["k4"].append(rec(rounds, nodes))
    job = {"model": "m", "opt": "none", "budget": 4, "threads": 1, "batch": 1, "instances": [4]}
    df = profile.table([group({"job": job, "status": "ok", "runs": runs})])
    assert list(df["node"]) == ["0", "1"] and list(df["x"]) == [1, 1] and set(df["k_node"]) == {2}
    s0, s1 = df["slowdown"]
    assert s0 == pytest.approx(1.0, abs=0.03) and s1 == pytest.approx(1.2, abs=0.04)
    # a failed job is a row per group that says so
    failed = {"job": job, "status": "failed", "failure": {"cause": "timeout", "message": "x"}}
    assert list(profile.table([group(failed)])["status"]) == ["failed"]
    assert list(profile.table([group(failed)])["failure"]) == ["timeout: x"]


# -- the optimizer with interference == brute force ------------------------------------------------
@pytest.mark.parametrize("seed", range(10))
def test_planner_matches_brute_force_with_interference_on_one_two_three_nodes(seed):
    rng = random.Random(seed)
    threads = range(1, rng.randint(2, 4) + 1)
    batches = sorted(rng.sample([1, 2, 3, 4, 6, 8], rng.randint(2, 5)))
    table = {
        (t, b): float(rng.randint(1, 12)) for t in threads for b in batches if rng.random() > 0.2
    }
    curve = interference.Curve(beta=rng.choice([0.0, 0.02, 0.1, 0.5]))
    compared = 0
    for caps in [(1,), (2,), (3,), (4,), (2, 2), (3, 1), (2, 1, 1)]:
        planner = planner_mod.Planner(table, caps, curve, max_batch=10)
        for total in range(1, 11):
            for least in (1, 2):
                got = planner.optimize(total, min_instances=least)
                want = brute_force_nodes(table, caps, total, curve, least)
                if want is None:
                    assert got is None
                    continue
                assert (got.latency_s, got.k, got.cores) == want
                # the instances are where the prediction says, within every node's cores
                busy = got.busy
                assert all(b <= c for b, c in zip(busy, caps, strict=False))
                for i in got.instances:
                    x = busy[i.node] - i.threads if i.node >= 0 else 0
                    assert i.slowdown == pytest.approx(curve.s(x))
                assert got.latency_s == max(i.latency_s * i.slowdown for i in got.instances)
                compared += 1
                if curve.beta == 0 and len(caps) == 1:  # no interference: the old optimizer
                    old = packing.optimize(table, caps[0], total, min_instances=least)
                    assert (old.latency_s, old.k, old.cores) == want
    assert compared > 10


def test_interference_turns_the_split_into_the_fat_instance():
    # two 1-thread instances of 1 image (0.9 s alone) vs one 2-thread instance (1.0 s): alone,
    # the split wins; with 20 % slowdown beside a neighbour, the fat instance does
    table = {(1, 1): 0.9, (2, 1): 0.6, (1, 2): 1.8, (2, 2): 1.0}
    alone = planner_mod.Planner(table, [2], None, max_batch=2).optimize(2)
    assert alone.label() == "2x(t1,b1)" and alone.latency_s == 0.9
    planner = planner_mod.Planner(table, [2], interference.Curve(beta=0.2), max_batch=2)
    c = planner.optimize(2)
    assert c.is_fat and c.latency_s == 1.0
    # the candidates: the best of each instance count, best first
    cands = planner.candidates(2, 5)
    assert [x.label() for x in cands] == ["1x(t2,b2)", "2x(t1,b1)"]
    assert cands[1].latency_s == pytest.approx(1.08) and cands[1].alone_s == 0.9


def test_on_two_nodes_interference_spreads_the_instances_and_pack_follows():
    table = {(1, 1): 1.0, (2, 2): 1.6}
    planner = planner_mod.Planner(table, [2, 2], interference.Curve(beta=0.5), max_batch=2)
    c = planner.optimize(2)
    assert c.label() == "2x(t1,b1)" and c.latency_s == 1.0  # one per node: no neighbour
    assert sorted(i.node for i in c.instances) == [0, 1] and c.busy == (1, 1)
    # on one node of 2 cores the same two instances would be 1.5 s: the fat one (1.6 s) is next
    one = planner_mod.Planner(table, [2], interference.Curve(beta=0.5), max_batch=2).optimize(2)
    assert one.label() == "2x(t1,b1)" and one.latency_s == 1.5
    row = {
        "budget": 4,
        "batch": 2,
        "candidates": [c.to_dict()],
        "instances": c.to_dict()["instances"],
    }
    conf = packing_jobs.configurations(row)["plan"]
    topo = load("qemu-2node-test-guest")  # node 0: CPUs 0-1, node 1: CPUs 2-3
    got = spec_mod.plans_for(topo, 4, conf["instances"], False, conf["nodes"])
    assert sorted(p.cpu_nodes for p, _ in got) == [(0,), (1,)]
    # best fit alone would have put both on node 0
    assert [p.cpu_nodes for p in placement.pack(topo, [1, 1], 4)] == [(0,), (0,)]
    # a node that cannot hold its instance is refused
    assert isinstance(placement.pack(topo, [2, 1], 4, nodes=[0, 0]), placement.NotApplicable)


# -- the profile jobs the plan adds ----------------------------------------------------------------
def test_profile_jobs_on_the_2_core_machine_and_a_2x16_server():
    one = load("host-1node-kvm")
    cfg = {
        "models": ["resnet50"],
        "optimizations": ["none", "script"],
        "batch_sizes": [1, 4, 16],
        "placements": ["sequential"],
    }
    s = packing_jobs.settings(cfg, one, [1, 2])
    assert s["interference"]["batch"] == 4 and s["measure_plans"] == 2
    jobs = packing_jobs.interference_jobs(s)
    assert jobs == [
        {"model": "resnet50", "opt": "none", "budget": 2, "threads": 1, "instances": [2]}
    ]
    assert packing_jobs.profile_cost(s, 2) == {
        "jobs": 1,
        "configurations": 4,  # alone and the pair, 2 replicates
        "processes": 6,
        "max_timed_s": 40.0,
    }
    off = {**cfg, "packing": {"interference": {"enabled": False}}}
    assert packing_jobs.interference_jobs(packing_jobs.settings(off, one, [1, 2])) == []
    server = load("2x16-nosmt-alternating")
    s = packing_jobs.settings(cfg, server, list(range(1, 17)))
    got = {(j["budget"], j["threads"]): j["instances"] for j in packing_jobs.interference_jobs(s)}
    # one node: powers of two up to the node; all 32 cores: only the groups spanning both nodes
    assert got == {
        (16, 1): [2, 4, 8, 16],
        (16, 2): [2, 4, 8],
        (16, 4): [2, 4],
        (16, 8): [2],
        (32, 1): [32],
        (32, 2): [16],
        (32, 4): [8],
        (32, 8): [4],
        (32, 16): [2],
    }


# -- PackRat's own interference data ------------------------------------------------------------
@pytest.fixture(scope="module")
def packrat_profile():
    if not INTERFERENCE.is_dir():
        pytest.skip(f"PackRat reference data not found at {INTERFERENCE}")
    return packrat.interference_table(INTERFERENCE)


def test_packrat_multi_instance_import(packrat_profile):
    df = packrat_profile
    assert len(df) == 24  # 8 group sizes x (script/tcmalloc, eager/tcmalloc, eager/default)
    assert set(df["k"]) == {2, 4, 6, 8, 10, 12, 14, 16} and set(df["x"]) == set(range(1, 16, 2))
    assert set(zip(df["opt"], df["allocator"], strict=True)) == {
        ("script", "tcmalloc"),
        ("none", "tcmalloc"),
        ("none", "default"),
    }
    # k = 16 by hand from the CSV: the slowest of instances 1..16 over the solo run (id 0)
    raw = pd.read_csv(INTERFERENCE / "instances_vs_lat_tcmalloc_script_resnet_latency.csv")
    g = raw[raw["instances"] == 16]
    r = df[(df["opt"] == "script") & (df["k"] == 16)].iloc[0]
    solo = g[g["instance_id"] == 0]["latency(avg)"].iloc[0]
    assert r.alone_ms == solo
    assert r.latency_ms == g[g["instance_id"] > 0]["latency(avg)"].max()
    assert r.slowdown == pytest.approx(r.latency_ms / solo)
    assert "instances_vs_lat_tcmalloc_script_resnet_latency.csv:" in r.source_file
    assert df["slowdown_ci_low"].isna().all()  # PackRat kept no samples: no CI invented
    # the large-batches folders have no multi-instance CSV
    with pytest.raises(packrat.PackratError, match="no multi-instance"):
        packrat.interference_table(PACKRAT / "cloudlab_large-batches")


def test_packrat_interference_fit_on_k_up_to_8_predicts_k_10_to_16(packrat_profile):
    """The validation: on PackRat's CloudLab socket (1-thread batch-16 instances,
    tcmalloc) the curve fitted on k <= 8 predicts the slowdown -- hence the latency -- of
    k = 10, 12, 14, 16 within +-10 % (TorchScript: -2.6 ... +0.5 %; eager: -0.8 ... +2.4 %).
    The naive predictions fail: the alone latency (s = 1) is 11-22 % short, and a linear
    curve fitted on the same points up to 13 %."""
    df = packrat_profile
    for opt in ("script", "none"):
        sel = df[(df["opt"] == opt) & (df["allocator"] == "tcmalloc")]
        pts = profile.points(sel)
        held = holdout(pts, lambda p: p.k <= 8)
        assert [h["k"] for h in held] == [10, 12, 14, 16]
        errors = [h["error"] for h in held]
        assert max(abs(e) for e in errors) <= 0.10, (opt, errors)
        assert max(abs(e) for e in errors) <= 0.03, (opt, errors)  # what the docs quote
        alone = [1 / h["measured"] - 1 for h in held]
        assert min(alone) < -0.10, alone  # the alone prediction: beyond 10 % at k >= 10
        train = [p for p in pts if p.k <= 8]
        slope = sum(p.x * (p.slowdown - 1) for p in train) / sum(p.x**2 for p in train)
        linear = [(1 + slope * h["x"]) / h["measured"] - 1 for h in held]
        if opt == "script":  # the series
            assert min(linear) < -0.10, linear
    # with the default allocator the instances' spread is far larger (the issue says so): the
    # curve cannot follow k = 12 and 16, and this test says so instead of hiding it
    sel = df[(df["opt"] == "none") & (df["allocator"] == "default")]
    held = holdout(profile.points(sel), lambda p: p.k <= 8)
    assert max(abs(h["error"]) for h in held) > 0.10


def test_packrat_held_out_counts_fall_in_the_cross_validated_interval(packrat_profile):
    """Each co-runner count of PackRat's CloudLab profile (1-thread batch-16 instances,
    tcmalloc) left out in turn: the curve fitted on the other seven, its interval including
    its own leave-one-count-out error, covers the measured slowdown of the one left out. The
    interval of beta's error alone (the naive one) misses it for most counts: the model's
    error, not the scatter about it, is what a prediction lacks. A count beyond the fitted
    ones, or an instance wider than the profiled, says it is extrapolated."""
    for opt in ("script", "none"):
        sel = packrat_profile[
            (packrat_profile["opt"] == opt) & (packrat_profile["allocator"] == "tcmalloc")
        ]
        pts = profile.points(sel)
        assert sorted(p.x for p in pts) == list(range(1, 16, 2))
        naive_misses = []
        for held in pts:
            curve = interference.fit([p for p in pts if p.x != held.x])
            assert curve.cv_folds == 7 and curve.cv_se_ln > 0
            lo, hi = curve.ci(held.x)
            assert lo <= held.slowdown <= hi, (opt, held.x, lo, held.slowdown, hi)
            naive = replace(curve, cv_se_ln=0.0, cv_folds=0)
            nlo, nhi = naive.ci(held.x)
            assert hi - lo > nhi - nlo
            if not nlo <= held.slowdown <= nhi:
                naive_misses.append(held.x)
            beyond = held.x > max(p.x for p in pts if p.x != held.x)
            assert bool(curve.outside(held.x)) == beyond
        assert len(naive_misses) >= 4, (opt, naive_misses)
    curve = interference.fit(pts)
    assert curve.outside(8, threads=1) == ""
    assert "8-thread instances, profiled with 1-thread" in curve.outside(8, threads=8)
    # 2x(t8) on one 16-core node (each has 8 co-runner cores): said once, for the plan's notes
    said = interference.caveats(curve, [(8, 0), (8, 0)])
    assert len(said) == 1 and "8-thread" in said[0]
    assert interference.caveats(curve, [(8, 0), (8, 1)]) == []  # alone on its node: s = 1
    # one co-runner count: no check out of sample, and the prediction says so
    one = interference.fit([pts[0]])
    assert one.cv_folds == 0 and "no error out of sample" in one.outside(1)


def test_packrat_plans_with_the_fitted_interference(packrat_profile):
    """The eight CloudLab plans of the issue (the alone optimizer's on
    cloudlab_large-batches-tcmalloc, C = 16, B = 8 ... 1024): with the curve fitted on PackRat's
    interference data (every k) their predicted latency rises by +19.5 ... +30.4 %, mean
    +27.2 % (the issue: measured +21 ... +33 %, mean +28 %; the plans' own measurements are
    not in ../shared, so this is against the issue's summary), so their predicted speedups over
    the fat instance become 1.07-1.15 (PackRat measured 1.05-1.14; alone: 1.28-1.46). The
    optimizer with interference prefers fewer, wider instances (2 x (t8, B/2)), 1.16-1.22x."""
    folder = PACKRAT / "cloudlab_large-batches-tcmalloc"
    if not folder.is_dir():
        pytest.skip(f"{folder} not found")
    cells = packrat.cells_table([folder])
    # PackRat's allocator column is the axis: this folder's cells are tcmalloc's
    table = packing.latency_table(cells, "resnet50", "script", allocator="tcmalloc")
    sel = packrat_profile[packrat_profile["opt"] == "script"]
    curve = interference.fit(profile.points(sel))
    planner = planner_mod.Planner(table, [16], curve, max_batch=1024)
    rises, speedups, alone_speedups = [], [], []
    for b in (8, 16, 32, 64, 128, 256, 512, 1024):
        old = packing.optimize(table, 16, b)
        xs = interference.co_runners([i.threads for i in old.instances], [0] * old.k)
        pred = interference.predict([(interference.Alone(i.latency_s), x) for i, x in
                                     zip(old.instances, xs, strict=True)], curve)  # fmt: skip
        rises.append(pred.latency_s / old.latency_s - 1)
        best = planner.optimize(b)
        speedups.append(best.speedup)
        alone_speedups.append(old.speedup)
    with_curve = [a / (1 + r) for a, r in zip(alone_speedups, rises, strict=True)]
    print("rises", [round(r * 100, 1) for r in rises], "mean", round(np.mean(rises) * 100, 1))
    print("speedups of these plans: alone", [round(v, 2) for v in alone_speedups],
          "with interference", [round(v, 2) for v in with_curve],
          "; the optimizer's own with interference", [round(v, 2) for v in speedups])  # fmt: skip
    assert min(rises) >= 0.15 and max(rises) <= 0.35, rises
    assert 0.20 <= np.mean(rises) <= 0.30, np.mean(rises)
    assert all(1.0 <= v <= 1.2 for v in with_curve), with_curve  # PackRat measured 1.05-1.14
    assert min(alone_speedups) > 1.25
    assert all(1.0 <= s <= 1.25 for s in speedups), speedups


def test_packrat_interference_import_from_the_command_line(tmp_path):
    import importlib.util

    from conftest import REPO

    if not INTERFERENCE.is_dir():
        pytest.skip(f"PackRat reference data not found at {INTERFERENCE}")
    spec = importlib.util.spec_from_file_location(
        "import_packrat", REPO / "workflow" / "scripts" / "import_packrat.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--interference", str(INTERFERENCE), "--results", str(tmp_path)]) == 0
    df = tidy.read(tmp_path / "tables" / "interference.csv")
    assert len(df) == 24
    curve = profile.curve(df[df["allocator"] == "tcmalloc"], "resnet50", "script")
    assert curve.points == 8 and 0.001 < curve.beta < 0.002


def test_the_interference_figure_draws_the_profile_and_the_curve_or_says_there_is_none():
    from matplotlib.collections import PolyCollection

    from numa_effects.report import data as figure_data
    from numa_effects.report import plots

    fixture = Path(__file__).parent / "fixtures" / "packing_interference" / "tables"
    df = tidy.read(fixture / "interference.csv")
    tables = figure_data.Tables(pd.DataFrame(), pd.DataFrame(), None, None, df)
    fig = plots.draw("packing_interference", tables, {"model": "resnet18", "opt": "none"})
    (ax,) = fig.axes
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    curve = profile.curve(df, "resnet18", "none")
    assert curve.label() in labels and "t = 1, node 0" in labels
    assert any(isinstance(c, PolyCollection) for c in ax.collections)  # the curve's band
    none = figure_data.Tables(pd.DataFrame(), pd.DataFrame(), None, None, df.iloc[:0])
    fig = plots.draw("packing_interference", none, {"model": "resnet18", "opt": "none"})
    assert any("no interference profile" in t.get_text() for t in fig.axes[0].texts)
