"""Measure packing plans for real: k concurrent pinned instances, round by round.

For one (model, opt, core budget C, total batch B) the job measures, replicate by replicate and
in this order: the *fat* instance (one process, C threads, B images) and the candidates the
optimizer predicted best (``numa_effects.plan.packing``: ``plan``, ``plan2``, ...; a candidate
that is the fat instance is measured once). The table then recommends the measured best.

An interference profile job (``run_interference``) measures, replicate by replicate, one
instance of t threads and the profile's batch alone (``k1``) and then k identical instances
side by side (``k2``, ``k4``, ...), placed as ``placement.pack`` places a plan: the slowdown
s(t, k) of ``tables.interference``.

A configuration is one measurement of the one measuring stack (``runner.measure``, as a cell
is): one pinned instance process per instance, each ``numactl``-pinned to its own cores with
local memory (``placement.pack``: no CPU shared, an instance straddles nodes only when no node
holds it; the optimizer may name each instance's node), built exactly like a cell; a step of
the timing loop is one barrier round (latency = max t1 - min t0 of the instances' own clocks);
the contention probe covers the CPUs of all instances; a contended attempt is measured again
after the back-off with the same processes; every instance is verified at the end. Any instance
that fails, or is not where its plan says, fails the configuration; a configuration with no
clean round is ``status: contended``, without statistics.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from numa_effects.measure import provenance, runner
from numa_effects.measure import result as cellresult
from numa_effects.measure.causes import Cause
from numa_effects.plan import packing, placement
from numa_effects.plan import topology as topology_mod


def spec_for(
    plan: placement.Plan, images: int, cell_common: dict, settings: dict, allocator: dict | None
) -> dict:
    """What one instance's process reads: a cell of its own threads and images, and the
    allocator record it proves from inside (``runner.allocator_here``; None: none to prove)."""
    spec = {
        "cell": {
            **cell_common,
            "placement": placement.PACKED,
            "threads": plan.threads,
            "batch_size": images,
        },
        "plan": plan.to_dict(),
        "settings": settings,
    }
    return spec | ({"allocator": allocator} if allocator else {})


def measure_group(
    instances: list[tuple[placement.Plan, int]],
    cell_common: dict,
    settings: dict,
    logdir: Path,
    tag: str,
    timeout_s: float,
    max_memory_mb: int | None = None,
    replicate: int = 1,
    sleep=None,
    allocator: tuple[dict, dict] | None = None,
) -> dict:
    """One configuration (``[(plan, images), ...]``) measured as concurrent instances (see the
    module docstring): the record of ``runner.measure`` (``status`` ok, contended or failed),
    its ``cell`` the configuration's totals. Specs and logs: ``logdir/<tag>-i<j>.*``.
    ``allocator``: (record, environment) of ``runner.allocator_here`` for the cell's
    ``allocator``, every instance started from that environment (None: this process's)."""
    logdir = Path(logdir)
    record, environ = allocator or (None, None)
    members = [
        runner.Member(
            plan,
            spec_for(plan, images, cell_common, settings, record),
            logdir / f"{tag}-i{j}.spec.json",
            logdir / f"{tag}-i{j}.log",
            environ,
        )
        for j, (plan, images) in enumerate(instances)
    ]
    cell = {
        **cell_common,
        "placement": placement.PACKED,
        "threads": sum(p.threads for p, _ in instances),
        "batch_size": sum(b for _, b in instances),
    }
    result = runner.measure(
        members,
        cell,
        settings,
        timeout_s,
        replicate=replicate,
        max_memory_mb=max_memory_mb,
        sleep=sleep,
    )
    return result | ({"allocator": record} if record else {})


def measure_replicates(
    groups: dict[str, list[tuple[placement.Plan, int]]],
    cell_common: dict,
    settings: dict,
    logdir: Path,
    timeout_s: float,
    replicates: int,
    max_memory_mb: int | None = None,
    tag: str = "",
    sleep=None,
    allocator: tuple[dict, dict] | None = None,
) -> dict[str, list[dict]]:
    """``{name: [record per replicate]}`` for named configurations, replicate by replicate, in
    the order given (fat then plan: drift hits both alike). Logs: ``<tag><name>-r<r>-i<j>``."""
    runs: dict[str, list] = {name: [] for name in groups}
    for r in range(1, int(replicates) + 1):
        for name, got in groups.items():
            rec = measure_group(
                got,
                cell_common,
                settings,
                logdir,
                f"{tag}{name}-r{r}",
                timeout_s,
                max_memory_mb=max_memory_mb,
                replicate=r,
                sleep=sleep,
                allocator=allocator,
            )
            runs[name].append(rec)
    return runs


def plans_for(
    topo,
    budget: int,
    configuration: list[tuple[int, int]],
    use_smt: bool,
    nodes: list[int] | None = None,
):
    """``[(Plan, images)]`` of a configuration ``[(threads, images), ...]`` on ``topo``, or a
    reason string when it does not fit. ``nodes``: each instance's node as an index among the
    budget's nodes (``packing.budget_nodes``; the optimizer's choice), None = best fit."""
    ids = None
    if nodes is not None:
        bn = [n for n, _ in packing.budget_nodes(topo, budget, use_smt)]
        if any(not 0 <= i < len(bn) for i in nodes):
            return f"node indexes {nodes} outside the budget's {len(bn)} node(s)"
        ids = [bn[i] for i in nodes]
    got = placement.pack(topo, [t for t, _ in configuration], budget, use_smt, nodes=ids)
    if isinstance(got, placement.NotApplicable):
        return got.reason
    return list(zip(got, [b for _, b in configuration], strict=True))


def _provenance() -> dict:
    return {
        "started_at": provenance.now(),
        "host": provenance.host(),
        "versions": provenance.versions(),
        "workflow_revision": provenance.git_revision(runner.SCRIPTS_DIR),
        "slurm": provenance.slurm(),
    }


def _place(topo, job: dict, configs: dict, budget: int, use_smt: bool, no_allocator=None):
    """(groups {name: [(Plan, images)]}, the first reason not to run or None): each
    configuration placed on this machine and compared with the plan made on the scheduling
    topology (``job["placements"]``). ``no_allocator``: why the job's allocator cannot run
    here (``runner.allocator_here``), or None."""
    why = None
    if shutil.which("numactl") is None:
        why = ("numactl-missing", "numactl is not on PATH; instances never run unpinned")
    if no_allocator:
        why = why or (Cause.ALLOCATOR_NOT_LOADED.value, no_allocator)
    groups: dict[str, list] = {}
    for name, conf in configs.items():
        got = plans_for(topo, budget, conf["instances"], use_smt, conf.get("nodes"))
        if isinstance(got, str):
            why = why or ("plan-mismatch", f"{name} does not fit this machine: {got}")
            continue
        planned = job["placements"].get(name)
        if planned is not None and [p.to_dict() for p, _ in got] != planned:
            why = why or (
                "plan-mismatch",
                f"{name}: the placement planned on the scheduling topology differs from "
                "this machine's",
            )
        groups[name] = got
    return groups, why


def _measure_all(
    job, groups, allocator, result, out, logdir, timeout_s, max_memory_mb, sleep
) -> dict:
    common = {k: job[k] for k in ("model", "opt", "image_size", "use_smt")}
    if allocator:  # the grid's baseline allocator (plan.build.Plan.packing_job)
        common["allocator"] = job["allocator"]
        result["allocator"] = allocator[0]
    runs = measure_replicates(
        groups,
        common,
        job["settings"],
        logdir,
        timeout_s,
        int(job.get("replicates", 1)),
        max_memory_mb=max_memory_mb,
        sleep=sleep,
        allocator=allocator,
    )
    result["runs"] = runs
    failed = [(n, rec) for n, recs in runs.items() for rec in recs if rec["status"] == "failed"]
    result["status"] = "failed" if failed else "ok"
    if failed:
        n, rec = failed[0]
        result["failure"] = {**rec["failure"], "message": f"{n}: {rec['failure']['message']}"}
    result["provenance"]["finished_at"] = provenance.now()
    cellresult.write_json_atomic(out, result)
    return result


def _place_and_measure(job, configs, result, out, logdir, timeout_s, max_memory_mb, sleep):
    """Place ``configs`` on this machine (recorded in ``result``), then measure them with the
    job's allocator, found here once; a configuration that cannot be placed, or an allocator
    that cannot run here, fails the job with its cause."""
    logdir, budget, use_smt = Path(logdir), int(job["budget"]), bool(job["use_smt"])
    allocator, no_allocator = None, None
    if job.get("allocator"):
        record, environ, no_allocator = runner.allocator_here(job["allocator"])
        allocator = (record, environ) if record else None
    groups, why = _place(topology_mod.current(), job, configs, budget, use_smt, no_allocator)
    result["placements"] = {n: [p.to_dict() for p, _ in g] for n, g in groups.items()}
    if why:
        result.update(status="failed", failure={"cause": why[0], "message": why[1]})
        cellresult.write_json_atomic(out, result)
        return result
    return _measure_all(
        job, groups, allocator, result, out, logdir, timeout_s, max_memory_mb, sleep
    )


def summary_line(result: dict) -> str:
    """A job's outcome in one line for its log: status, each configuration's round medians
    (ms, or the status of a replicate without statistics), the failure when it failed."""
    med = {
        n: [round(r["stats"]["median_s"] * 1e3, 2) if r.get("stats") else r["status"] for r in recs]
        for n, recs in result.get("runs", {}).items()
    }
    line = f"{result['status']}; medians ms {med}"
    if result["status"] != "ok":
        line += f" ({result['failure']['cause']}: {result['failure']['message']})"
    return line


def run(
    job: dict,
    out: str | os.PathLike,
    logdir: str | os.PathLike,
    timeout_s: float,
    max_memory_mb: int | None = None,
    sleep=None,
) -> dict:
    """Measure the fat instance and the candidates of one job (see the module docstring) and
    write the result JSON atomically to ``out``. ``job``: ``model``, ``opt``, ``image_size``,
    ``use_smt``, ``settings``, ``replicates``, ``budget``, ``batch``, ``choice`` (a row of
    ``packing.choices``; its ``candidates`` are measured, or the row itself when it has none)
    and ``placements`` (the scheduling topology's plan dicts by configuration name).
    ``max_memory_mb``: each instance's address-space limit (RLIMIT_AS)."""
    choice, budget = job["choice"], int(job["budget"])
    result = {
        "job": {k: job[k] for k in ("model", "opt", "budget", "batch", "image_size", "use_smt")}
        | {"allocator": job.get("allocator")},
        "choice": choice,
        "settings": job["settings"],
        "provenance": _provenance(),
        "code": job.get("code"),  # the measuring code's digest (plan.code)
    }
    configs = packing.configurations({**choice, "budget": budget, "batch": int(job["batch"])})
    result["configurations"] = {
        n: {"instances": [list(i) for i in c["instances"]], "nodes": c.get("nodes")}
        | ({"candidate": c["candidate"]} if "candidate" in c else {})
        for n, c in configs.items()
    }
    return _place_and_measure(job, configs, result, out, logdir, timeout_s, max_memory_mb, sleep)


def profile_configurations(job: dict) -> dict[str, dict]:
    """An interference profile job's configurations: ``k1`` (one instance alone) and ``k<k>``
    (k identical instances) of ``threads`` threads and ``batch`` images each."""
    one = (int(job["threads"]), int(job["batch"]))
    ks = [1, *(int(k) for k in job["instances"] if int(k) > 1)]
    return {f"k{k}": {"instances": [one] * k, "nodes": None} for k in ks}


def run_interference(
    job: dict,
    out: str | os.PathLike,
    logdir: str | os.PathLike,
    timeout_s: float,
    max_memory_mb: int | None = None,
    sleep=None,
) -> dict:
    """Measure one interference profile job (see the module docstring) and write its JSON
    atomically to ``out``. ``job``: ``model``, ``opt``, ``image_size``, ``use_smt``,
    ``settings``, ``replicates``, ``budget``, ``threads``, ``batch``, ``instances`` (the group
    sizes k) and ``placements`` (the scheduling topology's plan dicts by name, may be {})."""
    keys = ("model", "opt", "budget", "threads", "batch", "instances", "image_size", "use_smt")
    result = {
        "kind": "interference",
        "job": {k: job[k] for k in keys} | {"allocator": job.get("allocator")},
        "settings": job["settings"],
        "provenance": _provenance(),
        "code": job.get("code"),  # the measuring code's digest (plan.code)
    }
    configs = profile_configurations(job)
    return _place_and_measure(job, configs, result, out, logdir, timeout_s, max_memory_mb, sleep)
