"""Measure a packing plan for real: k concurrent pinned instances, started together, round by round.

For one (model, opt, core budget C, total batch B) the job measures two configurations, in this
order, replicate by replicate: the *fat* instance (one process, C threads, B images) and the
*plan* the optimizer chose (``numa_effects.plan.packing``), unless the plan is the fat instance.

A configuration is measured as a *group*: one ``numa_effects.measure.group_child`` process per
instance,
each ``numactl``-pinned to its own cores with local memory (``placement.pack``: no CPU shared, an
instance straddles nodes only when no node holds it), built exactly like a cell. When every
instance is ready, a *round* sends ``go`` to all of them at once (the barrier) and waits for every
reply: a round's latency is the wall time from the first ``go`` to the last reply, i.e. the
slowest instance plus the signalling (the difference to the slowest instance's own duration is
recorded as ``overhead``). Rounds are timed by the project's timing loop (``measure.run``:
warm-up, adaptive stopping, caps) with a ``contention.IterationProbe`` over the CPUs of all
instances, whose own CPU time is that of the instance processes: a round during which other
tasks used more than ``exclude_foreign_pct`` of those CPUs is excluded from the statistics
(``stats.summarize`` of ``Measurement.clean_latencies``) and from the stopping rule. After the
rounds every instance runs the in-cell verification (``verify.run``) and reports its contention
watch. Any instance that fails, or is not where its plan says, fails the group. A contended
group is measured again, as a cell is (``measure.run_with_retries``): after
``contended_backoff_s`` (doubling), at most ``contended_retries`` times, with new processes; the
earlier attempts are summarised in the record's ``attempts`` and the last one is kept, flagged
if it is still contended.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from numa_effects import stats
from numa_effects.measure import cell, contention, launcher, provenance, supervise, verify
from numa_effects.measure import timing as measure
from numa_effects.plan import placement
from numa_effects.plan import topology as topology_mod

CHILD_MODULE = "numa_effects.measure.group_child"


class GroupFailed(RuntimeError):
    def __init__(self, cause: str, message: str, **details):
        super().__init__(message)
        self.cause, self.message, self.details = cause, message, details


class _Instance:
    """One running instance: its process and a line reader on its protocol pipe."""

    def __init__(self, j: int, plan: placement.Plan, spec: dict, logdir: Path, tag: str):
        self.j, self.plan = j, plan
        spec_path = logdir / f"{tag}-i{j}.spec.json"
        spec_path.write_text(json.dumps(spec, indent=1))
        self.log = logdir / f"{tag}-i{j}.log"
        self.cmd = [
            "numactl",
            *plan.numactl_args(),
            sys.executable,
            "-m",
            CHILD_MODULE,
            "--spec",
            str(spec_path),
        ]
        self.command_line = launcher.command_line(self.cmd, plan.threads)
        with open(self.log, "w") as fh:
            fh.write(f"# {self.command_line}\n")
        self.logfh = open(self.log, "a")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            self.cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.logfh,
            env=launcher.child_env(plan.threads),
            start_new_session=True,
        )
        self._buf = b""

    def send(self, cmd: str) -> None:
        try:
            self.proc.stdin.write(cmd.encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # noticed by the next read

    def read(self, deadline: float, timeout_s: float) -> dict:
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise GroupFailed(
                    "timeout", f"instance {self.j} did not answer within {timeout_s:.0f} s"
                )
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    self.fail(timeout_s)
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def fail(self, timeout_s: float):
        code = self.proc.wait()
        self.logfh.flush()
        text = self.log.read_text(errors="replace")
        outcome = supervise.Outcome(returncode=code)
        cause, message = supervise.classify(outcome, text, timeout_s, cell.EXIT_MISMATCH)
        raise GroupFailed(
            cause,
            f"instance {self.j} ({' '.join(self.plan.numactl_args())}): {message}",
            stderr_tail=supervise.tail(text, launcher.STDERR_TAIL_LINES),
            command_line=self.command_line,
        )

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.logfh.close()


def group_cpu_s(pids) -> float:
    """CPU seconds (user + system, all threads) of the processes ``pids`` and of this one: the
    group's own CPU time for the contention probe (``/proc/<pid>/stat`` fields 14 and 15)."""
    hz = contention.clock_ticks()
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / hz
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return total + ru.ru_utime + ru.ru_stime


