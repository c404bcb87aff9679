"""The experiment grid: the config expanded into cells (runnable, with their plan) and skipped
cells (with the reason this machine cannot run them); each cell's replicates and the order in
which they run (``job_order``).

The axes are one registry, ``AXES``: the cell key, every table's key columns, the result paths
and the wildcard constraints follow from it, so a new axis is one ``Axis`` entry. An axis added
after results exist has a ``default``: what an older record or table without its column means
(``fill_keys``). A cell is skipped with the first reason found: its placement cannot run on the
topology, its optimization misses a requirement or native bf16 (``plan.host``), its allocator's
library is missing, or it cannot fit in memory. A runnable cell with the binding of another is
measured once (``plan.binding``; ``Grid.same``). Config key ``exclude`` leaves cells out of the
grid altogether (``excluded``).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from numa_effects.plan import allocators as allocators_mod
from numa_effects.plan import binding as binding_mod
from numa_effects.plan import host as host_mod
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
    # the value of a record that predates the axis (None: every record has it); also the
    # config's value when the key is absent
    default: object = None

    def values(self, config: dict, topo: Topology) -> list:
        if self.name == "threads":
            return thread_counts(config, topo)
        if self.default is not None and config.get(self.config_key) is None:
            return [self.default]
        return self.named(config[self.config_key], config, topo)

    def named(self, values, config: dict, topo: Topology) -> list:
        """The cell values that config values of this axis name: a placement family's name
        stands for its members, ``+smt`` labels with ``use_smt``."""
        if self.name == "placement":
            use_smt = bool(config.get("use_smt", False))
            return [
                placement_mod.label(p, use_smt) for p in placement_mod.expand(values, config, topo)
            ]
        return [self.type(v) for v in values]


AXES: tuple[Axis, ...] = (
    Axis("model", "models", "{model}", lambda: NAME),
    Axis("opt", "optimizations", "{opt}", lambda: NAME),
    Axis("placement", "placements", "{placement}", placement_mod.names_regex),
    Axis("threads", "threads", "t{threads}", lambda: r"\d+", int),
    Axis("batch_size", "batch_sizes", "bs{batch_size}", lambda: r"\d+", int),
    # last, with a default, so results and tables from before the axis read as glibc's
    Axis("allocator", "allocators", "{allocator}", lambda: NAME, default=allocators_mod.GLIBC),
)
KEYS = tuple(a.name for a in AXES)
DEFAULTS = {a.name: a.default for a in AXES if a.default is not None}
# One result file per replicate (an independent pinned process) of a cell.
CELL_PATTERN = "cells/" + "/".join(a.segment for a in AXES) + "/r{replicate}.json"
LOG_PATTERN = "logs/" + CELL_PATTERN.removesuffix(".json") + ".log"
DEFAULT_REPLICATES = 1  # when the config has no ``replicates`` (config/config.yaml sets it)


def wildcard_constraints() -> dict[str, str]:
    """The wildcard constraints of a cell's path: no separators or shell metacharacters."""
    return {a.name: a.pattern() for a in AXES} | {"replicate": r"[1-9]\d*"}


class _Key:
    """Methods of ``CellKey`` (its fields are ``AXES``)."""

    def path(self, results: str = "results", replicate: int = 1) -> str:
        """The result file of replicate ``replicate`` (1-based) of this cell."""
        return f"{results}/" + CELL_PATTERN.format(**self.as_dict(), replicate=int(replicate))

    def log_path(self, results: str = "results", replicate: int = 1) -> str:
        """The log of replicate ``replicate`` of this cell."""
        return f"{results}/" + LOG_PATTERN.format(**self.as_dict(), replicate=int(replicate))

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in KEYS}

    @classmethod
    def from_wildcards(cls, wc) -> CellKey:
        get = wc.get if isinstance(wc, dict) else lambda k: getattr(wc, k)
        return cls(*(a.type(get(a.name)) for a in AXES))

    @classmethod
    def from_record(cls, cell: dict) -> CellKey:
        """The key of a result's ``cell`` or a table row (an axis it predates: the default)."""
        return cls(*(a.type(cell.get(a.name, a.default)) for a in AXES))


CellKey = dataclasses.make_dataclass(
    "CellKey",
    [
        (a.name, a.type)
        if a.default is None
        else (a.name, a.type, dataclasses.field(default=a.default))
        for a in AXES
    ],
    bases=(_Key,),
    frozen=True,
    order=True,
)
CellKey.__module__ = __name__


@dataclass(frozen=True)
class Grid:
    """``cells``: the cells measured, with their plans; ``skipped``: those that cannot run, with
    the reason; ``same``: those reported from the measured cell (the value) of their binding."""

    cells: dict[CellKey, placement_mod.Plan]
    skipped: dict[CellKey, str]
    same: dict[CellKey, CellKey] = dataclasses.field(default_factory=dict)

    def measured_as(self, key: CellKey) -> CellKey:
        """The cell whose measurement ``key`` reports: itself, or the cell with its binding."""
        return self.same.get(key, key)

    def reported(self) -> list[CellKey]:
        """Every cell the tables report: the measured ones and those with their bindings."""
        return sorted([*self.cells, *self.same])

    def same_binding_rows(self) -> list[dict]:
        """The ``same`` cells' keys with ``same_binding_as``: the placement that measures them."""
        return [
            {**key.as_dict(), "same_binding_as": self.same[key].placement}
            for key in sorted(self.same)
        ]

    def drawn(self) -> list[CellKey]:
        """The cells the report's figures are planned from: not one compared with itself."""
        return [k for k in self.reported() if not binding_mod.compared_with_itself(k, self.same)]


