"""Process orchestration for one cell: re-check the plan on this machine, build the exact
``numactl`` command line, run the pinned child with a timeout, and turn every outcome into a
cell result: a measurement, or a failure with its cause and the tail of stderr. Nothing is ever
run unpinned: a missing numactl or a refused binding is a failed cell, not a fallback."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from numa_effects.measure import contention, provenance, supervise, verify
from numa_effects.measure import result as cellresult
from numa_effects.measure.causes import Cause
from numa_effects.measure.cell import EXIT_MISMATCH
from numa_effects.plan import placement as placement_mod
from numa_effects.plan import topology as topology_mod

SCRIPTS_DIR = Path(__file__).resolve().parents[2]
STDERR_TAIL_LINES = 20


def child_env(threads: int, base: dict | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["OMP_NUM_THREADS"] = str(threads)
    env["MKL_NUM_THREADS"] = str(threads)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SCRIPTS_DIR), env.get("PYTHONPATH")]))
    env.setdefault("PYTHONWARNINGS", "ignore::FutureWarning")
    return env


CELL_MODULE = "numa_effects.measure.cell"


def command(
    plan: placement_mod.Plan,
    spec: str,
    out: str,
    numactl: str = "numactl",
    module: str = CELL_MODULE,
) -> list[str]:
    return [
        numactl,
        *plan.numactl_args(),
        sys.executable,
        "-m",
        module,
        "--spec",
        spec,
        "--out",
        out,
    ]


def command_line(cmd: list[str], threads: int) -> str:
    """The command as one shell line, with the thread variables, ready to paste."""
    prefix = f"env OMP_NUM_THREADS={threads} MKL_NUM_THREADS={threads} PYTHONPATH={SCRIPTS_DIR} "
    return prefix + shlex.join(cmd)


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


def check_binding(result: dict, require_verification: bool = True) -> str | None:
    """Second line of defence, on the JSON the child wrote: the binding it read back must match
    the plan and (for benchmark cells) the in-cell verification (``verify``) must be present."""
    plan, bind = result["plan"], result["binding"]
    why = verify.check_cpus(plan, bind.get("cpus_allowed_list", "")) or verify.check_mempolicy(
        plan, bind.get("mempolicy") or {}, bind.get("mems_allowed_list", "")
    )
    if why:
        return why
    if require_verification and "verification" not in bind:
        return "the cell recorded no verification of threads and page placement"
    return None


def run(
    spec: dict,
    out: str | os.PathLike,
    log: str | os.PathLike,
    timeout_s: float,
    module: str = CELL_MODULE,
    max_memory_mb: int | None = None,
) -> dict:
    """Run one cell and write its result (measurement or failure) atomically to ``out``.
    ``module``: the pinned child's entry point (``numa_effects.measure.peak`` for the GEMM peak).
    ``max_memory_mb``: address-space limit of the child (RLIMIT_AS), None = none.

    Every failure of the cell becomes its result (``supervise`` lists the causes) and the job
    succeeds, so the grid goes on; an interruption of the run raises ``supervise.Interrupted``
    instead (no result, job fails, the next run re-runs the cell)."""
    out, log = Path(out), Path(log)
    out.parent.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    threads = int(spec["cell"]["threads"])
    plan = placement_mod.Plan.from_dict(spec["plan"])
    numactl = shutil.which("numactl")

    def finish(result: dict) -> dict:
        cellresult.write_json_atomic(out, result)
        return result

    if numactl is None:
        return finish(
            cellresult.failed(
                spec, Cause.NUMACTL_MISSING, "numactl is not on PATH; cells never run unpinned"
            )
        )
    why = recheck(spec, topology_mod.current())
    if why:
        return finish(cellresult.failed(spec, Cause.PLAN_MISMATCH, why))

    # The spec is kept beside the log so the recorded command line can be re-run as it is.
    spec_path = log.with_suffix(".spec.json")
    spec_path.write_text(json.dumps(spec, indent=1))
    # Leftovers of an earlier attempt killed mid-way (temp dir, temp JSON) are removed first.
    supervise.remove_leftovers(out)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.cell-", dir=out.parent) as tmp:
        child_out = Path(tmp, "result.json")
        cmd = command(plan, str(spec_path), str(child_out), numactl="numactl", module=module)
        started = provenance.now()
        before = contention.preflight()
        with open(log, "w") as logfh:
            logfh.write(f"# {command_line(cmd, threads)}\n")
            if max_memory_mb:
                logfh.write(f"# address-space limit (max_memory_mb): {max_memory_mb} MiB\n")
            logfh.flush()
            # Raises supervise.Interrupted (exit 1, no result) if the run is interrupted.
            outcome = supervise.run_child(
                cmd, child_env(threads), logfh, timeout_s, max_memory_mb=max_memory_mb
            )
        if outcome.returncode != 0 or outcome.timed_out or not child_out.exists():
            log_text = log.read_text(errors="replace")
            cause, message = supervise.classify(outcome, log_text, timeout_s, EXIT_MISMATCH)
            sig = outcome.signal.name if outcome.signal else None
            failure = cellresult.failed(
                spec,
                cause,
                message,
                returncode=outcome.returncode,
                signal=sig,
                stderr_tail=supervise.tail(log_text, STDERR_TAIL_LINES),
                command_line=command_line(cmd, threads),
                log=str(log),
                wall_s=round(outcome.wall_s, 3),
                max_memory_mb=max_memory_mb,
            )
            failure["contention"] = before
            failure["provenance"] = {
                "launcher_started_at": started,
                "finished_at": provenance.now(),
                "host": provenance.host(),
                "slurm": provenance.slurm(),
            }
            return finish(failure)
        result = json.loads(child_out.read_text())
    result["contention"] = {**before, **(result.get("contention") or {})}
    result["provenance"].update(
        {
            "command": cmd,
            "command_line": command_line(cmd, threads),
            "launcher_started_at": started,
            "workflow_revision": provenance.git_revision(SCRIPTS_DIR),
        }
    )
    if result.get("status") != "ok":
        # The child's own verification failed (binding-mismatch, page-placement): already a
        # failed cell with the evidence in binding.verification.
        result["failure"]["command_line"] = command_line(cmd, threads)
        return finish(result)
    why = check_binding(result, require_verification=module == CELL_MODULE)
    if why:
        failure = cellresult.failed(
            spec, Cause.BINDING_MISMATCH, why, command_line=command_line(cmd, threads)
        )
        failure["binding"] = result["binding"]
        return finish(failure)
    return finish(result)
