"""The front door of every measurement job: a ``plan.spec.Spec`` (a cell's replicate, a dtype's
peak, a node pair's memory probe: one record) or a ``GroupSpec`` (a packing, interference or
deploy group: one group record). It checks where the job runs (``prepare``), measures
(``runner.measure``), applies the workload's summary and check and decides the status once
(``decide``), and writes the record atomically. ``python -m numa_effects.measure.job --spec S``
re-runs a job as the pipeline ran it, from the spec kept beside each instance's log.

Every failure becomes the record and the job succeeds, so the grid goes on; an interruption
raises ``supervise.Interrupted`` instead (no record, measured again by the next run)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from numa_effects.measure import progress, provenance, record, runner, supervise
from numa_effects.measure.causes import Cause
from numa_effects.measure.record import Failure, GroupRecord, Record
from numa_effects.measure.workloads import WORKLOADS, Skip, WorkloadError
from numa_effects.plan import allocators
from numa_effects.plan import spec as spec_mod
from numa_effects.plan import topology as topology_mod
from numa_effects.plan.code import SCRIPTS
from numa_effects.plan.spec import Configuration, GroupSpec, Spec


def spec_path(log: str | os.PathLike) -> Path:
    """Where an instance's spec is kept: beside its log (``r1.log`` -> ``r1.spec.json``)."""
    return Path(log).with_suffix(".spec.json")


def allocator_here(name: str, environ=None) -> tuple[dict | None, dict | None, str | None]:
    """(the record's allocator, the environment with it preloaded, why not) on this machine."""
    alloc = allocators.get(name)
    path = allocators.locate(alloc)
    why = allocators.skip_reason(alloc, path)
    if why:
        return None, None, f"{why} (where the cell runs: {os.uname().nodename})"
    env = allocators.child_env(alloc, path, os.environ if environ is None else environ)
    found = {
        "name": alloc.name,
        "library": path,
        "maps_key": alloc.maps_key,
        "heap_probe": alloc.heap_probe,
        "version": allocators.version(alloc),
        "env": {k: env[k] for k in allocators.ENV_KEYS if env.get(k)},
    }
    return found, env, None


def unverified(conf: Configuration, topo, allowed=None) -> str | None:
    """Why the plans ``conf`` was given cannot run on ``topo`` (this machine), or None. It
    verifies, it never plans again: each plan's CPUs exist here, are ``allowed`` (this
    process's CPUs; None: any of ``topo``'s), are as many physical cores on the nodes it names,
    and its memory nodes exist; each instance proves its binding inside (``verify``)."""
    have = {c.cpu for c in topo.cpus}
    for plan in (i.plan for i in conf.instances):
        args, cpus = " ".join(plan.numactl_args()), set(plan.cpus)
        nodes = sorted({topo.node_of(c) for c in cpus & have})
        cores = len({topo.cpu(c).siblings for c in cpus & have})
        if cpus - have:
            return f"CPUs {sorted(cpus - have)} of the plan ({args}) are not on this machine"
        if allowed is not None and cpus - set(allowed):
            return f"CPUs {sorted(cpus - set(allowed))} of the plan ({args}) are not allowed here"
        if nodes != sorted(plan.cpu_nodes) or (plan.cores and cores != plan.cores):
            return f"CPUs {list(plan.cpus)} are {cores} cores on nodes {nodes} here, not as planned"
        if set(plan.mem_nodes) - set(topo.all_nodes):
            return f"memory nodes of the plan ({args}) are not on this machine ({topo.source})"
    return None


@dataclass(frozen=True)
class Ready:
    """A configuration resolved here, each instance's environment, the shared allocator."""

    configuration: Configuration
    environs: tuple
    allocator: dict | None


def prepare(conf: Configuration, topo, found: dict | None = None, where: str = ""):
    """``Ready`` (numactl on PATH, the plan it was given verified here, not made again; each
    workload and allocator resolved), or the ``Failure`` or ``Skip`` that ends the job before
    anything runs. ``found``: allocators already looked up; ``where``: a prefix for messages."""
    if shutil.which("numactl") is None:
        return Failure(Cause.NUMACTL_MISSING, "numactl is not on PATH; nothing runs unpinned")
    why = unverified(conf, topo, os.sched_getaffinity(0))
    if why:
        return Failure(Cause.PLAN_MISMATCH, where + why)
    found = {} if found is None else found
    insts, environs = [], []
    for inst in conf.instances:
        w = WORKLOADS[inst.workload]
        try:
            resolved = {"module": w.module, **w.runtime().prepare(inst)}
        except Skip as exc:
            return exc
        except WorkloadError as exc:
            return Failure(Cause.ERROR, str(exc))
        env = None
        if inst.allocator:
            if inst.allocator not in found:
                found[inst.allocator] = allocator_here(inst.allocator)
            resolved["allocator"], env, why = found[inst.allocator]
            if why:
                return Failure(Cause.ALLOCATOR_NOT_LOADED, why)
        insts.append(replace(inst, resolved=resolved))
        environs.append(env)
    alloc = shared([i.resolved.get("allocator") for i in insts])
    return Ready(Configuration(tuple(insts), conf.packing), tuple(environs), alloc)


