"""Measure the deploy answer's configurations (``tables.deploy_plan``) side by side: round by
round, every configuration once per round in ABBA order (the plan's order in odd rounds, the
reverse in even ones), so that what drifts between rounds moves every configuration alike and
each gain is a paired ratio over rounds (``gains``; docs/deploy.md).

A configuration is one measurement of the one measuring stack (``runner.measure``, as a packing
group is): one pinned instance process per instance, each with its own optimization, allocator,
threads, batch and binding; a round's latency is the barrier round's (all instances start
together). After ``rounds`` rounds the job goes on, round by round up to ``max_rounds``, while a
gain of an objective's best configuration is known less precisely than ``target_pct`` and the
next round fits the job's time allowance.

The judging (``metric``, ``gains``, ``best``) is pure, on the records: ``tables.deploy`` reads
the same functions into ``recommendation.csv``.
"""

from __future__ import annotations

import math
import os
import shutil
import time
from pathlib import Path

import numpy as np

from numa_effects import stats
from numa_effects.measure import provenance, runner
from numa_effects.measure import result as cellresult
from numa_effects.measure.causes import Cause
from numa_effects.plan import placement
from numa_effects.plan import topology as topology_mod

LATENCY, THROUGHPUT = "latency", "throughput"


# -- judging (pure) ----------------------------------------------------------------------------


def metric(rec: dict, objective: str) -> float:
    """A measured configuration's value for an objective: the request's median latency
    (seconds; the barrier round's) or the machine's images per second (each instance's batch
    over its own median latency, summed); NaN without statistics."""
    if rec.get("status") != "ok" or not rec.get("stats"):
        return math.nan
    if objective == LATENCY:
        return float(rec["stats"]["median_s"])
    total = 0.0
    for inst in rec.get("instances") or []:
        st = inst.get("stats")
        if not st or not st.get("median_s"):
            return math.nan
        total += float(inst["batch"]) / float(st["median_s"])
    return total


def p99_s(rec: dict) -> float:
    """The largest of the instances' p99 latencies (a request's tail), NaN without them."""
    vals = [(i.get("stats") or {}).get("p99_s") for i in rec.get("instances") or []]
    vals = [float(v) for v in vals if v]
    return max(vals) if vals else math.nan


def round_values(runs: dict, cid: str, objective: str) -> dict[int, float]:
    """{round: value} of one configuration (rounds without statistics left out)."""
    out = {}
    for r, rec in enumerate(runs.get(cid) or [], start=1):
        v = metric(rec, objective)
        if v == v and v > 0:
            out[r] = v
    return out


def gain_rounds(runs: dict, best: str, other: str, objective: str) -> np.ndarray:
    """ln(gain) per paired round: how many times faster (latency: other / best) or more
    images per second (throughput: best / other) the best configuration is."""
    b, o = round_values(runs, best, objective), round_values(runs, other, objective)
    if objective == LATENCY:
        return stats.paired_log_ratios(b, o)
    return stats.paired_log_ratios(o, b)


def best(runs: dict, cids: list[str], objective: str) -> str | None:
    """The configuration with the best geometric mean over its measured rounds (None: none
    measured)."""
    means = {}
    for cid in cids:
        vals = list(round_values(runs, cid, objective).values())
        if vals:
            means[cid] = float(np.mean(np.log(vals)))
    if not means:
        return None
    pick = min if objective == LATENCY else max
    return pick(means, key=means.get)


def pooled(runs: dict, rows: list[dict]) -> tuple[float, int]:
    """The pooled variance of the per-round log gains over every comparison of the job (each
    objective's best against each of its other configurations): the prior that moderates a
    comparison's own variance (``stats.paired_ratio_ci``)."""
    groups = []
    for row in rows:
        cids = row_configs(row)
        top = best(runs, cids, row["objective"])
        if top:
            groups += [gain_rounds(runs, top, c, row["objective"]) for c in cids if c != top]
    return stats.pooled_paired_var(groups)


