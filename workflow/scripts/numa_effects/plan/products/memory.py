"""The plan's memory probes: one job per node pair of the grid's node-pair cells."""

from __future__ import annotations

from numa_effects.plan import grid as grid_mod
from numa_effects.plan import paths
from numa_effects.plan import placement as placement_mod
from numa_effects.plan import settings as settings_mod
from numa_effects.plan import spec as spec_mod


class Memory:
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


def memory_jobs(grid: grid_mod.Grid, topology) -> dict:
    """(CPU node, memory node) -> the 1-thread plan of that pair, for each pair of the grid's
    runnable node-pair cells, in row, then column order."""
    pairs = {placement_mod.pair_of(key.placement) for key in grid.reported()} - {None}
    jobs = {}
    for cpu, mem in sorted(pairs):
        planned = placement_mod.plan(topology, 1, placement_mod.NODE_PAIR.format(cpu=cpu, mem=mem))
        if isinstance(planned, placement_mod.Plan):
            jobs[(cpu, mem)] = planned
    return jobs
