"""What to deploy (docs/deploy.md): the search over the isolated profiles on synthesized server
topologies, the baselines beside it, the judging of a measured plan (the recommendation, the
paired gains and their coverage), an import's predicted answer, and the cost model's budget.

The profiles are PackRat's real CloudLab cells (../shared/reference/packrat); the topologies are
the synthesized 2 x 32 with SMT, 2 x 128 in SNC3 (43/43/42 cores per node) and 4 nodes with a
memory-only node (tests/fixtures/topology). Expectations come from those topologies."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import yaml
from conftest import FIXTURES, REPO
from test_packrat import PACKRAT

from benchmarks import advise
from numa_effects import config as config_mod
from numa_effects.analysis import deploy_plan
from numa_effects.measure import deploy as measured
from numa_effects.measure.record import Record
from numa_effects.plan import build, cost, deploy, launchers, topology
from numa_effects.tables import deploy as judged
from numa_effects.tables import deploy_choice as choice
from numa_effects.tables import interference as interference_table
from numa_effects.tables import packrat

TOPO = FIXTURES / "topology"
SHAPES = {
    "2x32-smt": TOPO / "synthetic-2x32-smt-offset64.lscpu-p.txt",
    "snc3": TOPO / "synthetic-2x128-snc3-smt-offset256.lscpu-p.txt",
    "4node+memory": TOPO / "synthetic-4node-plus-memory-only",
}
needs_packrat = pytest.mark.skipif(not PACKRAT.is_dir(), reason=f"no PackRat data at {PACKRAT}")


@pytest.fixture(scope="module")
def cloudlab():
    """PackRat's CloudLab cells (eager and TorchScript, glibc) and its multi-instance profile."""
    cells = packrat.cells_table([PACKRAT / "cloudlab_large-batches"])
    return cells, cloudlab_curves()


def cloudlab_curves() -> dict:
    """The interference model of PackRat's CloudLab multi-instance runs."""
    profile = packrat.interference_table(PACKRAT / "cloudlab_multiinstance-interference")
    return interference_table.curves(profile)


def settings(cells, **over) -> dict:
    cfg = {
        "models": sorted(set(cells["model"])),
        "batch_sizes": [1, 16, 256],
        "optimizations": sorted(set(cells["opt"])),
        "allocators": ["default"],
        "placements": ["sequential"],
    }
    return deploy.settings({**cfg, **over}, measured=True)


def node_cores(topo) -> list[int]:
    return [len(topo.node_cpus(n)) for n in topo.nodes]


def instance_nodes(topo, inst: dict) -> set[int]:
    return {topo.node_of(c) for c in inst["cpus"]}


@needs_packrat
@pytest.mark.parametrize("shape", list(SHAPES))
def test_candidates_stay_inside_their_node_and_baselines_say_when_they_do_not(cloudlab, shape):
    cells, curves = cloudlab
    topo = topology.load(SHAPES[shape])
    plan = deploy_plan.plan(cells, curves, topo, settings(cells))
    configs = plan["configurations"]
    assert plan["objectives"]
    for row in plan["objectives"]:
        assert row["candidates"], row["name"]
        for cand in row["candidates"]:
            config = configs[cand["config"]]
            for inst in config["instances"]:
                nodes = sorted(instance_nodes(topo, inst))
                assert inst["mem_nodes"] == nodes  # memory on the instance's own nodes
                assert not set(nodes) & set(topo.memory_only_nodes)
                # across nodes only as one instance wider than any node, and then it says so
                if len(nodes) > 1:
                    assert len(config["instances"]) == 1
                    assert inst["threads"] > max(node_cores(topo))
                    assert any("straddle" in n for n in config["notes"])
            if row["objective"] == deploy.LATENCY:
                total = sum(i["batch"] for i in configs[cand["config"]]["instances"])
                assert total == row["batch"]
        for base in row["baselines"]:
            if not base["config"]:
                continue
            config = configs[base["config"]]
            slots = [
                launchers.Slot(tuple(i["cpus"]), i["threads"], tuple(i["mem_nodes"]))
                for i in config["instances"]
            ]
            crossing = bool(launchers.straddling(slots, topo))
            assert crossing == any("straddle" in n for n in config["notes"]), base


