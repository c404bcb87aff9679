"""The plan's deploy answer: what its job needs and its bound (docs/deploy.md)."""

from __future__ import annotations

import json
from pathlib import Path

from numa_effects.plan import cost, paths
from numa_effects.plan.optimizations import OPTIMIZATIONS
from numa_effects.plan.settings import DEFAULTS


def rerun_job(results: Path) -> dict:
    """What ``spec.deploy`` needs to start a configuration of a finished run again, one round
    (``numa-effects launch``, ``loadtest``): the deploy run's image size and settings where it
    recorded them, else the defaults; compiled optimizations reuse the run's compile cache."""
    try:
        run = json.loads((results / paths.DEPLOY_RUN).read_text())
    except (OSError, ValueError):
        run = {}
    return {
        "image_size": int((run.get("job") or {}).get("image_size") or 224),
        "settings": {**DEFAULTS, "seed": 0, **(run.get("settings") or {})},
        **{"rounds": 1, "max_rounds": 1, "target_pct": 0.0, "code": None},
        "compile_cache_opts": [o for o, entry in OPTIMIZATIONS.items() if entry.compile_cache],
        "compile_cache_dir": str(results / paths.COMPILE_CACHE),
    }


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
