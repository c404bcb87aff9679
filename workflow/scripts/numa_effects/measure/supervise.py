"""Supervising the pinned child processes of a measurement, and classifying how they ended.

A **failure** belongs to the cell and becomes its result (``status: failed``, the grid goes on):
a timeout, running out of memory, a crash, numactl refusing the binding, an exception. An
**interruption** belongs to the run: Ctrl-C, SIGTERM/SIGHUP to the launcher, the death of
Snakemake, or a SIGKILL/SIGTERM/SIGINT/SIGHUP sent to the child from outside. Then the child's
process group is killed, no result is written and ``Interrupted`` exits the job with status 1,
so the next run measures the cell again.

``start`` starts every child in its own session, dying with the launcher
(``PR_SET_PDEATHSIG``), optionally under ``RLIMIT_AS``; ``Guard`` gives the interruption
semantics while children run.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import resource
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from numa_effects.measure.causes import Cause
from numa_effects.measure.cell import EXIT_COMPILE, EXIT_MISMATCH

POLL_S = 0.5
PR_SET_PDEATHSIG = 1

# Signals that mean "someone stopped this run" rather than "this cell crashed".
INTERRUPT_SIGNALS = frozenset(
    {signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT}
)

# numactl's own complaints come before the Python child ever starts.
NUMACTL_PATTERNS = (
    re.compile(r"^libnuma: Warning"),
    re.compile(r"^usage: numactl"),
    re.compile(r"^numactl: "),
    re.compile(r"^<[^>]*> is invalid"),
    re.compile(r"^(sched_setaffinity|set_mempolicy|mbind)\b"),
)
OOM_PATTERNS = (
    *("DefaultCPUAllocator: can't allocate memory", "Cannot allocate memory", "std::bad_alloc"),
    *("MemoryError", "failed to map segment from shared object", "OutOfMemoryError"),
)
EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)\b[^:]*): ?(.*)$")
BUILD_FRAMES = re.compile(r'File ".*numa_effects/measure/workloads/model\.py", line \d+, in (\w+)')


class Interrupted(SystemExit):
    """The run was interrupted while this cell ran: no result, exit status 1, re-run next time."""

    def __init__(self, why: str):
        self.why = why
        super().__init__(f"cell interrupted ({why}); no result written, the next run re-runs it")


@dataclass
class Outcome:
    returncode: int
    timed_out: bool = False
    wall_s: float = 0.0
    oom_kills: int = 0

    @property
    def signal(self) -> signal.Signals | None:
        if self.returncode < 0:
            with contextlib.suppress(ValueError):
                return signal.Signals(-self.returncode)
        return None


def _own_cgroup_dirs() -> list[Path]:
    dirs = []
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if controllers == "":  # cgroup v2
                dirs.append(Path("/sys/fs/cgroup") / path.lstrip("/"))
            elif "memory" in controllers.split(","):  # cgroup v1
                dirs.append(Path("/sys/fs/cgroup/memory") / path.lstrip("/"))
    return dirs


def oom_kill_count() -> int:
    """Sum of the OOM-kill counters visible here (/proc/vmstat, the memory cgroup's v2
    memory.events or v1 memory.oom_control). Only differences matter."""
    total = 0
    sources = [Path("/proc/vmstat")]
    for d in _own_cgroup_dirs():
        sources += [d / "memory.events", d / "memory.oom_control"]
    for src in sources:
        try:
            text = src.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "oom_kill" and parts[1].isdigit():
                total += int(parts[1])
    return total


def child_setup(launcher_pid: int, max_memory_mb: int | None = None):
    """A ``preexec_fn`` for a child that must not outlive ``launcher_pid``: its own session,
    ``PR_SET_PDEATHSIG`` SIGKILL, ``RLIMIT_AS`` at ``max_memory_mb`` if given."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before fork
    except (OSError, AttributeError):
        prctl = None

    def setup():  # runs in the child between fork and exec
        os.setsid()
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != launcher_pid:  # the launcher died before prctl took effect
            os.kill(os.getpid(), signal.SIGKILL)
        if max_memory_mb:
            limit = int(max_memory_mb) * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return setup


def start(cmd: list[str], env: dict, logfh, max_memory_mb: int | None = None) -> subprocess.Popen:
    """Start a child under ``child_setup``: stdin and stdout pipes (the runner's protocol),
    stderr to ``logfh``."""
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": logfh}
    setup = child_setup(os.getpid(), max_memory_mb)
    return subprocess.Popen(cmd, env=env, preexec_fn=setup, **pipes)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL to the child's process group (everything it started, also after the child
    itself ended: compile workers), then reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait()


