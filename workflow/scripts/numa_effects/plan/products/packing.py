"""The plan's packing question: its plans, measurement jobs, their bound and the profile's
cost (docs/packing.md)."""

from __future__ import annotations

from numa_effects.plan import allocators as allocators_mod
from numa_effects.plan import packing as packing_mod
from numa_effects.plan import paths


class Packing:
    def packing_plan_paths(self) -> list[str]:
        return [self.path(paths.PACKING_PLANS, model=m, opt=o) for m, o in self.packed()]

    def packing_run_paths(self) -> list[str]:
        return [self.path(paths.PACKING_RUN, **j) for j in self.packing_jobs]

    def packing_timeout_s(self) -> float:
        """A packing job's wall-time bound: every configuration's cell timeout, per replicate."""
        return (1 + self.packing["measure_plans"]) * self.replicates * self.cell_timeout_s

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

    def packed(self) -> list[tuple[str, str]]:
        """The (model, opt) pairs whose packing is measured (the report's Packing figures)."""
        return sorted({(j["model"], j["opt"]) for j in self.packing_jobs})
