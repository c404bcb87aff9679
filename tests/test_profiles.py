"""profiles/local and profiles/slurm share one set of job resources, defined in the workflow.

Dry runs only (no Slurm needed): what each job would ask for, as Snakemake prints it.
"""

from __future__ import annotations

import math
import re

import pytest
import yaml
from conftest import FIXTURES, REPO, load_config, snakemake

pytestmark = pytest.mark.integration

PROFILES = REPO / "profiles"
# A 2 x 16-core cluster node, as a topology file: what a grid on a cluster is planned against.
NODE = FIXTURES / "topology" / "2x16-nosmt-alternating.lscpu-p.txt"
CONFIG = {
    **load_config("tiny"),
    "optimizations": ["none"],
    "threads": [1, 16],
    "topology": str(NODE),
}
# Keys that define per-rule resources; a profile holding one would fork the shared definitions.
PER_RULE_KEYS = {"set-resources", "set-threads", "default-resources"}


def planned_resources(workdir, profile: str) -> dict[str, list[dict[str, str]]]:
    """{rule: [resources of each planned job]} from a dry run with the given profile."""
    proc = snakemake(workdir, CONFIG, "--profile", str(PROFILES / profile), "-n", "all")
    jobs: dict[str, list[dict[str, str]]] = {}
    rule = None
    for line in proc.stdout.splitlines() + proc.stderr.splitlines():
        if m := re.match(r"^(?:local)?rule (\w+):$", line):
            rule = m.group(1)
        elif rule and (m := re.match(r"^\s+resources: (.*)$", line)):
            jobs.setdefault(rule, []).append(
                dict(kv.split("=", 1) for kv in m.group(1).split(", "))
            )
            rule = None
    assert jobs.get("cell"), proc.stdout + proc.stderr
    return jobs


def profile(name: str) -> dict:
    return yaml.safe_load((PROFILES / name / "config.yaml").read_text())


def test_profiles_hold_no_per_rule_resources():
    assert not PER_RULE_KEYS & set(profile("local"))
    slurm = profile("slurm")
    assert not {"set-resources", "set-threads"} & set(slurm)
    # default-resources only describe the small shared jobs and the site knobs
    assert slurm["executor"] == "slurm"
    assert slurm["resources"]["bench_slot"] > 1


def test_benchmark_jobs_ask_for_a_whole_node_the_same_way_in_both_profiles(tmp_path):
    local = planned_resources(tmp_path / "local", "local")
    slurm = planned_resources(tmp_path / "slurm", "slurm")
    minutes = str(math.ceil((3 * CONFIG["max_seconds_per_cell"] + 120 + 300) / 60))
    bench_rules = {r for r, jobs in slurm.items() if any("bench_slot" in j for j in jobs)}
    assert {"cell"} <= bench_rules
    for rule in bench_rules:
        for plan in (local, slurm):
            for job in plan[rule]:
                assert job["bench_slot"] == "1"
                assert job["slurm_extra"] == "--exclusive", (rule, job)
                assert job["mem_mb"] == "0", (rule, job)  # all of the node's memory
                assert int(job["runtime"]) >= 1, (rule, job)
    assert {j["runtime"] for j in slurm["cell"]} == {minutes}
    # Light jobs: the Slurm profile's small shared defaults.
    for rule, jobs in slurm.items():
        if rule not in bench_rules and rule != "all":
            assert all(j["mem_mb"] == "4000" and j["runtime"] == "30" for j in jobs), rule
