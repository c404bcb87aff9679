"""The typed job: what a measurement job measures, built here and nowhere else.

An ``Instance`` is one pinned process (workload, the cell its record describes, placement plan,
options); a ``Configuration`` is k >= 1 instances measured together (``Packing``: how packed
plans were made); a ``Spec`` is one measurement, one record, at one
replicate; a ``GroupSpec`` is a packing, interference or deploy job of named configurations,
measured in the order of its ``schedule``. A spec is complete when built and never edited:
``measure.job`` adds only what it finds where the job runs, into a copy (``Instance.resolved``).
``to_json``/``from_json`` (``FORMAT``) are the job's Snakemake params and its spec file."""

from __future__ import annotations

from dataclasses import dataclass, field

from numa_effects.plan import packing as packing_mod
from numa_effects.plan import placement as placement_mod
from numa_effects.plan.placement import Plan

FORMAT = 2
# the workloads (measure.workloads.WORKLOADS), by name
MODEL, PEAK, MEMORY = "model", "dtype_peaks", "memory_probe"
# the placement label of an instance pinned to CPUs its job names (the deploy answer's layouts)
PINNED = "pinned"


class SpecError(ValueError):
    """A spec this code cannot read (another format)."""


def check_format(data: dict, what: str) -> None:
    got = data.get("format")
    if got != FORMAT:
        raise SpecError(
            f"{what} has format {got!r}, this code reads format {FORMAT}: it was made by another "
            "version of the workflow; re-run the job (snakemake re-creates its spec)"
        )


@dataclass(frozen=True)
class Instance:
    workload: str
    cell: dict
    plan: Plan
    options: dict = field(default_factory=dict)  # inspect, compile_cache_dir, probe
    resolved: dict = field(default_factory=dict)  # found where the job runs (measure.job)

    @property
    def threads(self) -> int:
        return self.plan.threads

    @property
    def allocator(self) -> str | None:
        return self.cell.get("allocator")

    def to_json(self) -> dict:
        return {
            "workload": self.workload,
            "cell": dict(self.cell),
            "plan": self.plan.to_dict(),
            "options": dict(self.options),
            "resolved": dict(self.resolved),
        }

    @classmethod
    def from_json(cls, d: dict) -> Instance:
        plan = Plan.from_dict(d["plan"])
        options, resolved = d.get("options") or {}, d.get("resolved") or {}
        return cls(d["workload"], dict(d["cell"]), plan, options, resolved)


@dataclass(frozen=True)
class Packing:
    """Instances packed on the first ``budget`` cores (``placement.pack``), ``nodes``: each
    one's node as an index among the budget's nodes (None: best fit)."""

    budget: int
    nodes: tuple[int, ...] | None = None
    use_smt: bool = False


@dataclass(frozen=True)
class Configuration:
    instances: tuple[Instance, ...]
    packing: Packing | None = None

    @property
    def cell(self) -> dict:
        """The instance's cell; for k > 1 the keys all instances share, ``placement`` packed
        and the threads and images summed."""
        if len(self.instances) == 1:
            return dict(self.instances[0].cell)
        first, rest = self.instances[0].cell, self.instances[1:]
        common = {k: v for k, v in first.items() if all(i.cell.get(k) == v for i in rest)}
        return common | {
            "placement": placement_mod.PACKED,
            "threads": sum(i.threads for i in self.instances),
            "batch_size": sum(int(i.cell["batch_size"]) for i in self.instances),
        }

    def to_json(self) -> dict:
        p = self.packing
        return {
            "instances": [i.to_json() for i in self.instances],
            "packing": None if p is None else {**vars(p), "nodes": p.nodes and list(p.nodes)},
        }

    @classmethod
    def from_json(cls, d: dict) -> Configuration:
        p = d.get("packing")
        packing = None if p is None else Packing(**{**p, "nodes": p["nodes"] and tuple(p["nodes"])})
        return cls(tuple(Instance.from_json(i) for i in d["instances"]), packing)


@dataclass(frozen=True)
class Spec:
    configuration: Configuration
    settings: dict
    replicate: int = 1
    code: str | None = None  # the measuring code's digest (plan.code): an edit re-measures

    @property
    def instances(self) -> tuple[Instance, ...]:
        return self.configuration.instances

    @property
    def cell(self) -> dict:
        return self.configuration.cell

    @property
    def plan(self) -> Plan | None:
        """The plan of a single instance (None for k > 1)."""
        return self.instances[0].plan if len(self.instances) == 1 else None

    def to_json(self) -> dict:
        return {
            "format": FORMAT,
            **self.configuration.to_json(),
            "settings": dict(self.settings),
            "replicate": self.replicate,
            "code": self.code,
        }

    @classmethod
    def from_json(cls, d: dict) -> Spec:
        check_format(d, "this spec")
        conf = Configuration.from_json(d)
        return cls(conf, dict(d["settings"]), int(d.get("replicate", 1)), d.get("code"))