def measure_group(
    instances: list[tuple[placement.Plan, int]],
    cell_common: dict,
    settings: dict,
    logdir: Path,
    tag: str,
    timeout_s: float,
) -> dict:
    """Run one configuration (``[(plan, images), ...]``) as concurrent instances; see the module
    docstring. Returns the group's record (``status`` ok or failed)."""
    logdir.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout_s
    started = provenance.now()
    before = contention.preflight()
    running: list[_Instance] = []
    per_instance: list[list[float]] = [[] for _ in instances]
    slowest: list[float] = []
    record: dict = {
        "instances": [
            {"threads": p.threads, "batch": b, "plan": p.to_dict()} for p, b in instances
        ],
        "contention_before": before,
        "started_at": started,
    }
    try:
        for j, (plan, images) in enumerate(instances):
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
            running.append(_Instance(j, plan, spec, logdir, tag))
        for inst, rec in zip(running, record["instances"], strict=True):
            ready = inst.read(deadline, timeout_s)
            rec.update({k: v for k, v in ready.items() if k != "ready"})
            rec["command_line"] = inst.command_line

        def one_round():
            for inst in running:
                inst.send("go")
            replies = [inst.read(deadline, timeout_s) for inst in running]
            for j, r in enumerate(replies):
                per_instance[j].append(r["t1"] - r["t0"])
            slowest.append(max(r["t1"] - r["t0"] for r in replies))

        pids = [inst.proc.pid for inst in running]
        probe = contention.IterationProbe(
            sorted(c for inst in running for c in inst.plan.cpus), own=lambda: group_cpu_s(pids)
        )
        m = measure.run(one_round, settings, probe=probe)
        for inst in running:
            inst.send("verify")
        checks = [inst.read(deadline, timeout_s) for inst in running]
    except GroupFailed as exc:
        record.update(
            status="failed", failure={"cause": exc.cause, "message": exc.message, **exc.details}
        )
        return record
    finally:
        for inst in running:
            inst.stop()
    # The warm-up rounds come first in per_instance and slowest; only timed rounds are kept,
    # and the statistics use the clean ones (rounds the probe did not exclude).
    n_warm = len(m.warmup_s)
    clean = [not e for e in m.excluded] if m.excluded else [True] * len(m.latencies_s)
    if not any(clean):  # every round excluded: kept, on all rounds, and flagged contended
        clean = [True] * len(m.latencies_s)
        record["all_rounds_excluded"] = True

    def kept(xs):
        return [x for x, ok in zip(xs, clean, strict=True) if ok]

    for j, rec in enumerate(record["instances"]):
        own = per_instance[j][n_warm:]
        rec.update(
            latencies_s=own,
            stats=stats.summarize(kept(own)),
            verification=checks[j]["verification"],
            binding=checks[j]["binding"],
            contention=checks[j]["contention"],
        )
    slow = slowest[n_warm:]
    min_clean = int(measure.settings_with_defaults(settings)["min_iterations"])
    record.update(
        status="ok",
        measurement=m.to_dict(),
        slowest_instance_s=slow,
        finished_at=provenance.now(),
        contended=m.contended(min_clean)
        or bool(record.get("all_rounds_excluded"))
        or any((c["contention"] or {}).get("contended") for c in checks),
    )
    summary = stats.summarize(kept(m.latencies_s))
    record["stats"] = summary
    record["overhead_median_s"] = summary["median_s"] - stats.summarize(kept(slow))["median_s"]
    bad = [(j, c["verification"]) for j, c in enumerate(checks) if not c["verification"]["ok"]]
    if bad:
        j, v = bad[0]
        record["status"] = "failed"
        record["stats"] = None
        record["failure"] = {
            "cause": v["cause"],
            "message": f"instance {j}: " + verify.failure_message(v),
        }
    return record


def attempt_summary(record: dict, backoff_s: float) -> dict:
    """What a contended attempt leaves in the kept record's ``attempts``."""
    m = record.get("measurement") or {}
    fp = [x for x in (m.get("foreign_pct") or []) if x is not None]
    return {
        "started_at": record.get("started_at"),
        "rounds": len(m.get("latencies_s") or []),
        "excluded": int(m.get("excluded_iterations") or 0),
        "foreign_pct_median": float(statistics.median(fp)) if fp else None,
        "median_s": (record.get("stats") or {}).get("median_s"),
        "backoff_s": backoff_s,
    }