def thread_counts(config: dict, topo: Topology) -> list[int]:
    threads = config.get("threads", "auto")
    if threads == "auto":
        return list(range(1, placement_mod.max_threads(topo, config.get("use_smt", False)) + 1))
    return sorted(int(t) for t in threads)


def excluded(config: dict, topo: Topology) -> Callable[[CellKey], bool]:
    """Whether a cell matches an entry of config key ``exclude`` (every axis the entry names)."""
    entries = [
        {a.name: set(a.named(e[a.config_key], config, topo)) for a in AXES if a.config_key in e}
        for e in config.get("exclude") or ()
    ]
    return lambda key: any(
        all(getattr(key, name) in values for name, values in e.items()) for e in entries
    )


def fill_keys(df):
    """``df`` (a table) with every key column: one it predates is inserted after the others
    with the axis' default, and blanks get it too."""
    for a in AXES:
        if a.default is None:
            continue
        if a.name not in df.columns:
            at = max((df.columns.get_loc(k) + 1 for k in KEYS if k in df.columns), default=0)
            df = df.copy()
            df.insert(int(at), a.name, a.default)
        elif df[a.name].isna().any():
            df = df.assign(**{a.name: df[a.name].where(df[a.name].notna(), a.default)})
    return df


def keyed(df):
    """``df`` with every key column (``fill_keys``) when it is a table of cells, else as it is."""
    return df if df is None or not {"model", "opt"} <= set(df.columns) else fill_keys(df)


def expand(
    config: dict,
    topo: Topology,
    memory_bytes: int | None = None,
    host: host_mod.Host | None = None,
) -> Grid:
    """The grid of ``config`` on ``topo``. ``memory_bytes``: the planning machine's memory (None:
    no memory check); ``host``: what the machine offers (``plan.host.current``; None: not
    checked)."""
    use_smt = bool(config.get("use_smt", False))
    image_size = int(config.get("image_size", 224))
    bf16 = config.get("bf16") or host_mod.BF16_AUTO
    host = host or host_mod.Host()
    cells: dict[CellKey, placement_mod.Plan] = {}
    skipped: dict[CellKey, str] = {}
    # each placement, optimization and allocator is planned and checked once
    plan_of = functools.cache(functools.partial(placement_mod.plan, topo))
    opt_reason = functools.cache(host.optimization_reason)
    alloc_reason = functools.cache(host.allocator_reason)
    left_out = excluded(config, topo)
    for values in itertools.product(*(a.values(config, topo) for a in AXES)):
        key = CellKey(*values)
        if left_out(key):
            continue
        planned = plan_of(key.threads, key.placement, use_smt)
        opt = optimizations_mod.OPTIMIZATIONS.get(key.opt)
        per = opt.bytes_per_element if opt else memory_mod.FLOAT32_BYTES
        reason = (
            planned.reason
            if isinstance(planned, placement_mod.NotApplicable)
            else opt_reason(key.opt, bf16)
            or alloc_reason(key.allocator)
            or memory_mod.skip_reason(key.model, key.batch_size, image_size, memory_bytes, per)
        )
        if reason:
            skipped[key] = reason
        else:
            cells[key] = planned
    each = config.get("same_bindings") == binding_mod.EACH
    same = {} if each else binding_mod.measured_once(cells)
    measured = {k: p for k, p in sorted(cells.items()) if k not in same}
    return Grid(measured, dict(sorted(skipped.items())), dict(sorted(same.items())))


def replicates(config: dict) -> int:
    """How many independent processes measure each cell (config key ``replicates``)."""
    r = config.get("replicates")
    return DEFAULT_REPLICATES if r is None else int(r)


def comparison_group(key: CellKey) -> tuple:
    """Cells compared with each other (a placement and its baseline, every optimization): they
    run next to each other in every round."""
    base = placement_mod.baseline_of(key.placement) or key.placement
    return (*(getattr(key, k) for k in KEYS if k not in ("placement", "opt")), base)


def job_order(keys: Iterable[CellKey], n_replicates: int, seed: int = 0) -> list[tuple]:
    """The order in which the (cell, replicate) jobs run, so that a slow drift of the machine
    cannot look like an effect: round r measures replicate r of every cell; within a round the
    cells of a comparison group run next to each other, in ABBA order over the rounds, so a
    comparison's two processes share what drifts between rounds; the groups' order is a seeded
    shuffle per round that never puts one group at the end of a round and the next's start."""
    keys = sorted(keys)
    groups: dict[tuple, list[CellKey]] = {}
    for k in keys:
        groups.setdefault(comparison_group(k), []).append(k)
    for members in groups.values():  # the baseline first
        members.sort(key=lambda k: (not placement_mod.is_baseline(k.placement), k))
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
