"""The timing loop: warm-up, then timed iterations until a stopping rule fires.

No process handling here (see ``runner``) and no workload handling (see ``workloads``): ``step`` is
one complete inference, including whatever synchronisation it needs.

Two protocols (config key ``protocol``):

``adaptive`` (default)
    *Warm-up*: at least ``warmup`` untimed iterations (the cell's first call counts as the
    first) and ``min_warmup_seconds``, then more until the last ``STABLE_WINDOW`` (3) warm-up
    iterations are within ``STABLE_TOLERANCE`` (5 %) of one another (max <= 1.05 x min), or
    until warm-up has used ``WARMUP_BUDGET_FRACTION`` (20 %) of ``max_seconds_per_cell``,
    whichever comes first (``warmup_stable`` records which).
    *Stopping*: once ``n >= min_iterations`` clean iterations and ``min_timed_seconds`` of
    timed iterations, at each look (``LOOK_GROWTH``), stop when both bounds of the 95 % CI of
    the median of the clean iterations (``stats.median_ci``) lie within ``target_rel_ci`` of
    the median (``stop_reason = "target_ci"``). Otherwise stop at ``max_iterations``
    (``"max_iterations"``) or when the next iteration would end past ``max_seconds_per_cell``
    counted from the start of warm-up (``"max_seconds"``; the next iteration is estimated by the
    median so far).

``fixed``
    Exactly ``warmup`` untimed iterations (first call included) and ``fixed_iterations`` timed
    ones (``stop_reason = "fixed"``): PackRat's protocol is ``warmup: 10, fixed_iterations:
    100``. ``max_seconds_per_cell`` still applies as a safety cap (``"max_seconds"``), so set it
    high enough to reproduce PackRat exactly.

*Contaminated iterations* (both protocols): with a ``probe`` (``contention.IterationProbe``),
each timed iteration records the share of its CPUs' capacity that other tasks used while it
ran (``foreign_pct``: the larger of /proc/stat's busy time beyond the cell's own and the time
its threads waited runnable for a CPU, the latter also as ``run_delay_pct``); an iteration
above ``exclude_foreign_pct`` is ``excluded``: kept in the result and in samples.csv, left out
of the statistics and not counted by the stopping rule.

Why a minimum warm-up and timed window (``min_warmup_seconds``, ``min_timed_seconds``): on the
quiet 2-core Xeon (../shared/measurements/quiet-2core-xeon-2026-11-30, fixed 10 + 100 runs)
the first seconds of a process ran faster than the rest (ResNet-50 eager, 1 thread, batch 1:
-9 % in the first second, settled after ~3 s), so a window of a few iterations read low: the
adaptive rule replayed on those sequences came out -1.5 % below the whole run on average (9
of 12 cells lower), while on the same iterations shuffled (no drift) it was unbiased (+0.03
%). At least 2 s of warm-up and 2 s of timing brought the mean to -0.2 % (7 of 12 lower);
``benchmarks.bias`` recomputes this. The rest is process-to-process and slow drift, which the
cell's two-level CI (``stats.combine_replicates``) covers.

*Which iterations count* is decided here and nowhere else: ``Measurement.clean_latencies()``
(the timed iterations the probe did not exclude; none when all were excluded),
``Measurement.contended()`` (fewer than ``min_clean(settings)`` clean ones, or more than
``CONTENDED_EXCLUDED_SHARE`` excluded) and ``judge`` (the replicate's verdict). A measurement
with no clean iteration has no statistics (``runner``: ``status: contended``).

Public API: ``run(step, settings, probe=None)`` returns a ``Measurement``. ``step()`` is one
complete timed step (one inference, or one barrier round of k instances: ``runner``) and may
return its own duration in seconds, measured where the work ran; otherwise ``clock`` times the
call. ``run_with_retries`` measures again after a back-off while the result is contended.
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
# The target is checked at n = min_iterations, then whenever n has grown by 10 % (every iteration
# up to n = 10). Checking after every iteration ("peeking") lets noise end a run on a lucky
# streak: in simulation the final 95 % CI then covers the true median only ~92 % of the time;
# with these looks ~94 %, for ~13 % more iterations.
LOOK_GROWTH = 1.1

DEFAULTS = settings_mod.DEFAULTS  # the measurement settings' defaults: one place
# A replicate is contended when fewer than ``min_clean(settings)`` of its iterations are clean,
# or more than this share of them was excluded.
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

    def clean_mask(self) -> list[bool]:
        """Per timed iteration: does it count? (All of them without a probe.)"""
        if not self.excluded:
            return [True] * len(self.latencies_s)
        return [not e for e in self.excluded]

    def keep(self, xs: list) -> list:
        """The entries of ``xs`` (one per timed iteration, e.g. one instance's own durations)
        that belong to clean iterations."""
        return [x for x, ok in zip(xs, self.clean_mask(), strict=True) if ok]

    def clean_latencies(self) -> list[float]:
        """The timed iterations the statistics use; none when every one was excluded."""
        return self.keep(self.latencies_s)

    def contended(self) -> bool:
        """Fewer than ``min_clean`` clean iterations, or more than
        ``CONTENDED_EXCLUDED_SHARE`` of them excluded."""
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
    """What a contended attempt leaves in the kept record (``contention.retried_attempts``)."""
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
    """``run``, and while the result is contended (``Measurement.contended``) wait
    ``contended_backoff_s`` (doubling: ``backoffs``) and measure again with the same ``step``
    (the same processes), at most ``contended_retries`` times. Returns the last measurement and
    ``attempt_summary`` of each earlier one. The last one may still be contended: the caller
    flags it (and reports no statistics when it has no clean iteration), never hides it."""
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
    """The replicate's contention verdict from what its statistics use: contended when too few
    clean iterations remain after exclusion and retries (``Measurement.contended``), or when
    the clean iterations' own foreign share (duration-weighted) is above
    ``contention.FOREIGN_SHARE_LIMIT``. ``has_statistics`` is False when no iteration is clean:
    the runner then reports ``status: contended`` with no median and no CI."""
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
        excluded = f"{sum(m.excluded)} of {len(m.latencies_s)} timed iterations excluded"
        if not clean:
            excluded = f"all {len(m.latencies_s)} timed iterations excluded"
        reasons.append(
            f"{excluded} (> {m.exclude_foreign_pct:g} % foreign CPU) after {len(attempts)} "
            f"retries{': no statistics' if not clean else ''}"
        )
    if busy:
        reasons.append(f"other tasks used {clean_pct:.1f} % of the CPUs in the clean iterations")
    out["contended_reason"] = "; ".join(reasons) or None
    return out


def clean_steps(report: dict, measurement: dict, clean: bool) -> list:
    """The entries of a workload's per-step report (``report["times_s"]``, one per step the
    instance ran, warm-up first) of the clean timed steps: the last ``n`` are the timed ones
    (``measurement["latencies_s"]``), without those ``excluded``; none unless ``clean`` (the
    record has statistics: a failed or contended measurement has no clean step)."""
    n = len(measurement.get("latencies_s") or [])
    excluded = list(measurement.get("excluded") or [False] * n)
    steps = (report.get("times_s") or [])[-n:] if n else []
    if not clean or len(steps) != n:
        return []
    return [s for s, e in zip(steps, excluded, strict=True) if not e]


def backoffs(settings: dict) -> list[float]:
    """The waits before each new measurement of a contended one: ``contended_backoff_s``,
    doubling, ``contended_retries`` of them."""
    s = settings_with_defaults(settings)
    return [float(s["contended_backoff_s"]) * 2**i for i in range(int(s["contended_retries"]))]


def min_clean(settings: dict) -> int:
    """Clean iterations a measurement needs not to be contended: ``min_iterations`` under the
    adaptive protocol (its stopping rule needs them), 1 under ``fixed`` (``fixed_iterations``
    may be fewer than ``min_iterations``; the excluded-share rule still applies). One rule for
    cells, the peak and packing groups."""
    s = settings_with_defaults(settings)
    return int(s["min_iterations"]) if s["protocol"] == "adaptive" else 1


settings_with_defaults = settings_mod.with_defaults  # one place: plan.settings


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
    probe=None,
) -> Measurement:
    """Time ``step`` under ``settings`` (see the module docstring; missing keys take
    ``DEFAULTS``). ``step()`` may return its own duration (seconds); otherwise ``clock`` times
    it. ``first_call_s``: the duration of a call the caller already made (the first call); it
    counts as the first warm-up iteration. ``probe``: an object with
    ``begin()`` and ``end() -> foreign share in %`` called just outside each timed iteration
    (``contention.IterationProbe``); None = no exclusion."""
    s = settings_with_defaults(settings)
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
    """``warmup`` iterations; under the adaptive protocol more, until the last ones are stable
    (``stable``) and ``min_warmup_seconds`` have passed, within its share of the budget."""
    warmup = int(s["warmup"])
    if s["protocol"] == "fixed":
        while len(m.warmup_s) < warmup:
            m.warmup_s.append(timed())
        return
    warm_budget = WARMUP_BUDGET_FRACTION * float(s["max_seconds_per_cell"])
    min_warm = min(float(s["min_warmup_seconds"]), warm_budget)
    while len(m.warmup_s) < warmup:
        m.warmup_s.append(timed())
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
    """Timed iterations until the median's CI is within the target at a look (``LOOK_GROWTH``)
    after ``min_timed_seconds``, or a cap (iterations, seconds) ends them."""
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
        if n < min_n:
            # min_iterations always run; only excluded iterations can end it early (a
            # replicate contended throughout must not run until the cell's timeout)
            if any(m.excluded) and len(m.latencies_s) >= max_n:
                m.stop_reason = "max_iterations"
                return
            if any(m.excluded) and clock() - start > budget:
                m.stop_reason = "max_seconds"
                return
            continue
        within, median = stats.ci_within(clean, target)
        look = n >= next_look  # see LOOK_GROWTH
        if look:
            next_look = max(n + 1, math.ceil(LOOK_GROWTH * n))
        if within and look and sum(m.latencies_s) >= min_timed:
            m.stop_reason = "target_ci"
            return
        cap = None
        if len(m.latencies_s) >= max_n:
            cap = "max_iterations"
        elif clock() - start + median > budget:  # the next iteration would overrun
            cap = "max_seconds"
        if cap:
            # a cap that fires between looks while the target holds: the target was met
            m.stop_reason = "target_ci" if within else cap
            return