def with_retries(measure_once, settings: dict, sleep=time.sleep) -> dict:
    """``measure_once()`` (one group record), again while the record is ``ok`` and
    ``contended``: wait ``contended_backoff_s``, doubling, at most ``contended_retries`` times.
    Returns the last record with ``attempts`` (``attempt_summary`` of each earlier one); it may
    still be contended, and then says so."""
    waits = measure.backoffs(settings)
    attempts: list[dict] = []
    record = measure_once()
    while record.get("status") == "ok" and record.get("contended") and len(attempts) < len(waits):
        wait = waits[len(attempts)]
        attempts.append(attempt_summary(record, wait))
        sleep(wait)
        record = measure_once()
    record["attempts"] = attempts
    return record


def plans_for(topo, budget: int, configuration: list[tuple[int, int]], use_smt: bool):
    """``[(Plan, images)]`` of a configuration ``[(threads, images), ...]`` on ``topo``, or a
    reason string when it does not fit."""
    got = placement.pack(topo, [t for t, _ in configuration], budget, use_smt)
    if isinstance(got, placement.NotApplicable):
        return got.reason
    return list(zip(got, [b for _, b in configuration], strict=True))


def run(
    job: dict,
    out: str | os.PathLike,
    logdir: str | os.PathLike,
    timeout_s: float,
    sleep=time.sleep,
) -> dict:
    """Measure the fat instance and the chosen plan of one job (see the module docstring) and
    write the result JSON atomically to ``out``. ``job``: ``model``, ``opt``, ``image_size``,
    ``use_smt``, ``settings``, ``replicates``, ``budget``, ``batch``, ``choice`` (a row of
    ``packing.choices``) and ``placements`` (the scheduling topology's plan dicts)."""
    from numa_effects.measure import result as cellresult

    logdir = Path(logdir)
    budget, batch, use_smt = int(job["budget"]), int(job["batch"]), bool(job["use_smt"])
    choice = job["choice"]
    result = {
        "job": {k: job[k] for k in ("model", "opt", "budget", "batch", "image_size", "use_smt")},
        "choice": choice,
        "settings": job["settings"],
        "provenance": {
            "started_at": provenance.now(),
            "host": provenance.host(),
            "versions": provenance.versions(),
            "workflow_revision": provenance.git_revision(launcher.SCRIPTS_DIR),
            "slurm": provenance.slurm(),
        },
    }
    configs = {"fat": [(budget, batch)]}
    if choice.get("instances") and not choice.get("is_fat"):
        configs["plan"] = [(int(i["threads"]), int(i["batch"])) for i in choice["instances"]]
    topo = topology_mod.current()
    why = None
    if shutil.which("numactl") is None:
        why = ("numactl-missing", "numactl is not on PATH; instances never run unpinned")
    groups: dict[str, list] = {}
    for name, conf in configs.items():
        got = plans_for(topo, budget, conf, use_smt)
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
    result["placements"] = {n: [p.to_dict() for p, _ in g] for n, g in groups.items()}
    if why:
        result.update(status="failed", failure={"cause": why[0], "message": why[1]})
        cellresult.write_json_atomic(out, result)
        return result
    common = {k: job[k] for k in ("model", "opt", "image_size", "use_smt")}
    runs: dict[str, list] = {name: [] for name in groups}
    # Replicate by replicate, the fat instance then the plan: drift hits both alike.
    for r in range(1, int(job.get("replicates", 1)) + 1):
        for name, got in groups.items():
            tag = f"{name}-r{r}"
            rec = with_retries(
                lambda got=got, tag=tag: measure_group(
                    got, common, job["settings"], logdir, tag, timeout_s
                ),
                job["settings"],
                sleep,
            )
            rec["replicate"] = r
            runs[name].append(rec)
    result["runs"] = runs
    failed = [(n, rec) for n, recs in runs.items() for rec in recs if rec["status"] != "ok"]
    result["status"] = "failed" if failed else "ok"
    if failed:
        n, rec = failed[0]
        result["failure"] = {**rec["failure"], "message": f"{n}: {rec['failure']['message']}"}
    result["provenance"]["finished_at"] = provenance.now()
    cellresult.write_json_atomic(out, result)
    return result
