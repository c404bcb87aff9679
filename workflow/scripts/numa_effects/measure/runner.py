"""The one measuring stack (docs/performance.md, "The measuring stack"): ``measure(spec, members,
timeout_s)`` drives k >= 1 pinned instance processes (``cell``) round by round as one replicate.

A round sends ``go`` to every instance at once (the barrier) and reads every reply; each
instance times its own step, so a round's latency is max(t1) - min(t0) and the pipe stays
outside the timed interval. The first round is the first call (the first warm-up iteration).
``timing.run_with_retries`` decides which rounds count; a contended attempt is measured again
with the same processes (one replicate = one set of processes). Then every instance verifies
its binding. A failure of any instance fails the measurement (``supervise.classify``); an
interruption kills every instance and raises ``supervise.Interrupted``.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shlex
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from numa_effects import stats
from numa_effects.measure import contention, provenance, supervise, timing, verify
from numa_effects.measure.causes import Cause
from numa_effects.measure.record import Failure
from numa_effects.plan import allocators
from numa_effects.plan import placement as placement_mod
from numa_effects.plan.code import SCRIPTS
from numa_effects.plan.spec import Spec

CHILD_MODULE = "numa_effects.measure.cell"
EXIT_TIMEOUT_S = 30.0  # at least, for an instance to exit after its input ended
# what the launcher tells each instance it starts (docs/deploy.md, "Starting it")
LAUNCH_KEYS = (
    "NUMA_EFFECTS_INSTANCE",
    "NUMA_EFFECTS_BATCH",
    "NUMA_EFFECTS_THREADS",
    "NUMA_EFFECTS_INTEROP_THREADS",
    "NUMA_EFFECTS_CPUS",
    "NUMA_EFFECTS_OPT",
    "NUMA_EFFECTS_MODEL",
)


def child_env(threads: int, base: dict | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["OMP_NUM_THREADS"] = str(threads)
    env["MKL_NUM_THREADS"] = str(threads)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SCRIPTS), env.get("PYTHONPATH")]))
    env.setdefault("PYTHONWARNINGS", "ignore::FutureWarning")
    return env


def pinned(plan: placement_mod.Plan, program: list[str]) -> list[str]:
    """``program`` bound as ``plan`` says: the one way every instance is started."""
    return ["numactl", *plan.numactl_args(), *program]


def command(
    plan: placement_mod.Plan, spec: str, instance: int = 0, serve: list[str] | None = None
) -> list[str]:
    """The pinned instance's command (looked up at run time: tests/numa_vm/driver.py wraps it);
    ``serve``: the cell's serve-mode arguments (the launcher's reference server)."""
    cmd = [sys.executable, "-m", CHILD_MODULE, "--spec", spec]
    cmd += ["--instance", str(instance)] if instance else []
    return pinned(plan, cmd + (["--serve", *serve] if serve is not None else []))


def command_line(cmd: list[str], threads: int, env: dict) -> str:
    """The command as one shell line to paste: the thread, allocator and launcher variables
    it runs with (``env``), each quoted for a POSIX shell."""
    shown = {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    shown |= {k: env[k] for k in (*allocators.ENV_KEYS, *LAUNCH_KEYS) if env.get(k)}
    shown["PYTHONPATH"] = str(SCRIPTS)
    variables = " ".join(f"{k}={shlex.quote(v)}" for k, v in shown.items())
    return f"env {variables} {shlex.join(cmd)}"


def script(lines: list[str]) -> list[str]:
    """Instances' lines as a POSIX sh script: each started in the background, then ``wait``."""
    return [f"{line} &" for line in lines] + ["wait"]


@dataclass
class Member:
    """Where one instance runs: its plan, spec file, log, base environment (None: this
    process's; e.g. with its allocator preloaded) and index in the spec."""

    plan: placement_mod.Plan
    spec_path: Path
    log: Path
    environ: dict | None = None
    index: int = 0


class Failed(Exception):
    """An instance failed (``binding``: what one refused at its start read back)."""

    def __init__(self, cause: str, message: str, binding: dict | None = None, **details):
        super().__init__(message)
        self.cause, self.message, self.binding, self.details = cause, message, binding, details

    def failure(self, **extra) -> Failure:
        return Failure(self.cause, self.message, **self.details, **extra)


@dataclass(frozen=True)
class Measured:
    """What ``measure`` observed: the parts of a record; ``failure`` keeps the measured parts."""

    measurement: dict = field(default_factory=dict)
    stats: dict | None = None  # over the clean rounds; None when none was clean
    throughput: dict | None = None
    binding: dict = field(default_factory=dict)
    contention: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    instances: tuple = ()
    report: dict | None = None  # a single instance's report (its workload's)
    failure: Failure | None = None


