"""The experiment grid: the config expanded into cells (runnable, with their plan) and skipped
cells (with the reason this machine cannot run them); each cell's ``replicates`` (independent
pinned processes, one result file each) and the order in which they run (``job_order``).

The grid's axes are one registry, ``AXES``: each names its column (and wildcard), the config
key that lists its values, its segment of the result path and the names it allows. The cell
key (``CellKey``), the key columns of every table (``KEYS``), the result and log paths
(``CELL_PATTERN``) and the workflow's wildcard constraints all follow from it, so a new axis is
one ``Axis`` entry (and where it matters, a reason to skip some of its cells in ``expand``).
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from numa_effects.plan import memory as memory_mod
from numa_effects.plan import optimizations as optimizations_mod
from numa_effects.plan import placement as placement_mod
from numa_effects.plan.topology import Topology

NAME = r"[a-z][a-z0-9_]*"


@dataclass(frozen=True)
class Axis:
    """One axis of the grid."""

    name: str  # the column of every table and the wildcard of every path
    config_key: str  # the config key that lists the axis' values
    segment: str  # its part of the result path, e.g. ``t{threads}``
    pattern: Callable[[], str]  # the values it allows, as a regular expression
    type: type = str

    def values(self, config: dict, topo: Topology) -> list:
        if self.name == "threads":
            return thread_counts(config, topo)
        if self.name == "placement":
            use_smt = bool(config.get("use_smt", False))
            return [placement_mod.label(p, use_smt) for p in config["placements"]]
        return [self.type(v) for v in config[self.config_key]]


AXES: tuple[Axis, ...] = (
    Axis("model", "models", "{model}", lambda: NAME),
    Axis("opt", "optimizations", "{opt}", lambda: NAME),
    Axis("placement", "placements", "{placement}", placement_mod.names_regex),
    Axis("threads", "threads", "t{threads}", lambda: r"\d+", int),
    Axis("batch_size", "batch_sizes", "bs{batch_size}", lambda: r"\d+", int),
)
KEYS = tuple(a.name for a in AXES)
# One result file per replicate (an independent pinned process) of a cell.
CELL_PATTERN = "cells/" + "/".join(a.segment for a in AXES) + "/r{replicate}.json"
LOG_PATTERN = "logs/" + CELL_PATTERN.removesuffix(".json") + ".log"
DEFAULT_REPLICATES = 1  # when the config has no ``replicates`` (config/config.yaml sets it)


def wildcard_constraints() -> dict[str, str]:
    """The wildcard constraints of a cell's path: names only, no separators or shell
    metacharacters can reach a cell."""
    return {a.name: a.pattern() for a in AXES} | {"replicate": r"[1-9]\d*"}


class _Key:
    """Methods of ``CellKey`` (its fields are ``AXES``)."""

    def path(self, results: str = "results", replicate: int = 1) -> str:
        """The result file of replicate ``replicate`` (1-based) of this cell."""
        return f"{results}/" + CELL_PATTERN.format(**self.as_dict(), replicate=int(replicate))

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in KEYS}

    @classmethod
    def from_wildcards(cls, wc) -> CellKey:
        get = wc.get if isinstance(wc, dict) else lambda k: getattr(wc, k)
        return cls(*(a.type(get(a.name)) for a in AXES))


CellKey = dataclasses.make_dataclass(
    "CellKey",
    [(a.name, a.type) for a in AXES],
    bases=(_Key,),
    frozen=True,
    order=True,
)
CellKey.__module__ = __name__


@dataclass(frozen=True)
class Grid:
    cells: dict[CellKey, placement_mod.Plan]
    skipped: dict[CellKey, str]


def thread_counts(config: dict, topo: Topology) -> list[int]:
    threads = config.get("threads", "auto")
    if threads == "auto":
        return list(range(1, placement_mod.max_threads(topo, config.get("use_smt", False)) + 1))
    return sorted(int(t) for t in threads)


def expand(config: dict, topo: Topology, memory_bytes: int | None = None) -> Grid:
    """``memory_bytes``: the planning machine's memory; cells estimated not to fit in it are
    skipped with the estimate (``numa_effects.plan.memory``). None: no memory check."""
    use_smt = bool(config.get("use_smt", False))
    image_size = int(config.get("image_size", 224))
    cells: dict[CellKey, placement_mod.Plan] = {}
    skipped: dict[CellKey, str] = {}
    plans: dict[tuple, placement_mod.Plan | placement_mod.NotApplicable] = {}
    for values in itertools.product(*(a.values(config, topo) for a in AXES)):
        key = CellKey(*values)
        where = (key.placement, key.threads)
        if where not in plans:
            plans[where] = placement_mod.plan(topo, key.threads, key.placement, use_smt)
        planned = plans[where]
        opt = optimizations_mod.OPTIMIZATIONS.get(key.opt)
        reason = (
            planned.reason
            if isinstance(planned, placement_mod.NotApplicable)
            else memory_mod.skip_reason(
                key.model,
                key.batch_size,
                image_size,
                memory_bytes,
                opt.bytes_per_element if opt else memory_mod.FLOAT32_BYTES,
            )
        )
        if reason:
            skipped[key] = reason
        else:
            cells[key] = planned
    return Grid(dict(sorted(cells.items())), dict(sorted(skipped.items())))


def replicates(config: dict) -> int:
    """How many independent processes measure each cell (config key ``replicates``)."""
    r = config.get("replicates")
    return DEFAULT_REPLICATES if r is None else int(r)


def _group(key: CellKey) -> tuple:
    """Cells compared with each other by ``tables.compare`` (a placement and its baseline, SMT
    kept apart): they run next to each other in every round."""
    base = placement_mod.baseline_of(key.placement) or key.placement
    return (*(getattr(key, k) for k in KEYS if k != "placement"), base)


def job_order(keys: Iterable[CellKey], n_replicates: int, seed: int = 0) -> list[tuple]:
    """The order in which the (cell, replicate) jobs run, so that a slow drift of the machine
    cannot look like an effect:

    - round r measures replicate r of every cell (all first replicates, then all second ones),
      so two replicates of a cell are a whole round apart, never back to back (with >= 2 cells);
    - within a round, the cells of one comparison group (a placement and its baseline at the
      same values of every other axis) run next to each other, in ABBA order over the rounds
      (baseline first in odd rounds, last in even ones);
    - the groups' order is a seeded shuffle per round, re-drawn if it would put the same group
      at the end of one round and the start of the next.
    """
    keys = sorted(keys)
    groups: dict[tuple, list[CellKey]] = {}
    for k in keys:
        groups.setdefault(_group(k), []).append(k)

    def baseline_first(k: CellKey) -> tuple:
        return (not placement_mod.is_baseline(k.placement), k)

    for members in groups.values():
        members.sort(key=baseline_first)
    rng = random.Random(seed)
    order: list[tuple] = []
    last = None
    for r in range(1, int(n_replicates) + 1):
        names = list(groups)
        rng.shuffle(names)
        if len(names) > 1 and names[0] == last:
            names.append(names.pop(0))
        last = names[-1] if names else None
        for g in names:
            members = groups[g]
            # ABBA across rounds; a lone group keeps one order (else its last cell would
            # end one round and start the next)
            flip = r % 2 == 0 and len(groups) > 1
            for k in reversed(members) if flip else members:
                order.append((k, r))
    return order


def replicate_outputs(grid: Grid, n_replicates: int, results: str = "results") -> list[str]:
    """Every replicate's result file, in ``job_order``."""
    return [k.path(results, r) for k, r in job_order(grid.cells, n_replicates)]
