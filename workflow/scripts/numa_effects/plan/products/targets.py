"""What ``all`` asks for, and what the report's figures are planned from."""

from __future__ import annotations

from numa_effects.plan import paths
from numa_effects.plan import placement as placement_mod


class Targets:
    def figure_keys(self) -> list:
        """The cells the report's figures are planned from (``Grid.drawn``, or the imported)."""
        return list(self.imported_keys) if self.imported else self.grid.drawn()

    def placements(self) -> list[str]:
        """The placements the report speaks of: the config's (expanded), or the imported cells'."""
        if self.imported:
            return sorted({k["placement"] for k in self.imported_keys})
        names = self.config.get("placements") or ()
        return placement_mod.expand(names, self.config, self.topology)

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
        if self.deploy["loadtest"]:
            out.append(self.table("loadtest"))
        if self.measured:
            # Every replicate's result is a target too: Snakemake does not re-make a deleted
            # intermediate file whose consumers are up to date, so a deleted or missing
            # replicate re-runs (alone, then the tables) only when it is asked for.
            out += self.cell_outputs()
            if self.two_stage:  # the further replicates: Snakefile's rule all, once decided
                out.append(self.stages_path)
        return out