class Instance:
    """One running instance: its process and a line reader on its protocol pipe."""

    def __init__(self, k: int, member: Member, spec: str, guard, max_memory_mb, oom_before: int):
        self.j, self.k, self.member, self.guard = member.index, k, member, guard
        self.oom_before = oom_before
        self.plan = member.plan
        member.spec_path.parent.mkdir(parents=True, exist_ok=True)
        member.log.parent.mkdir(parents=True, exist_ok=True)
        member.spec_path.write_text(spec)
        self.cmd = command(self.plan, str(member.spec_path), instance=member.index)
        self.env = child_env(self.plan.threads, member.environ)
        self.command_line = command_line(self.cmd, self.plan.threads, self.env)
        with open(member.log, "w") as fh:
            fh.write(f"# {self.command_line}\n")
            if max_memory_mb:
                fh.write(f"# address-space limit (max_memory_mb): {max_memory_mb} MiB\n")
        self.logfh = open(member.log, "a")  # noqa: SIM115 (closed in close)
        self.started = time.monotonic()
        self.proc = guard.watch(supervise.start(self.cmd, self.env, self.logfh, max_memory_mb))
        self.cpu_s = 0.0  # its CPU time as of its last reply
        self._buf = b""

    def where(self) -> str:
        """How failure messages name this instance (nothing for a lone one)."""
        return "" if self.k == 1 else f"instance {self.j} ({' '.join(self.plan.numactl_args())}): "

    def send(self, line: str) -> None:
        with contextlib.suppress(BrokenPipeError, ValueError):  # noticed by the next read
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()

    def _line(self, deadline: float, timeout_s: float) -> bytes:
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self.timeout(timeout_s)
            ready, _, _ = select.select([fd], [], [], min(supervise.POLL_S, left))
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    self.died(timeout_s)
                self._buf += chunk
            else:
                self.guard.check()
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def _to_log(self, text: bytes) -> None:
        self.logfh.write(text.decode(errors="replace") + "\n")
        self.logfh.flush()

    def read(self, deadline: float, timeout_s: float) -> dict:
        """The next reply; other lines (numactl's usage text) go to the log for ``classify``."""
        while True:
            line = self._line(deadline, timeout_s)
            try:
                reply = json.loads(line)
            except ValueError:
                reply = None
            if isinstance(reply, dict):
                break
            self._to_log(line)
        # the instance is idle now: a good moment to notice an interruption
        self.guard.check()
        if "cpu_s" in reply:
            self.cpu_s = float(reply["cpu_s"])
        if "error" in reply:
            raise Failed(Cause.ERROR, f"{self.where()}{reply['error']}", **self.details())
        if reply.get("ready") is False:  # its binding was wrong at its start
            v = reply["verification"]
            raise Failed(
                v["cause"],
                f"{self.where()}at its start, before any measurement: " + verify.failure_message(v),
                binding={**v["binding"], "verification": v},
                **self.details(),
            )
        return reply

    def details(self, **extra) -> dict:
        return {"command_line": self.command_line, "log": str(self.member.log), **extra}

    def _failure(self, timeout_s: float, code: int, **outcome) -> Failed:
        outcome = supervise.Outcome(code, wall_s=time.monotonic() - self.started, **outcome)
        self.logfh.flush()
        text = self.member.log.read_text(errors="replace")
        # raises supervise.Interrupted when the instance was killed from outside
        cause, message = supervise.classify(outcome, text, timeout_s)
        sig = outcome.signal.name if outcome.signal else None
        return Failed(
            cause,
            self.where() + message,
            **self.details(
                returncode=outcome.returncode,
                signal=sig,
                stderr_tail=supervise.tail(text),
                wall_s=round(outcome.wall_s, 3),
            ),
        )

    def died(self, timeout_s: float):
        code = self.proc.wait()
        if self._buf:
            self._to_log(self._buf)
            self._buf = b""
        ooms = max(0, supervise.oom_kill_count() - self.oom_before)
        raise self._failure(timeout_s, code, oom_kills=ooms)

    def timeout(self, timeout_s: float):
        supervise.kill_group(self.proc)
        raise self._failure(timeout_s, self.proc.returncode, timed_out=True)

    def close(self, deadline: float, timeout_s: float) -> None:
        """End its input and wait, until ``deadline`` and at least ``EXIT_TIMEOUT_S``, for it
        to exit 0 (it skips Python's shutdown, so it normally exits at once). One that does not
        is killed and fails with cause timeout: this runner killed it, not an interruption."""
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        end = max(deadline, time.monotonic() + EXIT_TIMEOUT_S)
        while self.proc.poll() is None:
            if time.monotonic() > end:
                self.timeout(timeout_s)
            self.guard.check()
            time.sleep(0.01)
        if self.proc.returncode != 0:
            self.died(timeout_s)


