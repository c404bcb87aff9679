"""The one measuring stack: a measurement is k >= 1 pinned instance processes driven round by
round from here (a cell: 1 instance of its model; the peak: 1 instance of a GEMM; a packing
configuration: k instances, each with its own cores, threads and images).

``measure(members, cell, settings, timeout_s)`` is the replicate loop every measurement goes
through:

1. **start** every instance through ``supervise.start`` (own session, ``PR_SET_PDEATHSIG``,
   ``RLIMIT_AS`` from ``max_memory_mb``) as ``numactl <binding> python -m
   numa_effects.measure.cell --spec S`` (``command``), its stderr to its log; wait for each one's
   ``ready`` line (model built, threads set: ``cell.serve``);
2. **round** = one step of the timing loop: ``go`` to every instance at once (the barrier), then
   every reply. Each instance times its own work with ``time.perf_counter`` (CLOCK_MONOTONIC,
   one clock for the machine) and reports its CPU time (getrusage) after it; a round's latency
   is max(t1) - min(t0) over the instances, so for k = 1 exactly the instance's own t1 - t0:
   the pipe is outside the timed interval. The first round is the first call (untimed, counted
   as the first warm-up iteration, as it always was). With the settings key ``canary`` a
   one-instance measurement sends ``go canary``: after each step the instance times a fixed
   cache-resident kernel too (``cell.make_canary``), outside the step's interval; the timed
   rounds' canary seconds are the record's ``measurement.canary_s``. Every instance also
   counts its minor page faults during each step; their sum per timed round is
   ``measurement.minor_faults``;
3. **time** with ``timing.run_with_retries`` (warm-up, adaptive or fixed stopping, caps), a
   ``contention.IterationProbe`` around every round over the instances' CPUs and SMT siblings,
   minus the instances' reported CPU time and this process's own; ``timing`` decides which
   rounds count and whether the attempt is contended; a contended attempt is measured again
   after the back-off **with the same processes** (one replicate = one set of processes: the
   two-level CI's process level stays what it models, and a loaded machine is not asked for k
   more torch imports and model builds while it is busy; the instances wait blocked, using no
   CPU);
4. **verify** in every instance (``verify.run``: CPUs, memory policy, threads, pages) and read
   its binding back; end of input ends it.

Any instance that dies, stops answering within ``timeout_s`` (the whole measurement's budget)
or fails its verification fails the measurement (``supervise.classify`` names the cause);
SIGINT/SIGTERM/SIGHUP to this process or the death of Snakemake kill every instance and raise
``supervise.Interrupted`` (no result). The record (``result`` describes it) has the cell
result's keys for any k, and per instance its threads, batch, plan, own latencies, statistics,
binding, verification and command line. A measurement left with no clean round after its
retries has ``status: contended``, ``stats: null`` and ``throughput: null``: never a number.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import shlex
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from numa_effects import stats
from numa_effects.measure import contention, provenance, supervise, timing, verify
from numa_effects.measure import result as cellresult
from numa_effects.measure.causes import Cause
from numa_effects.plan import allocators
from numa_effects.plan import placement as placement_mod

SCRIPTS_DIR = Path(__file__).resolve().parents[2]
CHILD_MODULE = "numa_effects.measure.cell"
STDERR_TAIL_LINES = 20
EXIT_TIMEOUT_S = 30.0  # at least, for an instance to exit after its input ended
EXIT_MISMATCH = 3  # cell.EXIT_MISMATCH: the instance's threads are not the planned ones


def child_env(threads: int, base: dict | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["OMP_NUM_THREADS"] = str(threads)
    env["MKL_NUM_THREADS"] = str(threads)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SCRIPTS_DIR), env.get("PYTHONPATH")]))
    env.setdefault("PYTHONWARNINGS", "ignore::FutureWarning")
    return env


def allocator_here(name: str, environ=None) -> tuple[dict | None, dict | None, str | None]:
    """(the spec's allocator record, the instance's base environment, why not) for allocator
    ``name`` on this machine: its library found here (``plan.allocators.locate``), the
    environment with it preloaded and its configuration set (any inherited allocator preload
    removed), its version."""
    alloc = allocators.get(name)
    path = allocators.locate(alloc)
    why = allocators.skip_reason(alloc, path)
    if why:
        return None, None, f"{why} (where the cell runs: {os.uname().nodename})"
    env = allocators.child_env(alloc, path, os.environ if environ is None else environ)
    record = {
        "name": alloc.name,
        "library": path,
        "maps_key": alloc.maps_key,
        "heap_probe": alloc.heap_probe,
        "version": allocators.version(alloc),
        "env": {k: env[k] for k in allocators.ENV_KEYS if env.get(k)},
    }
    return record, env, None


def command(plan: placement_mod.Plan, spec: str, numactl: str = "numactl") -> list[str]:
    """The pinned instance's command (looked up at run time: tests/numa_vm/driver.py wraps it)."""
    return [numactl, *plan.numactl_args(), sys.executable, "-m", CHILD_MODULE, "--spec", spec]


