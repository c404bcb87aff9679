"""Which cells the figures show and compare with: the baseline allocator, the base variant, the
``sequential`` cells, and whether the grid goes beyond PackRat's."""

from __future__ import annotations

from collections.abc import Iterable

from numa_effects.plan import allocators as allocators_mod
from numa_effects.plan import optimizations as optimizations_mod
from numa_effects.plan import placement as placement_mod

PACKRAT_OPTS = (optimizations_mod.EAGER, "script")  # the optimizations PackRat measured


def figure_allocator(names: Iterable[str]) -> str:
    """The allocator whose cells the figures that do not tell allocators apart show: the run's
    baseline (``plan.allocators.baseline``)."""
    return allocators_mod.baseline(names)


def base_variant(names: Iterable[str]) -> tuple[str, str]:
    """(opt, allocator) every other is compared with in the Precision and runtime section:
    float32 eager on the baseline allocator of ``names`` (the run's allocators)."""
    return optimizations_mod.EAGER, figure_allocator(names)


def is_sequential(label: str) -> bool:
    """A cell of the ``sequential`` placement (``sequential+smt`` included)."""
    return placement_mod.parse_label(str(label))[0] == placement_mod.BASELINE


def beyond_packrat(keys: list[dict]) -> bool:
    """The grid measures more than PackRat's eager and TorchScript with one allocator: else
    there is no Precision and runtime section (nothing beyond PackRat's question to show)."""
    return len({k["allocator"] for k in keys}) > 1 or any(
        k["opt"] not in PACKRAT_OPTS for k in keys
    )


def dtype_of(opt: str) -> str:
    entry = optimizations_mod.OPTIMIZATIONS.get(str(opt))
    return entry.dtype if entry else "float32"
