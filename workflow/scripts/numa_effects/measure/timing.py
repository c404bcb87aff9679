"""The timing loop: warm-up, then timed iterations until a stopping rule fires
(docs/performance.md, "One replicate"). ``step`` is one complete timed step (one barrier round:
``runner``) and may return its own duration in seconds; otherwise ``clock`` times the call.

Which iterations count is decided here and nowhere else: with a ``probe`` an iteration whose
foreign share is above ``exclude_foreign_pct`` is ``excluded`` (kept, but left out of the
statistics and the stopping rule); ``Measurement.contended`` and ``judge`` give the verdict.

Why a minimum warm-up and timed window: the first seconds of a process ran faster than the rest
(ResNet-50 eager, 1 thread: -9 % in the first second, settled after ~3 s), so a short window
read low (-1.5 % on average over 12 cells); 2 s of each brought it to -0.2 %
(``benchmarks.bias`` recomputes this).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from numa_effects import stats
from numa_effects.measure import contention
from numa_effects.plan import settings as settings_mod

STABLE_WINDOW = 3
STABLE_TOLERANCE = 0.05
WARMUP_BUDGET_FRACTION = 0.2
# The target is checked whenever n has grown by 10 %: checking after every iteration lets noise
# end a run on a lucky streak (in simulation the 95 % CI then covers the true median ~92 % of
# the time; with these looks ~94 %, for ~13 % more iterations).
LOOK_GROWTH = 1.1

CONTENDED_EXCLUDED_SHARE = 0.5


@dataclass
class Measurement:
    warmup_s: list[float] = field(default_factory=list)
    latencies_s: list[float] = field(default_factory=list)
    stop_reason: str = ""
    elapsed_s: float = 0.0
    protocol: str = "adaptive"
    warmup_stable: bool | None = None
    target_rel_ci: float | None = None
    foreign_pct: list[float] = field(default_factory=list)
    run_delay_pct: list[float | None] = field(default_factory=list)
    excluded: list[bool] = field(default_factory=list)
    exclude_foreign_pct: float | None = None
    min_clean: int = 1

    def keep(self, xs: list) -> list:
        """The entries of ``xs`` (one per timed iteration) of the clean iterations (all of them
        without a probe)."""
        excluded = self.excluded or [False] * len(self.latencies_s)
        return [x for x, e in zip(xs, excluded, strict=True) if not e]

    def clean_latencies(self) -> list[float]:
        """The timed iterations the statistics use; none when every one was excluded."""
        return self.keep(self.latencies_s)

    def contended(self) -> bool:
        """Fewer than ``min_clean`` clean iterations, or too large a share excluded."""
        n = len(self.latencies_s)
        bad = sum(self.excluded)
        return n - bad < self.min_clean or (n > 0 and bad / n > CONTENDED_EXCLUDED_SHARE)

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
            "foreign_pct": self.foreign_pct or None,
            "run_delay_pct": self.run_delay_pct or None,
            "excluded": self.excluded or None,
            "excluded_iterations": int(sum(self.excluded)),
            "exclude_foreign_pct": self.exclude_foreign_pct,
        }


def attempt_summary(m: Measurement, backoff_s: float) -> dict:
    """What a contended attempt leaves in the kept record."""
    clean = m.clean_latencies()
    return {
        "iterations": len(m.latencies_s),
        "excluded": int(sum(m.excluded)),
        "foreign_pct_median": float(np.median(m.foreign_pct)) if m.foreign_pct else None,
        "clean_median_s": float(np.median(clean)) if clean else None,
        "backoff_s": backoff_s,
    }


def run_with_retries(
    step: Callable[[], object],
    settings: dict,
    probe=None,
    first_call_s: float | None = None,
    sleep=time.sleep,
    clock=time.perf_counter,
) -> tuple[Measurement, list[dict]]:
    """``run``, and while contended wait (``backoffs``) and measure again with the same
    ``step``: (the last measurement, ``attempt_summary`` of each earlier one). The last one may
    still be contended: the caller flags it, never hides it."""
    waits = backoffs(settings)
    attempts: list[dict] = []
    m = run(step, settings, clock=clock, first_call_s=first_call_s, probe=probe)
    while probe is not None and m.contended() and len(attempts) < len(waits):
        wait = waits[len(attempts)]
        attempts.append(attempt_summary(m, wait))
        sleep(wait)
        m = run(step, settings, clock=clock, probe=probe)
    return m, attempts


def judge(m: Measurement, attempts: list[dict]) -> dict:
    """The replicate's contention verdict: contended when too few clean iterations remain
    (``Measurement.contended``) or their duration-weighted foreign share is above
    ``contention.FOREIGN_SHARE_LIMIT``; ``has_statistics``: any iteration is clean."""
    clean = m.clean_latencies()
    out: dict = {"retries": len(attempts), "retried_attempts": attempts}
    out["has_statistics"] = bool(clean)
    if not m.foreign_pct:
        return out
    f = m.keep(m.foreign_pct)
    clean_pct = sum(a * b for a, b in zip(clean, f, strict=True)) / sum(clean) if clean else None
    too_few = m.contended()
    busy = clean_pct is not None and clean_pct > 100 * contention.FOREIGN_SHARE_LIMIT
    out["excluded_iterations"] = int(sum(m.excluded))
    out["clean_foreign_pct"] = None if clean_pct is None else round(clean_pct, 2)
    out["contended"] = bool(too_few or busy)
    reasons = []
    if too_few:
        some = f"{sum(m.excluded)} of" if clean else "all"
        reasons.append(
            f"{some} {len(m.latencies_s)} timed iterations excluded "
            f"(> {m.exclude_foreign_pct:g} % foreign CPU) after {len(attempts)} "
            f"retries{': no statistics' if not clean else ''}"
        )
    if busy:
        reasons.append(f"other tasks used {clean_pct:.1f} % of the CPUs in the clean iterations")
    out["contended_reason"] = "; ".join(reasons) or None
    return out


def clean_steps(report: dict, measurement: dict, clean: bool) -> list:
    """The clean timed steps' entries of a workload's ``report["times_s"]`` (none unless clean)."""
    n = len(measurement.get("latencies_s") or [])
    excluded = list(measurement.get("excluded") or [False] * n)
    steps = (report.get("times_s") or [])[-n:] if n else []
    if not clean or len(steps) != n:
        return []
    return [s for s, e in zip(steps, excluded, strict=True) if not e]


def backoffs(settings: dict) -> list[float]:
    """The waits before each retry: ``contended_backoff_s``, doubling, ``contended_retries``."""
    s = settings_mod.with_defaults(settings)
    return [float(s["contended_backoff_s"]) * 2**i for i in range(int(s["contended_retries"]))]


def min_clean(settings: dict) -> int:
    """Clean iterations needed not to be contended: ``min_iterations`` under ``adaptive`` (its
    stopping rule needs them), 1 under ``fixed`` (which may run fewer)."""
    s = settings_mod.with_defaults(settings)
    return int(s["min_iterations"]) if s["protocol"] == "adaptive" else 1


def stable(window: list[float]) -> bool:
    """The last ``STABLE_WINDOW`` iterations are within ``STABLE_TOLERANCE`` of each other."""
    if len(window) < STABLE_WINDOW:
        return False
    last = window[-STABLE_WINDOW:]
    return max(last) <= (1.0 + STABLE_TOLERANCE) * min(last)


def run(
    step: Callable[[], object],
    settings: dict,
    clock=time.perf_counter,
    first_call_s: float | None = None,
    probe=None,
) -> Measurement:
    """Time ``step`` under ``settings``. ``first_call_s``: a call already made, the first
    warm-up iteration. ``probe``: ``begin()`` and ``end() -> foreign share in %`` just outside
    each timed iteration; None = no exclusion."""
    s = settings_mod.with_defaults(settings)
    protocol = s["protocol"]
    if protocol not in ("adaptive", "fixed"):
        raise ValueError(f"unknown protocol {protocol!r}")
    m = Measurement(protocol=protocol, min_clean=min_clean(s))
    if first_call_s is not None:
        m.warmup_s.append(float(first_call_s))
    limit = float(s["exclude_foreign_pct"])
    clean: list[float] = []

    def timed() -> float:
        t0 = clock()
        own = step()
        elapsed = clock() - t0
        return elapsed if own is None else float(own)

    def timed_iteration() -> None:
        """One timed iteration, with its foreign share when there is a probe."""
        if probe is not None:
            probe.begin()
        x = timed()
        m.latencies_s.append(x)
        if probe is None:
            clean.append(x)
            return
        share = float(probe.end())  # the larger of its signals
        m.foreign_pct.append(round(share, 2))
        delay = getattr(probe, "last_run_delay_pct", None)
        m.run_delay_pct.append(None if delay is None else round(float(delay), 2))
        m.excluded.append(share > limit)
        if share <= limit:
            clean.append(x)

    stats.median_ci_ranks(int(s["min_iterations"]))  # computed now, not between timings
    if probe is not None:
        m.exclude_foreign_pct = limit
    start = clock()
    _warm_up(m, s, timed, clock, start)
    if protocol == "fixed":
        _fixed(m, s, timed_iteration, clock, start)
    else:
        _adaptive(m, s, timed_iteration, clean, clock, start)
    m.elapsed_s = clock() - start
    return m


def _warm_up(m: Measurement, s: dict, timed, clock, start: float) -> None:
    """``warmup`` iterations; under ``adaptive`` more, until stable and ``min_warmup_seconds``."""
    while len(m.warmup_s) < int(s["warmup"]):
        m.warmup_s.append(timed())
    if s["protocol"] == "fixed":
        return
    warm_budget = WARMUP_BUDGET_FRACTION * float(s["max_seconds_per_cell"])
    min_warm = min(float(s["min_warmup_seconds"]), warm_budget)
    while (not stable(m.warmup_s) or clock() - start < min_warm) and (
        clock() - start < warm_budget
    ):
        m.warmup_s.append(timed())
    m.warmup_stable = stable(m.warmup_s)


def _fixed(m: Measurement, s: dict, timed_iteration, clock, start: float) -> None:
    """``fixed_iterations`` timed iterations, unless the budget runs out first."""
    n_fixed = int(s["fixed_iterations"])
    budget = float(s["max_seconds_per_cell"])
    while len(m.latencies_s) < n_fixed:
        timed_iteration()
        if len(m.latencies_s) < n_fixed and clock() - start >= budget:
            m.stop_reason = "max_seconds"
            return
    m.stop_reason = "fixed"


def _adaptive(m: Measurement, s: dict, timed_iteration, clean: list, clock, start: float) -> None:
    """Timed iterations until the CI is within the target at a look, or a cap ends them."""
    min_n = int(s["min_iterations"])
    max_n = int(s["max_iterations"])
    budget = float(s["max_seconds_per_cell"])
    target = float(s["target_rel_ci"])
    min_timed = float(s["min_timed_seconds"])
    m.target_rel_ci = target
    next_look = min_n
    while True:
        timed_iteration()
        n = len(clean)  # the stopping rule counts clean iterations only
        within, median = False, 0.0
        if n >= min_n:
            within, median = stats.ci_within(clean, target)
            look = n >= next_look  # see LOOK_GROWTH
            if look:
                next_look = max(n + 1, math.ceil(LOOK_GROWTH * n))
            if within and look and sum(m.latencies_s) >= min_timed:
                m.stop_reason = "target_ci"
                return
        elif not any(m.excluded):
            # min_iterations always run; only excluded iterations can end it early (a
            # replicate contended throughout must not run until the cell's timeout)
            continue
        cap = None
        if len(m.latencies_s) >= max_n:
            cap = "max_iterations"
        elif clock() - start + median > budget:  # the next iteration would overrun
            cap = "max_seconds"
        if cap:
            # a cap that fires between looks while the target holds: the target was met
            m.stop_reason = "target_ci" if within else cap
            return
