"""The registry of workloads: what a pinned instance process (``measure.cell``) runs, each one
module with one interface, its runtime code in it:

- ``TORCH``: whether its instance imports torch (its threads set through torch, the import
  timed apart as ``import_s``); a memory probe's never does;
- ``prepare(instance) -> dict``: where the job runs, before any instance starts
  (``measure.job``): what it resolves there (the memory probe compiles its C code), into the
  instance's ``resolved``; raises ``Skip`` (nothing can run here: the record says skipped, with
  the reason) or ``WorkloadError`` (a failed record);
- ``build(instance, settings) -> Built``: in the instance: the step the runner times, the
  build's timings and warnings, the report made after the timed steps;
- ``summary(instance, report, measurement, clean) -> dict | None``: the record's entry of it
  (``Workload.key``), from the instance's report and the measurement (``clean``: the record has
  statistics, its clean steps count);
- ``check(summary) -> (cause, message) | None``: a measured result that must not count (a model
  whose outputs disagree with float32 eager: ``numerics``).

A new workload is its module and one entry in ``WORKLOADS``; the plan names it in its specs
(``plan.spec``)."""

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


@dataclass
class Built:
    """A workload built in its instance: ``step`` (one timed step), ``timings`` (``build_s``,
    ``prepare_s``, ...), the ``warnings`` of the build, ``report`` (called after the timed
    steps, None: nothing to report) and whether the first step compiles (``compiles``: an
    exception there is a ``compile-error``)."""

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