def command_line(cmd: list[str], threads: int, env: dict | None = None) -> str:
    """The command as one shell line, with the thread variables (and from ``env`` the variables
    that change what is measured: the allocator's preload and settings,
    ``plan.allocators.ENV_KEYS``), ready to paste."""
    extra = "".join(
        f"{k}={shlex.quote(env[k])} " for k in allocators.ENV_KEYS if env is not None and env.get(k)
    )
    prefix = (
        f"env OMP_NUM_THREADS={threads} MKL_NUM_THREADS={threads} {extra}PYTHONPATH={SCRIPTS_DIR} "
    )
    return prefix + shlex.join(cmd)


@dataclass
class Member:
    """One instance of a measurement: its plan, the spec its process reads (``cell``,
    ``plan``, ``settings``, optional ``workload``), where the spec is written and its log;
    ``environ``: the environment it starts from (None: this process's), e.g. with the cell's
    allocator preloaded (``plan.allocators.child_env``, built where it runs)."""

    plan: placement_mod.Plan
    spec: dict
    spec_path: Path
    log: Path
    environ: dict | None = None


class Failed(Exception):
    """An instance failed: the measurement's failure (cause, message, details)."""

    def __init__(self, cause: str, message: str, **details):
        super().__init__(message)
        self.cause, self.message, self.details = cause, message, details


def _own_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


