"""The deploy answer's judgement (docs/deploy.md): the choice on simulated deploy jobs whose
truth is known (a simpler configuration only where shown equivalent; "undecided" with
calibrated probabilities), request tails from enough requests, the latency bound, the gain
split by cause, predictions from a configuration's own profile, and numbers for people."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from test_deploy import SHAPES, cloudlab, needs_packrat, settings  # noqa: F401

from numa_effects import stats
from numa_effects.analysis import deploy_plan
from numa_effects.measure import deploy as measured
from numa_effects.measure.record import Record
from numa_effects.plan import deploy, topology
from numa_effects.plan.optimizations import EAGER
from numa_effects.tables import deploy as judged
from numa_effects.tables import deploy_choice as choice


def inst(cpus=(0,), batch=1, threads=1) -> dict:
    return {"threads": threads, "batch": batch, "cpus": list(cpus), "mem_nodes": [0]}


def config(opt="none", alloc="default", insts=None, label="1x") -> dict:
    return {"opt": opt, "allocator": alloc, "instances": insts or [inst()], "label": label}


def record(values_s, replicate: int, instances: int = 1, batch: int = 1) -> Record:
    """One process set: ``values_s`` the timed requests of each of its ``instances``."""
    med = float(np.median(values_s))
    one = {"batch": batch, "stats": {"median_s": med}, "latencies_s": list(values_s)}
    m = {"latencies_s": list(values_s), "excluded": [False] * len(values_s)}
    return Record(
        "ok", {}, replicate=replicate, measurement=m, stats={"median_s": med},
        instances=(one,) * instances,
    )  # fmt: skip


def job(rng, truth: dict, rounds: int, drift: float, process: float) -> dict:
    """A deploy job in ABBA rounds: per round a drift every configuration shares, per process
    its own offset; ``truth`` the true latency (s) of each configuration."""
    runs = {c: [] for c in truth}
    for r in range(1, rounds + 1):
        d = rng.normal(0, drift)
        for cid in list(truth) if r % 2 else list(truth)[::-1]:
            v = truth[cid] * math.exp(d + rng.normal(0, process))
            runs[cid].append(record([v], r))
    return runs


def row(cands, bases=(), objective=deploy.LATENCY, factors=()) -> dict:
    return {
        "objective": objective,
        "batch": 1,
        "name": "latency b1" if objective == deploy.LATENCY else objective,
        "model": "m",
        "candidates": [{"config": c} for c in cands],
        "baselines": [{"baseline": n, "config": c, "notes": []} for n, c in bases],
        "factors": list(factors),
    }


def old_rule(runs, r, configs, top, gains) -> str:
    """The rule this replaces: the simplest of the measured best and every configuration not
    significantly different from it."""
    ties = [c for c, g in gains.items() if choice.significant(g["ci_low"], g["ci_high"]) is False]
    return min([top, *ties], key=lambda c: choice.simplicity(configs[c]))


def test_a_simpler_candidate_10_pct_slower_and_not_significant_is_not_recommended():
    """``a`` (bf16, two instances) is truly 10 % faster than the simplest ``b`` (eager, one
    instance); the job's noise leaves the gain not significant in most jobs. The old rule took
    ``b`` in every such job; the new one keeps the measured best and says "undecided"."""
    configs = {"a": config("bf16", "jemalloc", [inst(), inst((1,))], "2x"), "b": config()}
    r = row(["a", "b"])
    rng = np.random.default_rng(3)
    cases = old_b = 0
    for _ in range(300):
        runs = job(rng, {"a": 0.100, "b": 0.110}, rounds=3, drift=0.05, process=0.06)
        pool = measured.pooled(runs, [r])
        top = measured.best(runs, ["a", "b"], deploy.LATENCY)
        gains = measured.gains(runs, r, pool, top)
        if top != "a" or choice.significant(gains["b"]["ci_low"], gains["b"]["ci_high"]):
            continue
        cases += 1
        pick, why, _ = choice.choose(runs, r, configs, pool, 3.0)
        assert pick == "a" and "undecided: P(best) bf16" in why and "would decide" in why
        old_b += old_rule(runs, r, configs, top, gains) == "b"
    assert cases >= 100 and old_b == cases


def test_two_configurations_equal_within_1_pct_with_tight_cis_recommend_the_simpler():
    configs = {"a": config("bf16", "jemalloc", [inst(), inst((1,))], "2x"), "b": config()}
    r = row(["a", "b"])
    rng = np.random.default_rng(4)
    for _ in range(50):
        runs = job(rng, {"a": 0.100, "b": 0.1008}, rounds=6, drift=0.05, process=0.003)
        pick, why, _ = choice.choose(runs, r, configs, measured.pooled(runs, [r]), 3.0)
        assert pick == "b", why
        assert "undecided" not in why


def test_the_probability_of_being_best_is_calibrated():
    """Three configurations with true log-latency gaps drawn at random: of the configurations
    given probability p of being best, about a share p is truly the best."""
    rng = np.random.default_rng(5)
    ids = ["a", "b", "c"]
    r = row(ids)
    probs, best = [], []
    for _ in range(1500):
        truth = {c: 0.1 * math.exp(rng.uniform(-0.08, 0.08)) for c in ids}
        runs = job(rng, truth, rounds=4, drift=0.05, process=0.04)
        top = measured.best(runs, ids, deploy.LATENCY)
        gains = measured.gains(runs, r, measured.pooled(runs, [r]), top)
        others = [c for c in ids if c != top]
        p = stats.prob_best([tuple(gains[c][k] for k in choice.GAIN_KEYS) for c in others])
        probs += list(p)
        best += [c == min(truth, key=truth.get) for c in [top, *others]]
    probs, best = np.asarray(probs), np.asarray(best, dtype=float)
    for lo, hi in ((0.05, 0.3), (0.3, 0.5), (0.5, 0.7), (0.7, 0.95)):
        sel = (probs >= lo) & (probs < hi)
        assert sel.sum() >= 100
        assert abs(best[sel].mean() - probs[sel].mean()) < 0.07, (lo, hi)


def test_rounds_to_decide_scale_as_one_over_the_square_root():
    """A gain of 1.05 [0.95, 1.16] over 3 rounds: ln half-width 0.1 shrinks to ln(1.05) at
    3 x (0.1 / ln 1.05)^2 = 12.6 rounds (equivalence within 3 % cannot come first)."""
    lo, hi = 1.05 * math.exp(-0.1), 1.05 * math.exp(0.1)
    assert stats.rounds_to_decide(3, 1.05, lo, hi, 0.03) == pytest.approx(
        3 * (0.1 / math.log(1.05)) ** 2
    )
    # 1.00 [0.99, 1.01]: inside +-3 % already at the scale of ln(1.03)
    got = stats.rounds_to_decide(3, 1.0, math.exp(-0.05), math.exp(0.05), 0.03)
    assert got == pytest.approx(3 * (0.05 / math.log(1.03)) ** 2)


def test_the_tail_is_a_p99_from_100_requests_else_the_maximum():
    """Two rounds of two instances of 50 requests each are 200 requests of 1..200 ms: p99
    (linear between ranks) = 1 + 0.99 x 199 = 198.01 ms. One round of one instance: 50 requests,
    too few for a p99: the maximum, 50 ms."""
    ms = np.arange(1, 201) / 1e3
    chunks = [list(ms[i::4]) for i in range(4)]

    def two(a: list, b: list, replicate: int) -> Record:
        one = record(a, replicate)
        second = {**one.instances[0], "latencies_s": b}
        return Record(
            "ok", {}, replicate=replicate, stats=one.stats, instances=(*one.instances, second)
        )

    runs = {
        "x": [two(chunks[0], chunks[1], 1), two(chunks[2], chunks[3], 2)],
        "y": [record(np.arange(1, 51) / 1e3, 1)],
    }
    got = choice.tail(runs, "x", deploy.THROUGHPUT)
    assert got == {"tail_ms": pytest.approx(198.01), "tail_kind": "p99", "tail_n": 200}
    assert choice.tail(runs, "y", deploy.LATENCY) == {
        "tail_ms": pytest.approx(50.0),
        "tail_kind": "max",
        "tail_n": 50,
    }


def test_a_latency_bound_that_excludes_the_faster_configuration_changes_the_recommendation():
    """``a`` serves more images/s with requests of 400 ms; ``b`` fewer with 100 ms: a bound of
    200 ms leaves ``b``, and the answer names ``a`` as over the bound."""
    configs = {"a": config("none", "default", [inst(batch=16)], "1x(t1,b16)")}
    configs["b"] = config("none", "default", [inst(batch=1)], "1x(t1,b1)")
    runs = {
        "a": [record([0.4] * 120, r, batch=16) for r in (1, 2, 3)],
        "b": [record([0.1 * (1 + 0.01 * r)] * 120, r) for r in (1, 2, 3)],
    }
    r = row(["a", "b"], objective=deploy.THROUGHPUT)
    plan = {"configurations": configs}
    free = judged.objective_rows(r, plan, runs, (math.nan, 0), None)
    bound = judged.objective_rows(r, plan, runs, (math.nan, 0), 200.0)
    rec = lambda rows: next(o for o in rows if o["role"] == "recommended")  # noqa: E731
    assert rec(free)["config"] == "a"  # 40 images/s against 10
    assert rec(bound)["config"] == "b"
    assert "over latency_bound_ms: none, default, 1x(t1,b16)" in rec(bound)["notes"]


def factor_job(rng, same_layout: bool):
    """The recommendation ``r`` (bf16, glibc_tuned, on CPU 1) beside the configurations each
    changing one cause, with true slowdowns: eager 2.0, glibc as it comes 1.1, the all-cores
    layout (CPUs 0-1) 1.3; the all-cores baseline is all three, 2.86."""
    one, both = [inst((1,))], [inst((0, 1), threads=2)]
    configs = {
        "r": config("bf16", "glibc_tuned", one),
        "eager": config(EAGER, "glibc_tuned", one),
        "glibc": config("bf16", "default", one),
        "lay": config("bf16", "glibc_tuned", both),
        "base": config(EAGER, "default", both),
    }
    truth = {"r": 0.1, "eager": 0.2, "glibc": 0.11, "lay": 0.13, "base": 0.286}
    runs = job(rng, truth, rounds=8, drift=0.05, process=0.01)
    factors = [{"factor": "optimization", "config": "eager"}, {"factor": "allocator"}]
    factors[1]["config"] = "glibc"
    layout = "r" if same_layout else "lay"
    factors += [{"factor": "layout", "baseline": "all-cores", "config": layout}]
    r = row(["r"], [("all-cores", "base")], factors=factors)
    return configs, runs, r, truth


def test_the_gain_splits_by_cause_each_factor_a_paired_ratio_covering_its_truth():
    rng = np.random.default_rng(6)
    want = {"total": 2.86, "optimization": 2.0, "allocator": 1.1, "layout": 1.3}
    covered = {k: 0 for k in want}
    for _ in range(40):
        configs, runs, r, _ = factor_job(rng, same_layout=False)
        rows = judged.objective_rows(r, {"configurations": configs}, runs, (math.nan, 0), None)
        got = {o["factor"]: o for o in rows if o["role"] == "factor"}
        assert set(got) == set(want)
        for k, v in want.items():
            covered[k] += got[k]["gain_ci_low"] <= v <= got[k]["gain_ci_high"]
    assert all(n >= 34 for n in covered.values()), covered  # 95 % of 40, less slack


def test_a_launchers_layout_on_the_recommendations_cpus_says_same_layout():
    configs, runs, r, _ = factor_job(np.random.default_rng(7), same_layout=True)
    rows = judged.objective_rows(r, {"configurations": configs}, runs, (math.nan, 0), None)
    (lay,) = [o for o in rows if o.get("factor") == "layout"]
    assert lay["notes"] == "same layout" and "gain" not in lay


@needs_packrat
def test_the_plan_adds_the_factors_of_its_predicted_best(cloudlab):  # noqa: F811
    cells, curves = cloudlab
    topo = topology.load(SHAPES["2x32-smt"])
    plan = deploy_plan.plan(cells, curves, topo, settings(cells))
    configs = plan["configurations"]
    for r in plan["objectives"]:
        top = configs[r["candidates"][0]["config"]]
        by = {f["factor"]: configs[f["config"]] for f in r["factors"]}
        assert by["optimization"]["opt"] == EAGER
        assert by["optimization"]["instances"] == top["instances"]
        assert by["allocator"]["allocator"] == "default"
        for f in r["factors"]:
            if f["factor"] == "layout":
                assert (configs[f["config"]]["opt"], configs[f["config"]]["allocator"]) == (
                    top["opt"],
                    top["allocator"],
                )


@needs_packrat
def test_a_prediction_never_comes_from_another_optimizations_profile(cloudlab):  # noqa: F811
    cells, curves = cloudlab
    topo = topology.load(SHAPES["2x32-smt"])
    s = settings(cells)
    prof = deploy_plan.profiles(cells, "resnet50", s)
    one = (deploy_plan.Instance((0,), 1, 1, (0,)),)
    for opt, alloc in prof:
        own = deploy_plan.predict(
            deploy_plan.Config("resnet50", opt, alloc, one), deploy.LATENCY, prof, curves, topo
        )
        assert own["predicted"] > 0 and own["basis"] == ""
        other = deploy_plan.Config("resnet50", opt, "jemalloc", one)
        got = deploy_plan.predict(other, deploy.LATENCY, prof, curves, topo)
        assert got["predicted"] == own["predicted"] and f"from {opt}/{alloc}" in got["basis"]
    missing = deploy_plan.Config("resnet50", "bf16", "default", one)
    assert deploy_plan.predict(missing, deploy.LATENCY, prof, curves, topo) == {}


def test_numbers_read_for_people():
    r = {"source": "measured", "value": 1208.41, "ci_low": 1009.39, "ci_high": 1446.69}
    assert judged.value_text(r | {"unit": "ms"}) == "1208 [1009, 1447] ms"
    v, lo, hi, got = judged.shown(r)
    assert (v, lo, hi, got) == ("1208", "1009", "1447", True)
    assert judged.ratio_words(1.4579, 1.176, 1.807, "latency b16") == "1.46x faster [1.18, 1.81]"
    # 720 ms against the recommendation's 829: 13 % less time
    words = judged.ratio_words(720 / 829, 0.599, 1.26, "latency b16")
    assert words == "13 % faster than the recommendation [-26, 40 %]"
    # 27.9 images/s against 22.2: 26 % more
    assert judged.ratio_words(22.2 / 27.9, 0.61, 1.05, "throughput").startswith(
        "26 % more images/s than the recommendation"
    )


def test_the_answer_says_where_the_job_and_the_cells_order_two_configurations_differently():
    """The cells predicted ``b`` 10 % faster than ``a``; the job measures ``a`` 10 % faster."""
    configs = {"a": config("script"), "b": config("bf16")}
    rng = np.random.default_rng(8)
    runs = job(rng, {"a": 0.100, "b": 0.110}, rounds=4, drift=0.02, process=0.005)
    r = row(["a", "b"])
    r["candidates"] = [{"config": "b", "predicted": 0.09}, {"config": "a", "predicted": 0.1}]
    (note,) = choice.order_notes(runs, r, configs, "a")
    assert note == "the cells predict bf16, default, 1x ahead of it, the job the reverse"
    r["candidates"][0]["predicted"] = 0.12  # the same order: nothing to say
    assert choice.order_notes(runs, r, configs, "a") == []


def test_the_summary_starts_each_objective_with_the_total_gain_and_its_factors():
    configs, runs, r, _ = factor_job(np.random.default_rng(9), same_layout=True)
    configs = {c: {**v, "notes": []} for c, v in configs.items()}
    rows = judged.objective_rows(r, {"configurations": configs}, runs, (math.nan, 0), None)
    df = judged.pd.DataFrame(rows, columns=judged.COLUMNS)
    first = judged.answer_lines(df)[1]
    # the truths: 2.86, eager 2.0, glibc as it comes 1.1
    x = r"\d\.\d\dx faster \[\d\.\d\d, \d\.\d\d\]"
    assert re.fullmatch(
        rf"  m latency b1: {x} than float32 eager, one process on all cores, glibc as it comes; "
        rf"optimization bf16: {x}; allocator glibc_tuned: {x}; layout vs all-cores: same layout",
        first,
    ), first
    total, opt, alloc = (float(v) for v in re.findall(r"(\d\.\d\d)x", first))
    assert (total, opt, alloc) == pytest.approx((2.86, 2.0, 1.1), rel=0.05)


def test_a_factors_configuration_that_measures_best_is_recommended():
    """glibc as it comes truly 10 % faster than the planned best: it gets the recommended row."""
    configs, _, r, truth = factor_job(np.random.default_rng(10), same_layout=False)
    runs = job(np.random.default_rng(11), {**truth, "glibc": 0.09}, 8, 0.05, 0.01)
    rows = judged.objective_rows(r, {"configurations": configs}, runs, (math.nan, 0), None)
    (rec,) = [o for o in rows if o["role"] == "recommended"]
    assert rec["config"] == "glibc"
