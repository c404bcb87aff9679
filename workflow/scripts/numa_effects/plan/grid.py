"""The experiment grid: the config expanded into cells (runnable, with their plan) and skipped
cells (with the reason this machine cannot run them); each cell's ``replicates`` (independent
pinned processes, one result file each) and the order in which they run (``job_order``)."""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

from numa_effects.plan import memory as memory_mod
from numa_effects.plan import placement as placement_mod
from numa_effects.plan.topology import Topology

KEYS = ("model", "opt", "placement", "threads", "batch_size")
# One result file per replicate (an independent pinned process) of a cell.
CELL_PATTERN = "cells/{model}/{opt}/{placement}/t{threads}/bs{batch_size}/r{replicate}.json"
LOG_PATTERN = "logs/" + CELL_PATTERN.removesuffix(".json") + ".log"
DEFAULT_REPLICATES = 1  # when the config has no ``replicates`` (config/config.yaml sets it)


@dataclass(frozen=True, order=True)
class CellKey:
    model: str
    opt: str
    placement: str
    threads: int
    batch_size: int

    def path(self, results: str = "results", replicate: int = 1) -> str:
        """The result file of replicate ``replicate`` (1-based) of this cell."""
        return f"{results}/" + CELL_PATTERN.format(**self.as_dict(), replicate=int(replicate))

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in KEYS}

    @classmethod
    def from_wildcards(cls, wc) -> CellKey:
        get = wc.get if isinstance(wc, dict) else lambda k: getattr(wc, k)
        return cls(
            get("model"),
            get("opt"),
            get("placement"),
            int(get("threads")),
            int(get("batch_size")),
        )


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
    cells: dict[CellKey, placement_mod.Plan] = {}
    skipped: dict[CellKey, str] = {}
    for model in config["models"]:
        for opt in config["optimizations"]:
            for place in config["placements"]:
                for t in thread_counts(config, topo):
                    result = placement_mod.plan(topo, t, place, use_smt)
                    for bs in config["batch_sizes"]:
                        # With use_smt the label is "<placement>+smt": its own path and rows.
                        label = placement_mod.label(place, use_smt)
                        key = CellKey(model, opt, label, t, int(bs))
                        too_big = memory_mod.skip_reason(
                            model, int(bs), config.get("image_size", 224), memory_bytes
                        )
                        if isinstance(result, placement_mod.NotApplicable):
                            skipped[key] = result.reason
                        elif too_big:
                            skipped[key] = too_big
                        else:
                            cells[key] = result
    return Grid(dict(sorted(cells.items())), dict(sorted(skipped.items())))


def replicates(config: dict) -> int:
    """How many independent processes measure each cell (config key ``replicates``)."""
    r = config.get("replicates")
    return DEFAULT_REPLICATES if r is None else int(r)


def _group(key: CellKey) -> tuple:
    """Cells compared with each other by ``degradation`` (a placement and its sequential
    baseline, SMT kept apart): they run next to each other in every round."""
    _base, smt = placement_mod.parse_label(key.placement)
    return (key.model, key.opt, key.threads, key.batch_size, smt)


def job_order(keys: Iterable[CellKey], n_replicates: int, seed: int = 0) -> list[tuple]:
    """The order in which the (cell, replicate) jobs run, so that a slow drift of the machine
    cannot look like an effect:

    - round r measures replicate r of every cell (all first replicates, then all second ones),
      so two replicates of a cell are a whole round apart, never back to back (with >= 2 cells);
    - within a round, the cells of one comparison group (a placement and its ``sequential``
      baseline at the same model, opt, threads and batch size) run next to each other, in ABBA
      order over the rounds (baseline first in odd rounds, last in even ones);
    - the groups' order is a seeded shuffle per round, re-drawn if it would put the same group
      at the end of one round and the start of the next.
    """
    keys = sorted(keys)
    groups: dict[tuple, list[CellKey]] = {}
    for k in keys:
        groups.setdefault(_group(k), []).append(k)

    def baseline_first(k: CellKey) -> tuple:
        return (placement_mod.parse_label(k.placement)[0] != placement_mod.BASELINE, k)

    for members in groups.values():
        members.sort(key=baseline_first)
    rng = random.Random(seed)
    order: list[tuple] = []
    names = list(groups)
    last = None
    for r in range(1, int(n_replicates) + 1):
        names = list(groups)
        rng.shuffle(names)
        if len(names) > 1 and names[0] == last:
            names.append(names.pop(0))
        last = names[-1]
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
