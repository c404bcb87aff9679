"""Noise and concurrency guards: was anything else running where a cell was measured?
(docs/performance.md, "One replicate": contamination.)

``preflight`` records the machine's load just before the instances start. ``Watch`` (the whole
timed window) and ``IterationProbe`` (each timed round) compare the busy time of the instances'
CPUs and SMT siblings (/proc/stat) with the instances' own CPU time: the rest went to someone
else. The probe also reads the time the instances' threads waited runnable (schedstat), which
sees disturbances shorter than /proc/stat's tick. Flagged cells are kept (a shared server is
never perfectly quiet); the tables' columns let the analysis drop or re-run them.
"""

from __future__ import annotations

import contextlib
import os
import resource
import time
from pathlib import Path

from numa_effects.measure import verify
from numa_effects.plan import cpulist

FOREIGN_SHARE_LIMIT = 0.05  # of the cell CPUs' capacity (CPU count x window)
TICK_SLACK = 2  # /proc/stat counts whole ticks: allow this many per CPU before flagging
BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user nice system irq softirq steal (guest is inside user)


def clock_ticks() -> int:
    try:
        return os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError):
        return 100


def cpu_busy(path: str | os.PathLike = "/proc/stat") -> dict[int, float]:
    """Busy seconds per logical CPU since boot (idle and iowait excluded)."""
    hz = clock_ticks()
    out: dict[int, float] = {}
    for line in Path(path).read_text().splitlines():
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        name, *fields = line.split()
        vals = [int(v) for v in fields]
        out[int(name[3:])] = sum(vals[i] for i in BUSY_FIELDS if i < len(vals)) / hz
    return out


def stat_counter(name: str, path: str | os.PathLike = "/proc/stat") -> int | None:
    for line in Path(path).read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == name:
            return int(parts[1])
    return None


def busy_processes(limit: int = 5, proc: str = "/proc") -> list[str]:
    """Other processes in state R (running or runnable) right now: 'name(pid)'."""
    me = os.getpid()
    found = []
    for d in Path(proc).iterdir():
        if not d.name.isdigit() or int(d.name) == me:
            continue
        try:
            stat = verify.parse_task_stat((d / "stat").read_text())
        except (OSError, ValueError):
            continue
        if stat["state"] == "R":
            found.append(f"{stat['comm']}({d.name})")
    return sorted(found)[:limit]


def preflight() -> dict:
    """The machine's state just before a cell starts (never raises)."""
    out: dict = {}
    try:
        out["load_1m"] = round(os.getloadavg()[0], 2)
    except OSError:
        out["load_1m"] = None
    try:
        running = stat_counter("procs_running")
        out["runnable_others"] = None if running is None else max(0, running - 1)
        out["runnable_processes"] = busy_processes()
    except OSError:
        out["runnable_others"] = None
    return out


def siblings_of(cpus, sysfs: str | os.PathLike = "/sys/devices/system/cpu") -> tuple[int, ...]:
    """SMT siblings of ``cpus`` that are not themselves in ``cpus``."""
    mine = set(cpus)
    extra: set[int] = set()
    for c in mine:
        try:
            text = Path(sysfs, f"cpu{c}", "topology", "thread_siblings_list").read_text()
        except OSError:
            continue
        extra.update(cpulist.parse(text.strip()))
    return tuple(sorted(extra - mine))


def assess(
    cpus_busy_s: float,
    own_cpu_s: float,
    window_s: float,
    ncpus: int,
    sibling_busy_s: float = 0.0,
    nsiblings: int = 0,
    hz: int = 100,
) -> dict:
    """The verdict from the numbers (pure: unit-tested on synthetic values)."""
    foreign = max(0.0, cpus_busy_s - own_cpu_s)
    capacity = max(ncpus * window_s, 1e-9)
    tolerance = max(FOREIGN_SHARE_LIMIT * capacity, TICK_SLACK * ncpus / hz)
    reasons = []
    if foreign > tolerance:
        reasons.append(
            f"other tasks used {foreign:.2f} CPU-s of the cell's {ncpus} CPU(s) over "
            f"{window_s:.2f} s ({100 * foreign / capacity:.0f} %)"
        )
    sib_share = None
    if nsiblings:
        sib_capacity = max(nsiblings * window_s, 1e-9)
        sib_share = sibling_busy_s / sib_capacity
        sib_tol = max(FOREIGN_SHARE_LIMIT * sib_capacity, TICK_SLACK * nsiblings / hz)
        if sibling_busy_s > sib_tol:
            reasons.append(
                f"SMT siblings of the cell's cores were busy {sibling_busy_s:.2f} CPU-s "
                f"({100 * sib_share:.0f} %)"
            )
    return {
        "contended": bool(reasons),
        "contended_reason": "; ".join(reasons) or None,
        "foreign_cpu_s": round(foreign, 3),
        "foreign_cpu_pct": round(100 * foreign / capacity, 2),
        "own_cpu_s": round(own_cpu_s, 3),
        "cpus_busy_s": round(cpus_busy_s, 3),
        "sibling_busy_pct": None if sib_share is None else round(100 * sib_share, 2),
        "window_s": round(window_s, 3),
        "threshold_pct": 100 * FOREIGN_SHARE_LIMIT,
    }


