"""What a run costs in wall time, estimated before any job from the plan, and the grid shrunk to
a ``budget`` (minutes; docs/deploy.md, "Time as an input").

A measuring process costs its start, the model's build, the optimization's preparation, the
warm-up and timed windows the settings bound, and the inspection; a job adds Snakemake's start
of its script. A step's latency is the model's FLOPs over the CPU's theoretical peak
(``plan.cpu``) at each optimization's ``EFFICIENCY``. The constants were measured on a 2-vCPU
AMD EPYC (benchmarks/results/); a ``Scale`` fits them to this machine: what a short probe
(``measure.calibrate``) took against their prediction for the same work, fixed costs and step
times apart. The run's progress line corrects its ETA by what jobs took.

With ``budget`` the config is shrunk one ``STEPS`` entry at a time until the estimate fits,
with the deploy answer at its fewest rounds, which then get the time left (``_fill_rounds``).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import importlib.metadata
import json
import math
import platform
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from numa_effects.plan import deploy, grid, narrow, packing, peaks, stages
from numa_effects.plan import optimizations as opts
from numa_effects.plan import settings as settings_mod
from numa_effects.plan.durations import HOURS_FROM_MIN, duration_text
from numa_effects.plan.optimizations import EAGER

JOB_S = 0.5  # Snakemake's start of a script job (Python, the package)
START_S = 1.5  # a measuring process: numactl, Python, import torch, the workload's module
BUILD_S = 0.5  # a torchvision model built with random weights
INSPECT_FIXED_S = 0.3  # the inspection's fixed part (oneDNN verbose, the verification)
PEAK_JOB_S = 5.0  # one window of a dtype's peak (plan.peaks): its kernels' probe, its steps
REPORT_S = 15.0  # the tables, the figures' data and the page
FIGURE_S = 0.8  # one figure drawn
# preparation per optimization, seconds: tracing, compiling at the first call
PREPARE_S = {EAGER: 0.0, "script": 0.8, "bf16": 9.0, "bf16_aot": 4.0, "bf16_eager": 0.5}
PREPARE_DEFAULT_S = 10.0  # an optimization not listed: a compiled one
# the fraction of one core's theoretical peak (at the base clock: a boosting core exceeds 1) a
# 1-thread step reaches at a large batch (resnet50, measured), what a batch of b keeps of it
# (b / (b + BATCH_HALF)), and what each doubling of the threads keeps
EFFICIENCY = {EAGER: 0.95, "script": 1.25, "bf16": 1.35, "bf16_aot": 1.3}
EFFICIENCY_DEFAULT = 0.9
BATCH_HALF = 0.6
THREAD_SCALING = 0.85
# GFLOP per image at 224 x 224 (2 x the multiply-adds torchvision lists)
GFLOP_PER_IMAGE = {
    "resnet18": 3.64,
    "resnet34": 7.34,
    "resnet50": 8.18,
    "resnet101": 15.7,
    "resnet152": 23.1,
}
GFLOP_DEFAULT = 8.18
PEAK_PER_CORE_DEFAULT = 50.0  # GFLOP/s float32 when the CPU's clock is unknown
ADAPTIVE_FACTOR = 1.2  # timed seconds beyond the minimum window, on a host that is not quiet
# set by the run's start (check_config.py --run: make run) when it is not a dry run: the parse
# may then probe this machine where no calibration is kept (``measure.calibrate``)
CALIBRATE_ENV = "NUMA_EFFECTS_CALIBRATE"
CALIBRATION = "logs/calibration.json"  # the probe's timings, within the results folder


@dataclass(frozen=True)
class Scale:
    """This machine against the constants: ``fixed`` multiplies every fixed cost (a process's
    start, build, preparation, inspection; a job's start; the report), ``step`` every step's
    latency. ``calibrated`` False: the constants as they are."""

    fixed: float = 1.0
    step: float = 1.0
    calibrated: bool = False


UNCALIBRATED = Scale()


def scale_of(raw: dict, caps) -> Scale:
    """The ``Scale`` of a probe's timings (``measure.calibrate``): its process's start and build
    over ``START_S + BUILD_S``, and the geometric mean over its thread counts of the median eager
    step at batch 1 over ``step_s``'s prediction."""
    fixed = (float(raw["start_s"]) + float(raw["build_s"])) / (START_S + BUILD_S)
    size = int(raw.get("image_size", 224))
    logs = [
        math.log(statistics.median(s) / step_s(raw["model"], EAGER, int(t), 1, size, caps))
        for t, s in raw["steps_s"].items()
    ]
    return Scale(fixed, math.exp(sum(logs) / len(logs)) if logs else 1.0, True)


def calibration_key(cpu_model: str) -> dict:
    """What a probe's timings hold for: this host, its CPU, the torch installed (not imported)
    and the probe's code (``measure/calibrate.py``)."""
    try:
        torch = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch = None
    probe = Path(__file__).resolve().parents[1] / "measure" / "calibrate.py"
    code = hashlib.sha256(probe.read_bytes()).hexdigest()[:16]
    return {"host": platform.node(), "cpu": cpu_model, "torch": torch, "code": code}


def kept_scale(results, caps) -> Scale:
    """The ``Scale`` of the timings kept in ``results`` for this machine, else uncalibrated:
    what the remeasure and progress lines' estimates read."""
    try:
        data = json.loads((Path(results) / CALIBRATION).read_text())
        same = caps is not None and data["key"] == calibration_key(caps.model_name)
        return scale_of(data, caps) if same else UNCALIBRATED
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError):
        return UNCALIBRATED


