"""What to deploy: the objectives a run answers (``latency`` of one request of B images for each
batch size B; ``throughput`` of the whole machine, optionally under ``latency_bound_ms``), the
baselines it measures the recommendation against (``BASELINES``: the layouts users get by a
fixed rule, run through the same measuring stack in float32 eager), and the resolved ``deploy``
config key (docs/deploy.md). Pure: candidates are searched by ``analysis.deploy_plan``,
measured by ``measure.deploy`` and judged by ``tables.deploy``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from numa_effects.plan import launchers
from numa_effects.plan.optimizations import by_name
from numa_effects.plan.settings import with_defaults
from numa_effects.plan.topology import Topology

LATENCY, THROUGHPUT = "latency", "throughput"
OBJECTIVES = (LATENCY, THROUGHPUT)


@dataclass(frozen=True)
class Baseline:
    """A layout chosen by a rule, measured beside the recommendation (docs/deploy.md's table)."""

    name: str
    objectives: tuple[str, ...]
    # (topology) -> the instances; None: planned from the profiles (``analysis.deploy_plan``)
    layout: Callable[[Topology], list[launchers.Slot]] | None
    # (allocator registry name, why), or the rule that finds them (``run_cpu``'s search)
    allocator: tuple[str, str] | Callable[[], tuple[str, str]]


BASELINES: dict[str, Baseline] = by_name(
    Baseline(
        "all-cores",
        OBJECTIVES,
        launchers.all_cores,
        ("default", "glibc as it comes: nothing preloaded"),
    ),
    Baseline(
        "run_cpu-latency",
        OBJECTIVES,
        partial(launchers.run_cpu_layout, latency_mode=True),
        launchers.run_cpu_allocator,
    ),
    Baseline(
        "run_cpu-throughput",
        OBJECTIVES,
        partial(launchers.run_cpu_layout, throughput_mode=True),
        launchers.run_cpu_allocator,
    ),
    Baseline(
        "mlperf",
        (THROUGHPUT,),
        launchers.one_core_each,
        ("jemalloc", "MLPerf's submissions preload jemalloc"),
    ),
    Baseline("packrat", OBJECTIVES, None, ("", "the allocator of the run's isolated profiles")),
)

DEFAULTS = {
    "enabled": "auto",
    "objectives": list(OBJECTIVES),
    "latency_bound_ms": None,
    "optimizations": None,
    "allocators": None,
    "candidates": 2,
    "baselines": list(BASELINES),
    "rounds": 3,
    "max_rounds": 6,
    "target_pct": 3.0,
    "equivalence_pct": 3.0,
    "max_seconds": 6.0,
    "loadtest": True,
}
# The run's load test of the throughput answer (``numa-effects loadtest``, docs/deploy.md): per
# role (the recommendation, its strongest baseline) an Offline run and ``server_runs`` Server
# runs, each of at least ``deploy.max_seconds`` and ``min_queries`` queries, at most
# ``max_duration`` x ``deploy.max_seconds``, after ``warm_steps`` untimed steps per instance.
LOADTEST = {"roles": 2, "server_runs": 3, "min_queries": 100, "max_duration": 2, "warm_steps": 3}


def settings(config: dict, measured: bool) -> dict:
    """The resolved ``deploy`` key (config/README.md, "Deploy"); ``measured``: the answer is
    measured here (else predicted, e.g. from an import's cells)."""
    s = with_defaults(config.get("deploy") or {}, DEFAULTS)
    enabled = s["enabled"]
    if enabled == "auto":
        enabled = "sequential" in (config.get("placements") or ()) or bool(config.get("import"))
    enabled = bool(enabled) and not config.get("compare")
    batch_sizes = sorted({int(b) for b in config.get("batch_sizes") or ()})
    return {
        "enabled": enabled,
        "measured": enabled and measured,
        "imported": bool(config.get("import")),
        "objectives": [o for o in OBJECTIVES if o in s["objectives"]],
        "batch_sizes": batch_sizes,
        "throughput_batch": max(batch_sizes) if batch_sizes else 1,
        "latency_bound_ms": s["latency_bound_ms"],
        "models": list(config.get("models") or ()),
        "optimizations": list(s["optimizations"] or config.get("optimizations") or ()),
        "allocators": list(s["allocators"] or config.get("allocators") or ["default"]),
        "candidates": int(s["candidates"]),
        "baselines": [b for b in BASELINES if b in s["baselines"]],
        "rounds": int(s["rounds"]),
        "max_rounds": max(int(s["rounds"]), int(s["max_rounds"])),
        "target_pct": float(s["target_pct"]),
        "equivalence_pct": float(s["equivalence_pct"]),
        "max_seconds": float(s["max_seconds"]),
        "loadtest": enabled and measured and THROUGHPUT in s["objectives"] and bool(s["loadtest"]),
        "use_smt": bool(config.get("use_smt", False)),
    }


def objective_rows(s: dict) -> list[dict]:
    """One row per question: ``latency`` for each batch size (named ``latency b16``),
    ``throughput`` once."""
    out = []
    for o in s["objectives"]:
        if o == LATENCY:
            out += [{"objective": o, "batch": b, "name": f"{o} b{b}"} for b in s["batch_sizes"]]
        else:
            out.append({"objective": o, "batch": None, "name": o})
    return out
