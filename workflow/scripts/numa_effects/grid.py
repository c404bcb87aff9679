"""The experiment grid: the config expanded into cells (runnable, with their plan) and skipped
cells (with the reason this machine cannot run them)."""

from __future__ import annotations

from dataclasses import dataclass

from . import placement as placement_mod
from .topology import Topology

KEYS = ("model", "opt", "placement", "threads", "batch_size")
CELL_PATTERN = "cells/{model}/{opt}/{placement}/t{threads}/bs{batch_size}.json"


@dataclass(frozen=True, order=True)
class CellKey:
    model: str
    opt: str
    placement: str
    threads: int
    batch_size: int

    def path(self, results: str = "results") -> str:
        return f"{results}/" + CELL_PATTERN.format(**self.as_dict())

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


def expand(config: dict, topo: Topology) -> Grid:
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
                        if isinstance(result, placement_mod.NotApplicable):
                            skipped[key] = result.reason
                        else:
                            cells[key] = result
    return Grid(dict(sorted(cells.items())), dict(sorted(skipped.items())))