@dataclass
class Estimate:
    """Seconds by part of the run, and what a budget shrank."""

    parts: dict = field(default_factory=dict)
    jobs: int = 0
    shrunk: list = field(default_factory=list)
    scale: Scale | None = None  # None: the line does not say whether it is calibrated

    @property
    def total_s(self) -> float:
        return float(sum(self.parts.values()))

    def add(self, part: str, seconds: float, jobs: int = 0) -> None:
        self.parts[part] = self.parts.get(part, 0.0) + float(seconds)
        self.jobs += int(jobs)

    def line(self, budget_min: float | None = None) -> str:
        parts = ", ".join(f"{k} {v / 60:.1f}" for k, v in self.parts.items() if v > 0)
        long = self.total_s >= HOURS_FROM_MIN * 60
        hours = f"about {duration_text(self.total_s)}; " if long else ""
        said = {None: "", True: ", calibrated on this machine", False: ", uncalibrated"}
        calibrated = said[self.scale and self.scale.calibrated]
        text = (
            f"the whole run is estimated at {self.total_s / 60:.1f} min{calibrated} "
            f"({hours}{self.jobs} jobs; {parts} min)"
        )
        if budget_min:
            verdict = "within" if self.total_s <= budget_min * 60 else "OVER"
            text += f"; {verdict} the budget of {budget_min:g} min"
        return text


def step_s(model: str, opt: str, threads: int, batch: int, image_size: int, caps) -> float:
    """A step's predicted latency: FLOPs / (theoretical peak of ``threads`` cores in ``opt``'s
    dtype x efficiency)."""
    dtype = opts.OPTIMIZATIONS[opt].dtype
    gflop = GFLOP_PER_IMAGE.get(model, GFLOP_DEFAULT) * batch * (image_size / 224) ** 2
    peak = None
    if caps is not None:
        peak = caps.theoretical_peak(dtype, threads).get("theoretical_gflop_per_s")
    if not peak:
        peak = PEAK_PER_CORE_DEFAULT * threads * (2 if dtype == "bfloat16" else 1)
    scaling = THREAD_SCALING ** math.log2(max(1, threads)) * batch / (batch + BATCH_HALF)
    return gflop / (peak * EFFICIENCY.get(opt, EFFICIENCY_DEFAULT) * scaling)


def windows_s(settings: dict, step: float, cap_s: float | None = None) -> float:
    """Warm-up and timed seconds of one process under the timing settings (adaptive: the
    minimum windows, stretched by ``ADAPTIVE_FACTOR``, within the cap; fixed: the counts)."""
    s = settings_mod.with_defaults(settings)
    if s["protocol"] == "fixed":
        return (int(s["warmup"]) + int(s["fixed_iterations"])) * step
    warm = max(float(s["min_warmup_seconds"]), 3 * step)
    timed = max(float(s["min_timed_seconds"]), int(s["min_iterations"]) * step)
    cap = float(cap_s or s["max_seconds_per_cell"])
    floor = warm + int(s["min_iterations"]) * step  # always run
    return max(min(warm + timed * ADAPTIVE_FACTOR, cap), floor)


