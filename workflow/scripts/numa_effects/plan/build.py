"""The workflow's plan: everything the rules need, computed once from the checked config and the
planning topology. ``build(config, topology, ...) -> Plan`` is pure (no I/O, no module state):
the .smk files only read from the plan, so what runs is a function of its inputs and the order
of ``include:`` statements cannot change it. A grid in which every cell is skipped is a valid
plan (it measures nothing; the report lists the skipped cells), and so is an import (PackRat)
or a comparison of result folders (``compare``): no grid, only their tables and page."""

from __future__ import annotations

from dataclasses import dataclass, field

from numa_effects.compare import settings as compare_mod
from numa_effects.plan import deploy as deploy_mod
from numa_effects.plan import grid as grid_mod
from numa_effects.plan import host as host_mod
from numa_effects.plan import manifest as manifest_mod
from numa_effects.plan import narrow, paths
from numa_effects.plan import packing as packing_mod
from numa_effects.plan import peaks as peaks_mod
from numa_effects.plan import placement as placement_mod
from numa_effects.plan import settings as settings_mod
from numa_effects.plan import stages as stages_mod
from numa_effects.plan.products import cells as cells_part
from numa_effects.plan.products import compare as compare_part
from numa_effects.plan.products import deploy as deploy_part
from numa_effects.plan.products import interference as interference_part
from numa_effects.plan.products import memory as memory_part
from numa_effects.plan.products import packing as packing_part
from numa_effects.plan.products import peaks as peaks_part
from numa_effects.plan.products import targets as targets_part
from numa_effects.plan.topology import Topology

PEAK_TIMEOUT_S = settings_mod.PEAK_TIMEOUT_S


@dataclass(frozen=True)
class Plan(
    cells_part.Cells,
    peaks_part.Peaks,
    memory_part.Memory,
    packing_part.Packing,
    interference_part.Interference,
    deploy_part.Deploy,
    compare_part.Compare,
    targets_part.Targets,
):
    """The workflow's plan: its fields and paths here; each product's methods are a part of
    ``plan.products`` (a new product is a new part)."""

    config: dict
    topology: Topology
    grid: grid_mod.Grid
    replicates: int
    order: tuple  # ((CellKey, replicate), ...) in the order the cell jobs run
    peak: dict  # (placement label, threads, dtype) -> placement.Plan
    memory: dict  # (cpu node, memory node) -> 1-thread placement.Plan (memory_jobs)
    packing: dict  # the resolved packing settings (plan.packing.settings)
    packing_jobs: tuple  # one dict of wildcards per packing measurement job
    interference_jobs: tuple  # one dict per interference profile job (wildcards + group sizes)
    imported: tuple  # PackRat sources (config key import.packrat); () = measured here
    imported_keys: tuple  # the imported cells' keys (dicts)
    code: dict  # layer -> digest of its code's content (plan.code)
    compare: dict | None = None  # the resolved compare key (compare.settings); None = no comparison
    compare_keys: tuple = ()  # the matched cells' keys and compared run (``run``), as dicts
    # the resolved two_stage key (plan.stages): ``replicates`` is then the first stage and
    # ``order`` is planned up to the cap
    two_stage: dict | None = None
    deploy: dict = field(default_factory=lambda: {"enabled": False, "measured": False})
    manifest: dict = field(init=False)
    _priority: dict = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(
            self, "manifest", manifest_mod.content(self.grid, self.replicates, self.two_stage)
        )
        n = len(self.order)
        prio = {job: peaks_mod.cell_priority(i, n) for i, job in enumerate(self.order)}
        object.__setattr__(self, "_priority", prio)

    @property
    def results(self) -> str:
        return self.config["results"]

    def path(self, pattern: str, **fields) -> str:
        """``pattern`` (a ``plan.paths`` constant) below the results folder; fields formatted
        when given, else left as wildcards."""
        return f"{self.results}/{pattern.format(**fields) if fields else pattern}"

    def table(self, name: str) -> str:
        return self.path(paths.table(name))

    def log(self, name: str) -> str:
        return self.path(paths.log(name))

    @property
    def manifest_path(self) -> str:
        return manifest_mod.path(self.results, self.manifest)

    @property
    def stages_path(self) -> str | None:
        """The two-stage checkpoint's counts file (plan.stages); None without ``two_stage``."""
        return stages_mod.path(self.results, self.manifest_path) if self.two_stage else None

    @property
    def measured(self) -> bool:
        """False for an import or a comparison: nothing is measured on this machine."""
        return not self.imported and not self.compare

    def narrowed(self, config: dict) -> Plan:
        """The plan of ``config``, a shrunk copy of this plan's (``plan.cost.fit``): its cells
        kept, none planned again."""
        # a comparison or an import measures nothing: no axes to narrow by
        grid = narrow.grid(self.grid, config, self.topology) if self.measured else self.grid
        return assemble(
            config, self.topology, grid, self.imported_keys, self.code, self.compare_keys
        )

    def _settings(self, capped: dict) -> dict:
        """The measurement settings with ``capped["max_seconds"]`` per configuration."""
        return {**settings_mod.of(self.config), "max_seconds_per_cell": capped["max_seconds"]}


