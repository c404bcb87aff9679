"""Replicates where the noise is (config key ``two_stage``): the checkpoint's
decision (``tables.stages.decide``), the plan that asks for the further replicates
(``plan.stages``, ``Plan.cell_outputs``), the tables' two-stage CI, and the config's checks.
The real Snakemake run is in tests/test_stages_pipeline.py."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import FIXTURES

from numa_effects import config as config_mod
from numa_effects import stats
from numa_effects.plan import build as plan_mod
from numa_effects.plan import grid as grid_mod
from numa_effects.plan import stages as plan_stages
from numa_effects.tables import cells as tidy
from numa_effects.tables import stages

TOPOLOGY = FIXTURES / "topology" / "2x16-nosmt-alternating.lscpu-p.txt"


def _keys() -> list:
    """16 cells of a real grid's shape: 2 thread counts x 4 batch sizes x eager and TorchScript;
    a comparison group is one (threads, batch size) pair."""
    return [
        grid_mod.CellKey(model="resnet50", opt=o, placement="sequential", threads=t, batch_size=b)
        for t in (1, 2)
        for b in (1, 4, 16, 64)
        for o in ("none", "script")
    ]


def test_the_wired_rule_covers_by_simulation_and_adding_until_narrow_does_not():
    """The checkpoint's very function (``decide``: the first stage's variance moderated with the
    thread count's pool, Stein's N, the group's maximum) and the tables' interval
    (``stats.stein_interval`` with the first stage's variance) on 300 simulated runs of 16
    cells whose replicate ln-medians are N(0, sd), sd drawn per cell from 1.5 - 3 % (the quiet
    Xeon's between-process spread), target +-3 %, cap 20: the true median is covered >= 94 % at
    each thread count, every cell not at the cap gets a half-width within the target, and a
    group's cells share N. The obvious rule on the same data -- add a replicate to a cell until
    the t interval of its replicates so far is within the target -- under-covers."""
    from scipy.special import stdtrit

    rng = np.random.default_rng(2023)
    keys = _keys()
    sd = {k: rng.uniform(0.015, 0.03) for k in keys}
    settings = {"first_stage": 2, "target_pct": 3.0, "cap": 20}
    h = math.log1p(0.03)
    hit = {1: 0, 2: 0}
    total = {1: 0, 2: 0}
    naive_hit, used, sims = 0, [], 300
    for _ in range(sims):
        y = {k: rng.normal(0.0, sd[k], settings["cap"]) for k in keys}
        records = stages.decide({k: list(np.exp(y[k][:2])) for k in keys}, settings)
        by_key = {grid_mod.CellKey.from_record(r): r for r in records}
        groups: dict = {}
        for k, r in by_key.items():
            groups.setdefault(grid_mod.comparison_group(k), set()).add(r["replicates"])
            assert r["reason"] in plan_stages.REASONS
            n = r["replicates"]
            used.append(n)
            _, lo, hi = stats.stein_interval(np.exp(y[k][:n]), r["log_var"], r["df"])
            hit[k.threads] += lo <= 1.0 <= hi
            total[k.threads] += 1
            if r["reason"] != plan_stages.CAP:
                assert math.log(hi) - math.log(lo) <= 2 * h + 1e-12
                assert r["expected_halfwidth_pct"] <= 3.0 + 1e-9
            for m in range(2, settings["cap"] + 1):  # the naive rule, cell by cell
                s = y[k][:m]
                half = float(stdtrit(m - 1, 0.975)) * float(s.std(ddof=1)) / math.sqrt(m)
                if half <= h or m == settings["cap"]:
                    naive_hit += abs(float(s.mean())) <= half
                    break
        assert all(len(ns) == 1 for ns in groups.values()), groups
    for t in (1, 2):
        assert hit[t] / total[t] >= 0.94, (t, hit[t] / total[t])
    naive = naive_hit / (sims * len(keys))
    assert naive < 0.93, naive  # 4800 cells: a coverage's standard error is ~0.3 points
    # quiet cells stop at the first stage, noisy ones take more
    assert min(used) == 2 and max(used) > 2


def test_decide_gives_a_group_its_noisiest_cells_count_and_says_why():
    keys = _keys()[:4]  # t1: batch 1 (none, script) and batch 4 (none, script)
    quiet = [0.100, 0.1001]
    noisy = [0.100, 0.106]
    medians = {keys[0]: quiet, keys[1]: noisy, keys[2]: quiet, keys[3]: []}
    settings = {"first_stage": 2, "target_pct": 5.0, "cap": 4}
    recs = {grid_mod.CellKey.from_record(r): r for r in stages.decide(medians, settings)}
    # batch 1: script needs more than the cap; eager follows its group
    assert recs[keys[1]]["reason"] == plan_stages.CAP and recs[keys[1]]["replicates"] == 4
    assert recs[keys[1]]["needed"] > 4
    assert recs[keys[0]]["reason"] == plan_stages.GROUP and recs[keys[0]]["replicates"] == 4
    # batch 4: the quiet cell stops at the first stage; its partner was never measured
    assert recs[keys[2]]["reason"] == plan_stages.FIRST_STAGE and recs[keys[2]]["replicates"] == 2
    assert recs[keys[3]]["reason"] == plan_stages.UNMEASURED and recs[keys[3]]["replicates"] == 2
    assert recs[keys[3]]["log_var"] is None
    # a target the first stage meets for every measured cell: nothing more
    loose = {**settings, "target_pct": 100.0}
    for r in stages.decide({keys[0]: quiet, keys[2]: quiet}, loose):
        assert (r["replicates"], r["reason"]) == (2, plan_stages.FIRST_STAGE)
    line = stages.summary_line(list(recs.values()), settings)
    assert "4 more processes" in line and "1 cap" in line and "1 group" in line


def _simulated_rounds(rng, keys, shared_sd: float, own_sd: dict, rounds: int) -> dict:
    """CellKey -> {round: median}: each round of a comparison group (one thread count and batch
    size) shares a drift both adjacent processes see, N(0, shared_sd) on the log scale, plus
    each process's own noise, N(0, own_sd[opt]); TorchScript 20 % faster than eager."""
    true = {"none": 0.1, "script": 0.08}
    drift = {
        g: rng.normal(0.0, shared_sd, rounds) for g in {grid_mod.comparison_group(k) for k in keys}
    }
    return {
        k: {
            r + 1: true[k.opt]
            * math.exp(drift[grid_mod.comparison_group(k)][r] + rng.normal(0.0, own_sd[k.opt]))
            for r in range(rounds)
        }
        for k in keys
    }


def test_the_first_stage_says_which_comparisons_keep_whole_rounds():
    """``pairing`` runs the tables' own test (``degradation.paired_choice``) on the first stage's
    two rounds: where adjacent processes share a drift (4 % between rounds, 0.5 % their own) it
    keeps whole rounds for eager vs TorchScript at both thread counts in >= 90 % of 300 simulated
    first stages; where they share nothing (3 % own noise) in at most 12 % (the F test's level is
    5 %). Then ``decide`` gives a quiet eager cell its noisy partner's count only where the pairing
    pays."""
    rng = np.random.default_rng(7)
    keys = _keys()
    kept = {"shared": 0, "independent": 0}
    sims = 300
    for _ in range(sims):
        for case, shared, own in (("shared", 0.04, 0.005), ("independent", 0.0, 0.03)):
            pairs = stages.pairing(
                _simulated_rounds(rng, keys, shared, {"none": own, "script": own}, 2)
            )
            assert [(p["threads"], p["axis"], p["comparisons"]) for p in pairs] == [
                (1, "opt", 4),
                (2, "opt", 4),
            ]
            kept[case] += sum(p["paired"] for p in pairs)
    assert kept["shared"] / (2 * sims) >= 0.90, kept
    assert kept["independent"] / (2 * sims) <= 0.12, kept

    quiet, noisy = {1: 0.100, 2: 0.1001}, {1: 0.080, 2: 0.0848}
    # t1: eager quiet at batch 1 and 4, TorchScript noisy at batch 1
    first = {keys[0]: quiet, keys[1]: noisy, keys[2]: quiet, keys[3]: {1: 0.080, 2: 0.0801}}
    settings = {"first_stage": 2, "target_pct": 5.0, "cap": 4}
    for paired in (True, False):
        pairs = [
            {"threads": 1, "axis": "opt", "paired": paired, "correlation": 0.5, "comparisons": 2}
        ]
        recs = {
            grid_mod.CellKey.from_record(r): r
            for r in stages.decide(stages.round_order(first), settings, pairs)
        }
        script_n = recs[keys[1]]["replicates"]
        assert script_n > 2 and recs[keys[1]]["reason"] in (plan_stages.CAP, plan_stages.TARGET)
        assert recs[keys[0]]["needed"] == 2
        want = (script_n, plan_stages.GROUP) if paired else (2, plan_stages.FIRST_STAGE)
        assert (recs[keys[0]]["replicates"], recs[keys[0]]["reason"]) == want
        line = stages.summary_line(list(recs.values()), settings, pairs)
        assert ("whole rounds for opt at 1 thread" in line) == paired
        assert ("not for opt at 1 thread" in line) == (not paired)


def _speedup_intervals(rng, shared_sd: float, own_sd: dict, runs: int) -> dict:
    """``runs`` simulated two-stage runs of ``_keys()``' 16 cells (``_simulated_rounds``),
    target +-3 %, cap 6, through the whole path of a comparison: ``pairing`` on the first stage,
    ``decide``, then the tables' rule on all rounds -- the paired interval where
    ``degradation.paired_choice`` takes it and both cells kept the same rounds, else the two cells'
    two-stage intervals combined. Returns the coverage of the true speedup, the paired and the
    independent interval's log widths where the paired one was used, and the processes run vs
    under the rule that keeps every comparison's rounds whole (``decide``'s ``pairs=None``)."""
    from numa_effects.tables import degradation

    keys = _keys()
    settings = {"first_stage": 2, "target_pct": 3.0, "cap": 6}
    truth = math.log(0.08 / 0.1)
    hit = total = processes = whole = 0
    widths: dict = {"paired": [], "independent": []}
    for _ in range(runs):
        every = _simulated_rounds(rng, keys, shared_sd, own_sd, settings["cap"])
        rounds = {k: {r: v[r] for r in (1, 2)} for k, v in every.items()}
        first, pairs = stages.round_order(rounds), stages.pairing(rounds)
        recs = {grid_mod.CellKey.from_record(r): r for r in stages.decide(first, settings, pairs)}
        processes += sum(r["replicates"] for r in recs.values())
        whole += sum(r["replicates"] for r in stages.decide(first, settings))
        final = {
            k: {r: v[r] for r in range(1, recs[k]["replicates"] + 1)} for k, v in every.items()
        }
        for t in (1, 2):
            comps = [(b, c) for b, c in zip(keys[0::2], keys[1::2], strict=True) if b.threads == t]
            use, pool, _ = degradation.paired_choice([(final[b], final[c]) for b, c in comps])
            for b, c in comps:
                ci = {}
                for k in (b, c):
                    rec = recs[k]
                    _, lo, hi = stats.stein_interval(
                        list(final[k].values()), rec["log_var"], rec["df"]
                    )
                    ci[k] = (lo, hi, rec["df"])
                lo, hi = np.log(stats.two_level_ratio_ci(ci[b], ci[c]))
                if use and set(final[b]) == set(final[c]):
                    widths["independent"].append(hi - lo)
                    p = stats.paired_ratio_ci(stats.paired_log_ratios(final[b], final[c]), pool)
                    lo, hi = math.log(p["ci_low"]), math.log(p["ci_high"])
                    widths["paired"].append(hi - lo)
                hit += lo <= truth <= hi
                total += 1
    return {
        "coverage": hit / total,
        "comparisons": total,
        "widths": widths,
        "processes": processes / whole,
    }


def test_the_speedups_interval_covers_whether_or_not_the_first_stage_pairs_rounds():
    """400 simulated runs each (eager vs TorchScript, true speedup 1.25; see
    ``_speedup_intervals``). Adjacent processes sharing a 4 % drift between rounds (own noise
    1 % and 2.5 %): the first stage keeps whole rounds, the paired interval is used for most
    comparisons, covers >= 93 % and is under 0.7 x as wide as the independent one on the same
    data. Processes sharing nothing (own noise 0.5 % and 3 %): the pairing is dropped, eager
    stops at its own count, the run takes under 0.8 x the processes of the rule that keeps
    every comparison's rounds whole, and the (independent) interval still covers >= 93 %."""
    rng = np.random.default_rng(11)
    shared = _speedup_intervals(rng, 0.04, {"none": 0.01, "script": 0.025}, 400)
    assert shared["coverage"] >= 0.93, shared["coverage"]
    assert len(shared["widths"]["paired"]) > shared["comparisons"] / 2
    paired, independent = (np.median(shared["widths"][m]) for m in ("paired", "independent"))
    assert paired < 0.7 * independent, (paired, independent)
    alone = _speedup_intervals(rng, 0.0, {"none": 0.005, "script": 0.03}, 400)
    assert alone["coverage"] >= 0.93, alone["coverage"]
    assert alone["processes"] < 0.8, alone["processes"]


def _fixture_cells(tmp_path: Path) -> dict:
    """The five real replicates per cell of tests/fixtures/cells_replicates (quiet Xeon), each
    file as a replicate of its cell: {CellKey: [path of replicate 1, ..., 5]}."""
    out: dict = {}
    for f in sorted((FIXTURES / "cells_replicates").glob("*.json")):
        opt, placement, t, bs, r = f.stem.split("_")
        dst = tmp_path / opt / t / bs / f"r{r}.json"
        dst.parent.mkdir(parents=True, exist_ok=True)
        text = f.read_text()
        dst.write_text(text.replace('"cell": {', f'"replicate": {int(r)}, "cell": {{', 1))
        key = grid_mod.CellKey(
            model="resnet50",
            opt=opt,
            placement=placement,
            threads=int(t[1:]),
            batch_size=int(bs[2:]),
        )
        out.setdefault(key, []).append(str(dst))
    return out


def test_the_tables_use_the_first_stages_variance_on_real_replicates(tmp_path):
    """Three cells measured five times each on the quiet Xeon: the checkpoint reads the first
    two replicates, the tables combine all five with the first stage's variance and degrees
    of freedom (``ci_method`` ``two-stage``), centred on the geometric mean of all five; the
    cell whose first stage spread most is the one that needs most."""
    files = _fixture_cells(tmp_path)
    first = stages.round_order(
        stages.first_stage_rounds(p for paths in files.values() for p in paths[:2])
    )
    assert {k: len(v) for k, v in first.items()} == {k: 2 for k in files}
    settings = {"first_stage": 2, "target_pct": 3.0, "cap": 5}
    records = stages.decide(first, settings)
    noisiest = max(records, key=lambda r: r["sd_pct"])  # of the first stage
    assert noisiest["needed"] == max(r["needed"] for r in records)
    out = tmp_path / "grid" / "replicates-0.json"
    stages.write(out, settings, records)
    counts = plan_stages.read(out)
    assert set(counts) == set(files)
    paths = [p for k, ps in files.items() for p in ps[: counts[k]]]
    cells, _ = tidy.tables(paths, stages.read_records(out))
    plain, _ = tidy.tables(paths)
    # every replicate's median, not only the first stage's
    every = stages.round_order(stages.first_stage_rounds(paths))
    for rec in records:
        key = grid_mod.CellKey.from_record(rec)
        row = cells[
            (cells["opt"] == rec["opt"])
            & (cells["threads"] == rec["threads"])
            & (cells["batch_size"] == rec["batch_size"])
        ].iloc[0]
        assert row["ci_method"] == "two-stage" and row["ci_df"] == rec["df"]
        assert row["replicates"] == row["replicates_planned"] == rec["replicates"]
        assert row["replicates_reason"] == rec["reason"]
        m, lo, hi = stats.stein_interval(every[key], rec["log_var"], rec["df"])
        assert row["latency_median_ms"] == pytest.approx(m * 1000, rel=1e-9)
        assert row["latency_ci_low_ms"] == pytest.approx(lo * 1000, rel=1e-9)
        assert row["latency_ci_high_ms"] == pytest.approx(hi * 1000, rel=1e-9)
    assert set(plain["ci_method"]) == {"two-level"} and "replicates_reason" not in plain
    assert not np.allclose(plain["latency_ci_low_ms"], cells["latency_ci_low_ms"])


def test_comparisons_take_two_stage_cis_as_t_intervals():
    cells = pd.DataFrame(
        {
            "model": ["resnet50"] * 2,
            "opt": ["none", "script"],
            "placement": ["sequential"] * 2,
            "threads": [1, 1],
            "batch_size": [1, 1],
            "allocator": ["default"] * 2,
            "latency_median_ms": [100.0, 80.0],
            "latency_ci_low_ms": [95.0, 76.0],
            "latency_ci_high_ms": [105.0, 84.0],
            "ci_df": [3, 3],
            "ci_method": ["two-stage", "two-stage"],
            "contended": [False, False],
            "noisy": [False, False],
            "status": ["ok", "ok"],
        }
    )
    from numa_effects.tables import degradation

    row = degradation.opt_speedup_table(cells).iloc[0]
    assert row["ci_method"] == "two-level" and row["speedup_ci_low"] < 1.25 < row["speedup_ci_high"]


# -- the plan ---------------------------------------------------------------------------------
def _plan(**over) -> plan_mod.Plan:
    cfg = {
        "models": ["resnet18"],
        "batch_sizes": [1, 2],
        "optimizations": ["none", "script"],
        "threads": [1],
        "placements": ["sequential"],
        "replicates": 2,
        "two_stage": {"enabled": True, "target_pct": 5, "cap": 4},
        "topology": str(TOPOLOGY),
        **over,
    }
    topo = config_mod.check(cfg).topology
    return plan_mod.build(cfg, topo, code={"measure": "m0", "tables": "t0", "report": "r0"})


def test_the_plan_asks_for_the_first_stage_then_each_cells_count():
    p = _plan()
    cells = sorted(p.grid.cells)
    assert p.two_stage == {"first_stage": 2, "target_pct": 5.0, "cap": 4}
    # the order is planned up to the cap, round by round; the first rounds are the same as
    # without two_stage
    assert {r for _, r in p.order} == {1, 2, 3, 4}
    plain = _plan(two_stage={"enabled": False})
    assert p.order[: len(plain.order)] == plain.order
    assert p.cell_outputs() == plain.cell_outputs()
    assert p.stages_path in p.targets() and plain.stages_path is None
    counts = {cells[0]: 4, cells[1]: 3}
    outs = p.cell_outputs(counts)
    assert len(outs) == 4 + 3 + 2 * (len(cells) - 2)
    assert cells[0].path(p.results, 4) in outs and cells[1].path(p.results, 4) not in outs
    # a later round runs after every earlier one (Snakemake priorities)
    assert p.priority(cells[0], 3) < min(p.priority(k, 2) for k in cells)
    # the counts file follows the grid manifest, which holds the settings
    other = _plan(two_stage={"enabled": True, "target_pct": 3, "cap": 4})
    assert other.manifest_path != p.manifest_path and other.stages_path != p.stages_path
    assert Path(p.stages_path).name.split("-")[1] == Path(p.manifest_path).name.split("-")[1]


def test_one_process_per_cell_turns_two_stage_off_and_the_cap_is_never_below_the_first_stage():
    assert _plan(replicates=1).two_stage is None
    assert _plan(replicates=1).stages_path is None
    assert _plan(replicates=5).two_stage["cap"] == 5
