"""The node-pair family's pairs (config key ``node_pairs``): which (CPU node, memory node) pairs
``node-pairs`` in ``placements:`` stands for on a topology, and what is wrong with an explicit
list of pairs there (the family itself is an entry of ``plan.placement``)."""

from __future__ import annotations

from numa_effects.plan import cpulist
from numa_effects.plan.topology import Topology


def node_list(nodes) -> str:
    """Nodes as a cpulist (``0-2,4``), or ``none``."""
    return cpulist.format(nodes) if nodes else "none"


def node_pairs(value, topo: Topology) -> list[tuple[int, int]]:
    """The (CPU node, memory node) pairs of config key ``node_pairs`` on ``topo``, in order:
    ``all`` (None) every CPU node x every node, row by row; ``diagonal+row0`` each CPU node's
    diagonal, then the first CPU node with every other node; a list: its pairs, each CPU node's
    diagonal (its baseline) before its first pair. On a one-node machine the pair a second
    node would add is listed too: the planner skips it, saying why."""
    if isinstance(value, list):
        pairs: list[tuple[int, int]] = []
        for c, m in ((int(c), int(m)) for c, m in value):
            pairs += [p for p in ((c, c), (c, m)) if p not in pairs]
        return pairs
    if value in (None, "all"):
        pairs = [(c, m) for c in topo.nodes for m in topo.all_nodes]
    elif value == "diagonal+row0":
        row0 = topo.nodes[0]
        pairs = [(c, c) for c in topo.nodes]
        pairs += [(row0, m) for m in topo.all_nodes if m != row0]
    else:
        raise ValueError(f"node_pairs: {value!r} is not all, diagonal+row0 or a list of pairs")
    if len(topo.all_nodes) == 1:
        (only,) = topo.all_nodes
        pairs.append((only, only + 1))
    return pairs


def node_pair_members(value, topo: Topology) -> list[str]:
    """The placements ``node-pairs`` stands for: ``n{cpu}m{mem}`` of each pair of ``node_pairs``."""
    return [f"n{c}m{m}" for c, m in node_pairs(value, topo)]


def node_pair_problems(value, topo: Topology, machine: str = "this machine"):
    """Each pair of an explicit ``node_pairs`` list whose CPU node has no CPUs or whose memory
    node has no memory on ``topo``, as (``[i]``, one line naming the allowed nodes)."""
    if not isinstance(value, list):
        return []
    allowed = (
        f"allowed: [cpu node, memory node] with a CPU node of {node_list(topo.nodes)} and a "
        f"memory node of {node_list(topo.memory_nodes)}"
    )
    out = []
    for i, (cpu, mem) in enumerate(value):  # integer pairs: checked only once the schema passed
        if cpu not in topo.nodes:
            why = (
                f"node {cpu} has no CPUs (a memory-only node: a memory node only)"
                if cpu in topo.memory_nodes
                else f"{machine} has no node {cpu}"
            )
        elif mem not in topo.memory_nodes:
            why = (
                f"node {mem} has no memory"
                if mem in topo.all_nodes
                else f"{machine} has no node {mem}"
            )
        else:
            continue
        out.append((f"[{i}]", f"[{cpu}, {mem}]: {why}; {allowed}"))
    return out
