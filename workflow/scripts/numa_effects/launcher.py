"""Process orchestration for one cell: re-check the plan on this machine, build the exact
``numactl`` command line, run the pinned child with a timeout, and turn every outcome into a
cell result: a measurement, or a failure with its cause and the tail of stderr. Nothing is ever
run unpinned: a missing numactl or a refused binding is a failed cell, not a fallback."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from . import cellresult, cpulist, provenance
from . import placement as placement_mod
from . import topology as topology_mod
from .cell import EXIT_MISMATCH

SCRIPTS_DIR = Path(__file__).resolve().parent.parent
STDERR_TAIL_LINES = 20

# (pattern in stderr, cause) checked in order for a child that exited non-zero.
FAILURE_PATTERNS = (
    ("set_mempolicy", "binding-refused"),
    ("sched_setaffinity", "binding-refused"),
    ("numactl: ", "binding-refused"),
    ("DefaultCPUAllocator: can't allocate memory", "out-of-memory"),
    ("MemoryError", "out-of-memory"),
    ("Cannot allocate memory", "out-of-memory"),
)


def child_env(threads: int, base: dict | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["OMP_NUM_THREADS"] = str(threads)
    env["MKL_NUM_THREADS"] = str(threads)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SCRIPTS_DIR), env.get("PYTHONPATH")]))
    env.setdefault("PYTHONWARNINGS", "ignore::FutureWarning")
    return env


def command(plan: placement_mod.Plan, spec: str, out: str, numactl: str = "numactl") -> list[str]:
    return [
        numactl,
        *plan.numactl_args(),
        sys.executable,
        "-m",
        "numa_effects.cell",
        "--spec",
        spec,
        "--out",
        out,
    ]


def command_line(cmd: list[str], threads: int) -> str:
    """The command as one shell line, with the thread variables, ready to paste."""
    prefix = f"env OMP_NUM_THREADS={threads} MKL_NUM_THREADS={threads} PYTHONPATH={SCRIPTS_DIR} "
    return prefix + shlex.join(cmd)


def classify(returncode: int, stderr_tail: str) -> str:
    if returncode < 0:
        sig = signal.Signals(-returncode)
        return (
            "out-of-memory" if sig == signal.SIGKILL and "oom" in stderr_tail.lower() else "signal"
        )
    if returncode == EXIT_MISMATCH:
        return "thread-mismatch"
    for pattern, cause in FAILURE_PATTERNS:
        if pattern in stderr_tail:
            return cause
    return "error"


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
    """Compare the binding read back inside the child with the plan."""
    plan, bind = result["plan"], result["binding"]
    got = cpulist.parse(bind["cpus_allowed_list"])
    if got != tuple(plan["cpus"]):
        return f"Cpus_allowed_list is {bind['cpus_allowed_list']}, the plan is {plan['cpu_list']}"
    pol = bind.get("mempolicy", {})
    want_mode = "bind" if plan["mem_policy"] == "bind" else "interleave"
    if pol.get("mode") not in (want_mode, "unknown") or (
        pol.get("mode") == want_mode and tuple(pol.get("nodes", ())) != tuple(plan["mem_nodes"])
    ):
        return f"memory policy is {pol}, the plan is {want_mode}:{plan['mem_list']}"
    return None


def _tail(path: Path, lines: int = STDERR_TAIL_LINES) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def run(spec: dict, out: str | os.PathLike, log: str | os.PathLike, timeout_s: float) -> dict:
    """Run one cell and write its result (measurement or failure) atomically to ``out``."""
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
                spec, "numactl-missing", "numactl is not on PATH; cells never run unpinned"
            )
        )
    why = recheck(spec, topology_mod.current())
    if why:
        return finish(cellresult.failed(spec, "plan-mismatch", why))

    # The spec is kept beside the log so the recorded command line can be re-run as it is.
    spec_path = log.with_suffix(".spec.json")
    spec_path.write_text(json.dumps(spec, indent=1))
    with tempfile.TemporaryDirectory(prefix=".cell-", dir=out.parent) as tmp:
        child_out = Path(tmp, "result.json")
        cmd = command(plan, str(spec_path), str(child_out), numactl="numactl")
        started = provenance.now()
        with open(log, "w") as logfh:
            logfh.write(f"# {command_line(cmd, threads)}\n")
            logfh.flush()
            proc = subprocess.Popen(
                cmd,
                env=child_env(threads),
                stdout=logfh,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                rc = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return finish(
                    cellresult.failed(
                        spec,
                        "timeout",
                        f"no result after {timeout_s:.0f} s; killed",
                        returncode=proc.returncode,
                        stderr_tail=_tail(log),
                        command_line=command_line(cmd, threads),
                    )
                )
        tail = _tail(log)
        if rc != 0 or not child_out.exists():
            cause = classify(rc, tail)
            sig = signal.Signals(-rc).name if rc < 0 else None
            return finish(
                cellresult.failed(
                    spec,
                    cause,
                    f"cell process exited with {sig or rc}",
                    returncode=rc,
                    signal=sig,
                    stderr_tail=tail,
                    command_line=command_line(cmd, threads),
                )
            )
        result = json.loads(child_out.read_text())
    result["provenance"].update(
        {
            "command": cmd,
            "command_line": command_line(cmd, threads),
            "launcher_started_at": started,
            "workflow_revision": provenance.git_revision(SCRIPTS_DIR),
        }
    )
    why = check_binding(result)
    if why:
        failure = cellresult.failed(
            spec, "binding-mismatch", why, command_line=command_line(cmd, threads)
        )
        failure["binding"] = result["binding"]
        return finish(failure)
    return finish(result)
