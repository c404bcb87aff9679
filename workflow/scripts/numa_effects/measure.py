"""The timing loop: warm-up, then timed iterations until a stopping rule fires.

No process handling here (see ``launcher``) and no model handling (see ``cell``): ``step`` is
one complete inference, including whatever synchronisation it needs.

Two protocols (config key ``protocol``):

``adaptive`` (default)
    *Warm-up*: at least ``warmup`` untimed iterations (the cell's first call counts as the
    first), then more until the last ``STABLE_WINDOW`` (3) warm-up iterations are within
    ``STABLE_TOLERANCE`` (5 %) of one another (max <= 1.05 x min), or until warm-up has used
    ``WARMUP_BUDGET_FRACTION`` (20 %) of ``max_seconds_per_cell``, whichever comes first
    (``warmup_stable`` records which).
    *Stopping*: once ``n >= min_iterations``, at each look (``LOOK_GROWTH``), stop when both
    bounds of the 95 % CI of the median (``stats.median_ci``) lie within ``target_rel_ci`` of the
    median (``stop_reason = "target_ci"``). Otherwise stop at ``max_iterations``
    (``"max_iterations"``) or when the next iteration would end past ``max_seconds_per_cell``
    counted from the start of warm-up (``"max_seconds"``; the next iteration is estimated by the
    median so far).

``fixed``
    Exactly ``warmup`` untimed iterations (first call included) and ``fixed_iterations`` timed
    ones (``stop_reason = "fixed"``): PackRat's protocol is ``warmup: 10, fixed_iterations:
    100``. ``max_seconds_per_cell`` still applies as a safety cap (``"max_seconds"``), so set it
    high enough to reproduce PackRat exactly.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from . import stats

STABLE_WINDOW = 3
STABLE_TOLERANCE = 0.05
WARMUP_BUDGET_FRACTION = 0.2
# The target is checked at n = min_iterations, then whenever n has grown by 10 % (every iteration
# up to n = 10). Checking after every iteration ("peeking") lets noise end a run on a lucky
# streak: in simulation the final 95 % CI then covers the true median only ~92 % of the time;
# with these looks ~94 %, for ~13 % more iterations.
LOOK_GROWTH = 1.1

DEFAULTS = {
    "protocol": "adaptive",
    "warmup": 2,
    "min_iterations": 6,
    "max_iterations": 1000,
    "max_seconds_per_cell": 30.0,
    "target_rel_ci": 0.02,
    "fixed_iterations": 100,
}


@dataclass
class Measurement:
    warmup_s: list[float] = field(default_factory=list)
    latencies_s: list[float] = field(default_factory=list)
    stop_reason: str = ""
    elapsed_s: float = 0.0
    protocol: str = "adaptive"
    warmup_stable: bool | None = None
    target_rel_ci: float | None = None

    def to_dict(self) -> dict:
        return {
            "protocol": self.protocol,
            "warmup_iterations": len(self.warmup_s),
            "warmup_latencies_s": self.warmup_s,
            "warmup_stable": self.warmup_stable,
            "warmup_total_s": float(sum(self.warmup_s)),
            "latencies_s": self.latencies_s,
            "timed_s": float(sum(self.latencies_s)),
            "target_rel_ci": self.target_rel_ci,
            "stop_reason": self.stop_reason,
            "elapsed_s": self.elapsed_s,
        }


def settings_with_defaults(settings: dict) -> dict:
    """``settings`` with every missing (or null) measurement key set to its default."""
    return {k: v if settings.get(k) is None else settings[k] for k, v in DEFAULTS.items()}


def stable(window: list[float], tolerance: float = STABLE_TOLERANCE) -> bool:
    """True when the last ``STABLE_WINDOW`` iterations are within ``tolerance`` of each other."""
    if len(window) < STABLE_WINDOW:
        return False
    last = window[-STABLE_WINDOW:]
    return max(last) <= (1.0 + tolerance) * min(last)


def run(
    step: Callable[[], object],
    settings: dict,
    clock=time.perf_counter,
    first_call_s: float | None = None,
) -> Measurement:
    """Time ``step`` under ``settings`` (see the module docstring; missing keys take
    ``DEFAULTS``). ``first_call_s``: the duration of a call the caller already made (the cell's
    first call); it counts as the first warm-up iteration."""
    s = settings_with_defaults(settings)
    protocol = s["protocol"]
    if protocol not in ("adaptive", "fixed"):
        raise ValueError(f"unknown protocol {protocol!r}")
    warmup = int(s["warmup"])
    budget = float(s["max_seconds_per_cell"])
    m = Measurement(protocol=protocol)
    if first_call_s is not None:
        m.warmup_s.append(float(first_call_s))

    def timed() -> float:
        t0 = clock()
        step()
        return clock() - t0

    stats.median_ci_ranks(int(s["min_iterations"]))  # import scipy now, not between timings
    start = clock()
    # -- warm-up ------------------------------------------------------------------------------
    if protocol == "fixed":
        while len(m.warmup_s) < warmup:
            m.warmup_s.append(timed())
    else:
        warm_budget = WARMUP_BUDGET_FRACTION * budget
        while len(m.warmup_s) < warmup:
            m.warmup_s.append(timed())
        while not stable(m.warmup_s) and clock() - start < warm_budget:
            m.warmup_s.append(timed())
        m.warmup_stable = stable(m.warmup_s)

    # -- timed iterations ---------------------------------------------------------------------
    if protocol == "fixed":
        n_fixed = int(s["fixed_iterations"])
        while len(m.latencies_s) < n_fixed:
            m.latencies_s.append(timed())
            if len(m.latencies_s) < n_fixed and clock() - start >= budget:
                m.stop_reason = "max_seconds"
                break
        else:
            m.stop_reason = "fixed"
    else:
        min_n = int(s["min_iterations"])
        max_n = int(s["max_iterations"])
        target = float(s["target_rel_ci"])
        m.target_rel_ci = target
        next_look = min_n
        while True:
            m.latencies_s.append(timed())
            n = len(m.latencies_s)
            if n < min_n:
                continue
            within, median = stats.ci_within(m.latencies_s, target)
            look = n >= next_look  # see LOOK_GROWTH
            if look:
                next_look = max(n + 1, math.ceil(LOOK_GROWTH * n))
            if within and look:
                m.stop_reason = "target_ci"
                break
            cap = None
            if n >= max_n:
                cap = "max_iterations"
            elif clock() - start + median > budget:  # the next iteration would overrun
                cap = "max_seconds"
            if cap:
                # a cap that fires between looks while the target holds: the target was met
                m.stop_reason = "target_ci" if within else cap
                break
    m.elapsed_s = clock() - start
    return m
