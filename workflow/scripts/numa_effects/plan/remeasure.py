"""What a run is about to measure, why, and how long it takes: the one line a dry run (and a
run, before its first job) prints. Pure: the jobs come in as plain data from Snakemake's DAG
(``workflow/rules/history.smk``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from numa_effects.plan import cost, cpu, paths
from numa_effects.plan import settings as settings_mod
from numa_effects.plan.durations import duration_text

# rule -> the pattern of the record it writes: every measurement of the workflow
RULES = {
    "cell": paths.CELL,
    "peak": paths.PEAK,
    "memory": paths.MEMORY,
    "packing_run": paths.PACKING_RUN,
    "interference_run": paths.INTERFERENCE_RUN,
    "deploy_run": paths.DEPLOY_RUN,
}
# the checkpoint that asks for more replicates once it has run (config key two_stage)
CHECKPOINT = "replicates"
START_S = 5.0  # a measuring job's start, imports, model build and warm-up, by default
JOB_OVERHEAD_S = 1.0  # what a job costs besides what its record timed
REASONS = (
    *("new", "code changed", "settings changed", "forced", "interrupted", "inputs changed"),
    "changed",
)


@dataclass(frozen=True)
class Job:
    rule: str  # one of RULES
    output: str  # the record it writes
    why: str  # one of REASONS
    previous_s: float | None  # what its previous record took (None: no record, or no times)
    default_s: float  # what a job of its rule takes by the settings


def reason(
    exists: bool,
    forced: bool,
    incomplete: bool,
    params_changed: bool,
    recorded_code: str | None,
    code: str | None,
) -> str:
    """Why a job measures: Snakemake's reason and the record it replaces (``recorded_code``: the
    code that measured it, None where it does not say) against this run's measuring ``code``."""
    if not exists:
        return "new"
    if forced:
        return "forced"
    if incomplete:
        return "interrupted"
    if recorded_code is None and params_changed:
        return "changed"
    if recorded_code is not None and recorded_code != code:
        return "code changed"
    return "settings changed" if params_changed else "inputs changed"


def default_seconds(rule: str, plan) -> float:
    """What one job of ``rule`` takes by the settings of ``plan``: its time budgets and starts."""
    config = plan.config
    if rule == "cell":
        return float(config.get("max_seconds_per_cell") or 0) + START_S
    if rule == "peak":
        return settings_mod.PEAK_SETTINGS["max_seconds_per_cell"] + START_S
    if rule == "memory":
        return settings_mod.MEMORY_SETTINGS["max_seconds_per_cell"] + START_S
    packing = plan.packing  # resolved: every key set (plan.packing.settings)
    if rule == "packing_run":
        configs = 1 + packing["measure_plans"]
        return configs * plan.replicates * (packing["max_seconds"] + START_S)
    if rule == "interference_run":
        most = max((len(j["instances"]) for j in plan.interference_jobs), default=1)
        each = packing["interference"]["max_seconds"] + START_S
        return (1 + most) * plan.replicates * each
    if rule == "deploy_run":
        return cost.deploy_seconds(plan)
    raise KeyError(rule)


def defaults(plan) -> dict[str, float]:
    """{rule: seconds of one of its jobs} by the run's cost model (``plan.cost``)."""
    try:  # the clock of the machine that measures (where a run's line is printed)
        caps = cpu.of_machine()
    except OSError:
        caps = None
    est = cost.estimate(plan, caps, cost.kept_scale(plan.results, caps))  # as the run's line
    per = cost.jobs_per_part(plan)
    parts = {
        "cell": "cells",
        "peak": "peaks",
        "packing_run": "packing",
        "interference_run": "interference",
        "deploy_run": "deploy",
    }
    return {
        rule: est.parts[part] / per[part]
        for rule, part in parts.items()
        if est.parts.get(part) and per.get(part)
    }


def estimate_seconds(jobs: Iterable[Job]) -> float:
    """Seconds the ``jobs`` take one after the other: each job's previous time where its record
    says one, else its rule's default."""
    return sum(j.default_s if j.previous_s is None else j.previous_s + JOB_OVERHEAD_S for j in jobs)


def _counts(items: Iterable[str], order: Iterable[str]) -> str:
    n = Counter(items)
    return ", ".join(f"{n[k]} {k}" for k in order if n[k])


def line(jobs: list[Job], dry_run: bool, more_later: bool = False, kept_in: str = "") -> str:
    """The one line: how many jobs measure, by rule and by reason, and the estimated time;
    ``more_later``: a checkpoint adds replicates; ``kept_in``: where replaced records are kept."""
    verb = "a run would measure" if dry_run else "this run measures"
    later = " (and the further replicates the two-stage checkpoint decides)" if more_later else ""
    if not jobs:
        return f"numa-effects: {verb} nothing{later}: no cell, peak, memory or packing job"
    timed = sum(j.previous_s is not None for j in jobs)
    text = (
        f"numa-effects: {verb} {len(jobs)} job(s){later} "
        f"({_counts((j.rule for j in jobs), RULES)}): {_counts((j.why for j in jobs), REASONS)}; "
        f"about {duration_text(estimate_seconds(jobs))} ({timed} timed by their previous "
        f"record, {len(jobs) - timed} at the settings' default)"
    )
    replaced = sum(j.why != "new" for j in jobs)
    if replaced and kept_in:
        text += f"; the {replaced} record(s) it replaces are kept in {kept_in} first"
    return text
