"""A grid narrowed to a shrunk config (the budget's steps drop threads and batch sizes): the
cells whose every axis value the config still names, without planning any cell again; and the
peak a cell asks for."""

from __future__ import annotations

from collections.abc import Callable

from numa_effects.plan import grid as grid_mod
from numa_effects.plan import optimizations, placement


def keeps(config: dict, topo) -> Callable[[grid_mod.CellKey], bool]:
    """Whether a cell's every axis value is one of ``config``'s."""
    values = {a.name: set(a.values(config, topo)) for a in grid_mod.AXES}
    return lambda key: all(getattr(key, name) in v for name, v in values.items())


def grid(g: grid_mod.Grid, config: dict, topo) -> grid_mod.Grid:
    """``g`` without the cells ``config`` no longer names. A cell reported from another's
    binding shares its threads and batch, so both stay or both go."""
    keep = keeps(config, topo)
    return grid_mod.Grid(
        {k: p for k, p in g.cells.items() if keep(k)},
        {k: why for k, why in g.skipped.items() if keep(k)},
        {k: m for k, m in g.same.items() if keep(k)},
    )


def peak_key(key: grid_mod.CellKey) -> tuple[str, int, str]:
    """(placement, threads, dtype) of the peak a cell is compared with: a node pair's on its
    diagonal."""
    dtype = optimizations.OPTIMIZATIONS[key.opt].dtype
    return placement.peak_placement(key.placement), key.threads, dtype
