"""The plan's deploy answer: what its job needs and its bound (docs/deploy.md)."""

from __future__ import annotations

import json
from pathlib import Path

from numa_effects.plan import cost, paths
from numa_effects.plan.deploy import LOADTEST, THROUGHPUT
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

    def loadtest_args(self) -> list[str]:
        """The run's ``numa-effects loadtest`` arguments (``deploy.LOADTEST``): the throughput
        answer of the grid's first model, its strongest baseline too where the run measures
        baselines, LoadGen runs of ``deploy.max_seconds``."""
        d, t = self.deploy, LOADTEST
        role = "both" if d["baselines"] else "recommended"
        args = ["--objective", THROUGHPUT, "--model", d["models"][0], "--role", role]
        args += ["--min-duration-s", str(d["max_seconds"]), "--timeout-s", str(self.cell_timeout_s)]
        args += ["--min-queries", str(t["min_queries"]), "--server-runs", str(t["server_runs"])]
        return args + (["--bound-ms", str(d["latency_bound_ms"])] if d["latency_bound_ms"] else [])

    def loadtest_figure(self, ext: str = "png") -> str:
        """The figure of the answer under load (its model: the load test's)."""
        return self.path(paths.LOADTEST_FIGURE, model=self.deploy["models"][0], ext=ext)

    def loadtest_timeout_s(self) -> float:
        """The load test's wall-time bound: per role its start and its longest LoadGen runs."""
        t = LOADTEST
        runs = (1 + t["server_runs"]) * t["max_duration"] * self.deploy["max_seconds"]
        return t["roles"] * (self.cell_timeout_s + runs)

    def loadtest_note(self, shrunk=()) -> str | None:
        """Why a measured throughput answer is not tested under load (one line), else None;
        ``shrunk``: what the budget shrank (``cost.Estimate.shrunk``)."""
        d = self.deploy
        if d["loadtest"] or not d["measured"] or THROUGHPUT not in d["objectives"]:
            return None
        dropped = any(w.startswith("loadtest dropped") for w in shrunk)
        why = "the budget dropped it" if dropped else "deploy.loadtest is false"
        return f"Not tested under load ({why}): make loadtest runs it."
