"""One block of the deploy job (docs/deploy.md, "How the answer is measured"): every
configuration's instances started at once and kept warm (``warm.started``), then measured in
short slices in ABBA order over cycles (``plan.slices.order``), each slice a fixed number of
barrier steps of about ``slice_s``; then every instance verifies its binding and exits.

The block is a replicate: one ``Record`` per configuration (``replicate`` = the block), decided
as every record is (``job.decide``). Its latencies are all its slices' steps; its
``stats.median_s``, and each instance's, is the block value (``slices.block_value``: the
geometric mean of the slice medians); ``measurement`` keeps each step's start (``t0_s``, one
clock for every process) and each slice's step count (``slice_steps``)."""

from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path

from numa_effects import stats
from numa_effects.measure import contention, provenance, warm
from numa_effects.measure import job as job_mod
from numa_effects.measure.runner import Measured, binding, instance_part, unverified
from numa_effects.plan import slices
from numa_effects.plan.code import SCRIPTS
from numa_effects.plan.spec import Spec


def block(specs: dict[str, Spec], readies: dict, logdir: Path, timeout_s: float, opts: dict):
    """{name: Record} of one block of ``specs`` (their ``job.Ready`` in ``readies``). ``opts``:
    ``slice_s``, ``seconds`` (each configuration's timed seconds), ``warmup`` (untimed steps),
    ``max_memory_mb``."""
    began, before = provenance.now(), contention.preflight()
    confs = {}
    for n, s in specs.items():
        logs = [logdir / f"{n}-b{s.replicate}-i{j}.log" for j in range(len(s.instances))]
        confs[n] = (replace(s, configuration=readies[n].configuration), readies[n].environs, logs)
    with warm.started(confs, timeout_s, opts["warmup"], opts.get("max_memory_mb")) as pools:
        live = [n for n, p in pools.items() if p.failed is None]
        per = {n: max(1, round(opts["slice_s"] / pools[n].step_s())) for n in live}
        cost = [per[n] * pools[n].step_s() for n in live]
        cycles = slices.cycles_for(opts["seconds"] * len(live), cost) if live else 0
        cuts: dict[str, list[int]] = {n: [] for n in pools}
        for n in slices.order(live, cycles) if live else ():
            pools[n].run(pools[n].steps, per[n], timeout_s)
            cuts[n].append(per[n])
        for pool in pools.values():
            pool.run(pool.verify, timeout_s)
    head = {"launcher_started_at": began, "cycles": cycles, "contention": before}
    out = {}
    for n, pool in pools.items():
        got = measured(pool, cuts[n], head, opts.get("max_memory_mb"))
        out[n] = job_mod.decide(pool.spec, got, readies[n].allocator)
    return out


def block_stats(xs: list[float], cuts: list[int]) -> dict:
    """``stats.summarize`` of the steps, its median the block value of the slices ``cuts``."""
    meds, k = [], 0
    for n in cuts:
        meds.append(statistics.median(xs[k : k + n]))
        k += n
    return {**stats.summarize(xs), "median_s": slices.block_value(meds), "slice_medians_s": meds}


def measured(pool: warm.Pool, cuts: list[int], head: dict, max_mb) -> Measured:
    """What one configuration's pool observed in the block: the parts of its record (``head``:
    the block's start, cycles and the machine's load before it)."""
    before = head["contention"]
    prov = {
        "launcher_started_at": head["launcher_started_at"],
        "finished_at": provenance.now(),
        "host": provenance.host(),
    }
    prov |= {"slurm": provenance.slurm(), "workflow_revision": provenance.git_revision(SCRIPTS)}
    if pool.failed is not None:
        fail = pool.failed.failure(max_memory_mb=max_mb)
        return Measured(binding=pool.failed.binding or {}, contention=before, provenance=prov,
                        failure=fail)  # fmt: skip
    timed, warm_s = pool.rounds.times[pool.warm :], pool.spans()[: pool.warm]
    lat = pool.spans()[pool.warm :]
    own = [[b - a for a, b in steps] for steps in zip(*timed, strict=True)]
    per = [instance(pool, j, xs, cuts) for j, xs in enumerate(own)]
    summary = block_stats(lat, cuts)
    m = {"protocol": "slices", "latencies_s": lat, "t0_s": [min(a for a, _ in r) for r in timed]}
    m |= {"slice_steps": cuts, "timed_s": sum(lat), "stop_reason": "slices"}
    m |= {"cycles": head["cycles"], "warmup_latencies_s": warm_s, "first_call_s": warm_s[0]}
    m |= {k: max(i[k] or 0.0 for i in per) for k in ("import_s", "build_s", "prepare_s")}
    one = per[0] if len(per) == 1 else None
    prov |= {"started_at": one["started_at"] if one else head["launcher_started_at"]}
    prov |= {"versions": provenance.versions(), "env": provenance.relevant_env(pool.insts[0].env)}
    prov |= {"peak_rss_kb": max(i["peak_rss_kb"] or 0 for i in per) or None}
    warns = [w for i in per for w in i["warnings"]]
    prov |= {"warnings": [w for k, w in enumerate(warns) if w not in warns[:k]]}
    prov |= {k: one[k] if one else None for k in ("command", "command_line")}
    batch = pool.spec.cell.get("batch_size")
    return Measured(
        measurement=m,
        stats=summary,
        throughput=stats.throughput(int(batch), lat, summary["median_s"]) if batch else None,
        binding=binding(per),
        contention=before,
        provenance=prov,
        instances=tuple(per),
        report=one["report"] if one else None,
        failure=unverified(per),
    )


def instance(pool: warm.Pool, j: int, own: list[float], cuts: list[int]) -> dict:
    """Instance ``j``'s part of the record, its statistics from its own steps."""
    inst, rdy, chk = pool.insts[j], pool.ready[j], pool.checks[j]
    return instance_part(inst, pool.batches[j], rdy, chk, own, block_stats(own, cuts))
