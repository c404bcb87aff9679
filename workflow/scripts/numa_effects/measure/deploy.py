"""Measure the deploy answer's configurations (``analysis.deploy_plan``) side by side through
the front door (``measure.job``), every configuration once per round in ABBA order, so that
drift moves every configuration alike and each gain is a paired ratio over rounds; the rounds
stop by ``until`` (docs/deploy.md). The judging (``metric``, ``gains``, ``best``) is pure, on
the records: ``tables.deploy`` reads the same functions."""

from __future__ import annotations

import math
import time

import numpy as np

from numa_effects import stats
from numa_effects.measure import job as job_mod
from numa_effects.measure.record import GroupRecord, Record
from numa_effects.plan import spec as spec_mod
from numa_effects.plan.deploy import LATENCY


def metric(rec: Record, objective: str) -> float:
    """A configuration's value for an objective: the median latency (s) or the images per
    second (each instance's batch over its own median, summed); NaN without statistics."""
    if rec.status != "ok" or not rec.stats:
        return math.nan
    if objective == LATENCY:
        return float(rec.stats["median_s"])
    total = 0.0
    for inst in rec.instances or ():
        st = inst.get("stats")
        if not st or not st.get("median_s"):
            return math.nan
        total += float(inst["batch"]) / float(st["median_s"])
    return total


def requests_s(rec: Record, objective: str) -> list[float]:
    """Every timed request's latency (s) of one process set, the iterations its statistics
    keep: for latency the request's (its slowest instance's), for throughput each instance's."""
    if rec.status != "ok":
        return []
    m = rec.measurement or {}
    excluded = m.get("excluded") or []

    def kept(xs) -> list[float]:
        return [float(x) for j, x in enumerate(xs) if not (j < len(excluded) and excluded[j])]

    if objective == LATENCY:
        return kept(m.get("latencies_s") or [])
    return [x for i in rec.instances or () for x in kept(i.get("latencies_s") or [])]


def round_seconds(runs: dict) -> float:
    """The wall time of one round (every configuration once), the median over the rounds of
    its records' started-to-finished times; NaN without timestamps."""
    from datetime import datetime

    per: dict[int, float] = {}
    for recs in runs.values():
        for rec in recs:
            p = rec.provenance or {}
            if p.get("started_at") and p.get("finished_at"):
                span = datetime.fromisoformat(p["finished_at"]) - datetime.fromisoformat(
                    p["started_at"]
                )
                per[rec.replicate] = per.get(rec.replicate, 0.0) + span.total_seconds()
    return float(np.median(list(per.values()))) if per else math.nan


def round_values(runs: dict, cid: str, objective: str) -> dict[int, float]:
    """{round: value} of one configuration (rounds without statistics left out)."""
    out = {}
    for rec in runs.get(cid) or ():
        v = metric(rec, objective)
        if v > 0:  # not NaN
            out[rec.replicate] = v
    return out


def gain_rounds(runs: dict, best: str, other: str, objective: str) -> np.ndarray:
    """ln(gain) of the best configuration over ``other`` per paired round."""
    b, o = round_values(runs, best, objective), round_values(runs, other, objective)
    if objective == LATENCY:
        return stats.paired_log_ratios(b, o)
    return stats.paired_log_ratios(o, b)


def best(runs: dict, cids: list[str], objective: str) -> str | None:
    """The configuration with the best geometric mean over its rounds (None: none measured)."""
    means = {}
    for cid in cids:
        vals = list(round_values(runs, cid, objective).values())
        if vals:
            means[cid] = float(np.mean(np.log(vals)))
    pick = min if objective == LATENCY else max
    return pick(means, key=means.get) if means else None


def _row_rounds(runs: dict, row: dict, top=None) -> dict[str, np.ndarray]:
    """``gain_rounds`` of ``top`` (by default the row's best configuration) over each other one."""
    cids = row_configs(row)
    top = top or best(runs, cids, row["objective"])
    if top is None:
        return {}
    return {c: gain_rounds(runs, top, c, row["objective"]) for c in cids if c != top}


def pooled(runs: dict, rows: list[dict]) -> tuple[float, int]:
    """The pooled variance of the per-round log gains over every comparison of the job: the
    prior that moderates a comparison's own (``stats.paired_ratio_ci``)."""
    return stats.pooled_paired_var([d for row in rows for d in _row_rounds(runs, row).values()])


def row_configs(row: dict) -> list[str]:
    """The configurations an objective row compares: its candidates, measured baselines and
    the configurations of its factors."""
    out = [c["config"] for c in row["candidates"]]
    out += [b["config"] for b in row["baselines"] if b.get("config")]
    out += [f["config"] for f in row.get("factors") or ()]
    return list(dict.fromkeys(out))


def gains(runs: dict, row: dict, pool=(math.nan, 0), top=None) -> dict[str, dict]:
    """{configuration: ``top``'s (by default the best one's) gain over it with its paired CI}
    for one objective row."""
    rounds = _row_rounds(runs, row, top)
    return {cid: stats.paired_ratio_ci(d, pool) for cid, d in rounds.items() if d.size}


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


def until(rows: list[dict], job: dict, started: float):
    """The stop rule: after ``rounds``, once every gain is within ``target_pct`` or time is up."""
    last = {"t": started}

    def check(runs: dict, replicate: int) -> str | None:
        now = time.monotonic()
        per_round, last["t"] = now - last["t"], now
        if replicate < int(job["rounds"]):
            return None
        widest = widest_pct(runs, rows)
        if widest <= float(job["target_pct"]):
            return f"every gain within +-{job['target_pct']:g} % ({widest:.1f} %)"
        allowance = job.get("allowance_s")
        if allowance and now - started + per_round > float(allowance):
            return f"time allowance ({allowance:.0f} s); widest gain CI +-{widest:.1f} %"
        return None

    return check


def run(job: dict, plan: dict, out, log, timeout_s: float, max_memory_mb=None) -> GroupRecord:
    """Measure the deploy ``plan`` through the front door, its record to ``out``."""
    spec = spec_mod.deploy(job, plan["configurations"])
    stop = until(plan["objectives"], job, time.monotonic())
    return job_mod.run(spec, out, log, timeout_s, max_memory_mb, until=stop)


def rounds(rec: GroupRecord) -> int:
    """How many rounds a deploy job measured."""
    return max((r.replicate for recs in rec.runs.values() for r in recs), default=0)