class Guard:
    """Interruption semantics while children run: a signal (``HANDLED``) or the death of the
    parent make ``check()`` (and leaving the guard) kill every ``watch``-ed child and raise
    ``Interrupted``; leaving by an exception kills them too. Handlers are installed only from
    the main thread."""

    HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self):
        self.parent = os.getppid()
        self.received: list[int] = []
        self.procs: list[subprocess.Popen] = []
        self._previous: dict = {}

    def __enter__(self) -> Guard:
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._on_signal) for s in self.HANDLED}
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        for s, h in self._previous.items():
            signal.signal(s, h)
        if exc_type is not None:
            self.kill_all()
        elif self.received:
            self.check()  # raises Interrupted

    def _on_signal(self, signum, frame) -> None:
        self.received.append(signum)

    def watch(self, proc: subprocess.Popen) -> subprocess.Popen:
        self.procs.append(proc)
        return proc

    def kill_all(self) -> None:
        for proc in self.procs:
            kill_group(proc)

    def check(self) -> None:
        if self.received:
            self.kill_all()
            raise Interrupted(f"the launcher received {signal.Signals(self.received[0]).name}")
        if os.getppid() != self.parent:
            self.kill_all()
            raise Interrupted("the Snakemake process that started it is gone")

    def sleep(self, seconds: float) -> None:
        """``time.sleep`` that notices an interruption within ``POLL_S``."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            self.check()
            time.sleep(min(POLL_S, left))
        self.check()


def child_output(log_text: str) -> list[str]:
    """The child's lines of a cell log: everything after the '# command' header lines."""
    return [ln for ln in log_text.splitlines() if not ln.startswith("# ")]


def numactl_refusal(lines: list[str]) -> str | None:
    """numactl's first line when it refused the binding, else None."""
    first = next((ln for ln in lines if ln.strip()), "")
    return first.strip() if any(p.search(first) for p in NUMACTL_PATTERNS) else None


def in_build(lines: list[str], frame: str = "build") -> bool:
    """True if the traceback passes through the model workload's function ``frame``."""
    return any(m.group(1) == frame for ln in lines if (m := BUILD_FRAMES.search(ln)))


def classify(outcome: Outcome, log_text: str, timeout_s: float):
    """(cause, message) of a child that produced no result; raises ``Interrupted`` when it was
    stopped from outside."""
    lines = child_output(log_text)
    text = "\n".join(lines)
    sig = outcome.signal
    if outcome.timed_out:
        return Cause.TIMEOUT, f"no result after {timeout_s:.0f} s; killed with its process group"
    if sig is not None:
        if sig == signal.SIGKILL and outcome.oom_kills:
            return (
                Cause.OUT_OF_MEMORY,
                "killed by the kernel's OOM killer (SIGKILL, oom_kill counted)",
            )
        if sig in INTERRUPT_SIGNALS:
            raise Interrupted(f"the cell process was killed by {sig.name} from outside")
        if any(p in text for p in OOM_PATTERNS):
            return Cause.OUT_OF_MEMORY, f"killed by {sig.name} after a failed allocation"
        return Cause.SIGNAL, f"the cell process crashed: killed by {sig.name}"
    rc = outcome.returncode
    if rc == EXIT_MISMATCH:
        exc = next(
            (ln for ln in reversed(lines) if ln.startswith("numa_effects.measure.cell:")), ""
        )
        return Cause.THREAD_MISMATCH, exc or f"exit status {rc}"
    if refusal := numactl_refusal(lines):
        return Cause.BINDING_REFUSED, f"numactl refused the binding: {refusal}"
    # the traceback's final 'SomeError: message' line, if any
    exc = next((ln.strip() for ln in reversed(lines) if EXCEPTION_LINE.match(ln.strip())), None)
    if rc == EXIT_COMPILE:
        return Cause.COMPILE_ERROR, f"compilation at the first call failed: {exc or rc}"
    if any(p in text for p in OOM_PATTERNS):
        return Cause.OUT_OF_MEMORY, exc or f"exit status {rc} after a failed allocation"
    if rc in (126, 127):
        return Cause.ERROR, f"exit status {rc}: the command could not be executed"
    if in_build(lines, "convert"):
        # any exception class (torch._dynamo's ``Unsupported`` is no ...Error): its last line
        last = exc or next((ln.strip() for ln in reversed(lines) if ln.strip()), f"exit {rc}")
        return Cause.CONVERSION_ERROR, f"exception applying the optimization: {last}"
    if exc and in_build(lines):
        return Cause.BUILD_ERROR, f"exception in model build: {exc}"
    if rc == 0:
        return Cause.ERROR, "the cell process exited 0 but wrote no result"
    return Cause.ERROR, exc or f"exit status {rc}"


def tail(text: str, lines: int = 20) -> str:
    """The last lines of the child's output, numactl's usage text condensed to its first line."""
    out = child_output(text)
    if numactl_refusal(out):
        out = [ln for ln in out if ln.strip()][:1] + [
            ln for ln in out if re.match(r"^<[^>]*> is invalid", ln)
        ]
    return "\n".join(out[-lines:])


def remove_leftovers(out: Path) -> None:
    """Temp files of an earlier, killed attempt at the same cell (never another cell's)."""
    for p in out.parent.glob(f".{out.name}.*"):
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                p.unlink()