class Instance:
    """One running instance: its process (started by ``supervise.start``), a line reader on its
    protocol pipe, and what it reported."""

    def __init__(self, j: int, k: int, member: Member, guard, max_memory_mb, oom_before: int):
        self.j, self.k, self.member, self.guard = j, k, member, guard
        self.oom_before = oom_before
        self.plan = member.plan
        member.spec_path.parent.mkdir(parents=True, exist_ok=True)
        member.log.parent.mkdir(parents=True, exist_ok=True)
        member.spec_path.write_text(json.dumps(member.spec, indent=1))
        self.cmd = command(self.plan, str(member.spec_path))
        self.env = child_env(self.plan.threads, member.environ)
        self.command_line = command_line(self.cmd, self.plan.threads, self.env)
        with open(member.log, "w") as fh:
            fh.write(f"# {self.command_line}\n")
            if max_memory_mb:
                fh.write(f"# address-space limit (max_memory_mb): {max_memory_mb} MiB\n")
        self.logfh = open(member.log, "a")  # noqa: SIM115 (closed in close)
        self.started = time.monotonic()
        self.proc = guard.watch(
            supervise.start(self.cmd, self.env, self.logfh, max_memory_mb, pipes=True)
        )
        self.cpu_s = 0.0  # its CPU time as of its last reply
        self._buf = b""

    def where(self) -> str:
        """How failure messages name this instance (nothing for a lone instance)."""
        return "" if self.k == 1 else f"instance {self.j} ({' '.join(self.plan.numactl_args())}): "

    def send(self, line: str) -> None:
        try:
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass  # noticed by the next read

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
        """The instance's next reply; what is not one (numactl's usage text, printed before the
        instance's Python runs) goes to its log, where ``supervise.classify`` reads it."""
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
        return reply

    def details(self, **extra) -> dict:
        return {"command_line": self.command_line, "log": str(self.member.log), **extra}

    def _failure(self, outcome: supervise.Outcome, timeout_s: float) -> Failed:
        self.logfh.flush()
        text = self.member.log.read_text(errors="replace")
        # raises supervise.Interrupted when the instance was killed from outside
        cause, message = supervise.classify(outcome, text, timeout_s, EXIT_MISMATCH)
        sig = outcome.signal.name if outcome.signal else None
        return Failed(
            cause,
            self.where() + message,
            **self.details(
                returncode=outcome.returncode,
                signal=sig,
                stderr_tail=supervise.tail(text, STDERR_TAIL_LINES),
                wall_s=round(outcome.wall_s, 3),
            ),
        )

    def died(self, timeout_s: float):
        code = self.proc.wait()
        if self._buf:
            self._to_log(self._buf)
            self._buf = b""
        ooms = max(0, supervise.oom_kill_count() - self.oom_before)
        outcome = supervise.Outcome(code, wall_s=time.monotonic() - self.started, oom_kills=ooms)
        raise self._failure(outcome, timeout_s)

    def timeout(self, timeout_s: float):
        supervise.kill_group(self.proc)
        outcome = supervise.Outcome(
            self.proc.returncode, timed_out=True, wall_s=time.monotonic() - self.started
        )
        raise self._failure(outcome, timeout_s)

    def close(self, deadline: float, timeout_s: float) -> None:
        """End its input and wait for it to exit 0 (a crash on the way out fails it too), until
        the measurement's ``deadline`` and at least ``EXIT_TIMEOUT_S``. The instance skips
        Python's shutdown (``cell``'s ``os._exit``: torch's took more than 30 s in an emulated
        guest on a busy host, 2026-12-01), so it normally exits at once. One that does not exit
        by then is killed and fails with cause timeout: it was this runner that killed it, not
        an interruption from outside."""
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


def measure(
    members: list[Member],
    cell: dict,
    settings: dict,
    timeout_s: float,
    replicate: int = 1,
    max_memory_mb: int | None = None,
    sleep=None,
) -> dict:
    """Measure ``members`` together as one replicate (see the module docstring) and return its
    record: ``status`` ok, contended (no clean round) or failed. ``cell``: what the record
    describes (for a packing configuration its totals); ``sleep``: the back-off's sleep (tests)."""
    started = provenance.now()
    before = contention.preflight()
    t_start = time.monotonic()
    deadline = t_start + timeout_s
    ooms = supervise.oom_kill_count()
    k = len(members)
    insts: list[Instance] = []
    rounds: list[list[tuple[float, float]]] = []  # per round, per instance: (t0, t1)
    # per round, the canary's seconds (settings key canary; one instance only: in a group, an
    # instance's canary would run beside the others' steps)
    canaries: list[float | None] = []
    faults: list[int | None] = []  # per round, the instances' minor page faults in their steps
    go = "go canary" if settings.get("canary") and k == 1 else "go"
    with supervise.Guard() as guard:
        try:
            for j, member in enumerate(members):
                insts.append(Instance(j, k, member, guard, max_memory_mb, ooms))
            ready = [inst.read(deadline, timeout_s) for inst in insts]
            for inst, rdy in zip(insts, ready, strict=True):
                if rdy.get("ready") is False:  # its binding was wrong at its start
                    v = rdy["verification"]
                    raise Failed(
                        v["cause"],
                        f"{inst.where()}at its start, before any measurement: "
                        + verify.failure_message(v),
                        **inst.details(binding={**v["binding"], "verification": v}),
                    )
            own = _group_cpu(insts)

            def one_round() -> float:
                for inst in insts:
                    inst.send(go)
                replies = [inst.read(deadline, timeout_s) for inst in insts]
                rounds.append([(r["t0"], r["t1"]) for r in replies])
                canaries.append(replies[0].get("canary_s"))
                got = [r.get("minor_faults") for r in replies]
                faults.append(None if None in got else sum(got))
                return max(r["t1"] for r in replies) - min(r["t0"] for r in replies)

            cpus = sorted(c for inst in insts for c in inst.plan.cpus)
            first_call_s = one_round()
            watch = contention.Watch(cpus, own=own)
            probe = contention.IterationProbe(cpus, own=own, pids=[inst.proc.pid for inst in insts])
            m, attempts = timing.run_with_retries(
                one_round,
                settings,
                probe=probe,
                first_call_s=first_call_s,
                sleep=sleep or guard.sleep,
            )
            window = watch.stop()
            for inst in insts:
                inst.send("verify")
            checks = [inst.read(deadline, timeout_s) for inst in insts]
            for inst in insts:
                inst.close(deadline, timeout_s)
        except Failed as exc:
            guard.kill_all()
            return _failed(members, cell, settings, replicate, exc, before, started, max_memory_mb)
        finally:  # (an interruption or any other exception: the guard kills every instance)
            for inst in insts:
                inst.logfh.close()
    return _record(
        insts,
        ready,
        checks,
        rounds,
        canaries,
        faults,
        m,
        attempts,
        window,
        before,
        started,
        first_call_s,
        cell,
        settings,
        replicate,
    )


