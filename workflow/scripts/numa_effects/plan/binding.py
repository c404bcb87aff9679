"""When two placements are the same binding, and which cell measures it.

A cell's *binding* is what ``numactl`` enforces for its plan: the CPU set and the memory policy
with its nodes. An interleave over one node places every page on that node, so it counts as a
bind to it; names, ``+smt`` labels and thread counts do not enter (threads follow from the
CPUs). Where cells differ only in their placement and have the same binding (``interleave`` at
one thread, ``n0m0`` within node 0, ``mem-interleave`` on a one-node machine), ``measured_once``
measures the first in the registry's order and the tables report its numbers under the others'
names (``same_binding_as``). ``same_bindings: each`` measures every placement on its own (an A/A
check of the statistics: ``benchmarks/aa.py``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from numa_effects.plan import placement as placement_mod

EACH = "each"  # config key same_bindings: every placement measured on its own (default: once)
IDENTICAL = "identical binding"  # a comparison of a cell with itself (degradation.csv ci_method)


def of(plan: placement_mod.Plan) -> tuple:
    """The binding ``numactl`` enforces for ``plan``: (CPUs, memory policy, memory nodes)."""
    policy = "bind" if len(set(plan.mem_nodes)) == 1 else plan.mem_policy
    return (frozenset(plan.cpus), policy, frozenset(plan.mem_nodes))


def same(a: placement_mod.Plan, b: placement_mod.Plan) -> bool:
    """True when ``a`` and ``b`` bind a process alike (``of``)."""
    return of(a) == of(b)


def rank(label: str) -> tuple:
    """The order in which the cells of one binding are chosen to be measured: the placement
    registry's order, then a family's field values (``n0m0`` before ``n0m1``)."""
    name, smt = placement_mod.parse_label(str(label))
    entry, fields = placement_mod.lookup(name)
    return (list(placement_mod.PLACEMENTS).index(entry.name), tuple(fields.values()), smt, label)


def measured_once(cells: Mapping) -> dict:
    """{cell key: the key of the cell that measures it} for every cell of ``cells`` (key ->
    ``placement.Plan``) with the binding of another cell at the same other keys; the cell
    chosen (``rank``) is not a key of the result."""
    groups: dict[tuple, list] = {}
    for key, plan in cells.items():
        rest = tuple((k, v) for k, v in key.as_dict().items() if k != "placement")
        groups.setdefault((rest, of(plan)), []).append(key)
    out = {}
    for keys in groups.values():
        first, *others = sorted(keys, key=lambda k: rank(k.placement))
        out.update({k: first for k in others})
    return out


def compared_with_itself(key, same: Mapping) -> bool:
    """True when the cell ``key`` and its baseline's cell at the same other keys are one
    measurement (``same``: ``measured_once``'s mapping)."""
    base = placement_mod.baseline_of(key.placement)
    if base is None:
        return False
    other = dataclasses.replace(key, placement=base)
    return same.get(key, key) == same.get(other, other)