@dataclass(frozen=True)
class GroupSpec:
    kind: str  # "packing" | "interference"
    job: dict  # what the job is (model, opt, budget, ...), echoed in its record
    configurations: dict[str, Configuration]
    settings: dict
    schedule: tuple[tuple[str, int], ...]  # (configuration, replicate) in the order measured
    choice: dict | None = None  # packing: the optimizer's row (analysis.planner.choices)
    unplaced: dict[str, str] = field(default_factory=dict)  # could not be placed when planned
    code: str | None = None

    def measurements(self) -> list[tuple[str, Spec]]:
        """(configuration, its Spec at that replicate) in the order of ``schedule``."""
        return [
            (n, Spec(self.configurations[n], self.settings, r, self.code)) for n, r in self.schedule
        ]

    def to_json(self) -> dict:
        return {
            "format": FORMAT,
            "kind": self.kind,
            "job": dict(self.job),
            "choice": self.choice,
            "configurations": {n: c.to_json() for n, c in self.configurations.items()},
            "settings": dict(self.settings),
            "schedule": [list(s) for s in self.schedule],
            "unplaced": dict(self.unplaced),
            "code": self.code,
        }

    @classmethod
    def from_json(cls, d: dict) -> GroupSpec:
        check_format(d, "this group spec")
        confs = {n: Configuration.from_json(c) for n, c in d["configurations"].items()}
        schedule = tuple((str(n), int(r)) for n, r in d["schedule"])
        rest = (d.get("choice"), d.get("unplaced") or {}, d.get("code"))
        return cls(d["kind"], d["job"], confs, d["settings"], schedule, *rest)


def from_json(d: dict) -> Spec | GroupSpec:
    """The spec of a job's params or spec file, whichever kind it is."""
    return GroupSpec.from_json(d) if "configurations" in d else Spec.from_json(d)


def one(
    workload: str,
    cell: dict,
    plan: Plan,
    settings: dict,
    replicate: int = 1,
    options: dict | None = None,
    code: str | None = None,
) -> Spec:
    """A measurement of one instance."""
    inst = Instance(workload, dict(cell), plan, dict(options or {}))
    return Spec(Configuration((inst,)), dict(settings), int(replicate), code)


def cell(
    key: dict,
    plan: Plan,
    settings: dict,
    replicate: int,
    *,
    image_size: int,
    use_smt: bool,
    compile_cache_dir: str | None = None,
    code: str | None = None,
) -> Spec:
    """A cell's replicate: its model, inspected after the timed iterations; a compiled
    optimization's cache folder (``compile_cache_dir``) shared by the run's processes."""
    options = {"inspect": True}
    if compile_cache_dir:
        options["compile_cache_dir"] = compile_cache_dir
    c = {**key, "image_size": image_size, "use_smt": use_smt}
    return one(MODEL, c, plan, settings, replicate, options, code)


def peak(plan: Plan, dtype: str, settings: dict, code: str | None = None, window: int = 1) -> Spec:
    """One window of the peak of one dtype at a placement and thread count (``plan.peaks``)."""
    c = {"kind": "peak", "placement": plan.label, "threads": plan.threads, "dtype": dtype}
    c |= {"window": int(window), "use_smt": plan.use_smt}
    return one(PEAK, c, plan, settings, code=code)


def memory(
    cpu: int, mem: int, plan: Plan, settings: dict, cache_dir: str, code: str | None = None
) -> Spec:
    """The memory probe of one node pair, its compiled code cached in ``cache_dir``."""
    c = {"kind": "memory", "placement": plan.placement, "threads": plan.threads}
    c |= {"cpu_node": int(cpu), "mem_node": int(mem), "use_smt": plan.use_smt}
    return one(MEMORY, c, plan, settings, options={"probe": {"cache_dir": cache_dir}}, code=code)


def packed(common: dict, plan: Plan, images: int) -> Instance:
    """One instance of a packed configuration: a model cell of its own threads and images."""
    c = {**common, "placement": placement_mod.PACKED, "threads": plan.threads}
    return Instance(MODEL, c | {"batch_size": int(images)}, plan)


def plans_for(topo, budget: int, configuration, use_smt: bool, nodes=None):
    """``[(Plan, images)]`` of a configuration ``[(threads, images), ...]`` packed on ``budget``
    cores of ``topo``, or the reason it does not fit. ``nodes``: each instance's node as an
    index among the budget's nodes (None: best fit)."""
    ids = None
    if nodes is not None:
        bn = [n for n, _ in packing_mod.budget_nodes(topo, budget, use_smt)]
        if any(not 0 <= i < len(bn) for i in nodes):
            return f"node indexes {nodes} outside the budget's {len(bn)} node(s)"
        ids = [bn[i] for i in nodes]
    got = placement_mod.pack(topo, [t for t, _ in configuration], budget, use_smt, nodes=ids)
    if isinstance(got, placement_mod.NotApplicable):
        return got.reason
    return list(zip(got, [b for _, b in configuration], strict=True))


def placements(row: dict, topo, use_smt: bool) -> dict:
    """Each configuration of a packing ``choices`` row (``packing.configurations``) placed on
    ``topo``: its plan dicts, or the reason it does not fit (plans.json's ``placements``)."""
    out = {}
    for name, conf in packing_mod.configurations(row).items():
        got = plans_for(topo, row["budget"], conf["instances"], use_smt, conf["nodes"])
        out[name] = got if isinstance(got, str) else [g.to_dict() for g, _ in got]
    return out