def process_s(
    opt: str,
    step: float,
    settings: dict,
    cap_s: float | None = None,
    instances: int = 1,
    cores: int = 1,
    inspect: bool = True,
    scale: Scale = UNCALIBRATED,
) -> float:
    """One measurement's wall seconds: its processes' start (``instances`` of them sharing
    ``cores`` CPUs while they import and build), preparation, windows and inspection; ``step``
    is already scaled, the fixed costs are scaled here."""
    starting = math.ceil(instances / max(1, cores))
    fixed = (START_S + BUILD_S + PREPARE_S.get(opt, PREPARE_DEFAULT_S)) * starting
    inspect_s = (INSPECT_FIXED_S * scale.fixed + 2 * step) if inspect else 0.3 * scale.fixed
    return fixed * scale.fixed + windows_s(settings, step, cap_s) + inspect_s


@dataclass(frozen=True)
class View:
    """What the estimate reads of a plan (the names are ``plan.build.Plan``'s), cheap to narrow
    to a shrunk config (``narrowed``): the budget's steps never plan a cell again."""

    config: dict
    topology: object
    cells: tuple  # the measured cells' keys
    drawn: tuple  # the cells the figures are planned from
    peak_windows: int
    per_cell: int  # processes per cell: the first stage, or the cap a second stage may reach
    replicates: int
    packing: dict
    packing_jobs: tuple
    interference_jobs: tuple
    deploy: dict
    measured: bool


def view(plan) -> View:
    """The estimate's view of a ``plan.build.Plan``."""
    return View(
        config=plan.config,
        topology=plan.topology,
        cells=tuple(plan.grid.cells),
        drawn=tuple(plan.figure_keys()),
        peak_windows=len(plan.peak_outputs()),
        per_cell=plan.two_stage["cap"] if plan.two_stage else plan.replicates,
        replicates=plan.replicates,
        packing=plan.packing,
        packing_jobs=tuple(plan.packing_jobs),
        interference_jobs=tuple(plan.interference_jobs),
        deploy=plan.deploy,
        measured=plan.measured,
    )


def narrowed(v: View, config: dict) -> View:
    """``v`` under ``config``, a shrunk copy of its own: the cells it still names, and the
    settings that follow from it (stages, peaks, packing, deploy) resolved as ``build`` does."""
    if not v.measured:
        return dataclasses.replace(v, config=config, deploy=deploy.settings(config, False))
    topo, keep = v.topology, narrow.keeps(config, v.topology)
    cells = tuple(k for k in v.cells if keep(k))
    windows = peaks.WINDOWS * len({narrow.peak_key(k) for k in cells}) if v.peak_windows else 0
    two = stages.settings(config)
    d = deploy.settings(config, measured=True)
    pk = packing.settings(config, topo, grid.thread_counts(config, topo), profile=d["measured"])
    return dataclasses.replace(
        v,
        config=config,
        cells=cells,
        drawn=tuple(k for k in v.drawn if keep(k)),
        peak_windows=windows,
        per_cell=two["cap"] if two else v.replicates,
        packing=pk,
        packing_jobs=tuple(packing.jobs(pk)),
        interference_jobs=tuple(packing.interference_jobs(pk)),
        deploy=d,
    )


@dataclass(frozen=True)
class Machine:
    """What the estimate knows of the machine: its capabilities (None: the clock is unknown)
    and its ``Scale``."""

    caps: object = None
    scale: Scale = UNCALIBRATED


