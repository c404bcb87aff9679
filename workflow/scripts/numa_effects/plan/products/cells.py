"""The plan's cells: their jobs in run order, each job's spec and priority, the skipped and
same-binding rows, the FLOPs combinations."""

from __future__ import annotations

from numa_effects.plan import optimizations as optimizations_mod
from numa_effects.plan import paths
from numa_effects.plan import placement as placement_mod
from numa_effects.plan import settings as settings_mod
from numa_effects.plan import spec as spec_mod


class Cells:
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

    def skipped_rows(self) -> list[dict]:
        return [{**key.as_dict(), "reason": why} for key, why in self.grid.skipped.items()]

    def same_binding_rows(self) -> list[dict]:
        """The cells reported from another cell's measurement (``plan.binding``)."""
        return self.grid.same_binding_rows()

    @property
    def cell_timeout_s(self) -> float:
        return settings_mod.cell_timeout_s(self.config)

    def flops_combos(self) -> list[dict]:
        """The distinct (model, batch_size, image_size) of the runnable cells."""
        keys = sorted({(k.model, k.batch_size) for k in self.grid.cells})
        size = int(self.config["image_size"])
        return [{"model": m, "batch_size": b, "image_size": size} for m, b in keys]
