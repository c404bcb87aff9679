"""The ``packing`` config key resolved into jobs (docs/packing.md): the core budgets, the
measurement jobs of PackRat's question (one per model, optimization, budget and batch), the
configurations a job measures (the fat instance and the optimizer's candidates) and the
interference profile's jobs (groups of identical instances on a budget). Pure planning: the
optimizer over the measured cells is ``analysis.packing`` and ``analysis.planner``."""

from __future__ import annotations

from collections.abc import Iterable

from numa_effects.plan import placement
from numa_effects.plan.settings import with_defaults

BASELINE_PLACEMENT = "sequential"  # the placement whose cells the optimizer predicts from

BUDGET_NAMES = ("node", "all")


def budgets(topo, names: Iterable[str | int] = BUDGET_NAMES, use_smt: bool = False) -> dict:
    """{cores: [names]} of the requested budgets on ``topo``: ``node`` = node 0's usable cores,
    ``all`` = every usable core, an integer as it is; equal core counts are one budget."""
    out: dict[int, list[str]] = {}
    for name in names:
        if name == "node":
            cores = len(topo.node_cpus(topo.nodes[0], use_smt))
        elif name == "all":
            cores = len(topo.usable_cpus(use_smt))
        else:
            cores = int(name)
        out.setdefault(cores, []).append(str(name))
    return dict(sorted(out.items()))


def budget_nodes(topo, budget: int, use_smt: bool = False) -> list[tuple[int, int]]:
    """[(node, cores)] of the nodes holding the first ``budget`` cores in ``sequential`` order."""
    order = topo.usable_cpus(use_smt)[: int(budget)]
    out = [(n, sum(1 for c in order if topo.node_of(c) == n)) for n in topo.nodes]
    return [(n, k) for n, k in out if k > 0]


def candidates(row: dict) -> list[tuple[str, int, dict]]:
    """(name, rank, candidate) of a ``choices`` row's candidates, by the names its records and
    tables use: ``fat`` for the fat instance, else ``plan``, ``plan2``, ... by rank (a row of
    before the candidates, one plan, is its own candidate)."""
    cands = row.get("candidates")
    if cands is None:
        cands = [row] if row.get("instances") else []
    out = []
    for i, c in enumerate(cands):
        name = "fat" if c.get("is_fat") else ("plan" if i == 0 else f"plan{i + 1}")
        out.append((name, i, c))
    return out


def configurations(row: dict) -> dict[str, dict]:
    """The configurations a packing job measures for one ``choices`` row, by name: ``fat`` (one
    instance of every budget core and the whole batch) and each other ``candidates``' one,
    each ``{"instances": [(threads, batch)], "nodes": [budget node index] or None}``."""
    out = {"fat": {"instances": [(int(row["budget"]), int(row["batch"]))], "nodes": None}}
    for name, _, cand in candidates(row):
        if name == "fat":
            continue
        inst = cand["instances"]
        nodes = [int(x.get("node", 0)) for x in inst]
        out[name] = {
            "instances": [(int(x["threads"]), int(x["batch"])) for x in inst],
            "nodes": None if any(n < 0 for n in nodes) else nodes,
        }
    return out


def profile_threads(given, threads: list[int], budget: int) -> list[int]:
    """Thread counts whose interference is measured on ``budget`` cores (room for two
    instances): ``auto`` = the grid's powers of two (its smallest when none is)."""
    if given in (None, "auto"):
        pw = [t for t in threads if t & (t - 1) == 0]
        given = pw or sorted(threads)[:1]
    return sorted({int(t) for t in given if 2 * int(t) <= budget})


def profile_instances(given, threads: int, budget: int) -> list[int]:
    """Group sizes k measured for ``threads``-thread instances on ``budget`` cores: ``auto`` =
    2, 4, 8, ... and the most that fit."""
    most = budget // threads
    if given in (None, "auto"):
        given = [*(2**i for i in range(1, most.bit_length())), most]
    return sorted({int(k) for k in given if 2 <= int(k) <= most})


def profile_plan(topo, budget: int, threads: int, k: int, use_smt: bool):
    """``k`` instances of ``threads`` threads packed on ``budget`` cores (``placement.pack``)."""
    return placement.pack(topo, [threads] * k, budget, use_smt)