@needs_packrat
def test_run_cpu_latency_on_snc3_is_measured_as_run_cpu_runs_it_and_marked(cloudlab):
    cells, curves = cloudlab
    topo = topology.load(SHAPES["snc3"])
    plan = deploy_plan.plan(cells, curves, topo, settings(cells))
    (tput,) = [r for r in plan["objectives"] if r["objective"] == deploy.THROUGHPUT]
    (base,) = [b for b in tput["baselines"] if b["baseline"] == "run_cpu-latency"]
    config = plan["configurations"][base["config"]]
    want = launchers.run_cpu_layout(topo, latency_mode=True)
    assert [tuple(i["cpus"]) for i in config["instances"]] == [s.cpus for s in want]
    assert any("straddle" in n for n in base["notes"])
    (thr,) = [b for b in tput["baselines"] if b["baseline"] == "run_cpu-throughput"]
    assert len(plan["configurations"][thr["config"]]["instances"]) == len(topo.nodes)


@needs_packrat
def test_identical_layouts_are_one_configuration_named_by_each_baseline(cloudlab):
    cells, curves = cloudlab
    topo = topology.load(TOPO / "host-1node-kvm")  # one node of 2 cores: the rules agree
    plan = deploy_plan.plan(cells, curves, topo, settings(cells, batch_sizes=[4]))
    row = plan["objectives"][0]
    ids = {b["baseline"]: b["config"] for b in row["baselines"]}
    assert ids["all-cores"] == ids["run_cpu-latency"] == ids["run_cpu-throughput"]
    df = judged.table(plan, None)
    base = df[df["config"] == ids["all-cores"]]
    assert base["baseline"].iloc[0] == "all-cores = run_cpu-latency = run_cpu-throughput"


@needs_packrat
def test_an_import_gets_a_predicted_answer_with_intervals():
    cells = packrat.cells_table([PACKRAT / "cloudlab_large-batches-tcmalloc"])
    curves = cloudlab_curves()
    topo = topology.load(TOPO / "2x16-nosmt-alternating.lscpu-p.txt")  # CloudLab's c6420
    s = deploy.settings({"import": {"packrat": ["x"]}}, measured=False)
    plan = deploy_plan.plan(cells, curves, topo, s)
    df = judged.table(plan, None)
    assert set(df["source"]) == {"predicted"}
    rec = df[df["role"] == "recommended"]
    assert len(rec) == len(plan["objectives"]) and rec["predicted"].gt(0).all()

    def shared(cid) -> bool:  # two instances on one node: the interference's uncertainty
        nodes = [topo.node_of(i["cpus"][0]) for i in plan["configurations"][cid]["instances"]]
        return len(nodes) > len(set(nodes))

    multi = rec[rec["config"].map(shared)]
    assert not multi.empty
    assert (multi["predicted_low"] < multi["predicted"]).all()
    assert (multi["predicted"] < multi["predicted_high"]).all()
    lines = judged.answer_lines(df)
    assert lines[0].startswith("What to deploy (predicted")
    assert all("(predicted)" in ln for ln in lines if ": " in ln and ln.startswith("  resnet"))


# -- judging a measured plan --------------------------------------------------------------------


def record(latency_s: float, batch: int = 1, instances: int = 1, replicate: int = 1) -> Record:
    inst = {"batch": batch, "stats": {"median_s": latency_s, "p99_s": latency_s * 1.1}}
    stats = {"median_s": latency_s}
    return Record("ok", {}, replicate=replicate, stats=stats, instances=(inst,) * instances)


def rounds(values: list[float]) -> list[Record]:
    return [record(v, replicate=r) for r, v in enumerate(values, start=1)]


def row(objective=deploy.LATENCY) -> dict:
    return {
        "objective": objective,
        "batch": 1,
        "name": "latency b1",
        "model": "m",
        "candidates": [{"config": "a"}, {"config": "b"}],
        "baselines": [{"baseline": "all-cores", "config": "c", "notes": []}],
    }


def tie():
    """Three configurations measured over four rounds: ``a`` the best, ``b`` as good within
    0.2 % and simpler, ``c`` clearly slower; and the noise of a round."""
    inst = {"threads": 1, "batch": 1, "cpus": [0], "mem_nodes": [0]}
    configs = {
        "a": {"opt": "bf16", "allocator": "jemalloc", "instances": [inst] * 2, "label": "2x"},
        "b": {"opt": "none", "allocator": "default", "instances": [inst], "label": "1x"},
        "c": {"opt": "none", "allocator": "default", "instances": [inst], "label": "1x"},
    }
    rng = np.random.default_rng(1)
    noise = lambda: float(np.exp(rng.normal(0, 0.002)))  # noqa: E731
    runs = {
        "a": rounds([0.100 * noise() for _ in range(4)]),
        "b": rounds([0.1002 * noise() for _ in range(4)]),
        "c": rounds([0.200 * noise() for _ in range(4)]),
    }
    return configs, runs, noise