class Rounds:
    """The barrier rounds: per round each instance's (t0, t1), the canary's seconds (one
    instance only: in a group it would run beside the others' steps) and the minor faults."""

    def __init__(self, insts: list[Instance], settings: dict, deadline: float, timeout_s: float):
        self.insts, self.deadline, self.timeout_s = insts, deadline, timeout_s
        self.go = "go canary" if settings.get("canary") and len(insts) == 1 else "go"
        self.times: list[list[tuple[float, float]]] = []
        self.canaries: list[float | None] = []
        self.faults: list[int | None] = []

    def __call__(self) -> float:
        for inst in self.insts:
            inst.send(self.go)
        replies = [inst.read(self.deadline, self.timeout_s) for inst in self.insts]
        self.times.append([(r["t0"], r["t1"]) for r in replies])
        self.canaries.append(replies[0].get("canary_s"))
        got = [r.get("minor_faults") for r in replies]
        self.faults.append(None if None in got else sum(got))
        return max(r["t1"] for r in replies) - min(r["t0"] for r in replies)

    def timed(self, n: int) -> list:
        """The last ``n`` rounds' (t0, t1) per instance: the timed iterations'."""
        return self.times[len(self.times) - n :]


def measure(
    spec: Spec,
    members: list[Member],
    timeout_s: float,
    max_memory_mb: int | None = None,
) -> Measured:
    """Measure ``spec``'s instances, one per member, as one replicate."""
    started = provenance.now()
    before = contention.preflight()
    deadline = time.monotonic() + timeout_s
    ooms = supervise.oom_kill_count()
    text = json.dumps(spec.to_json(), indent=1)
    insts: list[Instance] = []
    with supervise.Guard() as guard:
        try:
            for member in members:
                insts.append(Instance(len(members), member, text, guard, max_memory_mb, ooms))
            ready = [inst.read(deadline, timeout_s) for inst in insts]
            rounds = Rounds(insts, spec.settings, deadline, timeout_s)
            m, attempts, window, first_call_s = _time(insts, rounds, spec.settings, guard)
            for inst in insts:
                inst.send("verify")
            checks = [inst.read(deadline, timeout_s) for inst in insts]
            for inst in insts:
                inst.close(deadline, timeout_s)
        except Failed as exc:
            guard.kill_all()
            return _aborted(exc, before, started, max_memory_mb)
        finally:  # (an interruption or any other exception: the guard kills every instance)
            for inst in insts:
                inst.logfh.close()
    batches = [spec.instances[inst.j].cell.get("batch_size") for inst in insts]
    parts = zip(insts, batches, ready, checks, strict=True)
    per = [_instance(i, b, r, c, rounds, m) for i, b, r, c in parts]
    noise = {**before, **window, "contended_window": window.get("contended")}
    noise["contended_window_reason"] = window.get("contended_reason")
    judged = timing.judge(m, attempts)
    has_stats = judged.pop("has_statistics")
    clean = m.clean_latencies()
    summary = stats.summarize(clean) if has_stats else None
    batch = spec.cell.get("batch_size")
    return Measured(
        measurement=_measurement(m, rounds, per, first_call_s, ready[0].get("canary_kernel")),
        stats=summary,
        throughput=stats.throughput(int(batch), clean, summary["median_s"])
        if summary and batch is not None
        else None,
        binding=binding(per),
        contention={**noise, **judged},
        provenance=_provenance(insts, per, started),
        instances=tuple(per),
        report=per[0]["report"] if len(per) == 1 else None,
        failure=unverified(per),
    )


def _time(insts, rounds: Rounds, settings: dict, guard):
    """(measurement, attempts, the window's verdict, first call seconds)."""

    def own() -> float:
        return sum(inst.cpu_s for inst in insts) + contention.process_cpu_s()

    cpus = sorted(c for inst in insts for c in inst.plan.cpus)
    first_call_s = rounds()
    watch = contention.Watch(cpus, own=own)
    probe = contention.IterationProbe(cpus, own=own, pids=[inst.proc.pid for inst in insts])
    m, attempts = timing.run_with_retries(
        rounds, settings, probe=probe, first_call_s=first_call_s, sleep=guard.sleep
    )
    return m, attempts, watch.stop(), first_call_s


def _timed(per_round: list, n: int) -> list | None:
    """The last ``n`` rounds' values, or None when there are none or one is missing."""
    tail = per_round[len(per_round) - n :]
    return tail if n and all(v is not None for v in tail) else None