def group(
    kind: str, job: dict, placed: dict, settings: dict, replicates: int, **extra
) -> GroupSpec:
    """A group job of named configurations ``placed``, measured replicate by replicate (each
    replicate measures every configuration: drift hits them alike)."""
    schedule = tuple((n, r) for r in range(1, int(replicates) + 1) for n in placed)
    return GroupSpec(kind, dict(job), dict(placed), dict(settings), schedule, **extra)


def _common(job: dict) -> dict:
    """What the instances of a packing or interference job share."""
    common = {k: job[k] for k in ("model", "opt", "image_size", "use_smt")}
    return common | ({"allocator": job["allocator"]} if job.get("allocator") else {})


def _group(kind: str, job: dict, echo: dict, placed: dict, **extra) -> GroupSpec:
    extra |= {"code": job.get("code")}
    return group(kind, echo | {"allocator": job.get("allocator")}, placed, job["settings"],
                 job["replicates"], **extra)  # fmt: skip


def _configuration(common: dict, plans, conf: dict, budget: int, use_smt: bool) -> Configuration:
    nodes = conf.get("nodes")
    insts = tuple(packed(common, p, b) for p, (_, b) in zip(plans, conf["instances"], strict=True))
    return Configuration(insts, Packing(int(budget), nodes and tuple(nodes), bool(use_smt)))


def packing(job: dict, budget: int, batch: int, choice: dict) -> GroupSpec:
    """A packing job (one model, optimization, core budget and total batch): the fat instance
    and the optimizer's candidates with the placements ``choice["placements"]`` made on the
    scheduling topology (one that did not fit is ``unplaced``). ``job``: ``Plan.packing_job``."""
    choice = dict(choice)
    made = choice.pop("placements", {}) or {}
    row = {**choice, "budget": int(budget), "batch": int(batch)}
    common, placed, unplaced = _common(job), {}, {}
    for name, conf in packing_mod.configurations(row).items():
        plans = made.get(name)
        if not isinstance(plans, list):
            unplaced[name] = plans or "no placement was planned for it"
            continue
        plans = [Plan.from_dict(p) for p in plans]
        placed[name] = _configuration(common, plans, conf, budget, common["use_smt"])
    echo = {k: job[k] for k in ("model", "opt")} | {"budget": int(budget), "batch": int(batch)}
    echo |= {k: job[k] for k in ("image_size", "use_smt")}
    return _group("packing", job, echo, placed, choice=choice, unplaced=unplaced)


def interference(job: dict, topo) -> GroupSpec:
    """An interference profile job: one instance of ``threads`` threads and ``batch`` images
    alone (``k1``) and ``k`` identical ones side by side (``k<k>``), packed on ``budget`` cores
    of ``topo``. ``job``: ``Plan.packing_job`` with ``budget``, ``threads``, ``batch``,
    ``instances`` (the group sizes)."""
    budget, threads, batch = int(job["budget"]), int(job["threads"]), int(job["batch"])
    common, placed, unplaced = _common(job), {}, {}
    for k in (1, *(int(k) for k in job["instances"] if int(k) > 1)):
        got = packing_mod.profile_plan(topo, budget, threads, k, common["use_smt"])
        if not isinstance(got, list):
            unplaced[f"k{k}"] = got.reason
            continue
        conf = {"instances": [(threads, batch)] * k, "nodes": None}
        placed[f"k{k}"] = _configuration(common, got, conf, budget, common["use_smt"])
    keys = ("model", "opt", "budget", "threads", "batch", "instances", "image_size", "use_smt")
    return _group("interference", job, {k: job[k] for k in keys}, placed, unplaced=unplaced)


def deploy(job: dict, configurations: dict) -> GroupSpec:
    """The deploy answer's measurement (``analysis.deploy_plan``'s ``configurations``, instances
    pinned to named CPUs), up to ``job["max_rounds"]`` blocks (``measure.deploy``). ``job``:
    ``Plan.deploy_job``."""
    placed = {}
    for name, conf in configurations.items():
        common = {k: conf[k] for k in ("model", "opt", "allocator")}
        common |= {"image_size": job["image_size"], "placement": PINNED}
        options = {}
        if conf["opt"] in job.get("compile_cache_opts", ()):
            options["compile_cache_dir"] = job["compile_cache_dir"]
        insts = []
        for i in conf["instances"]:
            plan = placement_mod.pinned(
                PINNED, i["cpus"], i["threads"], i["nodes"], i["mem_nodes"], i["cores"]
            )
            c = {**common, "threads": plan.threads, "batch_size": int(i["batch"])}
            insts.append(Instance(MODEL, c | {"use_smt": plan.use_smt}, plan, dict(options)))
        placed[name] = Configuration(tuple(insts))
    echo = {k: job[k] for k in ("rounds", "max_rounds", "target_pct", "image_size")}
    return group("deploy", echo, placed, job["settings"], job["max_rounds"], code=job.get("code"))