def profiles(s: dict, topo, given: dict) -> list[dict]:
    """{budget, threads, instances: [k, ...]} of every profile job of one (model, opt); a group
    whose CPU sets a smaller budget already measures is not measured again."""
    out, seen = [], set()
    for c in s["budgets"]:
        for t in profile_threads(given.get("threads"), s["threads"], c):
            ks = []
            for k in profile_instances(given.get("instances"), t, c):
                got = profile_plan(topo, c, t, k, s["use_smt"])  # a list, or why it does not fit
                key = tuple(p.cpus for p in got) if isinstance(got, list) else None
                if key is not None and key not in seen:
                    seen.add(key)
                    ks.append(k)
            if ks:
                out.append({"budget": c, "threads": t, "instances": ks})
    return out


INTERFERENCE_DEFAULTS = {
    "enabled": True,
    "threads": "auto",
    "instances": "auto",
    "batch": "auto",
    "max_seconds": None,
}
DEFAULTS = {
    "enabled": "auto",
    "budgets": list(BUDGET_NAMES),
    "optimizations": None,
    "max_seconds": 10,
    "measure_plans": 2,
    "interference": INTERFERENCE_DEFAULTS,
}


def settings(config: dict, topo, threads: list[int], profile: bool = False) -> dict:
    """The resolved ``packing`` config key of a checked config (config/README.md, "Packing"),
    with ``budgets`` ({cores: [names]}), ``caps`` ({cores: the cores of each of its nodes}) and
    the interference profile's jobs (``profiles``)."""
    s = with_defaults(config.get("packing") or {}, DEFAULTS)
    use_smt = bool(config.get("use_smt", False))
    # the grid measures the cells packing predicts from
    measured = BASELINE_PLACEMENT in (config.get("placements") or ()) and not config.get("import")
    enabled = s["enabled"]
    if enabled == "auto":
        enabled = len(set(threads)) >= 2 and measured
    opts = s["optimizations"] or list(config.get("optimizations", ()))[:1]
    batch_sizes = sorted({int(b) for b in config.get("batch_sizes", ())})
    out = {
        "enabled": bool(enabled),
        "budgets": budgets(topo, s["budgets"], use_smt),
        "optimizations": opts,
        "models": list(config.get("models", ())),
        "batch_sizes": batch_sizes,
        "threads": sorted(set(threads)),
        "use_smt": use_smt,
        "max_seconds": float(s["max_seconds"]),
        "measure_plans": int(s["measure_plans"]),
    }
    out["caps"] = {c: [k for _, k in budget_nodes(topo, c, use_smt)] for c in out["budgets"]}
    ig = with_defaults(s["interference"], INTERFERENCE_DEFAULTS)
    batch = ig["batch"]
    if batch == "auto":
        batch = batch_sizes[(len(batch_sizes) - 1) // 2] if batch_sizes else 1
    # the profile also serves the deploy answer's predictions (``profile``: it is measured)
    on = bool(ig["enabled"]) and (out["enabled"] or profile) and measured
    out["interference"] = {
        "enabled": on,
        "batch": int(batch),
        "max_seconds": float(ig["max_seconds"] or out["max_seconds"]),
        "profiles": profiles(out, topo, ig) if on else [],
    }
    return out


def jobs(s: dict) -> list[dict]:
    """One measurement job per (model, opt, budget, batch): its wildcards."""
    if not s["enabled"]:
        return []
    return [
        {"model": m, "opt": o, "budget": c, "batch_size": b}
        for m in s["models"]
        for o in s["optimizations"]
        for c in s["budgets"]
        for b in s["batch_sizes"]
    ]


def interference_jobs(s: dict) -> list[dict]:
    """One profile job per (model, opt, budget, threads): its wildcards and group sizes."""
    if not s["interference"]["enabled"]:
        return []
    return [
        {"model": m, "opt": o, **p, "instances": list(p["instances"])}
        for m in s["models"]
        for o in s["optimizations"]
        for p in s["interference"]["profiles"]
    ]


def profile_cost(s: dict, replicates: int) -> dict:
    """What the profile adds: jobs, configurations, processes, and their timed seconds at most."""
    jobs_ = interference_jobs(s)
    configs = sum(1 + len(j["instances"]) for j in jobs_) * int(replicates)
    processes = sum(1 + sum(j["instances"]) for j in jobs_) * int(replicates)
    cap = s["interference"]["max_seconds"] if jobs_ else 0.0
    return {
        "jobs": len(jobs_),
        "configurations": configs,
        "processes": processes,
        "max_timed_s": configs * cap,
    }