def test_the_simplest_equivalent_configuration_is_recommended():
    configs, runs, noise = tie()
    r = row()
    pick, why, _ = choice.choose(runs, r, configs, measured.pooled(runs, [r]), 3.0)
    assert measured.best(runs, ["a", "b", "c"], deploy.LATENCY) == "a"
    assert pick == "b" and "equivalent to the measured best" in why
    runs["b"] = rounds([0.130 * noise() for _ in range(4)])  # now clearly slower
    assert choice.choose(runs, r, configs, measured.pooled(runs, [r]), 3.0)[0] == "a"
    runs["b"] = runs["b"][:1]  # one round: no interval, so no equivalence is claimed
    assert choice.choose(runs, r, configs, (math.nan, 0), 3.0)[0] == "a"


def test_the_table_gives_the_recommendations_gains_over_the_others():
    """A simpler configuration picked as equivalent states its own gains, not the measured
    best's; the measured best, its gains over the others."""
    configs, runs, noise = tie()
    r = row()
    for pick, others in (("b", "ac"), ("a", "bc")):
        pool = measured.pooled(runs, [r])
        got = {
            o["config"]: o
            for o in judged.objective_rows(r, {"configurations": configs}, runs, pool, None)
            if o["role"] != "factor"
        }
        assert got[pick]["role"] == "recommended" and "gain" not in got[pick]
        want = measured.gains(runs, r, pool, pick)
        for cid in others:
            assert got[cid]["gain"] == want[cid]["ratio"]
            assert (got[cid]["gain_ci_low"], got[cid]["gain_ci_high"]) == (
                want[cid]["ci_low"],
                want[cid]["ci_high"],
            )
        runs["b"] = rounds([0.130 * noise() for _ in range(4)])  # now clearly slower


def test_throughput_is_the_instances_images_per_second():
    rec = record(0.5, batch=16, instances=2)
    assert measured.metric(rec, deploy.THROUGHPUT) == pytest.approx(64.0)
    assert measured.metric(rec, deploy.LATENCY) == 0.5
    assert math.isnan(measured.metric(Record("contended", {}), deploy.LATENCY))


def test_a_block_lasts_from_its_start_to_its_last_record():
    """Both configurations of a block share its start; the block lasts until the later one is
    done: block 1 from 0 to 12 s, block 2 from 100 to 120 s, so their median is 16 s."""
    t = "2026-01-01T00:{:02d}:{:02d}+00:00"

    def rec(b: int, start: int, end: int) -> Record:
        prov = {
            "launcher_started_at": t.format(*divmod(start, 60)),
            "finished_at": t.format(*divmod(end, 60)),
        }
        return Record("ok", {}, replicate=b, provenance=prov)

    runs = {"a": [rec(1, 0, 10), rec(2, 100, 120)], "b": [rec(1, 0, 12), rec(2, 100, 111)]}
    assert measured.round_seconds(runs) == pytest.approx(16.0)
    assert math.isnan(measured.round_seconds({"a": [Record("ok", {})]}))


def simulate(rng, gain: float, rounds: int, drift: float, process: float, steps: int = 20):
    """One deploy job of two configurations in ABBA rounds: per round a drift shared by the
    round (moving linearly within it), per process an offset, per step a little noise. Returns
    the runs (median of each process's steps) and every step, per configuration."""
    runs, all_steps = {"a": [], "b": []}, {"a": [], "b": []}
    mu = {"a": math.log(0.1), "b": math.log(0.1 * gain)}
    for r in range(1, rounds + 1):
        d = rng.normal(0, drift)
        order = ["a", "b"] if r % 2 else ["b", "a"]  # ABBA (plan.slices.order)
        for slot, cid in enumerate(order):
            level = mu[cid] + d + 0.01 * slot + rng.normal(0, process)
            times = np.exp(level + rng.normal(0, 0.01, steps))
            runs[cid].append(record(float(np.median(times)), replicate=r))
            all_steps[cid] += list(times)
    return runs, all_steps


