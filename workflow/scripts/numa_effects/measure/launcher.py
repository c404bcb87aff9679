"""One cell (or one dtype's peak) end to end: re-check the plan on this machine, find the
cell's allocator library here and build the instance's environment with it preloaded (so on a
cluster the preload is made where the job runs), write the spec beside the log, measure it as a
measurement of one pinned instance (``runner.measure``: the one measuring stack), check the
binding the instance read back, and write the result atomically: a measurement, a ``contended``
replicate without statistics, or a failure with its cause and the tail of stderr. Nothing is
ever run unpinned: a missing numactl or a refused binding is a failed cell, not a fallback.
A node pair's memory probe (``memory_probe``) compiles its C code here first; without a
compiler its record says ``skipped`` with the reason and nothing runs.

A cell's record also carries ``allocator`` (name, library, version, its environment) and
``precision`` (the instance's inspection after the timed iterations: dtype, graph, oneDNN
kernels, capabilities, agreement with float32 eager). Outputs that disagree with float32
eager beyond the dtype's bounds fail the cell (cause ``numerics``): a broken conversion is never
a speedup; its timings stay in ``measurement``. A peak's record carries ``peak``: each kernel's
rates, the best one and the theoretical peak beside it (``dtype_peaks.summary``); a memory
probe's carries ``memory``: its latency and bandwidth (``memory_probe.summary``).

``python -m numa_effects.measure.launcher --spec S --out O --log L`` re-runs one cell as the
pipeline ran it (the spec is kept beside each cell's log).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from numa_effects.measure import dtype_peaks, memory_probe, numerics, runner, supervise, verify
from numa_effects.measure import result as cellresult
from numa_effects.measure.causes import Cause
from numa_effects.measure.runner import (  # noqa: F401 (re-exported for callers)
    SCRIPTS_DIR,
    allocator_here,
    child_env,
    command_line,
)
from numa_effects.plan import placement as placement_mod
from numa_effects.plan import topology as topology_mod


def spec_path(log: str | os.PathLike) -> Path:
    """Where a cell's spec is kept: beside its log (``r1.log`` -> ``r1.spec.json``), so the
    recorded command line can be re-run as it is (``bench fidelity`` re-runs it)."""
    return Path(log).with_suffix(".spec.json")


def recheck(spec: dict, topo: topology_mod.Topology) -> str | None:
    """Why the scheduled plan does not hold on this machine, or None if it does."""
    cell = spec["cell"]
    here = placement_mod.plan(
        topo, int(cell["threads"]), cell["placement"], cell.get("use_smt", False)
    )
    if isinstance(here, placement_mod.NotApplicable):
        return f"plan does not fit this machine ({topo.source}): {here.reason}"
    if here.to_dict() != spec["plan"]:
        return (
            f"plan made for the scheduling topology ({spec['plan']['numactl_args']}) differs from "
            f"the plan on this machine ({here.numactl_args()})"
        )
    return None


def check_numerics(result: dict) -> dict:
    """A measured cell whose outputs are not those of the same model (``numerics.verdict``)
    fails with cause ``numerics``: no statistics, the timings kept in ``measurement``."""
    num = (result.get("precision") or {}).get("numerics")
    if result["status"] == "failed" or not num or num["verdict"]["ok"]:
        return result
    result.update(status="failed", stats=None, throughput=None)
    result["failure"] = {
        "cause": Cause.NUMERICS,
        "message": numerics.failure_message(num),
        "command_line": (result.get("provenance") or {}).get("command_line"),
    }
    return result


def check_binding(result: dict) -> str | None:
    """Second line of defence, on the record: the binding the instance read back must match the
    plan, and the in-process verification (``verify``) must be present."""
    plan, bind = result["plan"], result["binding"]
    why = verify.check_cpus(plan, bind.get("cpus_allowed_list", "")) or verify.check_mempolicy(
        plan, bind.get("mempolicy") or {}, bind.get("mems_allowed_list", "")
    )
    if why:
        return why
    if "verification" not in bind:
        return "the cell recorded no verification of threads and page placement"
    return None


def run(
    spec: dict,
    out: str | os.PathLike,
    log: str | os.PathLike,
    timeout_s: float,
    max_memory_mb: int | None = None,
) -> dict:
    """Measure one cell (``spec``: cell, plan, settings, replicate; ``workload``
    ``dtype_peaks`` for the peak) and write its result atomically to ``out``.
    ``max_memory_mb``: address-space limit of the instance (RLIMIT_AS), None = none.

    Every failure of the cell becomes its result (``supervise`` lists the causes) and the job
    succeeds, so the grid goes on; an interruption of the run raises ``supervise.Interrupted``
    instead (no result, job fails, the next run re-runs the cell)."""
    out, log = Path(out), Path(log)
    out.parent.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)

    def finish(result: dict) -> dict:
        result["code"] = spec.get("code")  # the measuring code's digest (plan.code)
        cellresult.write_json_atomic(out, result)
        return result

    if shutil.which("numactl") is None:
        return finish(
            cellresult.failed(
                spec, Cause.NUMACTL_MISSING, "numactl is not on PATH; cells never run unpinned"
            )
        )
    why = recheck(spec, topology_mod.current())
    if why:
        return finish(cellresult.failed(spec, Cause.PLAN_MISMATCH, why))
    if spec.get("workload") == memory_probe.WORKLOAD:
        # the probe's C code compiled here, outside the pinned instance; no compiler: skipped
        try:
            prepared, why = memory_probe.prepare(spec)
        except memory_probe.ProbeError as exc:
            return finish(cellresult.failed(spec, Cause.ERROR, str(exc)))
        if why:
            return finish(memory_probe.skipped(spec, why))
        spec = prepared
    # Leftovers of an earlier attempt killed mid-way (temp files) are removed first.
    supervise.remove_leftovers(out)
    plan = placement_mod.Plan.from_dict(spec["plan"])
    environ = None
    name = spec["cell"].get("allocator")
    if name:
        alloc, environ, why = allocator_here(name)
        if why:
            return finish(cellresult.failed(spec, Cause.ALLOCATOR_NOT_LOADED, why))
        spec = {**spec, "allocator": alloc}
    # The spec is kept beside the log so the recorded command line can be re-run as it is.
    member = runner.Member(plan, spec, spec_path(log), log, environ)
    # Raises supervise.Interrupted (exit 1, no result) if the run is interrupted.
    result = runner.measure(
        [member],
        spec["cell"],
        spec.get("settings") or {},
        timeout_s,
        replicate=int(spec.get("replicate", 1)),
        max_memory_mb=max_memory_mb,
    )
    if spec.get("allocator"):
        result["allocator"] = spec["allocator"]
    if spec.get("workload") == "dtype_peaks":
        result["peak"] = dtype_peaks.summary(result)
        result["peak"]["theoretical"] = dtype_peaks.theoretical(
            spec["cell"]["dtype"], plan.cores or plan.threads
        )
    elif spec.get("workload") == memory_probe.WORKLOAD:
        result["memory"] = memory_probe.summary(result)
    elif spec.get("inspect"):
        result["precision"] = result.pop("report", None)
    if result["status"] == "failed":
        return finish(result)
    result = check_numerics(result)
    if result["status"] == "failed":
        return finish(result)
    why = check_binding(result)
    if why:
        failure = cellresult.failed(
            spec,
            Cause.BINDING_MISMATCH,
            why,
            command_line=result["provenance"]["command_line"],
        )
        failure["binding"] = result["binding"]
        return finish(failure)
    return finish(result)


def run_rule(sm, timeout_s: float) -> dict:
    """``run`` as a Snakemake rule's script calls it (``sm``: its ``snakemake`` object): the
    spec its ``params.spec`` holds, its first output and log, the config's ``max_memory_mb``."""
    return run(
        sm.params.spec,
        sm.output[0],
        sm.log[0],
        timeout_s,
        max_memory_mb=sm.config.get("max_memory_mb"),
    )


