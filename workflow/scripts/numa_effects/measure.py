"""The timing loop: warm-up, then timed iterations until a stopping rule fires.

No process handling here (see ``launcher``) and no model handling (see ``cell``): ``step`` is
one complete inference, including whatever synchronisation it needs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Measurement:
    warmup_s: list[float] = field(default_factory=list)
    latencies_s: list[float] = field(default_factory=list)
    stop_reason: str = ""
    elapsed_s: float = 0.0

    def to_dict(self) -> dict:
        return {
            "warmup_iterations": len(self.warmup_s),
            "warmup_latencies_s": self.warmup_s,
            "latencies_s": self.latencies_s,
            "stop_reason": self.stop_reason,
            "elapsed_s": self.elapsed_s,
        }


def run(step: Callable[[], object], settings: dict, clock=time.perf_counter) -> Measurement:
    """Time ``step``. Settings: ``warmup``, ``min_iterations``, ``max_iterations``,
    ``max_seconds_per_cell`` (the budget for warm-up plus timed iterations)."""
    warmup = int(settings.get("warmup", 2))
    min_n = int(settings.get("min_iterations", 5))
    max_n = int(settings.get("max_iterations", 100))
    budget = float(settings.get("max_seconds_per_cell", 60))
    m = Measurement()
    start = clock()
    for _ in range(warmup):
        t0 = clock()
        step()
        m.warmup_s.append(clock() - t0)
    while True:
        t0 = clock()
        step()
        t1 = clock()
        m.latencies_s.append(t1 - t0)
        n = len(m.latencies_s)
        if n >= max_n:
            m.stop_reason = "max_iterations"
            break
        if n >= min_n and t1 - start >= budget:
            m.stop_reason = "max_seconds"
            break
    m.elapsed_s = clock() - start
    return m
