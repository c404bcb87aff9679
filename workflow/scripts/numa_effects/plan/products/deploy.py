"""The plan's deploy answer: what its job needs and its bound (docs/deploy.md)."""

from __future__ import annotations

from numa_effects.plan import cost, paths
from numa_effects.plan.optimizations import OPTIMIZATIONS


class Deploy:
    def deploy_job(self, allowance_s: float | None = None) -> dict:
        """What the deploy job needs besides its plan (``spec.deploy``)."""
        d = self.deploy
        compiled = [o for o in d["optimizations"] if OPTIMIZATIONS[o].compile_cache]
        return {
            "image_size": self.config["image_size"],
            "settings": self._settings(d),
            **{k: d[k] for k in ("rounds", "max_rounds", "target_pct")},
            "allowance_s": allowance_s,
            "compile_cache_opts": compiled,
            "compile_cache_dir": self.path(paths.COMPILE_CACHE),
            "code": self.code.get("measure"),
        }

    def deploy_timeout_s(self) -> float:
        """The deploy job's wall-time bound: a generous plan's cell timeouts in every round."""
        searched, plain = cost.deploy_configurations(self.deploy)
        return (2 * (searched + plain) + 4) * self.deploy["max_rounds"] * self.cell_timeout_s
