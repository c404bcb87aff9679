"""The deploy answer's plan (docs/deploy.md): from the isolated profiles and the interference
profile, the configurations each objective row measures (its best predictions and baselines),
each configuration once."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from numa_effects import stats
from numa_effects.analysis import interference, packing
from numa_effects.analysis.planner import Planner
from numa_effects.plan import allocators as allocators_mod
from numa_effects.plan import deploy, launchers
from numa_effects.plan import grid as grid_mod
from numa_effects.plan import placement as placement_mod
from numa_effects.plan.optimizations import EAGER
from numa_effects.plan.packing import BASELINE_PLACEMENT
from numa_effects.plan.topology import Topology


@dataclass(frozen=True)
class Instance:
    cpus: tuple[int, ...]
    threads: int
    batch: int
    mem_nodes: tuple[int, ...]  # () = local allocation (no policy)

    def slot(self) -> launchers.Slot:
        return launchers.Slot(self.cpus, self.threads, self.mem_nodes)

    def to_dict(self, topo: Topology) -> dict:
        out = {**asdict(self), "cpus": list(self.cpus), "mem_nodes": list(self.mem_nodes)}
        return out | {"nodes": list(self.slot().nodes(topo)), "cores": self.slot().cores(topo)}


@dataclass(frozen=True)
class Config:
    model: str
    opt: str
    allocator: str
    instances: tuple[Instance, ...]

    def key(self, topo: Topology) -> tuple:
        """What makes two configurations one measurement: the same process per instance and
        the same binding in effect (local allocation on one node = bound to it)."""

        def mem(i: Instance) -> tuple:
            nodes = i.slot().nodes(topo)
            return i.mem_nodes or (nodes if len(nodes) == 1 else ("local", *nodes))

        insts = sorted((tuple(sorted(i.cpus)), i.threads, i.batch, mem(i)) for i in self.instances)
        return (self.model, self.opt, self.allocator, tuple(insts))

    def to_dict(self, topo: Topology) -> dict:
        insts = [i.to_dict(topo) for i in self.instances]
        slots = [i.slot() for i in self.instances]
        args = launchers.run_cpu_args(slots, topo)
        return {
            "model": self.model,
            "opt": self.opt,
            "allocator": self.allocator,
            "label": packing.label(self.instances),
            "instances": insts,
            "nodes": sorted({n for d in insts for n in d["nodes"]}),
            "run_cpu": " ".join(args) if args else "",  # its arguments (launch.py's line)
            "notes": launchers.notes(slots, topo),
        }


class Configs(dict):
    """Id (``c1``, ...) -> configuration to measure, each once (``add`` returns its id)."""

    def __init__(self, topo: Topology):
        super().__init__()
        self.topo, self.ids = topo, {}

    def add(self, config: Config) -> str:
        cid = self.ids.setdefault(config.key(self.topo), f"c{len(self) + 1}")
        self.setdefault(cid, config)
        return cid


SPREAD = "interleave"  # the placement whose cells describe an instance across nodes


def profiles(cells, model: str, s: dict, placement: str = BASELINE_PLACEMENT) -> dict:
    """{(opt, allocator): (latency table, alone table)} of the measured ``placement`` cells (the
    alone table has every point of the latency table)."""
    out = {}
    for opt in s["optimizations"]:
        for alloc in s["allocators"]:
            alone = packing.alone_table(cells, model, opt, placement, alloc)
            if alone:
                out[(opt, alloc)] = (packing.latencies(alone), alone)
    return out


def curve_for(curves: dict, model: str, opt: str) -> interference.Curve:
    """The interference model of (model, opt), else of another profiled opt, else ``NONE``."""
    same = [c for (m, _), c in sorted(curves.items()) if m == model]
    return curves.get((model, opt)) or (same[0] if same else interference.NONE)


def node_caps(topo: Topology, use_smt: bool) -> list[tuple[int, int]]:
    """[(node, usable cores)] of every node with CPUs (memory-only nodes hold no instance)."""
    return [(n, len(topo.node_cpus(n, use_smt))) for n in topo.nodes]


def place(topo: Topology, parts: list[tuple[int, int, int]], use_smt: bool):
    """Instances of ``[(threads, batch, node)]`` packed on their nodes, or why they do not fit."""
    budget = len(topo.usable_cpus(use_smt))
    threads, nodes = [p[0] for p in parts], [p[2] for p in parts]
    got = placement_mod.pack(topo, threads, budget, use_smt, nodes)
    if isinstance(got, placement_mod.NotApplicable):
        return got.reason
    placed = zip(got, parts, strict=True)
    return tuple(Instance(p.cpus, p.threads, b, p.mem_nodes) for p, (_, b, _) in placed)


# PackRat's dynamic programme over (cores, images) up to this many cores x images; beyond it (a
# large batch on a large server) the search takes k identical instances (below), which is what
# a deployment runs and what the programme finds there as well
DP_LIMIT = 4096


def latency_predictions(prof: dict, curves: dict, topo: Topology, s: dict, model: str, batch: int):
    """[(latency s, low, high, opt, allocator, [(threads, batch, node)])], best first: the
    planner's best of each instance count per (optimization, allocator)."""
    caps = node_caps(topo, s["use_smt"])
    if sum(k for _, k in caps) * batch > DP_LIMIT:
        return even_latency_predictions(prof, curves, caps, model, batch)
    out = []
    for (opt, alloc), (table, alone) in prof.items():
        planner = Planner(table, [k for _, k in caps], curve_for(curves, model, opt), alone, batch)
        for choice in planner.candidates(batch, max(1, s["candidates"])):
            where = first_nodes([i.node for i in choice.instances], caps)
            parts = [(i.threads, i.batch, n) for i, n in zip(choice.instances, where, strict=True)]
            out.append((choice.latency_s, choice.ci_low_s, choice.ci_high_s, opt, alloc, parts))
    return sorted(out, key=lambda x: x[0])


