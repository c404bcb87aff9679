"""The plan's peaks (``plan.peaks``): every dtype's windows, their specs and priorities."""

from __future__ import annotations

from numa_effects.plan import paths
from numa_effects.plan import peaks as peaks_mod
from numa_effects.plan import settings as settings_mod
from numa_effects.plan import spec as spec_mod


class Peaks:
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
