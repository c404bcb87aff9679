"""Which figures exist: the figure targets (``Figure``: a family and its wildcards' values) a
grid's cells support, planned by each family's ``plan`` (``PLANS``). Pure and cheap: the
workflow lists the targets at parse time from the config's grid, the imported cells or a
comparison's matched cells, so only figures whose data exist are requested."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass

from numa_effects.plan import allocators as allocators_mod
from numa_effects.plan import placement as placement_mod
from numa_effects.report import baselines, families


@dataclass(frozen=True, order=True)
class Figure:
    """One figure target: a family and the values of its wildcards."""

    family: str
    model: str
    opt: str = ""
    placement: str = ""
    batch_size: int = 0
    run: str = ""  # the compared run (a comparison's figures)

    @property
    def spec(self) -> families.Family:
        return families.BY_NAME[self.family]

    @property
    def wildcards(self) -> dict:
        return {w: getattr(self, w) for w in self.spec.wildcards}

    def path(self, folder: str, ext: str = "png") -> str:
        """File of this figure below ``folder`` (the report's figures/ folder)."""
        return f"{folder}/{self.spec.pattern.format(**self.wildcards)}.{ext}"

    def as_dict(self) -> dict:
        """Its fields, for a rule's params (``from_dict`` reads them back)."""
        return asdict(self)


def _key_values(keys: Iterable) -> list[dict]:
    out = []
    for k in keys:
        get = (k if isinstance(k, dict) else k.as_dict()).get
        v = {a: get(a) for a in ("model", "opt", "placement")}
        v["batch_size"] = int(get("batch_size"))
        v["run"] = get("run") or ""
        v["allocator"] = get("allocator") or allocators_mod.GLIBC
        out.append(v)
    return out


def _of_figure_allocator(keys: list[dict]) -> list[dict]:
    alloc = baselines.figure_allocator(k["allocator"] for k in keys)
    return [k for k in keys if k["allocator"] == alloc]


def plan_sequential(keys: list[dict], packed: frozenset = frozenset()) -> list[dict]:
    return [k for k in keys if baselines.is_sequential(k["placement"])]


def plan_comparison(keys: list[dict], packed: frozenset = frozenset()) -> list[dict]:
    """The cells of a placement whose baseline (``placement.baseline_of``) has a cell at the
    same model, opt and batch size."""
    keys = _of_figure_allocator(keys)
    have = {(k["model"], k["opt"], k["placement"], k["batch_size"]) for k in keys}
    out = []
    for k in keys:
        base = placement_mod.baseline_of(k["placement"])
        if base is not None and (k["model"], k["opt"], base, k["batch_size"]) in have:
            out.append(k)
    return out


def plan_packing(keys: list[dict], packed: frozenset = frozenset()) -> list[dict]:
    """One figure per packed (model, opt) (``plan.build.Plan.packed``)."""
    return [{"model": m, "opt": o, "placement": "", "batch_size": 0} for m, o in sorted(packed)]


def plan_compare(keys: list[dict], packed: frozenset = frozenset()) -> list[dict]:
    """The matched cells of a comparison of runs (``run``: the compared run)."""
    return [k for k in keys if k["run"]]


def plan_precision(keys: list[dict], packed: frozenset = frozenset()) -> list[dict]:
    """The ``sequential`` cells of another variant than the baseline (``base_variant``) where
    the baseline has one, in a grid beyond PackRat's."""
    if not baselines.beyond_packrat(keys):
        return []
    seq = [k for k in keys if baselines.is_sequential(k["placement"])]
    variant = baselines.base_variant(k["allocator"] for k in keys)
    base = {(k["model"], k["batch_size"]) for k in seq if (k["opt"], k["allocator"]) == variant}
    return [
        k
        for k in seq
        if (k["model"], k["batch_size"]) in base and (k["opt"], k["allocator"]) != variant
    ]


def plan_precision_comparison(keys: list[dict], packed: frozenset = frozenset()) -> list[dict]:
    """The comparison cells (``plan_comparison``) of models measured in at least two dtypes."""
    if not baselines.beyond_packrat(keys):
        return []
    dtypes: dict[str, set] = {}
    for k in _of_figure_allocator(keys):
        dtypes.setdefault(k["model"], set()).add(baselines.dtype_of(k["opt"]))
    return [k for k in plan_comparison(keys) if len(dtypes.get(k["model"], ())) > 1]


def plan_node_pairs(keys: list[dict], packed: frozenset = frozenset()) -> list[dict]:
    """The node-pair cells (``n{cpu}m{mem}``) off the diagonal whose diagonal was run."""
    return [k for k in plan_comparison(keys) if placement_mod.pair_of(k["placement"])]


def plan_node_pair_memory(keys: list[dict], packed: frozenset = frozenset()) -> list[dict]:
    """One figure per model with any node-pair cell (the memory jobs are planned from them)."""
    models = {k["model"] for k in keys if placement_mod.pair_of(k["placement"])}
    return [{"model": m} for m in sorted(models)]


PLANS: dict[str, Callable[..., list[dict]]] = {
    "node_pairs": plan_node_pairs,
    "node_pair_memory": plan_node_pair_memory,
    "sequential": plan_sequential,
    "comparison": plan_comparison,
    "packing": plan_packing,
    "compare": plan_compare,
    "precision": plan_precision,
    "precision_comparison": plan_precision_comparison,
}


def figures(
    keys: Iterable, page: str = families.RUN_PAGE, packed: Iterable[tuple[str, str]] = ()
) -> list[Figure]:
    """Every figure of ``page``'s families the cells ``keys`` support, in page order.
    ``keys``: grid ``CellKey``s or dicts with their fields (a comparison's with ``run``): the
    cells that run or ran, without skipped ones. ``packed``: the (model, opt) pairs packing
    measures."""
    fams = families.page_families(page)
    values = _key_values(keys)
    packed = frozenset((str(m), str(o)) for m, o in packed)
    planned = {p: PLANS[p](values, packed) for p in {f.plan for f in fams}}
    out = {
        Figure(fam.name, **{w: v[w] for w in fam.wildcards})
        for fam in fams
        for v in planned[fam.plan]
    }
    return sorted(out, key=lambda f: (f.model, list(families.BY_NAME).index(f.family), f))


def from_dict(d: dict) -> Figure:
    return Figure(**d)
