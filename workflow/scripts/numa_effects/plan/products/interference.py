"""The plan's interference profile: its jobs' outputs, specs and bound."""

from __future__ import annotations

from numa_effects.plan import paths
from numa_effects.plan import spec as spec_mod


class Interference:
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

    def interference_timeout_s(self) -> float:
        """A profile job's wall-time bound: alone and each group, per replicate."""
        most = max((len(j["instances"]) for j in self.interference_jobs), default=1)
        return (1 + most) * self.replicates * self.cell_timeout_s