def build(
    config: dict,
    topology: Topology,
    *,
    memory_bytes: int | None = None,
    imported_keys: list[dict] | None = None,
    code: dict | None = None,
    compare_keys: list[dict] | None = None,
    host: host_mod.Host | None = None,
) -> Plan:
    """The plan of a checked config (``numa_effects.config.check``) on ``topology``.
    ``memory_bytes``: the planning machine's memory (cells that cannot fit are skipped);
    ``imported_keys``: the cells of an import; ``code``: ``plan.code.digests()``;
    ``compare_keys``: the matched cells of a comparison; ``host``: ``plan.host.current()``
    (what it lacks skips cells; None: not checked)."""
    measures = not (config.get("import") or {}).get("packrat") and not compare_mod.settings(config)
    grid = (
        grid_mod.expand(config, topology, memory_bytes, host) if measures else grid_mod.Grid({}, {})
    )
    return assemble(config, topology, grid, imported_keys, code, compare_keys)


def assemble(config, topology, grid, imported_keys=None, code=None, compare_keys=None) -> Plan:
    """The plan of ``config`` around its planned ``grid``: everything else is derived."""
    imported = tuple((config.get("import") or {}).get("packrat") or ())
    compare = compare_mod.settings(config)
    measures = not imported and not compare
    replicates = grid_mod.replicates(config)
    two_stage = stages_mod.settings(config) if measures else None
    # under two_stage the order is planned up to the cap; the first rounds are the same
    rounds = two_stage["cap"] if two_stage else replicates
    order = tuple(grid_mod.job_order(grid.cells, rounds, int(config.get("order_seed") or 0)))
    peak = {}
    if config.get("peak", True) and measures:
        for key, cell_plan in grid.cells.items():
            where, threads, dtype = narrow.peak_key(key)  # a node pair's: its diagonal
            if where != key.placement:
                cell_plan = placement_mod.plan(topology, threads, where)
            peak.setdefault((where, threads, dtype), cell_plan)
        peak = dict(sorted(peak.items()))
    threads = grid_mod.thread_counts(config, topology) if measures else []
    deploy = deploy_mod.settings(config, measured=measures)
    packing = packing_mod.settings(config, topology, threads, profile=deploy["measured"])
    return Plan(
        config=config,
        topology=topology,
        grid=grid,
        replicates=replicates,
        order=order,
        peak=peak,
        memory=memory_part.memory_jobs(grid, topology),
        packing=packing,
        packing_jobs=tuple(packing_mod.jobs(packing)) if measures else (),
        interference_jobs=tuple(packing_mod.interference_jobs(packing)) if measures else (),
        imported=imported,
        imported_keys=tuple(imported_keys or ()),
        code=dict(code or {}),
        compare=compare,
        compare_keys=tuple(compare_keys or ()),
        two_stage=two_stage,
        deploy=deploy,
    )