def row_configs(row: dict) -> list[str]:
    """The configurations an objective row compares: its candidates and measured baselines."""
    out = [c["config"] for c in row["candidates"]]
    out += [b["config"] for b in row["baselines"] if b.get("config")]
    return list(dict.fromkeys(out))


def gains(runs: dict, row: dict, pool=(math.nan, 0)) -> dict[str, dict]:
    """{configuration: the best one's gain over it with its paired CI} for one objective row."""
    cids = row_configs(row)
    top = best(runs, cids, row["objective"])
    out = {}
    for cid in cids:
        if top is None or cid == top:
            continue
        d = gain_rounds(runs, top, cid, row["objective"])
        if d.size:
            out[cid] = {**stats.paired_ratio_ci(d, pool), "rounds": int(d.size), "best": top}
    return out


def widest_pct(runs: dict, rows: list[dict]) -> float:
    """The widest gain CI half-width of the job, in % (inf while a gain has no interval)."""
    pool = pooled(runs, rows)
    widest = 0.0
    for row in rows:
        for g in gains(runs, row, pool).values():
            lo, hi = g["ci_low"], g["ci_high"]
            if not (lo == lo and hi == hi):
                return math.inf
            widest = max(widest, (math.sqrt(hi / lo) - 1) * 100)
    return widest


# -- measuring ---------------------------------------------------------------------------------


def plans_here(config: dict, topo) -> list[placement.Plan] | str:
    """The binding of each instance of a configuration on this machine, or why it cannot run
    here (a CPU the machine does not have)."""
    have = {c.cpu for c in topo.cpus}
    out = []
    for inst in config["instances"]:
        missing = [c for c in inst["cpus"] if c not in have]
        if missing:
            return f"CPUs {missing} are not on this machine ({topo.source})"
        nodes = tuple(sorted({topo.node_of(c) for c in inst["cpus"]}))
        mem = tuple(inst["mem_nodes"])
        cores = len({topo.cpu(c).siblings for c in inst["cpus"]})
        out.append(
            placement.Plan(
                placement=placement.PACKED,
                threads=int(inst["threads"]),
                cpus=tuple(sorted(inst["cpus"])),
                cpu_nodes=nodes,
                mem_policy="bind" if mem else "local",
                mem_nodes=mem or nodes,
                use_smt=cores < len(inst["cpus"]),
                cores=cores,
            )
        )
    return out


def members(config, plans, job, environ, logdir: Path, tag: str) -> tuple[list, dict]:
    """The instances of one configuration as the runner's members, and the record's cell."""
    common = {
        "model": config["model"],
        "opt": config["opt"],
        "allocator": config["allocator"],
        "image_size": job["image_size"],
        "use_smt": any(p.use_smt for p in plans),
    }
    record, env = environ.get(config["allocator"], (None, None))
    out = []
    for j, (plan, inst) in enumerate(zip(plans, config["instances"], strict=True)):
        cell = {**common, "placement": placement.PACKED, "threads": plan.threads}
        spec = {
            "cell": {**cell, "batch_size": int(inst["batch"])},
            "plan": plan.to_dict(),
            "settings": job["settings"],
        }
        if config["opt"] in job.get("compile_cache_opts", ()):
            spec["compile_cache_dir"] = job["compile_cache_dir"]
        if record:
            spec["allocator"] = record
        out.append(
            runner.Member(
                plan, spec, logdir / f"{tag}-i{j}.spec.json", logdir / f"{tag}-i{j}.log", env
            )
        )
    cell = {
        **common,
        "placement": placement.PACKED,
        "threads": sum(p.threads for p in plans),
        "batch_size": sum(int(i["batch"]) for i in config["instances"]),
    }
    return out, cell