def estimate(plan, caps=None, scale: Scale | None = None) -> Estimate:
    """The run's estimate from a ``plan.build.Plan`` or its ``View`` (``caps`` None: the clock
    is unknown; ``scale`` None: uncalibrated, and the line does not say so)."""
    v = plan if isinstance(plan, View) else view(plan)
    m, f = Machine(caps, scale or UNCALIBRATED), (scale or UNCALIBRATED).fixed
    est = Estimate(scale=scale)
    for key in v.cells:
        step = _step(v, m, key.opt, key.threads, key.batch_size, key.model)
        one = process_s(key.opt, step, v.config, scale=m.scale)
        est.add("cells", v.per_cell * (JOB_S * f + one), v.per_cell)
    est.add("peaks", v.peak_windows * (JOB_S + PEAK_JOB_S) * f, jobs=v.peak_windows)
    _packing(est, v, m)
    _deploy(est, v, m)
    _loadtest(est, v, m)
    est.add("tables and report", after_s(v) * f, jobs=8 + (len(v.drawn) // 4 + 10) // 4)
    return est


def after_s(plan) -> float:
    """Seconds of what follows the measuring jobs, uncalibrated: the tables, figures and page."""
    return REPORT_S + FIGURE_S * (len(plan.drawn) // 4 + 10)


def _step(plan, m: Machine, opt: str, threads: int, batch: int, model: str | None = None):
    """``step_s`` at the plan's image size, of ``model`` or else the grid's first, scaled."""
    model = model or plan.config["models"][0]
    return step_s(model, opt, threads, batch, plan.config["image_size"], m.caps) * m.scale.step


def _cores(plan) -> int:
    return max(1, len(plan.topology.usable_cpus()))


def _packing(est: Estimate, plan, m: Machine) -> None:
    ig, cores, cfg, f = plan.packing["interference"], _cores(plan), plan.config, m.scale.fixed
    for job in plan.interference_jobs:
        step = _step(plan, m, job["opt"], job["threads"], ig["batch"])
        for k in (1, *job["instances"]):
            one = process_s(job["opt"], step, cfg, ig["max_seconds"], k, cores, False, m.scale)
            est.add("interference", plan.replicates * one)
        est.add("interference", JOB_S * f, jobs=1)
    cap, configs = plan.packing["max_seconds"], 1 + plan.packing["measure_plans"]
    for job in plan.packing_jobs:
        step = _step(plan, m, job["opt"], job["budget"], job["batch_size"])
        one = process_s(job["opt"], step, cfg, cap, 2, cores, False, m.scale)
        est.add("packing", JOB_S * f + plan.replicates * configs * one, jobs=1)


def deploy_configurations(s: dict) -> tuple[float, float]:
    """A priori count of the configurations the deploy job measures (its plan is made after the
    cells): (searched, plain). Per objective row the best prediction and a runner-up about every
    other time; about two distinct eager baselines per row, the throughput row sharing one."""
    rows = len(deploy.objective_rows(s))
    searched = rows * (1 + (0.5 if s["candidates"] > 1 else 0.0))
    searched += rows * (s["allocators"] != ["default"])  # the best with glibc as it comes
    plain = max(0, rows * min(2, len(s["baselines"])) - (1 if rows > 1 else 0))
    return searched, float(plain)


def _dearest(plan) -> str:
    """The dearest optimization to prepare among the answer's whose cells run here (the answer
    is searched among them): what a searched configuration costs to start."""
    ran = {key.opt for key in plan.cells} & set(plan.deploy["optimizations"] or ()) or {EAGER}
    return max(ran, key=lambda o: PREPARE_S.get(o, PREPARE_DEFAULT_S))


def _deploy(est: Estimate, plan, m: Machine) -> None:
    """The deploy job's ``max_rounds`` blocks (``measure.slicer``): each starts every
    configuration's processes at once, sharing the cores while they import, build and prepare,
    warms each up, then times each for ``max_seconds`` (at least two slices of one step). A
    throughput configuration runs an instance per core at one thread, a latency one a process
    on every core."""
    s = plan.deploy
    if not s.get("measured"):
        return
    cores, rows = _cores(plan), deploy.objective_rows(s)
    searched, plain = deploy_configurations(s)
    dear = _dearest(plan)  # a searched configuration's; a baseline: eager
    warmup = max(2, int(settings_mod.with_defaults(plan.config)["warmup"]))  # deploy.run's
    starting = timed = 0.0
    for row in rows:
        tp = row["batch"] is None
        batch, threads, k = (s["throughput_batch"], 1, cores) if tp else (row["batch"], cores, 1)
        for opt, n in ((dear, searched / len(rows)), (EAGER, plain / len(rows))):
            step = _step(plan, m, opt, threads, batch)
            starting += n * k * (START_S + BUILD_S + PREPARE_S.get(opt, PREPARE_DEFAULT_S))
            timed += n * (warmup * step + max(float(s["max_seconds"]), 2 * step))
    block = starting / cores * m.scale.fixed + timed
    est.add("deploy", JOB_S * 3 * m.scale.fixed + int(s["max_rounds"]) * block, jobs=3)


LOADTEST_START_S = 3.0  # the load test's imports (LoadGen, pandas) and the answer's tables
QUERY_S = 0.02  # a query's round trip: LoadGen, the serving thread, the instance's pipe


def _loadtest(est: Estimate, plan, m: Machine) -> None:
    """The load test of the throughput answer (``deploy.LOADTEST``) and its figure: per role a
    warm start (the searched configuration's dearest optimization, the baseline's eager), an
    Offline run of ``deploy.max_seconds`` and Server runs as long as their queries take at a
    quarter of the capacity of all cores (the bisection halves a rate that misses the bound),
    within ``deploy.max_seconds`` and ``max_duration`` x it."""
    s, t = plan.deploy, deploy.LOADTEST
    if not s.get("loadtest"):
        return
    step = _step(plan, m, EAGER, _cores(plan), s["throughput_batch"])
    least, queries_s = s["max_seconds"], 4 * t["min_queries"] * (step + QUERY_S * m.scale.fixed)
    each = min(max(least, queries_s / s["throughput_batch"]), t["max_duration"] * least)
    dear = _dearest(plan)
    starts = sum(START_S + BUILD_S + PREPARE_S.get(o, PREPARE_DEFAULT_S) for o in (dear, EAGER))
    runs = t["roles"] * (least + t["server_runs"] * each + t["warm_steps"] * step)
    fixed = 2 * JOB_S + LOADTEST_START_S + FIGURE_S + starts
    est.add("loadtest", fixed * m.scale.fixed + runs, jobs=2)


def jobs_per_part(plan) -> dict[str, int]:
    """How many measuring jobs each part of ``estimate`` counts."""
    v = view(plan)
    return {
        "cells": len(v.cells) * v.per_cell,
        "peaks": v.peak_windows,
        "interference": len(plan.interference_jobs),
        "packing": len(plan.packing_jobs),
        "deploy": 1,
    }


def deploy_seconds(plan, caps=None) -> float:
    """The deploy job's estimate alone (``remeasure``'s default for it)."""
    est = Estimate()
    _deploy(est, plan if isinstance(plan, View) else view(plan), Machine(caps))
    return est.total_s


def _power_of(t: int, base: int) -> bool:
    while t % base == 0:
        t //= base
    return t == 1


# The budget's steps: (config, topology) -> (the config shrunk, what was shrunk), or None when
# the step changes nothing.
def _no_second_stage(c: dict, topo):
    s = stages.settings(c)  # resolved: a cap left to its default, one process per cell
    if not stages.adds_replicates(s):
        return None
    ts = {**c["two_stage"], "cap": s["first_stage"]}
    return {**c, "two_stage": ts}, f"two_stage.cap: {ts['cap']} (no second stage)"


def _deploy_given(c: dict) -> dict:
    """The config's ``deploy`` key with its defaults (``plan.deploy``'s)."""
    return settings_mod.with_defaults(c.get("deploy") or {}, deploy.DEFAULTS)


def _fewest_rounds(c: dict) -> dict:
    given = _deploy_given(c)
    if given["max_rounds"] <= given["rounds"]:
        return c
    d = {**(c.get("deploy") or {}), "max_rounds": given["rounds"]}
    return {**c, "deploy": d}


def _threads(c: dict, topo, base: int = 2):
    have = grid.thread_counts(c, topo)
    sizes = set(topo.cores_per_node().values())
    keep = [t for t in have if _power_of(t, base) or t in sizes]
    if keep == have or not keep:
        return None
    return {**c, "threads": keep}, f"threads: {keep} (powers of {base} and node sizes)"


def _profile_threads(c: dict, topo):
    p = dict(c.get("packing") or {})
    ig = dict(p.get("interference") or {})
    if isinstance(ig.get("threads"), list) and len(ig["threads"]) == 1:
        return None
    p["interference"] = {**ig, "threads": [1]}
    return {**c, "packing": p}, "packing.interference.threads: [1] (the model's curve)"


def _batches(c: dict, topo):
    have = sorted(int(b) for b in c.get("batch_sizes") or ())
    keep = have if len(have) <= 2 else have[: len(have) // 2] + have[len(have) // 2 + 1 :]
    if keep == have:
        return None
    return {**c, "batch_sizes": keep}, f"batch_sizes: {keep}"


def _candidates(c: dict, topo):
    if _deploy_given(c)["candidates"] <= 1:
        return None
    return {**c, "deploy": {**(c.get("deploy") or {}), "candidates": 1}}, "deploy.candidates: 1"


def _no_loadtest(c: dict, topo):
    if not deploy.settings(c, measured=True)["loadtest"]:
        return None
    d = {**(c.get("deploy") or {}), "loadtest": False}
    return {**c, "deploy": d}, "loadtest dropped (deploy.loadtest: false)"


def _no_packing(c: dict, topo):
    p = dict(c.get("packing") or {})
    if p.get("enabled") is False:
        return None
    return {**c, "packing": {**p, "enabled": False}}, "packing.enabled: false"


# the documented order (docs/deploy.md); batch sizes may be dropped three times
STEPS = (
    _no_second_stage,
    _threads,
    _batches,
    _batches,
    _batches,
    _candidates,
    _no_packing,
    _no_loadtest,
    _profile_threads,
    functools.partial(_threads, base=4),  # sparser threads
)


def shrink_steps(topo) -> list:
    """The budget's steps in order, each ``config -> (config, what) or None``."""
    return [lambda c, step=step: step(c, topo) for step in STEPS]


def fit(config: dict, topo, base, caps=None, scale: Scale | None = None) -> tuple[dict, Estimate]:
    """``config`` shrunk step by step until its estimate fits ``config["budget"]`` minutes, and
    the final estimate with what was shrunk. ``base``: the plan of ``config`` (or a function
    that builds it, called once); each step narrows its ``View``, none plans again. Without a
    budget: the config and its estimate. ``scale``: the machine's calibration."""
    budget = config.get("budget")
    current = copy.deepcopy(config)
    whole = view(base(copy.deepcopy(config)) if callable(base) else base)
    if not budget:
        return current, estimate(whole, caps, scale)
    # the grid is shrunk against the answer's fewest rounds; the rest fills the slack
    current = _fewest_rounds(current)
    est = estimate(narrowed(whole, current), caps, scale)
    shrunk = []
    for step in shrink_steps(topo):
        if est.total_s <= float(budget) * 60:
            break
        got = step(current)
        if got is None:
            continue
        current, what = got
        shrunk.append(what)
        est = estimate(narrowed(whole, current), caps, scale)
    current, more = _fill_rounds(current, config, budget, narrowed(whole, current), est)
    if more:
        est = estimate(narrowed(whole, current), caps, scale)
    est.shrunk = [*shrunk, *more]
    return current, est


def _fill_rounds(current: dict, config: dict, budget: float, plan, est: Estimate):
    """The deploy answer's rounds in the time the budget leaves: (config, what was said)."""
    if not plan.deploy.get("measured") or "deploy" not in est.parts:
        return current, []
    rounds, most = int(plan.deploy["rounds"]), _deploy_given(config)["max_rounds"]
    per_round = est.parts["deploy"] / max(1, int(plan.deploy["max_rounds"]))
    spare = float(budget) * 60 - (est.total_s - est.parts["deploy"])
    fit = max(rounds, min(most, int(spare // per_round) if per_round > 0 else most))
    if fit == int(plan.deploy["max_rounds"]):
        return current, []
    d = {**(current.get("deploy") or {}), "max_rounds": fit}
    return {**current, "deploy": d}, [f"deploy.max_rounds: {fit} (the rounds the budget leaves)"]


AFTER_DEPLOY = ("loadtest", "tables and report")  # the parts that follow the deploy job


def deploy_allowance(est: Estimate, budget_min: float | None, results: str) -> dict | None:
    """What the deploy job needs to take the time the budget leaves when it starts
    (``measure.progress.allowance_s``): the budget, what follows it (the tables and report) and
    the results folder whose progress file says when the run started; ``planned_s``, the
    allowance by the estimate alone (at least half the deploy part), where no run started.
    Rounded to 10 s so that the job's params do not change with noise; None without a budget."""
    if not budget_min or "deploy" not in est.parts:
        return None
    rest = est.total_s - est.parts["deploy"]
    planned = max(budget_min * 60 - rest, est.parts["deploy"] * 0.5)
    return {
        "budget_s": float(budget_min) * 60,
        "after_s": float(math.ceil(sum(est.parts.get(p, 0.0) for p in AFTER_DEPLOY) / 10) * 10),
        "planned_s": float(round(planned / 10) * 10),
        "results": str(results),
    }
