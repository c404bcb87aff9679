"""Placement planning: a pure function from (topology, threads, placement, use_smt) to the
exact CPUs and memory policy of a cell, and the ``numactl`` arguments that enforce them.

| placement        | CPUs                                          | memory                   |
| ---------------- | --------------------------------------------- | ------------------------ |
| ``sequential``   | t physical cores of node 0                    | bound to node 0          |
| ``interleave``   | t cores alternated over all nodes (ceil(t/n)  | bound to the nodes of    |
|                  | from the first node, and so on)               | those cores              |
| ``remote``       | t physical cores of node 0                    | bound to node 1          |
| ``mem-interleave`` | t physical cores of node 0                  | interleaved, all nodes   |

``sequential`` is the baseline every other placement is compared against. A plan that the
topology cannot satisfy is returned as ``NotApplicable`` with the reason; it is never run
differently.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from . import cpulist
from .topology import Topology

BASELINE = "sequential"


@dataclass(frozen=True)
class Plan:
    placement: str
    threads: int
    cpus: tuple[int, ...]
    cpu_nodes: tuple[int, ...]
    mem_policy: str  # "bind" or "interleave"
    mem_nodes: tuple[int, ...]
    use_smt: bool = False

    def numactl_args(self) -> list[str]:
        mem_flag = "--membind" if self.mem_policy == "bind" else "--interleave"
        return [
            f"--physcpubind={cpulist.format(self.cpus)}",
            f"{mem_flag}={cpulist.format(self.mem_nodes)}",
        ]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["cpus"] = list(self.cpus)
        d["cpu_nodes"] = list(self.cpu_nodes)
        d["mem_nodes"] = list(self.mem_nodes)
        d["cpu_list"] = cpulist.format(self.cpus)
        d["mem_list"] = cpulist.format(self.mem_nodes)
        d["numactl_args"] = self.numactl_args()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Plan:
        return cls(
            placement=d["placement"],
            threads=int(d["threads"]),
            cpus=tuple(d["cpus"]),
            cpu_nodes=tuple(d["cpu_nodes"]),
            mem_policy=d["mem_policy"],
            mem_nodes=tuple(d["mem_nodes"]),
            use_smt=bool(d.get("use_smt", False)),
        )


@dataclass(frozen=True)
class NotApplicable:
    placement: str
    threads: int
    reason: str


def _node0_cores(topo: Topology, threads: int, use_smt: bool, what: str):
    node0 = topo.nodes[0]
    cpus = topo.node_cpus(node0, use_smt)
    if threads > len(cpus):
        unit = "logical CPUs" if use_smt else "physical cores"
        return None, f"{what} needs {threads} {unit} on node {node0}, which has {len(cpus)}"
    return cpus[:threads], None


def _needs_nodes(topo: Topology, placement: str) -> str | None:
    if len(topo.nodes) < 2:
        return f"{placement} needs at least 2 NUMA nodes; this machine has {len(topo.nodes)}"
    return None


def _sequential(topo: Topology, t: int, use_smt: bool) -> Plan | str:
    cpus, why = _node0_cores(topo, t, use_smt, "sequential")
    if why:
        return why
    node = topo.nodes[0]
    return Plan("sequential", t, cpus, (node,), "bind", (node,), use_smt)


def _interleave(topo: Topology, t: int, use_smt: bool) -> Plan | str:
    why = _needs_nodes(topo, "interleave")
    if why:
        return why
    nodes = topo.nodes
    per_node = {n: list(topo.node_cpus(n, use_smt)) for n in nodes}
    picked: list[int] = []
    # Round-robin over nodes: node 0 gets ceil(t/n), the next ones follow.
    for i in range(t):
        node = nodes[i % len(nodes)]
        if not per_node[node]:
            unit = "logical CPUs" if use_smt else "physical cores"
            need = -(-t // len(nodes))
            return (
                f"interleave needs {need} {unit} on node {node}, which has "
                f"{len(topo.node_cpus(node, use_smt))}"
            )
        picked.append(per_node[node].pop(0))
    used = tuple(sorted({topo.node_of(c) for c in picked}))
    return Plan("interleave", t, tuple(sorted(picked)), used, "bind", used, use_smt)


def _remote(topo: Topology, t: int, use_smt: bool) -> Plan | str:
    why = _needs_nodes(topo, "remote")
    if why:
        return why
    cpus, why = _node0_cores(topo, t, use_smt, "remote")
    if why:
        return why
    return Plan("remote", t, cpus, (topo.nodes[0],), "bind", (topo.nodes[1],), use_smt)


def _mem_interleave(topo: Topology, t: int, use_smt: bool) -> Plan | str:
    why = _needs_nodes(topo, "mem-interleave")
    if why:
        return why
    cpus, why = _node0_cores(topo, t, use_smt, "mem-interleave")
    if why:
        return why
    return Plan("mem-interleave", t, cpus, (topo.nodes[0],), "interleave", topo.nodes, use_smt)


# The registry: adding a placement is one entry here (and its row in the table above).
PLACEMENTS: dict[str, Callable[[Topology, int, bool], Plan | str]] = {
    "sequential": _sequential,
    "interleave": _interleave,
    "remote": _remote,
    "mem-interleave": _mem_interleave,
}


def plan(topo: Topology, threads: int, placement: str, use_smt: bool = False):
    """Plan one cell. Returns a ``Plan`` or a ``NotApplicable`` with the reason."""
    if placement not in PLACEMENTS:
        raise ValueError(f"unknown placement {placement!r}; known: {', '.join(PLACEMENTS)}")
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    result = PLACEMENTS[placement](topo, threads, use_smt)
    if isinstance(result, str):
        return NotApplicable(placement, threads, result)
    return result


def max_threads(topo: Topology, use_smt: bool = False) -> int:
    """Threads that ``threads: auto`` expands to: the usable CPUs of one NUMA node."""
    return len(topo.node_cpus(topo.nodes[0], use_smt))