def preflight(job: dict, topo) -> tuple[dict, dict, tuple | None]:
    """({cid: plans}, {allocator: (record, environment)}, the first reason not to run or
    None): numactl, every configuration placed here, every allocator found here."""
    if shutil.which("numactl") is None:
        return {}, {}, (Cause.NUMACTL_MISSING, "numactl is not on PATH; never run unpinned")
    placed, why = {}, None
    for cid, config in job["configurations"].items():
        got = plans_here(config, topo)
        if isinstance(got, str):
            why = why or (Cause.PLAN_MISMATCH, f"{cid}: {got}")
        else:
            placed[cid] = got
    environ = {}
    for name in sorted({c["allocator"] for c in job["configurations"].values()}):
        record, env, no = runner.allocator_here(name)
        if no:
            why = why or (Cause.ALLOCATOR_NOT_LOADED, no)
        environ[name] = (record, env)
    return placed, environ, why


def order(cids: list[str], r: int) -> list[str]:
    """Round ``r``'s order: the plan's in odd rounds, reversed in even ones (ABBA)."""
    return list(cids) if r % 2 else list(reversed(cids))


def measure_round(job, placed, environ, logdir, timeout_s, r, runs, max_memory_mb, sleep):
    for cid in order(list(job["configurations"]), r):
        config = job["configurations"][cid]
        mem, cell = members(config, placed[cid], job, environ, logdir, f"{cid}-r{r}")
        rec = runner.measure(
            mem,
            cell,
            job["settings"],
            timeout_s,
            replicate=r,
            max_memory_mb=max_memory_mb,
            sleep=sleep,
        )
        if config["allocator"] in environ and environ[config["allocator"]][0]:
            rec["allocator"] = environ[config["allocator"]][0]
        runs[cid].append(rec)


def run(job: dict, out, logdir, timeout_s: float, max_memory_mb=None, sleep=None) -> dict:
    """Measure every configuration of the deploy plan in ABBA rounds (module docstring) and
    write the result JSON atomically to ``out``: ``runs`` {configuration: [record per round]},
    ``rounds`` and why they stopped. ``job``: the plan's ``objectives`` and ``configurations``,
    ``settings``, ``image_size``, ``rounds``, ``max_rounds``, ``target_pct``,
    ``allowance_s`` (the time the job may take)."""
    logdir = Path(logdir)
    started = time.monotonic()
    result = {
        "kind": "deploy",
        "settings": job["settings"],
        "code": job.get("code"),  # the measuring code's digest (kept by it in the history)
        "provenance": {
            "started_at": provenance.now(),
            "host": provenance.host(),
            "versions": provenance.versions(),
            "workflow_revision": provenance.git_revision(runner.SCRIPTS_DIR),
            "slurm": provenance.slurm(),
            "load_before": os.getloadavg()[0],
        },
    }
    placed, environ, why = preflight(job, topology_mod.current())
    if why:
        result.update(status="failed", failure={"cause": str(why[0]), "message": why[1]})
        cellresult.write_json_atomic(out, result)
        return result
    runs: dict[str, list] = {cid: [] for cid in job["configurations"]}
    rows = job["objectives"]
    r, stop = 0, "no configuration"
    while runs and r < int(job["max_rounds"]):
        t0 = time.monotonic()
        r += 1
        measure_round(job, placed, environ, logdir, timeout_s, r, runs, max_memory_mb, sleep)
        per_round = time.monotonic() - t0
        if r < int(job["rounds"]):
            continue
        widest = widest_pct(runs, rows)
        if widest <= float(job["target_pct"]):
            stop = f"every gain within +-{job['target_pct']:g} % ({widest:.1f} %)"
            break
        spent = time.monotonic() - started
        if spent + per_round > float(job.get("allowance_s") or math.inf):
            stop = f"time allowance ({job['allowance_s']:.0f} s); widest gain CI +-{widest:.1f} %"
            break
        stop = f"max_rounds; widest gain CI +-{widest:.1f} %"
    result["runs"] = runs
    result["rounds"] = r
    result["stop_reason"] = stop
    failed = [(c, rec) for c, recs in runs.items() for rec in recs if rec["status"] == "failed"]
    result["status"] = "ok"
    result["failed_configurations"] = sorted({c for c, _ in failed})
    result["provenance"]["finished_at"] = provenance.now()
    result["provenance"]["load_after"] = os.getloadavg()[0]
    result["wall_s"] = time.monotonic() - started
    cellresult.write_json_atomic(out, result)
    return result