def _timed(per_round: list, n: int) -> list | None:
    """The last ``n`` rounds' values (the timed iterations'), or None when there are none or
    a round has none (an instance that did not report it)."""
    tail = per_round[len(per_round) - n :]
    return tail if n and all(v is not None for v in tail) else None


def _group_cpu(insts):
    """CPU seconds of the instances (as last reported) and of this process: what the probe
    subtracts from the CPUs' busy time."""

    def own() -> float:
        return sum(inst.cpu_s for inst in insts) + _own_cpu_s()

    return own


def _failed(members, cell, settings, replicate, exc: Failed, before, started, max_memory_mb):
    spec = {"cell": cell, "plan": members[0].plan.to_dict() if len(members) == 1 else None}
    spec |= {"settings": settings, "replicate": replicate}
    details = dict(exc.details)
    binding = details.pop("binding", None)  # where a measured record has it
    failure = cellresult.failed(
        spec, exc.cause, exc.message, **details, max_memory_mb=max_memory_mb
    )
    if binding is not None:
        failure["binding"] = binding
    failure["contention"] = before
    failure["provenance"] = {
        "launcher_started_at": started,
        "finished_at": provenance.now(),
        "host": provenance.host(),
        "slurm": provenance.slurm(),
    }
    return failure


def _record(
    insts,
    ready,
    checks,
    rounds,
    canaries,
    faults,
    m,
    attempts,
    window,
    before,
    started,
    first_call_s,
    cell,
    settings,
    replicate,
) -> dict:
    k = len(insts)
    n = len(m.latencies_s)
    timed = rounds[len(rounds) - n :]  # warm-up rounds come first in every attempt
    judged = timing.judge(m, attempts)
    has_stats = judged.pop("has_statistics")
    noise = {**before, **window}
    noise["contended_window"] = window.get("contended")
    noise["contended_window_reason"] = window.get("contended_reason")
    noise.update(judged)

    instances = []
    for j, (inst, rdy, chk) in enumerate(zip(insts, ready, checks, strict=True)):
        own = [r[j][1] - r[j][0] for r in timed]
        kept = m.keep(own)
        instances.append(
            {
                "threads": inst.plan.threads,
                "batch": inst.member.spec["cell"].get("batch_size"),
                "plan": inst.plan.to_dict(),
                "pid": rdy.get("pid"),
                "command": inst.cmd,
                "command_line": inst.command_line,
                "log": str(inst.member.log),
                "started_at": rdy.get("started_at"),
                "import_s": rdy.get("import_s"),
                "build_s": rdy.get("build_s"),
                "prepare_s": rdy.get("prepare_s"),
                "reference_s": rdy.get("reference_s"),
                "model_import": rdy.get("model_import"),  # builder: lean | package
                "threads_info": rdy.get("threads_info"),
                "latencies_s": own,
                "stats": stats.summarize(kept) if kept else None,
                "binding": chk["binding"],
                "verification": chk["verification"],
                # the workload's report: a cell's inspection, the peak's per-kernel times
                "report": chk.get("report"),
                "peak_rss_kb": chk.get("peak_rss_kb"),
                "warnings": chk.get("warnings", []),
                "finished_at": chk.get("finished_at"),
            }
        )
    clean = m.clean_latencies()
    skew = [(x - max(b - a for a, b in r)) for x, r in zip(m.latencies_s, timed, strict=True)]
    measurement = {
        **m.to_dict(),
        "import_s": max(i["import_s"] or 0.0 for i in instances),
        "build_s": max(i["build_s"] or 0.0 for i in instances),
        "prepare_s": max(i["prepare_s"] or 0.0 for i in instances),
        "first_call_s": first_call_s,
        "reference_s": max(i["reference_s"] or 0.0 for i in instances),
        "model_import": instances[0]["model_import"],
        # a round's latency minus its slowest instance's own duration: how far apart the
        # instances started (0 for one instance)
        "round_skew_median_s": statistics.median(m.keep(skew)) if clean else None,
    }
    fault = _timed(faults, n)
    if fault:  # one per timed iteration, the instances' sum
        measurement["minor_faults"] = fault
    canary = _timed(canaries, n)
    if canary:  # settings key canary: one per timed iteration
        measurement["canary_s"] = canary
        measurement["canary_kernel"] = ready[0].get("canary_kernel")
    bad = [(j, i["verification"]) for j, i in enumerate(instances) if not i["verification"]["ok"]]
    if k == 1:
        one = instances[0]
        plan = one["plan"]
        binding = {**one["binding"], "verification": one["verification"]}
        command, line = one["command"], one["command_line"]
    else:
        plan = None
        binding = {
            "verification": {
                "ok": not bad,
                "problems": [
                    {**p, "message": f"instance {j}: {p['message']}"}
                    for j, i in enumerate(instances)
                    for p in i["verification"]["problems"]
                ],
                "cause": bad[0][1]["cause"] if bad else None,
            }
        }
        command, line = None, None
    warnings_seen: list = []
    for i in instances:
        for w in i["warnings"]:
            if w not in warnings_seen:
                warnings_seen.append(w)
    batch = cell.get("batch_size")
    summary = stats.summarize(clean) if has_stats else None
    record = {
        "schema_version": cellresult.SCHEMA_VERSION,
        "status": "ok" if has_stats else "contended",
        "cell": cell,
        "replicate": int(replicate),
        "plan": plan,
        "settings": settings,
        "measurement": measurement,
        "stats": summary,
        "throughput": (
            stats.throughput(int(batch), clean, summary["median_s"])
            if summary and batch is not None
            else None
        ),
        "binding": binding,
        "contention": noise,
        "provenance": {
            "started_at": instances[0]["started_at"] if k == 1 else started,
            "finished_at": provenance.now(),
            "versions": provenance.versions(),
            "env": provenance.relevant_env(insts[0].env),
            "host": provenance.host(),
            "slurm": provenance.slurm(),
            "peak_rss_kb": max(i["peak_rss_kb"] or 0 for i in instances) or None,
            "warnings": warnings_seen,
            "command": command,
            "command_line": line,
            "launcher_started_at": started,
            "workflow_revision": provenance.git_revision(SCRIPTS_DIR),
        },
        "failure": None,
        "instances": instances,
        "report": instances[0]["report"] if k == 1 else None,
    }
    if bad:
        # An instance whose threads or pages are not where its label says fails the whole
        # measurement: its numbers stay in ``measurement`` for diagnosis, no statistics.
        j, v = bad[0]
        record["status"] = "failed"
        record["stats"] = None
        record["throughput"] = None
        record["failure"] = {
            "cause": v["cause"],
            "message": ("" if k == 1 else f"instance {j}: ") + verify.failure_message(v),
            "command_line": instances[j]["command_line"],
        }
    return record
