"""A budget that holds: the estimate calibrated by a probe of this machine (plan.cost.scale_of,
measure.calibrate) and the deploy job given what the budget leaves when it starts
(plan.cost.deploy_allowance, measure.progress.allowance_s)."""

import copy
import dataclasses
import json
import time
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from numa_effects import config as config_mod
from numa_effects.measure import calibrate, progress
from numa_effects.plan import build, cost, cpu, topology
from numa_effects.plan.optimizations import EAGER

FIXTURES = Path(__file__).parent / "fixtures"
ONE_NODE = FIXTURES / "topology" / "this-vm-2cpu-1node.lscpu"
EPYC = "amd-epyc-zen3-kvm.cpuinfo"  # family 25 model 1, AVX2, no avx512_bf16


def xeon_caps():
    """The newcomer Xeon's capabilities: avx512_bf16 without AMX at 2.3 GHz (its records' peak:
    294.4 GFLOP/s bf16 on one core), from the 8480's cpuinfo."""
    text = (FIXTURES / "cpu" / "intel-xeon-8480-sapphirerapids.cpuinfo").read_text()
    caps = cpu.capabilities(cpu.parse_cpuinfo(text))
    flags = tuple(f for f in caps.flags if not f.startswith("amx"))
    return dataclasses.replace(caps, nominal_mhz=2300.0, flags=flags)


def plan_of(**over):
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    checked = config_mod.check({**cfg, "topology": str(ONE_NODE), **over})
    c = copy.deepcopy(checked.config)
    return build.build(c, checked.topology, code={"measure": "m", "tables": "t", "report": "r"})


def test_a_probe_on_a_machine_1_5x_slower_gives_factors_of_1_5():
    caps = xeon_caps()
    predicted = {t: cost.step_s("resnet18", EAGER, t, 1, 224, caps) for t in (1, 2)}
    raw = {
        "model": "resnet18",
        "start_s": 1.5 * cost.START_S,
        "build_s": 1.5 * cost.BUILD_S,
        # the median: one step disturbed 3x does not move it
        "steps_s": {str(t): [1.5 * s, 1.5 * s, 4.5 * s] for t, s in predicted.items()},
    }
    scale = cost.scale_of(raw, caps)
    assert scale.calibrated
    assert scale.fixed == pytest.approx(1.5) and scale.step == pytest.approx(1.5)


def test_a_machine_slower_in_everything_makes_a_fixed_protocol_run_as_much_slower():
    # protocol fixed: every window is a count of steps, so each part of the estimate is fixed
    # costs plus steps, and both 1.5x make every part 1.5x; but the deploy job's, whose slices
    # are timed in seconds (deploy.max_seconds) whatever the protocol: its seconds stay (and
    # the load test's LoadGen runs, timed in seconds too)
    plan = plan_of(protocol="fixed", budget=None, batch_sizes=[1, 16])
    base = cost.estimate(plan, xeon_caps())
    slow = cost.estimate(plan, xeon_caps(), cost.Scale(1.5, 1.5, True))
    assert set(slow.parts) == set(base.parts)
    for part, seconds in base.parts.items():
        if part not in ("deploy", "loadtest"):
            assert slow.parts[part] == pytest.approx(1.5 * seconds), part
    d = plan.deploy
    timed = d["max_rounds"] * sum(cost.deploy_configurations(d)) * d["max_seconds"]
    assert slow.parts["deploy"] - timed == pytest.approx(1.5 * (base.parts["deploy"] - timed))
    assert ", calibrated on this machine (" in slow.line()
    assert ", uncalibrated (" in cost.estimate(plan, None, cost.UNCALIBRATED).line()


