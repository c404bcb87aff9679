"""Placement planning: a pure function from (topology, threads, placement, use_smt) to the exact
CPUs and memory policy of a cell, and the ``numactl`` arguments that enforce them (the table of
placements: docs/placements.md, ``PLACEMENTS``).

"Node 0" and "node 1" are the first and second NUMA nodes that have CPUs. ``n{cpu}m{mem}`` is a
*family*: its members (``n0m1``, ...) name real node numbers, and ``placements:`` names them one
by one or all at once as ``node-pairs`` (config key ``node_pairs``). Cores are physical cores
(the lowest-numbered of their siblings); with ``use_smt`` the siblings are usable too and the
label gets the suffix ``+smt``, so SMT and non-SMT results never share a path or a table row. A
plan the topology cannot satisfy is returned as ``NotApplicable`` with the reason; it is never
run differently.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from dataclasses import asdict, dataclass

from numa_effects.plan import cpulist
from numa_effects.plan.node_pairs import node_list, node_pair_members, node_pair_problems
from numa_effects.plan.optimizations import by_name
from numa_effects.plan.topology import Topology

BASELINE = "sequential"
SMT_SUFFIX = "+smt"


def label(placement: str, use_smt: bool) -> str:
    """The cell label of a placement: ``sequential`` or, with SMT allowed, ``sequential+smt``."""
    return placement + SMT_SUFFIX if use_smt else placement


def parse_label(text: str) -> tuple[str, bool]:
    """Inverse of ``label``: ``"remote+smt"`` -> ``("remote", True)``."""
    return (text[: -len(SMT_SUFFIX)], True) if text.endswith(SMT_SUFFIX) else (text, False)


@dataclass(frozen=True)
class Plan:
    placement: str
    threads: int
    cpus: tuple[int, ...]
    cpu_nodes: tuple[int, ...]
    mem_policy: str  # "bind", "interleave" or "local" (first touch; mem_nodes: the CPUs' nodes)
    mem_nodes: tuple[int, ...]
    use_smt: bool = False
    cores: int = 0  # distinct physical cores used (< threads only when SMT siblings are used)

    @property
    def label(self) -> str:
        return label(self.placement, self.use_smt)

    def numactl_args(self) -> list[str]:
        cpus = f"--physcpubind={cpulist.format(self.cpus)}"
        if self.mem_policy == "local":
            return [cpus, "--localalloc"]
        mem_flag = "--membind" if self.mem_policy == "bind" else "--interleave"
        return [cpus, f"{mem_flag}={cpulist.format(self.mem_nodes)}"]

    def to_dict(self) -> dict:
        return {
            **asdict(self),
            **{k: list(getattr(self, k)) for k in ("cpus", "cpu_nodes", "mem_nodes")},
            "cpu_list": cpulist.format(self.cpus),
            "mem_list": cpulist.format(self.mem_nodes),
            "numactl_args": self.numactl_args(),
            "label": self.label,
        }

    @classmethod
    def from_dict(cls, d: dict) -> Plan:
        tuples = {k: tuple(d[k]) for k in ("cpus", "cpu_nodes", "mem_nodes")}
        return cls(
            placement=d["placement"],
            threads=int(d["threads"]),
            mem_policy=d["mem_policy"],
            use_smt=bool(d.get("use_smt", False)),
            cores=int(d.get("cores", 0)),
            **tuples,
        )


def pinned(label: str, cpus, threads: int, cpu_nodes, mem_nodes, cores: int) -> Plan:
    """The binding of an instance named by its CPUs (a launcher's layout, the deploy answer's):
    memory bound to ``mem_nodes``, or first-touch (``local``) where there are none."""
    mem = tuple(mem_nodes)
    return Plan(
        placement=label,
        threads=int(threads),
        cpus=tuple(sorted(cpus)),
        cpu_nodes=tuple(cpu_nodes),
        mem_policy="bind" if mem else "local",
        mem_nodes=mem or tuple(cpu_nodes),
        use_smt=int(cores) < len(cpus),
        cores=int(cores),
    )


@dataclass(frozen=True)
class NotApplicable:
    placement: str
    threads: int
    reason: str


def unit(use_smt: bool) -> str:
    return "logical CPUs" if use_smt else "physical cores"


def _make(topo, placement, t, cpus, mem_policy, mem_nodes, use_smt) -> Plan:
    """A plan of ``cpus``; ``mem_nodes`` None: their nodes."""
    cpus = tuple(sorted(cpus))
    cpu_nodes = tuple(sorted({topo.node_of(c) for c in cpus}))
    cores = len({topo.cpu(c).siblings for c in cpus})
    mem_nodes = cpu_nodes if mem_nodes is None else tuple(mem_nodes)
    return Plan(placement, t, cpus, cpu_nodes, mem_policy, mem_nodes, use_smt, cores)


def _on_node(topo, name, node, t, use_smt, mem_policy, mem_nodes) -> Plan | str:
    """The first ``t`` usable CPUs of ``node``, memory as given."""
    cpus = topo.node_cpus(node, use_smt)
    if t > len(cpus):
        return f"{name} needs {t} {unit(use_smt)} on node {node}, which has {len(cpus)}"
    return _make(topo, name, t, cpus[:t], mem_policy, mem_nodes, use_smt)


def _sequential(topo: Topology, t: int, use_smt: bool) -> Plan | str:
    order = topo.usable_cpus(use_smt)  # node 0 is filled before node 1 is touched
    if t > len(order):
        return f"sequential needs {t} {unit(use_smt)}, this machine has {len(order)}"
    return _make(topo, "sequential", t, order[:t], "bind", None, use_smt)


def _interleave(topo: Topology, t: int, use_smt: bool) -> Plan | str:
    nodes = topo.nodes
    per_node = {n: list(topo.node_cpus(n, use_smt)) for n in nodes}
    picked: list[int] = []
    # Round-robin over nodes: node 0 gets ceil(t/n), the next ones follow.
    for i in range(t):
        node = nodes[i % len(nodes)]
        if not per_node[node]:
            need = len([j for j in range(t) if nodes[j % len(nodes)] == node])
            return (
                f"interleave needs {need} {unit(use_smt)} on node {node}, which has "
                f"{len(topo.node_cpus(node, use_smt))}"
            )
        picked.append(per_node[node].pop(0))
    return _make(topo, "interleave", t, picked, "bind", None, use_smt)


def _remote(topo: Topology, t: int, use_smt: bool) -> Plan | str:
    if len(topo.nodes) < 2:
        return f"remote needs at least 2 NUMA nodes; this machine has {len(topo.nodes)}"
    return _on_node(topo, "remote", topo.nodes[0], t, use_smt, "bind", topo.nodes[1:2])


def _mem_interleave(topo: Topology, t: int, use_smt: bool) -> Plan | str:
    return _on_node(topo, "mem-interleave", topo.nodes[0], t, use_smt, "interleave", topo.nodes)


def _node_pair(topo: Topology, t: int, use_smt: bool, cpu: int, mem: int) -> Plan | str:
    """t cores of node ``cpu``, memory bound to node ``mem`` (the OS's node numbers)."""
    name = f"n{cpu}m{mem}"
    if len(topo.all_nodes) == 1 and {cpu, mem} != set(topo.all_nodes):
        only = topo.all_nodes[0]
        return (
            f"{name}: this machine has one NUMA node ({only}), so the node-pair matrix is its "
            f"diagonal n{only}m{only} only"
        )
    if cpu not in topo.nodes:
        has = "has no CPUs (a memory-only node)" if cpu in topo.memory_nodes else "does not exist"
        return f"{name}: node {cpu} {has}; CPU nodes: {node_list(topo.nodes)}"
    if mem not in topo.memory_nodes:
        has = "has no memory" if mem in topo.all_nodes else "does not exist"
        return f"{name}: node {mem} {has}; memory nodes: {node_list(topo.memory_nodes)}"
    return _on_node(topo, name, cpu, t, use_smt, "bind", (mem,))


NODE_PAIR = "n{cpu}m{mem}"  # the family's registry name


def pair_of(label_text: str) -> tuple[int, int] | None:
    """(CPU node, memory node) of a node-pair label (``n0m1+smt``); None for other placements."""
    entry, fields = lookup(parse_label(str(label_text))[0])
    return (fields["cpu"], fields["mem"]) if entry.name == NODE_PAIR else None


def peak_placement(label_text: str) -> str:
    """The placement whose peak job a cell's efficiency is measured against: the cell's own,
    except a node pair's, its CPU node's diagonal (``n1m3`` -> ``n1m1``, SMT label kept): the
    same cores, one peak job per CPU node instead of one per pair."""
    pair = pair_of(label_text)
    if pair is None:
        return str(label_text)
    _, smt = parse_label(str(label_text))
    return label(NODE_PAIR.format(cpu=pair[0], mem=pair[0]), smt)


@dataclass(frozen=True)
class Members:
    """How ``placements:`` names a whole family at once: ``name`` (``node-pairs``) stands for the
    members config key ``config_key`` selects. ``select(value, topo)``: the member names, in
    order (``value`` None: the key's default); ``problems(value, topo, machine)``: what is wrong
    with the value on that topology, as (key suffix, text) pairs."""

    name: str
    config_key: str
    select: Callable[[object, Topology], list[str]]
    problems: Callable[[object, Topology, str], list[tuple[str, str]]]


@dataclass(frozen=True)
class Placement:
    """One entry of the placement registry: a fixed name (``sequential``) or a *family* whose
    name is a pattern with integer fields (``n{cpu}m{mem}``). ``plan(topo, threads, use_smt,
    **fields)`` returns a ``Plan`` or the reason it cannot run. ``baseline``: what its cells are
    compared against (a pattern over the same fields; None for a baseline itself). ``color``:
    its colour in every figure (None: a spare one). ``members``: how ``placements:`` names the
    whole family (None: members one by one)."""

    name: str
    plan: Callable[..., Plan | str]
    description: str
    baseline: str | None = BASELINE
    color: str | tuple | None = None
    members: Members | None = None

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(f for _, f, _, _ in string.Formatter().parse(self.name) if f)

    @property
    def regex(self) -> str:
        """The names this entry stands for, as a regular expression (wildcard constraints, the
        schema's pattern), a group per field."""
        out = ""
        for text, f, _, _ in string.Formatter().parse(self.name):
            out += re.escape(text) + (r"(\d+)" if f else "")
        return out

    def match(self, name: str) -> dict | None:
        """The field values of ``name`` if this entry stands for it, else None."""
        m = re.fullmatch(self.regex, name)
        return None if m is None else dict(zip(self.fields, map(int, m.groups()), strict=True))


# The registry: adding a placement (or a family of them) is one entry here.
PLACEMENTS: dict[str, Placement] = by_name(
    Placement(
        "sequential",
        _sequential,
        "t cores packed from node 0 (PackRat's sequential); memory bound to their nodes",
        baseline=None,
        color=(0.2, 0.2, 0.2),
    ),
    Placement(
        "interleave",
        _interleave,
        "t cores alternated over all nodes (PackRat's interleave); memory bound to their nodes",
        color="#d55e00",
    ),
    Placement("remote", _remote, "t cores of node 0; memory bound to node 1", color="#ca9161"),
    Placement(
        "mem-interleave",
        _mem_interleave,
        "t cores of node 0; memory interleaved over all nodes",
        color="#56b4e9",
    ),
    Placement(
        NODE_PAIR,
        _node_pair,
        "the node-pair matrix: t cores of node cpu, memory bound to node mem (`n0m1`; "
        "`node-pairs` = every pair `node_pairs` selects); compared with its node's local "
        "`n{cpu}m{cpu}`; only thread counts that fit one node",
        baseline="n{cpu}m{cpu}",
        members=Members("node-pairs", "node_pairs", node_pair_members, node_pair_problems),
    ),
)


def lookup(name: str) -> tuple[Placement, dict]:
    """The registry entry of a placement name (not a ``+smt`` label) and its field values."""
    for entry in PLACEMENTS.values():
        fields = entry.match(name)
        if fields is not None:
            return entry, fields
    raise ValueError(f"unknown placement {name!r}; known: {', '.join(PLACEMENTS)}")


def families() -> dict[str, Placement]:
    """The names that stand for a family's members in ``placements:`` -> their entry."""
    return {p.members.name: p for p in PLACEMENTS.values() if p.members is not None}


def expand(names, config: dict, topo: Topology) -> list[str]:
    """The placements of config key ``placements`` on ``topo``: a family's name (``node-pairs``)
    replaced by the members its config key selects; each name once, in order."""
    out: list[str] = []
    for name in names:
        entry = families().get(name)
        chosen = (
            entry.members.select(config.get(entry.members.config_key), topo)
            if entry is not None
            else [name]
        )
        out += [n for n in chosen if n not in out]
    return out


def known(name: str) -> bool:
    """True when ``name`` (or its ``+smt`` label) is a registered placement."""
    try:
        lookup(parse_label(str(name))[0])
    except ValueError:
        return False
    return True


def names_regex() -> str:
    """Every placement label (``+smt`` included) as one regular expression (wildcards)."""
    alternatives = "|".join(f"(?:{p.regex})" for p in PLACEMENTS.values())
    return f"(?:{alternatives})(?:{re.escape(SMT_SUFFIX)})?"


def baseline_of(label_text: str) -> str | None:
    """The label a cell of placement ``label_text`` is compared against (``sequential+smt`` for
    an SMT cell; a family's own baseline), or None for a baseline (``n0m0`` is one)."""
    name, smt = parse_label(str(label_text))
    entry, fields = lookup(name)
    if entry.baseline is None:
        return None
    base = entry.baseline.format(**fields)
    return None if base == name else label(base, smt)


def is_baseline(label_text: str) -> bool:
    return baseline_of(label_text) is None


def plan(topo: Topology, threads: int, placement: str, use_smt: bool = False):
    """Plan one cell of ``placement`` (a name, a family member such as ``n0m1``, or a ``+smt``
    label, which implies use_smt): a ``Plan`` or a ``NotApplicable`` with the reason."""
    placement, smt_label = parse_label(placement)
    use_smt = use_smt or smt_label
    entry, fields = lookup(placement)
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    result = entry.plan(topo, threads, use_smt, **fields)
    return NotApplicable(placement, threads, result) if isinstance(result, str) else result


PACKED = "packed"


def pack(
    topo: Topology,
    threads: list[int],
    budget: int,
    use_smt: bool = False,
    nodes: list[int | None] | None = None,
):
    """Disjoint CPU sets for concurrent instances (plan.packing): instance j gets ``threads[j]``
    cores of its own out of the first ``budget`` cores in ``sequential`` order. Largest first,
    each goes to the node with the fewest free cores that still holds it (best fit), so an
    instance straddles nodes (taking the lowest free cores) only when no node has room.
    ``nodes``: each instance's node when the caller chose them (None: best fit). Memory is bound
    to the cores' nodes. The plans in the order of ``threads``, or ``NotApplicable``."""
    order = topo.usable_cpus(use_smt)
    if budget > len(order):
        return NotApplicable(
            PACKED, budget, f"a budget of {budget} {unit(use_smt)}; this machine has {len(order)}"
        )
    if any(t < 1 for t in threads) or sum(threads) > budget:
        return NotApplicable(
            PACKED, sum(threads), f"instances of {threads} threads do not fit {budget} cores"
        )
    free = {n: [c for c in order[:budget] if topo.node_of(c) == n] for n in topo.nodes}
    if nodes is not None and len(nodes) != len(threads):
        raise ValueError(f"{len(nodes)} nodes given for {len(threads)} instances")
    cpus_of: dict[int, list[int]] = {}
    for j in sorted(range(len(threads)), key=lambda j: -threads[j]):
        t = threads[j]
        fits = [n for n in topo.nodes if len(free[n]) >= t]
        want = None if nodes is None else nodes[j]
        if want is not None:
            if want not in free or len(free[want]) < t:
                return NotApplicable(
                    PACKED,
                    t,
                    f"instance {j} ({t} threads) does not fit node {want} of the first {budget} "
                    f"cores beside the others",
                )
            cpus_of[j], free[want] = free[want][:t], free[want][t:]
        elif fits:
            node = min(fits, key=lambda n: (len(free[n]), n))
            cpus_of[j], free[node] = free[node][:t], free[node][t:]
        else:
            cpus_of[j] = []
            for n in topo.nodes:
                take = min(t - len(cpus_of[j]), len(free[n]))
                cpus_of[j] += free[n][:take]
                free[n] = free[n][take:]
    return [
        _make(topo, PACKED, t, cpus_of[j], "bind", None, use_smt) for j, t in enumerate(threads)
    ]


def max_threads(topo: Topology, use_smt: bool = False) -> int:
    """Threads that ``threads: auto`` expands to: the usable CPUs of one NUMA node."""
    return len(topo.node_cpus(topo.nodes[0], use_smt))