def shared(allocators_found: list[dict | None]) -> dict | None:
    """The allocator every instance (or configuration) ran with, None when they differ."""
    distinct = {json.dumps(a, sort_keys=True) for a in allocators_found}
    return allocators_found[0] if len(distinct) == 1 else None


def _head(spec: Spec) -> dict:
    """What every record of ``spec`` names, measured or not."""
    return {
        "cell": spec.cell,
        "workload": spec.instances[0].workload,
        "replicate": spec.replicate,
        "plan": spec.plan.to_dict() if spec.plan else None,
        "settings": dict(spec.settings),
        "code": spec.code,
    }


def decide(spec: Spec, got: runner.Measured, allocator: dict | None) -> Record:
    """The record of a measurement, its status decided once (failed, contended or ok)."""
    inst = spec.instances[0]
    w = WORKLOADS[inst.workload]
    runtime = w.runtime()
    clean = got.failure is None and got.stats is not None
    single = len(spec.instances) == 1
    summary = runtime.summary(inst, got.report, got.measurement, clean) if single else None
    failure = got.failure
    if failure is None and (bad := runtime.check(summary)):
        failure = Failure(*bad, command_line=got.provenance.get("command_line"))
    status = "failed" if failure else "ok" if got.stats is not None else "contended"
    kept = {**vars(got), "failure": failure, "report": got.report if w.keep_report else None}
    if failure:  # the timings stay, never their statistics
        kept.update(stats=None, throughput=None)
    return Record(status=status, **_head(spec), **kept, allocator=allocator, summary=summary)


def unmeasured(spec: Spec, stop: Failure | Skip) -> Record:
    """The record of a measurement that could not start here: failed, or skipped."""
    if isinstance(stop, Skip):
        return Record(status="skipped", **_head(spec), skip_reason=str(stop))
    return Record(status="failed", **_head(spec), failure=stop)


def measure(spec: Spec, ready: Ready, logs: list[Path], timeout_s: float, max_memory_mb=None):
    """The ``Record`` of a prepared ``spec``, its instances logging to ``logs``."""
    spec = replace(spec, configuration=ready.configuration)
    members = [
        runner.Member(inst.plan, spec_path(log), log, env, j)
        for j, (inst, log, env) in enumerate(zip(spec.instances, logs, ready.environs, strict=True))
    ]
    return decide(spec, runner.measure(spec, members, timeout_s, max_memory_mb), ready.allocator)


def run(
    spec: Spec | GroupSpec,
    out: str | os.PathLike,
    log: str | os.PathLike,
    timeout_s: float,
    max_memory_mb: int | None = None,
    group=None,
) -> Record | GroupRecord:
    """Measure one job and write its record atomically to ``out``. A group's instances log to
    the folder ``log`` without its suffix; ``max_memory_mb``: each instance's RLIMIT_AS;
    ``group``: how a group is measured (``measure_all``'s arguments and answer)."""
    out, log = Path(out), Path(log)
    if isinstance(spec, GroupSpec):
        done = run_group(spec, log.parent / log.stem, timeout_s, max_memory_mb, group)
    else:
        log.parent.mkdir(parents=True, exist_ok=True)
        ready = prepare(spec.configuration, topology_mod.current())
        # leftovers of an earlier attempt killed mid-way (temp files) are removed first
        supervise.remove_leftovers(out)
        if isinstance(ready, Ready):
            done = measure(spec, ready, [log], timeout_s, max_memory_mb)
        else:
            done = unmeasured(spec, ready)
    record.write(out, done)
    progress.done(out)
    return done