def outcome_line(result: dict, what: str, ok: str, nothing: str) -> str:
    """The job's line in the Snakemake log: ``{what}: {ok}`` for a measurement, else why it has
    no ``nothing`` (skipped with its reason, contended, failed with its cause)."""
    if result["status"] == "ok":
        return f"{what}: {ok}"
    if result["status"] == "skipped":
        return f"{what}: SKIPPED, no {nothing}: {result.get('skip_reason')}"
    if result["status"] == "contended":
        why = (result.get("contention") or {}).get("contended_reason")
        return f"{what}: CONTENDED, no {nothing}: {why}"
    f = result["failure"]
    return f"{what}: FAILED ({f['cause']}): {f['message']}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m numa_effects.measure.launcher", description=__doc__
    )
    ap.add_argument("--spec", required=True, help="a cell's spec (results/logs/.../r1.spec.json)")
    ap.add_argument("--out", required=True, help="where to write the result JSON")
    ap.add_argument("--log", required=True, help="the instance's log")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds (default %(default)s)")
    ap.add_argument("--max-memory-mb", type=int, default=None)
    args = ap.parse_args(argv)
    spec = json.loads(Path(args.spec).read_text())
    result = run(spec, args.out, args.log, args.timeout, args.max_memory_mb)
    print(f"{result['status']}: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