def _aborted(exc: Failed, before: dict, started: str, max_memory_mb) -> Measured:
    """An instance failed before the measurement was complete."""
    return Measured(
        binding=exc.binding or {},
        contention=before,
        provenance={
            "launcher_started_at": started,
            "finished_at": provenance.now(),
            "host": provenance.host(),
            "slurm": provenance.slurm(),
        },
        failure=exc.failure(max_memory_mb=max_memory_mb),
    )


def _instance(inst: Instance, batch, rdy: dict, chk: dict, rounds: Rounds, m) -> dict:
    """One instance's part of the record."""
    own = [r[inst.j][1] - r[inst.j][0] for r in rounds.timed(len(m.latencies_s))]
    kept = m.keep(own)
    return instance_part(inst, batch, rdy, chk, own, stats.summarize(kept) if kept else None)


def instance_part(inst: Instance, batch, rdy: dict, chk: dict, own: list, summary) -> dict:
    """An instance's part of a record: where it ran, its ready and ``verify`` replies (``chk``:
    binding, verification, report, peak RSS, warnings), its step latencies and statistics."""
    return {
        "threads": inst.plan.threads,
        "batch": batch,
        "plan": inst.plan.to_dict(),
        "pid": rdy.get("pid"),
        "command": inst.cmd,
        "command_line": inst.command_line,
        "log": str(inst.member.log),
        **{k: rdy.get(k) for k in ("started_at", "import_s", "build_s", "prepare_s")},
        **{k: rdy.get(k) for k in ("reference_s", "model_import", "threads_info")},
        "latencies_s": own,
        "stats": summary,
        **chk,
    }


def _measurement(m, rounds: Rounds, per: list[dict], first_call_s: float, kernel) -> dict:
    n = len(m.latencies_s)
    timed = rounds.timed(n)
    # a round's latency minus its slowest instance's own duration: how far apart the instances
    # started (0 for one instance)
    skew = [(x - max(b - a for a, b in r)) for x, r in zip(m.latencies_s, timed, strict=True)]
    out = {
        **m.to_dict(),
        **{k: max(i[k] or 0.0 for i in per) for k in ("import_s", "build_s", "prepare_s")},
        "first_call_s": first_call_s,
        "reference_s": max(i["reference_s"] or 0.0 for i in per),
        "model_import": per[0]["model_import"],
        "round_skew_median_s": statistics.median(m.keep(skew)) if m.clean_latencies() else None,
    }
    fault = _timed(rounds.faults, n)
    if fault:  # one per timed iteration, the instances' sum
        out["minor_faults"] = fault
    canary = _timed(rounds.canaries, n)
    if canary:  # settings key canary: one per timed iteration
        out["canary_s"] = canary
        out["canary_kernel"] = kernel
    return out


def binding(per: list[dict]) -> dict:
    """One instance's binding with its verification; for k > 1 the verifications combined."""
    if len(per) == 1:
        return {**per[0]["binding"], "verification": per[0]["verification"]}
    bad = [i["verification"] for i in per if not i["verification"]["ok"]]
    problems = [
        {**p, "message": f"instance {j}: {p['message']}"}
        for j, i in enumerate(per)
        for p in i["verification"]["problems"]
    ]
    return {
        "verification": {
            "ok": not bad,
            "problems": problems,
            "cause": bad[0]["cause"] if bad else None,
        }
    }


def unverified(per: list[dict]) -> Failure | None:
    """The first failed verification fails the whole measurement (its numbers stay)."""
    for j, i in enumerate(per):
        v = i["verification"]
        if not v["ok"]:
            where = "" if len(per) == 1 else f"instance {j}: "
            msg = where + verify.failure_message(v)
            return Failure(v["cause"], msg, command_line=i["command_line"])
    return None


def _provenance(insts: list[Instance], per: list[dict], started: str) -> dict:
    one = per[0] if len(per) == 1 else None
    warns = [w for i in per for w in i["warnings"]]
    seen = [w for k, w in enumerate(warns) if w not in warns[:k]]
    return {
        "started_at": one["started_at"] if one else started,
        "finished_at": provenance.now(),
        "versions": provenance.versions(),
        "env": provenance.relevant_env(insts[0].env),
        "host": provenance.host(),
        "slurm": provenance.slurm(),
        "peak_rss_kb": max(i["peak_rss_kb"] or 0 for i in per) or None,
        "warnings": seen,
        "command": one["command"] if one else None,
        "command_line": one["command_line"] if one else None,
        "launcher_started_at": started,
        "workflow_revision": provenance.git_revision(SCRIPTS),
    }