def first_nodes(indexes: list[int], caps: list[tuple[int, int]]) -> list[int | None]:
    """The nodes of a plan's instances (indexes into ``caps``; -1: across nodes, None here) moved
    to the lowest-numbered nodes of their size: those are interchangeable, and read best."""
    used = sorted({i for i in indexes if i >= 0})
    move: dict[int, int] = {}
    for size in sorted({caps[i][1] for i in used}):
        same = [i for i in used if caps[i][1] == size]
        free = [j for j, (_, c) in enumerate(caps) if c == size]
        move.update(zip(same, free[: len(same)], strict=True))
    return [caps[move[i]][0] if i >= 0 else None for i in indexes]


def even_latency_predictions(prof: dict, curves: dict, caps, model: str, batch: int):
    """The request split into k identical instances (k x b = B) spread as evenly as the nodes
    hold them, each at its alone latency times its slowdown; the best of each k, best first."""
    best: dict = {}
    for (opt, alloc), (table, alone) in prof.items():
        curve = curve_for(curves, model, opt)
        for t, b in table:
            if batch % b:
                continue
            k = batch // b
            per = _spread(k, [(n, c // t) for n, c in caps])
            if per is None:
                continue
            x = (max(m for _, m in per) - 1) * t
            value, lo, hi = interference.instance_interval(alone[(t, b)], x, curve)
            parts = [(t, b, n) for n, m in per for _ in range(m)]
            if k not in best or value < best[k][0]:
                best[k] = (value, lo, hi, opt, alloc, parts)
    return sorted(best.values(), key=lambda x: x[0])


def _spread(k: int, slots: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
    """[(node, instances)] of k instances spread evenly over ``slots`` (None: they do not fit)."""
    if k > sum(m for _, m in slots):
        return None
    out = {n: 0 for n, _ in slots}
    room = dict(slots)
    for _ in range(k):
        n = min((n for n in out if out[n] < room[n]), key=lambda n: (out[n], n))
        out[n] += 1
    return [(n, m) for n, m in out.items() if m]


def throughput_predictions(prof: dict, curves: dict, topo: Topology, s: dict, model: str, cells):
    """[(images/s, low, high, opt, allocator, parts)], best first: the best k identical instances
    per node of each measured (threads, batch), their p99 within ``latency_bound_ms`` if set."""
    caps = node_caps(topo, s["use_smt"])
    bound = s.get("latency_bound_ms")
    out = []
    for (opt, alloc), (table, alone) in prof.items():
        curve = curve_for(curves, model, opt)
        tails = _tail_ratios(cells, model, opt, alloc) if bound else {}
        for t, b in sorted(table):
            a, best = alone[(t, b)], None
            for k in range(1, max(c for _, c in caps) // t + 1):
                value, lo, hi = interference.instance_interval(a, (k - 1) * t, curve)
                if bound and value * tails.get((t, b), 1.0) * 1e3 > bound:
                    continue
                per = [(n, min(k, c // t)) for n, c in caps if c // t >= 1]
                images = sum(m for _, m in per) * b
                if best is None or images / value > best[0]:
                    r = stats.rates(images, value, lo, hi)
                    parts = [(t, b, n) for n, m in per for _ in range(m)]
                    best = (r["ips"], r["ci_low_ips"], r["ci_high_ips"], opt, alloc, parts)
            if best:
                out.append(best)
    return sorted(out, key=lambda x: -x[0])


def predictions(row: dict, prof: dict, curves: dict, topo: Topology, s: dict, model: str, cells):
    """The objective row's predictions, best first."""
    if row["objective"] == deploy.LATENCY:
        return latency_predictions(prof, curves, topo, s, model, row["batch"])
    return throughput_predictions(prof, curves, topo, s, model, cells)


def _tail_ratios(cells, model: str, opt: str, alloc: str) -> dict:
    """{(threads, batch): p99 / median} of the cells: a request's tail relative to its median."""
    sel = packing.ok_cells(cells, model, opt, BASELINE_PLACEMENT, alloc)
    out = {}
    for r in sel.itertuples(index=False):
        med, p99 = getattr(r, "latency_median_ms", math.nan), getattr(r, "latency_p99_ms", math.nan)
        if med > 0 and p99 == p99:
            out[(int(r.threads), int(r.batch_size))] = float(p99) / float(med)
    return out


def baseline_allocator(name: str, fallback: str) -> tuple[str, list[str]]:
    """(allocator to run, notes) of a baseline: its rule's, else the run's baseline allocator."""
    rule = deploy.BASELINES[name].allocator
    alloc, why = rule() if callable(rule) else rule
    alloc, notes = alloc or fallback, [why]
    entry = allocators_mod.get(alloc)
    missing = allocators_mod.skip_reason(entry, allocators_mod.locate(entry))
    if missing:
        notes.append(f"{alloc} cannot run here ({missing}): measured with {fallback}")
        alloc = fallback
    return alloc, notes


def layout_baseline(name: str, row: dict, topo: Topology, s: dict, model: str, fallback: str):
    """(Config or None, notes or why not measured) of a layout baseline: a request on its first
    instance (latency), or every instance at the grid's largest batch (throughput)."""
    try:
        slots = deploy.BASELINES[name].layout(topo)
    except launchers.NotRunnable as exc:
        return None, [str(exc)]
    alloc, notes = baseline_allocator(name, fallback)
    notes = [*(f"layout: {n}" for n in launchers.notes(slots, topo)), *notes]
    if row["objective"] == deploy.LATENCY:
        used = slots[:1]
        if len(slots) > 1:
            notes.insert(0, f"the request runs on instance 0 of {len(slots)}")
        batch = row["batch"]
    else:
        used, batch = slots, s["throughput_batch"]
    inst = tuple(Instance(sl.cpus, sl.threads, batch, sl.mem_nodes) for sl in used)
    return Config(model, EAGER, alloc, inst), notes


def packrat_baseline(row: dict, prof: dict, topo: Topology, s: dict, model: str, fallback: str):
    """PackRat's plan: its optimizer on the eager profile, interference not counted."""
    key = (EAGER, fallback)
    if key not in prof:
        return None, [f"no isolated profile of float32 eager with {fallback} in the grid"]
    quiet = {(model, EAGER): interference.NONE}
    plain = {**s, "candidates": 1, "latency_bound_ms": None}
    preds = predictions(row, {key: prof[key]}, quiet, topo, plain, model, None)
    if not preds:
        return None, ["no configuration of measured cells serves it"]
    got = place(topo, preds[0][5], s["use_smt"])
    if isinstance(got, str):
        return None, [got]
    return Config(model, EAGER, fallback, got), ["isolated profiles, no interference"]


def _candidate(configs: Configs, model: str, pred, topo: Topology, s: dict) -> dict | None:
    value, lo, hi, opt, alloc, parts = pred
    got = place(topo, parts, s["use_smt"])
    if isinstance(got, str):
        return None
    cid = configs.add(Config(model, opt, alloc, got))
    return {"config": cid, "predicted": value, "predicted_low": lo, "predicted_high": hi}


CLOSE = 0.10  # a runner-up is measured when predicted within 10 % of the best


def close(top, pred, row) -> bool:
    """Is a runner-up within ``CLOSE`` of the predicted best, or their intervals overlapping (a
    NaN bound compares false)?"""
    (v0, lo0, hi0, *_), (v, lo, hi, *_) = top, pred
    if row["objective"] == deploy.LATENCY:
        return v <= v0 * (1 + CLOSE) or lo <= hi0
    return v >= v0 / (1 + CLOSE) or hi >= lo0


def predict(
    config: Config, objective: str, prof: dict, curves: dict, topo: Topology, spread=None
) -> dict:
    """Any configuration's prediction, {} where the profiles lack a point: each instance at its
    (threads, batch) of its opt and allocator (else of its opt with another allocator, said in
    ``basis``; across
    nodes from the ``spread`` cells) times the slowdown of its nodes' other busy cores."""
    own = (config.opt, config.allocator)
    key = own if own in prof else min((k for k in prof if k[0] == config.opt), default=None)
    if key is None:  # never another optimization's profile: it measures another model
        return {}
    points = []
    for i in config.instances:
        on = i.slot().nodes(topo)
        table, alone = prof[key] if len(on) == 1 else (spread or {}).get(key, ({}, {}))
        if (i.threads, i.batch) not in table:
            return {}
        points.append((alone[(i.threads, i.batch)], on))
    busy: dict[int, int] = {}
    for i, (_, on) in zip(config.instances, points, strict=True):
        for n in on:
            busy[n] = busy.get(n, 0) + i.threads // len(on)
    curve = curve_for(curves, config.model, key[0])
    parts = []
    for i, (a, on) in zip(config.instances, points, strict=True):
        x = max(busy[n] - i.threads // len(on) for n in on)
        parts.append(interference.instance_interval(a, x, curve))
    basis = "" if key == own else f"predicted from {key[0]}/{key[1]}"
    if objective != deploy.LATENCY:  # images per second: the slow bound gives the low rate
        per = zip(config.instances, parts, strict=True)
        parts = [(i.batch / v, i.batch / hi, i.batch / lo) for i, (v, lo, hi) in per]
    agg = max if objective == deploy.LATENCY else sum
    value, lo, hi = (agg(column) for column in zip(*parts, strict=True))
    return {"predicted": value, "predicted_low": lo, "predicted_high": hi, "basis": basis}


def objective(row, model, prof, curves, cells, topo, s, configs, fallback, spread=None) -> dict:
    """One objective row of the plan: its candidates (predicted, best first), baselines and the
    configurations that split the predicted best's gain by cause (``factors``)."""
    preds = predictions(row, prof, curves, topo, s, model, cells)
    cands, seen = [], set()
    for pred in preds:
        if len(cands) >= s["candidates"] or (cands and not close(preds[0], pred, row)):
            break
        got = _candidate(configs, model, pred, topo, s)
        if got and got["config"] not in seen:
            seen.add(got["config"])
            cands.append(got)
    bases, layouts = [], {}
    for name in s["baselines"]:
        if row["objective"] not in deploy.BASELINES[name].objectives:
            bases.append({"baseline": name, "config": None, "notes": ["not this objective's"]})
            continue
        if name == "packrat":
            config, notes = packrat_baseline(row, prof, topo, s, model, fallback)
        else:
            config, notes = layout_baseline(name, row, topo, s, model, fallback)
        cid = configs.add(config) if config else None
        got = predict(config, row["objective"], prof, curves, topo, spread) if config else {}
        if got.get("basis"):
            notes = [*notes, got["basis"]]
        bases.append({"baseline": name, "config": cid, "notes": notes, **got})
        layouts[name] = config.instances if config else None
    out = {**row, "model": model, "candidates": cands, "baselines": bases}
    top = configs[cands[0]["config"]] if cands else None
    return out | {"factors": factors(top, layouts, configs) if top else []}


def factors(top: Config, layouts: dict, configs: Configs) -> list[dict]:
    """The configurations beside ``top`` that each change one cause: float32 eager
    (``optimization``), glibc as it comes (``allocator``), each launcher's layout at ``top``'s
    optimization and allocator (``layout``); each added to ``configs`` (once)."""

    def at(opt: str, alloc: str, instances) -> str:
        return configs.add(Config(top.model, opt, alloc, instances))

    out = [
        {"factor": "optimization", "config": at(EAGER, top.allocator, top.instances)},
        {"factor": "allocator", "config": at(top.opt, allocators_mod.GLIBC, top.instances)},
    ]
    for name, instances in layouts.items():
        if instances:
            cid = at(top.opt, top.allocator, instances)
            out.append({"factor": "layout", "baseline": name, "config": cid})
    return out


def plan(cells, curves: dict, topo: Topology, s: dict) -> dict:
    """The deploy plan: ``objectives`` (one per row and model) and ``configurations`` (id ->
    the configuration, each measured once)."""
    configs = Configs(topo)
    s = from_cells(s, cells) if s.get("imported") else s
    fallback = allocators_mod.baseline(s["allocators"])
    rows = []
    for model in s["models"]:
        prof = profiles(cells, model, s)
        spread = profiles(cells, model, s, SPREAD)
        for row in deploy.objective_rows(s):
            rows.append(
                objective(row, model, prof, curves, cells, topo, s, configs, fallback, spread)
            )
    configurations = {cid: c.to_dict(topo) for cid, c in configs.items()}
    for cid, c in configs.items():  # a prediction beyond the interference profile says so
        where = [(i.threads, i.slot().nodes(topo)[0]) for i in c.instances]
        curve = curve_for(curves, c.model, c.opt)
        configurations[cid]["notes"] += interference.caveats(curve, where)
    out = {"objectives": rows, "configurations": configurations, "baseline_allocator": fallback}
    return out | {"topology": topo.summary()}


def from_cells(s: dict, cells) -> dict:
    """An import's settings: the models, optimizations, allocators and batches its cells have."""
    cells = grid_mod.keyed(cells)
    batches = sorted({int(b) for b in cells["batch_size"]})
    axes = {"models": "model", "optimizations": "opt", "allocators": "allocator"}
    found = {key: sorted(set(cells[col])) for key, col in axes.items()}
    return {**s, **found, "batch_sizes": batches, "throughput_batch": max(batches)}
