"""What a page section says when it has no figure (its ``Section.empty``), from the run's facts
(``PageFacts``), as text with ``code`` marked as in RST (the page marks it up)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from numa_effects.plan import allocators as allocators_mod
from numa_effects.plan import grid as grid_mod
from numa_effects.plan import placement as placement_mod
from numa_effects.report import style
from numa_effects.report.baselines import PACKRAT_OPTS, figure_allocator, is_sequential


@dataclass(frozen=True)
class PageFacts:
    """What a section may say about a run that gave it no figure."""

    cells: Any  # pandas DataFrame of cells.csv
    skipped: Any  # skipped.csv
    placements: Sequence[str]  # the config's (or the imported cells') placements
    imported: bool  # imported PackRat results


def no_sequential(facts: PageFacts) -> str:
    return "No sequential cell was run, so this section has no figure."


def no_numa_reason(facts: PageFacts) -> str:
    """Why a run has no NUMA figure, from the config and the tables."""
    if facts.imported:
        return (
            "The imported results have no placement other than sequential with matching "
            "sequential cells, so there is nothing to compare."
        )
    placements = list(facts.placements)
    others = [p for p in placements if not placement_mod.is_baseline(p)]
    bases = sorted({placement_mod.baseline_of(p) for p in others})
    missing = [b for b in bases if b not in placements]
    seq = placement_mod.BASELINE
    if missing == [seq] or not placements:
        return (
            "NUMA effects compare every placement against sequential, and the config's "
            "``placements`` does not list sequential."
        )
    if missing:
        return (
            "NUMA effects compare every placement against its baseline, and the config's "
            f"``placements`` does not list {', '.join(missing)}."
        )
    if not others:
        return (
            "The config's ``placements`` lists only sequential: add interleave, remote "
            "or mem-interleave (on a machine with at least 2 NUMA nodes) to measure NUMA effects."
            if all(is_sequential(p) for p in placements)
            else f"The config's ``placements`` lists only baselines "
            f"({', '.join(placements)}): add a placement compared against them."
        )
    if same := same_as_baseline(facts.cells, others):
        return (
            f"Every cell of {', '.join(same)} binds like its baseline on this machine (the same "
            "CPUs and memory nodes), so each pair is one measurement under two names "
            "(``same_binding_as`` in cells.csv): there is no difference to show."
        )
    skipped = facts.skipped
    if not skipped.empty and "reason" in skipped:
        why = _reasons(skipped[~skipped["placement"].map(placement_mod.is_baseline)])
        if why:
            return f"Every cell of {', '.join(others)} was skipped: {why}."
    return f"No cell of {', '.join(others)} has a {' or '.join(bases)} cell to compare with."


def _reasons(skipped) -> str:
    """The skipped cells' distinct reasons."""
    return "; ".join(sorted(skipped["reason"].dropna().astype(str).unique()))


def same_as_baseline(cells, placements) -> list[str]:
    """The ``placements`` whose every cell in ``cells`` is reported from its baseline's
    measurement (``same_binding_as``: ``plan.binding``); [] when any other has a cell."""
    if "same_binding_as" not in cells or "placement" not in cells:
        return []
    rows = cells[cells["placement"].isin(placements)]
    base = rows["placement"].map(placement_mod.baseline_of)
    if not rows["same_binding_as"].eq(base).all():
        return []
    return sorted(rows["placement"].unique())


def no_precision(facts: PageFacts) -> str:
    sk = grid_mod.fill_keys(facts.skipped)  # a table without the column is glibc's
    base = figure_allocator([*sk["allocator"], *grid_mod.fill_keys(facts.cells)["allocator"]])
    label = style.allocator_label(base)
    if not sk.empty and {"opt", "reason"} <= set(sk.columns):
        beyond = sk[~sk["opt"].isin(PACKRAT_OPTS) | (sk["allocator"] != base)]
        if not beyond.empty:
            return (
                f"every cell beyond float32 eager and TorchScript with {label} was skipped: "
                f"{_reasons(beyond)}."
            )
    what = "the imported results have" if facts.imported else "the grid measures"
    others = [f"``{n}``" for n in allocators_mod.ALLOCATORS if n != base]
    return (
        f"{what} only float32 eager and TorchScript with one allocator ({label}; PackRat's"
        " question): add optimizations (``compile``, ``bf16``, "
        f"``int8``, ...) or allocators ({', '.join(others)}) "
        "to see what each buys over float32 eager (docs/precision.md)."
    )


def packing_off(facts: PageFacts) -> str:
    if facts.imported:
        return "imported results: packing measures its plans on this machine."
    return (
        "packing is off (it needs at least two thread counts and the sequential placement; "
        "config key packing, docs/packing.md)."
    )


def no_node_pairs(facts: PageFacts) -> str:
    members = [p for p in facts.placements if placement_mod.pair_of(p) is not None]
    if facts.imported or not members:
        return (
            "the grid has no node-pair cell: add ``node-pairs`` to "
            "``placements`` (the CPU-node x memory-node matrix, config key "
            "``node_pairs``; docs/placements.md)."
        )
    return (
        "no node-pair cell ran (a machine with one NUMA node plans only its diagonal, "
        f"{', '.join(map(str, members))}, and nothing else: see the skipped cells)."
    )


def nothing_matched(facts: PageFacts) -> str:
    return "no matched cell has a value in both runs."
