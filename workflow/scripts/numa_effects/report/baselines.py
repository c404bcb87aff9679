"""Which cells the figures show and compare with: one allocator's cells where a figure does not
tell allocators apart (``figure_allocator``: the run's baseline allocator), float32 eager on it
as the Precision and runtime section's baseline (``base_variant``), the ``sequential`` cells of
the Latency and Throughput sections (``is_sequential``), and PackRat's grid, beyond which the
Precision figures exist (``beyond_packrat``).

Allocators (the ``allocator`` axis, ``numa_effects.plan.allocators``): the per-batch figures draw
one line per optimization and allocator (colour by optimization, line style by allocator; with
one allocator exactly as without the axis); every other family of the Latency, Throughput and
NUMA sections shows ``figure_allocator``'s cells (glibc as it comes when the grid has it, else
the first in registry order); the Precision and runtime section compares every optimization and
allocator with float32 eager on that allocator (``tables/precision.csv``) and shows the NUMA
loss per dtype."""

from __future__ import annotations

from collections.abc import Iterable

from numa_effects.plan import allocators as allocators_mod
from numa_effects.plan import optimizations as optimizations_mod
from numa_effects.plan import placement as placement_mod

# PackRat's grid: a run with only these optimizations and one allocator has no Precision and
# runtime figures (there is nothing beyond PackRat's question to show)
PACKRAT_OPTS = (optimizations_mod.EAGER, "script")


def figure_allocator(names: Iterable[str]) -> str:
    """The allocator whose cells the figures that do not tell allocators apart show: the run's
    baseline (``plan.allocators.baseline``: glibc as it comes when present, else the first in
    registry order)."""
    return allocators_mod.baseline(names)


def base_variant(names: Iterable[str]) -> tuple[str, str]:
    """(opt, allocator) of the cells every other is compared with in the Precision and runtime
    section (``tables/precision.csv``'s baseline): float32 eager on the run's baseline
    allocator, of ``names`` (the run's allocators)."""
    return optimizations_mod.EAGER, figure_allocator(names)


def is_sequential(label: str) -> bool:
    """A cell of the ``sequential`` placement (``sequential+smt`` included): the Latency and
    Throughput sections' cells."""
    return placement_mod.parse_label(str(label))[0] == placement_mod.BASELINE


def beyond_packrat(keys: list[dict]) -> bool:
    """The grid measures more than PackRat's eager and TorchScript with one allocator."""
    return len({k["allocator"] for k in keys}) > 1 or any(
        k["opt"] not in PACKRAT_OPTS for k in keys
    )


def dtype_of(opt: str) -> str:
    entry = optimizations_mod.OPTIMIZATIONS.get(str(opt))
    return entry.dtype if entry else "float32"
