"""The registry of workloads: what a pinned instance process (``measure.cell``) runs. Each is
one module with ``TORCH`` (its instance imports torch), ``prepare(instance) -> dict`` (where the
job runs: resolved facts, or raises ``Skip`` / ``WorkloadError``), ``build(instance, settings)
-> Built`` (in the instance), ``summary(instance, report, measurement, clean)`` (the record's
entry, ``Workload.key``) and ``check(summary) -> (cause, message) | None`` (a result that must
not count). A new workload is its module and one entry in ``WORKLOADS``."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

from numa_effects.plan import spec as spec_mod


class Skip(Exception):
    """The workload cannot run where the job runs (the reason)."""


class WorkloadError(RuntimeError):
    """The workload could not be prepared where the job runs."""


class CompileError(RuntimeError):
    """A compiled model's first call (where inductor compiles) raised."""


def first_line(text) -> str:
    """The first line of ``str(text)``; empty for an empty message (``RuntimeError()``)."""
    return next(iter(str(text).splitlines()), "")


def error_text(exc: BaseException) -> str:
    """What a record says about an exception: ``Type: first line``, or ``Type`` alone."""
    line = first_line(exc)
    return f"{type(exc).__name__}: {line}" if line else type(exc).__name__


def warning_entries(caught) -> list[dict]:
    """The distinct ``warnings.WarningMessage``s as a record keeps them: category, first line."""
    seen = dict.fromkeys((w.category.__name__, first_line(w.message)) for w in caught)
    return [{"category": c, "message": m} for c, m in seen]


@dataclass
class Built:
    """A workload built in its instance: ``report`` is called after the timed steps;
    ``compiles``: an exception in the first step is a ``compile-error``."""

    step: Callable[[], object]
    timings: dict
    warnings: list = field(default_factory=list)
    report: Callable[[], dict] | None = None
    compiles: bool = False


@dataclass(frozen=True)
class Workload:
    name: str
    module: str  # its runtime code, imported only where it runs
    key: str  # the record's key of its summary
    keep_report: bool = False  # the record keeps the instance's report beside the summary

    def runtime(self):
        return importlib.import_module(self.module)


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        # a model with its optimization; its summary is the inspection (docs/precision.md)
        Workload(spec_mod.MODEL, "numa_effects.measure.workloads.model", "precision"),
        # a dtype's peak (the denominator of efficiency); the report keeps each kernel's times
        Workload(spec_mod.PEAK, "numa_effects.measure.workloads.dtype_peaks", "peak", True),
        # a node pair's idle latency and read bandwidth; the report keeps each step's times
        Workload(spec_mod.MEMORY, "numa_effects.measure.workloads.memory_probe", "memory", True),
    )
}