def run_group(spec: GroupSpec, logdir: Path, timeout_s: float, max_memory_mb=None, group=None):
    """A group job's ``GroupRecord``: every configuration prepared before any is measured."""
    started = {
        "started_at": provenance.now(),
        "host": provenance.host(),
        "versions": provenance.versions(),
        "workflow_revision": provenance.git_revision(SCRIPTS),
        "slurm": provenance.slurm(),
    }
    topo, found, readies, stop = topology_mod.current(), {}, {}, None
    for name, why in spec.unplaced.items():
        stop = stop or Failure(Cause.PLAN_MISMATCH, f"{name}: not placed when planned: {why}")
    for name, conf in spec.configurations.items():
        got = prepare(conf, topo, found, where=f"{name}: ")
        if isinstance(got, Ready):
            readies[name] = got
        else:
            stop = stop or (got if isinstance(got, Failure) else Failure(Cause.ERROR, str(got)))
    runs, alloc, stopped = {}, None, None
    if stop is None:
        measure_group = group or measure_all
        runs, stopped = measure_group(spec, readies, logdir, timeout_s, max_memory_mb)
        started["finished_at"] = provenance.now()
        alloc = shared([r.allocator for r in readies.values()])
    failed = [r.failure.prefixed(n) for n, recs in runs.items() for r in recs if r.failure]
    stop = stop or (failed[0] if failed else None)
    return GroupRecord(
        kind=spec.kind,
        job=dict(spec.job),
        status="failed" if stop else "ok",
        settings=dict(spec.settings),
        provenance=started,
        configurations={n: _echo(c) for n, c in spec.configurations.items()},
        placements={
            n: [i.plan.to_dict() for i in c.instances] for n, c in spec.configurations.items()
        },
        runs=runs,
        choice=spec.choice,
        allocator=alloc,
        failure=stop,
        code=spec.code,
        stopped=stopped,
    )


def measure_all(
    spec: GroupSpec, readies: dict, logdir: Path, timeout_s: float, max_memory_mb=None
) -> tuple[dict[str, tuple[Record, ...]], str | None]:
    """(``{name: records in replicate order}``, why it stopped early: None), measured in the
    order of the schedule, each measurement its own processes."""
    runs: dict[str, list[Record]] = {}
    for name, s in spec.measurements():
        logs = [logdir / f"{name}-r{s.replicate}-i{j}.log" for j in range(len(s.instances))]
        runs.setdefault(name, []).append(measure(s, readies[name], logs, timeout_s, max_memory_mb))
    done = {n: tuple(sorted(recs, key=lambda r: r.replicate)) for n, recs in runs.items()}
    return done, None


def _echo(conf: Configuration) -> dict:
    """A configuration as the group record names it."""
    p = conf.packing
    return {
        "instances": [[i.threads, int(i.cell["batch_size"])] for i in conf.instances],
        "nodes": list(p.nodes) if p and p.nodes else None,
    }


def run_rule(sm, timeout_s: float, spec: Spec | GroupSpec | None = None):
    """``run`` as a Snakemake rule's script calls it (``sm``: its ``snakemake`` object)."""
    spec = spec or spec_mod.from_json(sm.params.spec)
    return run(spec, sm.output[0], sm.log[0], timeout_s, sm.config.get("max_memory_mb"))


def outcome_line(rec: Record, what: str, ok: str, nothing: str) -> str:
    """The job's line in the Snakemake log: ``{what}: {ok}``, else why it has no ``nothing``."""
    if rec.status == "ok":
        return f"{what}: {ok}"
    if rec.status == "skipped":
        return f"{what}: SKIPPED, no {nothing}: {rec.skip_reason}"
    if rec.status == "contended":
        return f"{what}: CONTENDED, no {nothing}: {rec.contention.get('contended_reason')}"
    return f"{what}: FAILED ({rec.failure.cause}): {rec.failure.message}"


def summary_line(rec: GroupRecord) -> str:
    """A group job's outcome in one line: status, medians (ms) or statuses, the failure."""
    med = {
        n: [round(r.stats["median_s"] * 1e3, 2) if r.stats else r.status for r in recs]
        for n, recs in rec.runs.items()
    }
    line = f"{rec.status}; medians ms {med}"
    if rec.status != "ok":
        line += f" ({rec.failure.cause}: {rec.failure.message})"
    return line


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m numa_effects.measure.job", description=__doc__)
    ap.add_argument("--spec", required=True, help="a spec (results/logs/.../r1.spec.json)")
    ap.add_argument("--out", required=True, help="where to write the record")
    ap.add_argument("--log", required=True, help="the instance's log (a group's: its folder)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds (default %(default)s)")
    ap.add_argument("--max-memory-mb", type=int, default=None)
    args = ap.parse_args(argv)
    try:
        spec = spec_mod.from_json(json.loads(Path(args.spec).read_text()))
    except spec_mod.SpecError as exc:
        print(f"{args.spec}: {exc}", file=sys.stderr)
        return 2
    done = run(spec, args.out, args.log, args.timeout, args.max_memory_mb)
    print(f"{done.status}: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
