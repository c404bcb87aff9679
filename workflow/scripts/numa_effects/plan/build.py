"""The workflow's plan: everything the rules need, computed once from the checked config and the
planning topology. ``build(config, topology, ...) -> Plan`` is pure (no I/O, no module state):
the .smk files only read from the plan, so what runs is a function of its inputs and the order
of ``include:`` statements cannot change it. A grid in which every cell is skipped is a valid
plan (it measures nothing; the report lists the skipped cells), and so is an import (PackRat)
or a comparison of result folders (``compare``): no grid, only their tables and page."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from numa_effects.compare import settings as compare_mod
from numa_effects.plan import allocators as allocators_mod
from numa_effects.plan import cost, narrow, paths
from numa_effects.plan import deploy as deploy_mod
from numa_effects.plan import grid as grid_mod
from numa_effects.plan import host as host_mod
from numa_effects.plan import manifest as manifest_mod
from numa_effects.plan import optimizations as optimizations_mod
from numa_effects.plan import packing as packing_mod
from numa_effects.plan import peaks as peaks_mod
from numa_effects.plan import placement as placement_mod
from numa_effects.plan import settings as settings_mod
from numa_effects.plan import spec as spec_mod
from numa_effects.plan import stages as stages_mod
from numa_effects.plan.topology import Topology

PEAK_TIMEOUT_S = settings_mod.PEAK_TIMEOUT_S


@dataclass(frozen=True)
class Plan:
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

    def priority(self, key, replicate: int) -> int:
        """Snakemake priority of a cell job: the earlier in ``order``, the higher."""
        return self._priority.get((key, int(replicate)), 0)

    def cell_outputs(self, counts: dict | None = None) -> list[str]:
        """Every replicate's result file in run order; under ``two_stage`` the first stage's, and
        with ``counts`` (``stages.read``) each cell's further ones up to its count."""
        counts = counts or {}
        return [
            k.path(self.results, r) for k, r in self.order if r <= counts.get(k, self.replicates)
        ]

    def cell_spec(self, key, replicate: int) -> spec_mod.Spec:
        """Everything the pinned cell process needs: the job's params, so a change re-runs it."""
        cache = None
        if optimizations_mod.OPTIMIZATIONS[key.opt].compile_cache:
            # under results/ so a run's processes share kernels; relative, as an absolute path
            # would make a moved or copied run re-measure every cell
            cache = self.path(paths.COMPILE_CACHE)
        return spec_mod.cell(
            key.as_dict(),
            self._cell_plan(key),
            settings_mod.of(self.config),
            replicate,
            image_size=self.config["image_size"],
            use_smt=self.config["use_smt"],
            compile_cache_dir=cache,
            code=self.code.get("measure"),
        )

    def _cell_plan(self, key):
        """The cell's placement plan. A cell skipped for what this machine offers (a cluster
        node re-parsing the workflow lacks a library) keeps its plan, so the job runs and fails
        with its cause (``measure.job`` checks again) instead of the workflow failing."""
        if key in self.grid.cells:
            return self.grid.cells[key]
        planned = placement_mod.plan(
            self.topology, key.threads, key.placement, bool(self.config.get("use_smt"))
        )
        if key not in self.grid.skipped or isinstance(planned, placement_mod.NotApplicable):
            raise KeyError(key)
        return planned

    def narrowed(self, config: dict) -> Plan:
        """The plan of ``config``, a shrunk copy of this plan's (``plan.cost.fit``): its cells
        kept, none planned again."""
        grid = narrow.grid(self.grid, config, self.topology)
        return assemble(
            config, self.topology, grid, self.imported_keys, self.code, self.compare_keys
        )

    def skipped_rows(self) -> list[dict]:
        return [{**key.as_dict(), "reason": why} for key, why in self.grid.skipped.items()]

    def same_binding_rows(self) -> list[dict]:
        """The cells reported from another cell's measurement (``plan.binding``)."""
        return self.grid.same_binding_rows()

    @property
    def cell_timeout_s(self) -> float:
        return settings_mod.cell_timeout_s(self.config)

    def peak_outputs(self) -> list[str]:
        """Every window of every peak (``plan.peaks``), window by window."""
        windows = range(1, peaks_mod.WINDOWS + 1)
        return [
            self.path(paths.PEAK, placement=p, threads=t, dtype=d, window=w)
            for w in windows
            for p, t, d in self.peak
        ]

    def peak_spec(
        self, placement: str, threads: int, dtype: str = "float32", window: int = 1
    ) -> spec_mod.Spec:
        """What the pinned peak process of one dtype's window needs."""
        plan = self.peak[(placement, int(threads), dtype)]
        settings = settings_mod.with_contention(settings_mod.PEAK_SETTINGS, self.config)
        code = self.code.get("measure")
        return spec_mod.peak(plan, dtype, settings, code=code, window=int(window))

    def peak_priority(self, window: int) -> int:
        """Snakemake priority of a peak window's jobs (``plan.peaks``)."""
        return peaks_mod.priorities(self.order, self.replicates)[int(window) - 1]

    def memory_outputs(self) -> list[str]:
        return [self.path(paths.MEMORY, cpu=c, mem=m) for c, m in self.memory]

    @property
    def memory_timeout_s(self) -> float:
        return settings_mod.memory_timeout_s(self.config)

    def memory_spec(self, cpu: int, mem: int) -> spec_mod.Spec:
        """What the pinned memory probe of one node pair needs; its compiled probe cached under
        the results folder (relative like the compile cache)."""
        plan = self.memory[(int(cpu), int(mem))]
        settings = settings_mod.with_contention(settings_mod.MEMORY_SETTINGS, self.config)
        cache = self.path(paths.MEMORY_PROBE_CACHE)
        return spec_mod.memory(cpu, mem, plan, settings, cache, code=self.code.get("measure"))

    def flops_combos(self) -> list[dict]:
        """The distinct (model, batch_size, image_size) of the runnable cells."""
        keys = sorted({(k.model, k.batch_size) for k in self.grid.cells})
        size = int(self.config["image_size"])
        return [{"model": m, "batch_size": b, "image_size": size} for m, b in keys]

    def packing_plan_paths(self) -> list[str]:
        return [self.path(paths.PACKING_PLANS, model=m, opt=o) for m, o in self.packed()]

    def packing_run_paths(self) -> list[str]:
        return [self.path(paths.PACKING_RUN, **j) for j in self.packing_jobs]

    def interference_run_paths(self) -> list[str]:
        return [self.path(paths.INTERFERENCE_RUN, **j) for j in self.interference_jobs]

    def interference_spec(
        self, model: str, opt: str, budget: int, threads: int
    ) -> spec_mod.GroupSpec:
        """What an interference profile job measures (``spec.interference``), placed on the
        planning topology (the job verifies them where it runs)."""
        wanted = {"model": model, "opt": opt, "budget": int(budget), "threads": int(threads)}
        (job,) = [j for j in self.interference_jobs if wanted.items() <= j.items()]
        ig = self.packing["interference"]
        group = {**self.packing_job(model, opt), **job, "batch": ig["batch"]}
        return spec_mod.interference(group | {"settings": self._settings(ig)}, self.topology)

    def packing_timeout_s(self) -> float:
        """A packing job's wall-time bound: every configuration's cell timeout, per replicate."""
        return (1 + self.packing["measure_plans"]) * self.replicates * self.cell_timeout_s

    def interference_timeout_s(self) -> float:
        """A profile job's wall-time bound: alone and each group, per replicate."""
        most = max((len(j["instances"]) for j in self.interference_jobs), default=1)
        return (1 + most) * self.replicates * self.cell_timeout_s

    def _settings(self, capped: dict) -> dict:
        """The measurement settings with ``capped["max_seconds"]`` per configuration."""
        return {**settings_mod.of(self.config), "max_seconds_per_cell": capped["max_seconds"]}

    def profile_cost(self) -> dict:
        """The interference profile's jobs, configurations and timing cap (docs/packing.md)."""
        return packing_mod.profile_cost(self.packing, self.replicates)

    def packing_job(self, model: str, opt: str) -> dict:
        """What a packing measurement job needs besides its plan (``spec.packing``); it runs
        with the grid's baseline allocator, whose cells the plan predicts from."""
        return {
            "model": model,
            "opt": opt,
            "allocator": allocators_mod.baseline(k.allocator for k in self.grid.cells),
            "image_size": self.config["image_size"],
            "use_smt": self.config["use_smt"],
            "replicates": self.replicates,
            "settings": self._settings(self.packing),
            "code": self.code.get("measure"),
        }

    def deploy_job(self, allowance_s: float | None = None) -> dict:
        """What the deploy job needs besides its plan (``spec.deploy``)."""
        d = self.deploy
        compiled = [
            o for o in d["optimizations"] if optimizations_mod.OPTIMIZATIONS[o].compile_cache
        ]
        return {
            "image_size": self.config["image_size"],
            "settings": self._settings(d),
            "rounds": d["rounds"],
            "max_rounds": d["max_rounds"],
            "target_pct": d["target_pct"],
            "allowance_s": allowance_s,
            "compile_cache_opts": compiled,
            "compile_cache_dir": self.path(paths.COMPILE_CACHE),
            "code": self.code.get("measure"),
        }

    def deploy_timeout_s(self) -> float:
        """The deploy job's wall-time bound: a generous plan's cell timeouts in every round."""
        searched, plain = cost.deploy_configurations(self.deploy)
        return (2 * (searched + plain) + 4) * self.deploy["max_rounds"] * self.cell_timeout_s

    def figure_keys(self) -> list:
        """The cells the report's figures are planned from (``Grid.drawn``, or the imported)."""
        return list(self.imported_keys) if self.imported else self.grid.drawn()

    def packed(self) -> list[tuple[str, str]]:
        """The (model, opt) pairs whose packing is measured (the report's Packing figures)."""
        return sorted({(j["model"], j["opt"]) for j in self.packing_jobs})

    def placements(self) -> list[str]:
        """The placements the report speaks of: the config's (expanded), or the imported cells'."""
        if self.imported:
            return sorted({k["placement"] for k in self.imported_keys})
        names = self.config.get("placements") or ()
        return placement_mod.expand(names, self.config, self.topology)

    def compare_path(self, pattern: str, compare: str | None = None, **fields) -> str:
        """``pattern`` (a ``plan.paths`` COMPARE_* constant) for the comparison ``compare``
        (default: the wildcard ``{compare}``)."""
        return self.path(pattern.replace("{compare}", compare or "{{compare}}").format(**fields))

    def compare_table(self, table: str, compare: str | None = None) -> str:
        return self.compare_path(paths.COMPARE_TABLE, compare, name=table)

    def compare_inputs(self) -> dict[str, list[str]]:
        """The files of the compared folders a comparison reads; peak and samples tables only
        where a folder has them (an import has neither)."""
        runs = self.compare["runs"] if self.compare else []

        def where(table):
            return [p for p in (f"{r}/{paths.table(table)}" for r in runs) if os.path.isfile(p)]

        return {
            "cells": [f"{r}/{paths.table('cells')}" for r in runs],
            "machines": [f"{r}/{paths.MACHINE}" for r in runs],
            "peaks": where("peak"),
            "samples": where("samples"),
        }

    def compare_targets(self) -> list[str]:
        """The comparison's tables and page ([] when the config compares nothing)."""
        if not self.compare:
            return []
        name = self.compare["name"]
        out = [self.compare_table(t, name) for t in paths.COMPARE_TABLES]
        return [*out, self.compare_path(paths.COMPARE_PAGE, name)]

    def targets(self) -> list[str]:
        """Every output of a complete run (a changed grid's new manifest re-runs the
        aggregations); a comparison's own outputs only."""
        if self.compare:
            return self.compare_targets()
        tables = ["cells", "samples", "skipped", "degradation", "opt_speedup", "precision"]
        out = [self.manifest_path, self.path(paths.MACHINE)]
        if self.measured:
            tables += ["failures", "peak"]
        if self.memory:
            tables.append("memory_matrix")
        out += [self.table(t) for t in tables]
        out += [self.path(paths.SUMMARY), self.path(paths.REPORT_PAGE)]
        if self.packing_jobs:
            out += [self.table(t) for t in ("packing", "packing_candidates")]
        if self.interference_jobs:
            out.append(self.table("interference"))
        if self.deploy["enabled"]:
            out.append(self.table("recommendation"))
        if self.measured:
            # Every replicate's result is a target too: Snakemake does not re-make a deleted
            # intermediate file whose consumers are up to date, so a deleted or missing
            # replicate re-runs (alone, then the tables) only when it is asked for.
            out += self.cell_outputs()
            if self.two_stage:  # the further replicates: Snakefile's rule all, once decided
                out.append(self.stages_path)
        return out


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
        memory=memory_jobs(grid, topology),
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


def memory_jobs(grid: grid_mod.Grid, topology: Topology) -> dict:
    """(CPU node, memory node) -> the 1-thread plan of that pair, for each pair of the grid's
    runnable node-pair cells, in row, then column order."""
    pairs = {placement_mod.pair_of(key.placement) for key in grid.reported()} - {None}
    jobs = {}
    for cpu, mem in sorted(pairs):
        planned = placement_mod.plan(topology, 1, placement_mod.NODE_PAIR.format(cpu=cpu, mem=mem))
        if isinstance(planned, placement_mod.Plan):
            jobs[(cpu, mem)] = planned
    return jobs
