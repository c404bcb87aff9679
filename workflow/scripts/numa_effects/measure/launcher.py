"""One cell (or one GEMM peak) end to end: re-check the plan on this machine, write the spec
beside the log, measure it as a measurement of one pinned instance (``runner.measure``: the one
measuring stack), check the binding the instance read back, and write the result atomically: a
measurement, a ``contended`` replicate without statistics, or a failure with its cause and the
tail of stderr. Nothing is ever run unpinned: a missing numactl or a refused binding is a failed
cell, not a fallback.

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

from numa_effects.measure import peak, runner, supervise, verify
from numa_effects.measure import result as cellresult
from numa_effects.measure.causes import Cause
from numa_effects.measure.runner import (  # noqa: F401 (re-exported for callers)
    SCRIPTS_DIR,
    child_env,
    command_line,
)
from numa_effects.plan import placement as placement_mod
from numa_effects.plan import topology as topology_mod


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
    """Measure one cell (``spec``: cell, plan, settings, replicate; ``workload`` ``gemm`` for
    the peak) and write its result atomically to ``out``. ``max_memory_mb``: address-space
    limit of the instance (RLIMIT_AS), None = none.

    Every failure of the cell becomes its result (``supervise`` lists the causes) and the job
    succeeds, so the grid goes on; an interruption of the run raises ``supervise.Interrupted``
    instead (no result, job fails, the next run re-runs the cell)."""
    out, log = Path(out), Path(log)
    out.parent.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)

    def finish(result: dict) -> dict:
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
    # Leftovers of an earlier attempt killed mid-way (temp files) are removed first.
    supervise.remove_leftovers(out)
    plan = placement_mod.Plan.from_dict(spec["plan"])
    # The spec is kept beside the log so the recorded command line can be re-run as it is.
    member = runner.Member(plan, spec, log.with_suffix(".spec.json"), log)
    # Raises supervise.Interrupted (exit 1, no result) if the run is interrupted.
    result = runner.measure(
        [member],
        spec["cell"],
        spec.get("settings") or {},
        timeout_s,
        replicate=int(spec.get("replicate", 1)),
        max_memory_mb=max_memory_mb,
    )
    if spec.get("workload") == "gemm":
        result["peak"] = peak.summary(result)
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