def test_the_calibrated_estimate_of_a_run_in_blocks_is_within_25_pct_of_its_wall_time():
    # the run of tests/fixtures/progress/README.md's blocks-run-epyc-calibration.json, its config
    # as the budget fitted it (bf16 skipped there): Snakemake took 11:58, the deploy job (12
    # configurations, 3 blocks) 6.8 min of it
    real_min, deploy_min = 11.97, 6.8
    raw = json.loads((FIXTURES / "progress" / "blocks-run-epyc-calibration.json").read_text())
    caps = cpu.capabilities(cpu.parse_cpuinfo((FIXTURES / "cpu" / EPYC).read_text()))
    scale = cost.scale_of(raw, caps)
    plan = plan_of(
        budget=None,
        optimizations=[EAGER, "script"],
        batch_sizes=[1, 16],
        two_stage={"enabled": True, "cap": 2},
        packing={"enabled": False, "interference": {"threads": [1]}},
    )
    fitted = {"max_rounds": 3, "candidates": 1}
    plan = plan.narrowed({**plan.config, "deploy": {**plan.config["deploy"], **fitted}})
    # the deploy job measured 12 configurations; the a priori count prices another number
    measured = 12 / sum(cost.deploy_configurations(plan.deploy))
    est = cost.estimate(plan, caps, scale)
    deploy = est.parts["deploy"] * measured / 60
    assert 0.75 <= deploy / deploy_min <= 1.25, deploy
    # that run had no load test: its part (where the plan has one) is left out
    total = (est.total_s - est.parts["deploy"] - est.parts.get("loadtest", 0.0)) / 60 + deploy
    assert 0.75 <= total / real_min <= 1.25, total


def test_the_probe_measures_once_and_its_timings_are_kept_for_the_same_machine(tmp_path):
    # the real probe, the smallest ResNet at a small image to keep it short, pinned to this
    # machine's usable CPUs
    cpus = list(topology.current().usable_cpus())
    results, caps = tmp_path / "results", dataclasses.replace(xeon_caps(), model_name="cpu x")
    assert calibrate.scale(results, "resnet18", 64, cpus, caps, dry_run=True) == cost.UNCALIBRATED
    assert not (results / calibrate.FILE).exists()  # a dry run never probes
    scale = calibrate.scale(results, "resnet18", 64, cpus, caps, dry_run=False)
    got = json.loads((results / calibrate.FILE).read_text())
    assert got["start_s"] > got["build_s"] > 0 and got["key"]["cpu"] == "cpu x"
    assert sorted(got["steps_s"]) == sorted({"1", str(len(cpus))})
    assert all(len(s) == calibrate.STEPS and min(s) > 0 for s in got["steps_s"].values())
    assert scale.calibrated and got["factors"] == dataclasses.asdict(scale)
    assert calibrate.timings(results, "resnet18", 64, cpus, caps, dry_run=True) == got
    assert cost.kept_scale(results, caps) == scale  # the run's progress estimates read it too
    assert cost.kept_scale(results, xeon_caps()) == cost.UNCALIBRATED  # another CPU's
    # kept timings of a quiet machine serve a run as they are (a busy one's are taken again)
    (results / calibrate.FILE).write_text(json.dumps({**got, "busy": False}))
    kept = calibrate.timings(results, "resnet18", 64, cpus, caps, dry_run=False)
    assert kept == {**got, "busy": False}
    assert calibrate.cached(results, "another cpu") is None  # another machine probes again


def test_the_deploy_job_gets_what_the_budget_leaves_when_it_starts(tmp_path):
    est = cost.Estimate()
    est.add("cells", 300.0)
    est.add("deploy", 400.0)
    est.add("tables and report", 25.0)
    # 15 min = 900 s; planned: 900 - (300 + 25) = 575 -> 580 (10 s steps); after: 25 -> 30
    allowance = cost.deploy_allowance(est, 15, str(tmp_path))
    assert allowance == {
        "budget_s": 900.0,
        "after_s": 30.0,
        "planned_s": 580.0,
        "results": str(tmp_path),
    }
    assert cost.deploy_allowance(est, None, str(tmp_path)) is None
    assert progress.allowance_s(allowance) == 580.0  # no run started there: the plan's
    progress.start(tmp_path, {})
    data = json.loads((tmp_path / progress.START).read_text())
    data["started"] = time.time() - 600  # the run started 10 min ago: 900 - 600 - 30 left
    (tmp_path / progress.START).write_text(json.dumps(data))
    assert progress.allowance_s(allowance) == pytest.approx(270.0, abs=5.0)
    data["started"] = time.time() - 1200  # over: nothing left, the job measures its rounds
    (tmp_path / progress.START).write_text(json.dumps(data))
    assert progress.allowance_s(allowance) == 0.0
