"""A bounded background load for the ``noise`` benchmark: one busy loop per CPU, pinned, at a
duty cycle (busy ``duty`` x ``period``, then idle for the rest), that stops by itself after
``max_seconds`` in any case, and at once when its parent dies (``PR_SET_PDEATHSIG``: a
benchmark killed with SIGKILL, whose ``__exit__`` never runs, leaves nothing running)."""

from __future__ import annotations

import os
import subprocess
import sys

from numa_effects.measure import supervise

CHILD = """
import os, sys, time
cpu = int(sys.argv[1])
duty, period, until = (float(v) for v in sys.argv[2:5])
os.sched_setaffinity(0, {cpu})
busy = duty * period
while time.time() < until:
    start = time.perf_counter()
    while time.perf_counter() - start < busy:
        pass
    time.sleep(max(0.0, period - (time.perf_counter() - start)))
"""


def plan(duty: float, period: float) -> tuple[float, float]:
    """(busy seconds, idle seconds) of one period."""
    if not 0.0 <= duty <= 1.0 or period <= 0:
        raise ValueError(f"duty must be in [0, 1] and period > 0, got {duty}, {period}")
    return duty * period, (1.0 - duty) * period


class DutyCycleLoad:
    def __init__(self, cpus, duty: float = 0.25, period: float = 0.1, max_seconds: float = 3600):
        plan(duty, period)
        self.cpus = sorted(int(c) for c in cpus)
        self.duty, self.period, self.max_seconds = duty, period, max_seconds
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> DutyCycleLoad:
        import time

        until = time.time() + self.max_seconds
        for cpu in self.cpus:
            args = [str(cpu), str(self.duty), str(self.period), str(until)]
            self.procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", CHILD, *args],
                    preexec_fn=supervise.child_setup(os.getpid()),  # own session, dies with us
                )
            )
        return self

    def __exit__(self, *exc) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]


def cell_cpus(cells) -> list[int]:
    """Every CPU the grid's cells are planned on (``planned_cpus`` of cells.csv)."""
    from numa_effects.plan import cpulist

    out: set[int] = set()
    for text in cells["planned_cpus"].dropna().astype(str):
        out.update(cpulist.parse(text))
    return sorted(out) or list(range(os.cpu_count() or 1))
