"""Measure the deploy answer's configurations (``analysis.deploy_plan``) side by side through
the front door (``measure.job``) in blocks: each block starts every configuration's processes
at once and measures them warm in short slices in ABBA order (``slicer``), so that drift cancels
within the block and each gain is a paired ratio over the blocks (the job's "rounds"); the blocks
stop by ``until`` (docs/deploy.md). The judging (``metric``, ``gains``, ``best``) is pure, on
the records: ``tables.deploy`` reads the same functions."""

from __future__ import annotations

import csv
import math
import time
from dataclasses import replace

import numpy as np

from numa_effects import stats
from numa_effects.measure import job as job_mod
from numa_effects.measure import progress, slicer
from numa_effects.measure.record import GroupRecord, Record
from numa_effects.plan import spec as spec_mod
from numa_effects.plan.deploy import LATENCY
from numa_effects.plan.spec import Spec

SLICE_S = 1.0  # a slice's timed seconds (at least one step), at most half a block's per config
MEMORY_SHARE = 0.8  # every configuration's processes at once: their RSS within this share


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
    """The wall time of one round or block (every configuration once), the median over them
    of the first start to the last finish of its records; NaN without timestamps."""
    from datetime import datetime

    spans: dict[int, list] = {}
    for recs in runs.values():
        for rec in recs:
            p = rec.provenance or {}
            start = p.get("launcher_started_at") or p.get("started_at")
            if start and p.get("finished_at"):
                got = spans.setdefault(rec.replicate, [])
                got += [datetime.fromisoformat(start), datetime.fromisoformat(p["finished_at"])]
    per = [(max(t) - min(t)).total_seconds() for t in spans.values()]
    return float(np.median(per)) if per else math.nan


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
    """The stop rule: after ``rounds``, once every gain is within ``target_pct`` or time is up:
    the allowance is seconds, or the budget's, resolved now to the time the run has left
    (``progress.allowance_s``)."""
    last = {"t": started}
    allowance = job.get("allowance_s")
    if isinstance(allowance, dict):
        allowance = progress.allowance_s(allowance)

    def check(runs: dict, replicate: int) -> str | None:
        now = time.monotonic()
        per_round, last["t"] = now - last["t"], now
        if replicate < int(job["rounds"]):
            return None
        widest = widest_pct(runs, rows)
        if widest <= float(job["target_pct"]):
            return f"every gain within +-{job['target_pct']:g} % ({widest:.1f} %)"
        if allowance is not None and now - started + per_round > float(allowance):
            return f"time allowance ({allowance:.0f} s); widest gain CI +-{widest:.1f} %"
        return None

    return check


def run(job: dict, plan: dict, out, log, timeout_s: float, max_memory_mb=None, rss_mb=None):
    """Measure the deploy ``plan`` in blocks (``slicer.block``) through the front door, its
    ``GroupRecord`` to ``out``: ``job["rounds"]`` blocks at least, then until ``until`` stops
    them or ``job["max_rounds"]``. ``rss_mb``: each configuration's expected peak RSS
    (``expected_rss_mb``; None: not checked)."""
    spec = spec_mod.deploy(job, plan["configurations"])
    seconds = float(spec.settings.get("max_seconds_per_cell") or 1.0)
    opts = {"slice_s": min(float(job.get("slice_s") or SLICE_S), seconds / 2), "seconds": seconds}
    opts |= {
        "warmup": max(2, int(spec.settings.get("warmup") or 0)),
        "max_memory_mb": max_memory_mb,
    }
    parts, memory = halves(list(spec.configurations), rss_mb)
    echo = {"design": "slices", "slice_s": opts["slice_s"], "seconds": seconds, "memory": memory}
    stop = until(plan["objectives"], job, time.monotonic())

    def blocks(group, readies, logdir, timeout_s, _max_mb):
        runs: dict[str, list[Record]] = {n: [] for n in group.configurations}
        last, stopped = int(job["max_rounds"]), None
        for b in range(1, last + 1):
            for part in parts:
                specs = {
                    n: Spec(group.configurations[n], group.settings, b, group.code) for n in part
                }
                for n, rec in slicer.block(specs, readies, logdir, timeout_s, opts).items():
                    runs[n].append(rec)
            stopped = stop(runs, b) if b < last else None
            if stopped:
                break
        return {n: tuple(recs) for n, recs in runs.items()}, stopped

    spec = replace(spec, job={**spec.job, **echo})
    return job_mod.run(spec, out, log, timeout_s, max_memory_mb, group=blocks)


def expected_rss_mb(configurations: dict, cells_csv) -> dict[str, float] | None:
    """{configuration: the sum over its instances of the largest peak RSS (MiB) ``cells_csv``
    has for the same model, optimization and batch}; None when one has none."""
    try:
        with open(cells_csv, newline="") as fh:
            rows = [r for r in csv.DictReader(fh) if r.get("peak_rss_mb")]
    except OSError:
        return None
    peak: dict[tuple, float] = {}
    for r in rows:
        key = (r["model"], r["opt"], int(float(r["batch_size"])))
        peak[key] = max(peak.get(key, 0.0), float(r["peak_rss_mb"]))
    out = {}
    for cid, conf in configurations.items():
        got = [peak.get((conf["model"], conf["opt"], int(i["batch"]))) for i in conf["instances"]]
        if None in got:
            return None
        out[cid] = float(sum(got))
    return out


def halves(names: list[str], rss_mb: dict | None) -> tuple[list[list[str]], str | None]:
    """The parts a block measures one after the other, and why there are two: every
    configuration at once unless their expected RSS exceeds ``MEMORY_SHARE`` of MemAvailable."""
    avail, total = available_mb(), sum((rss_mb or {}).values())
    if avail is None or len(names) < 2 or total <= MEMORY_SHARE * avail:
        return [names], None
    h = len(names) // 2
    said = f"expected RSS of every configuration at once {total:.0f} MiB > {MEMORY_SHARE:.0%}"
    said += f" of MemAvailable ({avail:.0f} MiB): each block in two halves"
    return [names[:h], names[h:]], said


def available_mb() -> float | None:
    """MemAvailable of /proc/meminfo in MiB (None where it cannot be read)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def rounds(rec: GroupRecord) -> int:
    """How many rounds (blocks) a deploy job measured."""
    return max((r.replicate for recs in rec.runs.values() for r in recs), default=0)