def test_the_paired_gain_ci_covers_the_true_gain_and_a_ci_of_the_steps_does_not():
    from scipy.special import stdtrit

    rng = np.random.default_rng(7)
    true, n, covered, naive = 1.3, 400, 0, 0
    r = {**row(), "candidates": [{"config": "a"}], "baselines": [{"baseline": "x", "config": "b"}]}
    for _ in range(n):
        runs, steps = simulate(rng, true, rounds=4, drift=0.05, process=0.02)
        (g,) = measured.gains(runs, r).values()
        covered += g["ci_low"] <= true <= g["ci_high"]
        # naive: every step as an independent sample of its configuration
        la, lb = np.log(steps["a"]), np.log(steps["b"])
        se = math.sqrt(la.var(ddof=1) / la.size + lb.var(ddof=1) / lb.size)
        centre = lb.mean() - la.mean()
        half = float(stdtrit(la.size + lb.size - 2, 0.975)) * se
        naive += math.exp(centre - half) <= true <= math.exp(centre + half)
    assert covered / n >= 0.92
    assert naive / n < 0.8  # it promises 95 %


# -- time as an input -------------------------------------------------------------------------


def default_config(**over) -> dict:
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    return copy.deepcopy({**cfg, **over})


def plan_of(cfg: dict):
    checked = config_mod.check(cfg)

    def make(c):
        return build.build(c, checked.topology, code={"measure": "m", "tables": "t", "report": "r"})

    return checked, make


def test_budget_60_on_2x32_plans_a_grid_estimated_within_it():
    cfg = default_config(topology=str(SHAPES["2x32-smt"]), budget=60)
    checked, make = plan_of(cfg)
    full = cost.estimate(make(copy.deepcopy(checked.config)))
    fitted, est = cost.fit(checked.config, checked.topology, make)
    assert full.total_s > 60 * 60  # the default grid there is more than the budget
    assert est.total_s <= 60 * 60 and est.shrunk
    assert fitted["threads"] != cfg.get("threads") or fitted["batch_sizes"] != cfg["batch_sizes"]
    # each step only while over: without the last one it was over the budget, the answer at its
    # fewest rounds; then the rounds fill what the budget leaves, up to deploy.max_rounds
    steps = [w for w in est.shrunk if not w.startswith("deploy.max_rounds")]
    less = {**checked.config, "budget": None}
    fewest = make(checked.config).deploy["rounds"]
    less["deploy"] = {**(less.get("deploy") or {}), "max_rounds": fewest}
    applied = 0
    for step in cost.shrink_steps(checked.topology):
        if applied == len(steps) - 1:
            break
        got = step(less)
        if got:
            less, applied = got[0], applied + 1
    assert cost.estimate(make(less)).total_s > 60 * 60
    rounds = make(fitted).deploy
    assert fewest == rounds["rounds"] <= rounds["max_rounds"] <= deploy.DEFAULTS["max_rounds"]
    assert "within the budget of 60 min" in est.line(60)


def test_a_long_estimate_also_reads_in_hours_and_keeps_its_minutes():
    """A run of days is also said in hours; the minutes stay first (``benchmarks/advise.py``
    reads them back)."""
    est = cost.Estimate()
    est.add("cells", 16_675.3 * 60, jobs=5866)
    line = est.line()
    assert line.startswith(
        "the whole run is estimated at 16675.3 min (about 277 h 55 min; 5866 jobs"
    )
    assert float(advise.ESTIMATE.search(line).group(1)) == 16675.3
    short = cost.Estimate()
    short.add("cells", 13.7 * 60, jobs=53)
    assert short.line(15) == (
        "the whole run is estimated at 13.7 min (53 jobs; cells 13.7 min); "
        "within the budget of 15 min"
    )


def test_the_budget_drops_the_second_stage_the_plan_would_run():
    """The budget's first step reads the resolved ``two_stage`` key: a cap left to its default
    is dropped too, and one process per cell has no second stage to drop."""
    (first, *_) = cost.shrink_steps(None)
    shrunk, what = first({"replicates": 2, "two_stage": {"enabled": True}})
    assert shrunk["two_stage"] == {"enabled": True, "cap": 2}
    assert what == "two_stage.cap: 2 (no second stage)"
    assert first({"replicates": 1, "two_stage": {"enabled": True, "cap": 4}}) is None
    assert first({"replicates": 2, "two_stage": {"enabled": True, "cap": 2}}) is None


def test_without_a_budget_nothing_shrinks_and_the_estimate_grows_with_the_grid():
    checked, make = plan_of(default_config(topology=str(SHAPES["2x32-smt"]), budget=None))
    _, est = cost.fit(checked.config, checked.topology, make)
    assert est.shrunk == []
    small, make2 = plan_of(
        default_config(topology=str(SHAPES["2x32-smt"]), batch_sizes=[1], budget=None)
    )
    assert cost.estimate(make2(small.config)).total_s < est.total_s