def process_cpu_s() -> float:
    """This process's CPU time so far, all threads."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


class Watch:
    """Snapshot the CPUs now; ``stop()`` returns the verdict for the window since. ``own``: the
    measured processes' CPU seconds so far."""

    def __init__(self, cpus, proc_stat: str | os.PathLike = "/proc/stat", own=None):
        self.cpus = tuple(int(c) for c in cpus)
        self.siblings = siblings_of(self.cpus)
        self.proc_stat = proc_stat
        self._own_fn = own or process_cpu_s
        self._busy = cpu_busy(proc_stat)
        self._own = self._own_fn()
        self._t = time.monotonic()

    def stop(self) -> dict:
        try:
            busy = cpu_busy(self.proc_stat)
        except OSError as exc:
            return {"contended": None, "contended_reason": f"cannot read /proc/stat: {exc}"}
        window = time.monotonic() - self._t
        own = self._own_fn() - self._own

        def delta(cpus):
            return sum(busy.get(c, 0.0) - self._busy.get(c, 0.0) for c in cpus)

        # The machine's other CPUs: their load still costs the cell shared L3, memory
        # bandwidth and the uncore clock: recorded, not excluded.
        others = sorted(set(busy) - set(self.cpus) - set(self.siblings))
        other_pct = (
            round(100.0 * delta(others) / max(len(others) * window, 1e-9), 2) if others else None
        )
        return {
            "cpus": cpulist.format(self.cpus),
            "other_cpus_busy_pct": other_pct,
            **assess(
                delta(self.cpus),
                own,
                window,
                len(self.cpus),
                delta(self.siblings),
                len(self.siblings),
                clock_ticks(),
            ),
        }


ITERATION_TICK_SLACK = 1  # per CPU: /proc/stat's resolution within one iteration


def foreign_share_pct(
    cpus_busy_s: float, own_cpu_s: float, window_s: float, ncpus: int, hz: int = 100
) -> float:
    """The share (%) of ``ncpus`` CPUs' capacity over ``window_s`` that went to other tasks,
    less ``ITERATION_TICK_SLACK`` ticks per CPU (busy time is counted in whole ticks)."""
    foreign = cpus_busy_s - own_cpu_s - ITERATION_TICK_SLACK * ncpus / hz
    return max(0.0, 100.0 * foreign / max(ncpus * window_s, 1e-9))


def descendants(pids, proc: str | os.PathLike = "/proc") -> tuple[int, ...]:
    """``pids`` and every process below them (a wrapper that forks keeps its child in view)."""
    seen: list[int] = []
    todo = [int(p) for p in pids]
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.append(pid)
        for f in Path(proc, str(pid), "task").glob("*/children"):
            with contextlib.suppress(OSError, ValueError):
                todo.extend(int(c) for c in f.read_text().split())
    return tuple(seen)


def run_delay_s(pids, proc: str | os.PathLike = "/proc") -> float | None:
    """Seconds the threads of ``pids`` have spent runnable but waiting for a CPU (schedstat's
    second field), summed; None without schedstats."""
    total, found = 0, False
    for pid in pids:
        for f in Path(proc, str(pid), "task").glob("*/schedstat"):
            with contextlib.suppress(OSError, IndexError, ValueError):  # a thread that just ended
                total += int(f.read_text().split()[1])
                found = True
    return total / 1e9 if found else None


def run_delay_pct(delay_s: float, window_s: float, ncpus: int) -> float:
    """The run-queue delay of a window as a share (%) of the cell's CPU capacity over it."""
    return max(0.0, 100.0 * delay_s / max(ncpus * window_s, 1e-9))


class IterationProbe:
    """Foreign CPU share of the cell's CPUs and SMT siblings over each timed iteration:
    ``end()`` returns the larger of the /proc/stat share and the run-queue delay share of
    ``pids`` (``last_run_delay_pct``). ``read``, ``own`` and ``delay``: injectable (tests)."""

    def __init__(self, cpus, read=None, own=None, clock=None, hz=None, pids=(), delay=None):
        self.cpus = tuple(int(c) for c in cpus)
        self.all = self.cpus + siblings_of(self.cpus)
        self._read = read or cpu_busy
        self._own = own or process_cpu_s
        self._clock = clock or time.monotonic
        self.hz = hz or clock_ticks()
        tasks = descendants(pids) if pids else ()
        self._delay = delay or ((lambda: run_delay_s(tasks)) if tasks else (lambda: None))
        self._start = None
        self.last_run_delay_pct: float | None = None

    def _busy(self) -> float:
        busy = self._read()
        return sum(busy.get(c, 0.0) for c in self.all)

    def begin(self) -> None:
        self._start = (self._busy(), self._own(), self._delay(), self._clock())

    def end(self) -> float:
        busy0, own0, delay0, t0 = self._start
        busy, own, delay, t = self._busy(), self._own(), self._delay(), self._clock()
        share = foreign_share_pct(busy - busy0, own - own0, t - t0, len(self.all), self.hz)
        self.last_run_delay_pct = None
        if delay is not None and delay0 is not None:
            self.last_run_delay_pct = run_delay_pct(delay - delay0, t - t0, len(self.cpus))
            share = max(share, self.last_run_delay_pct)
        return share
