"""The layouts other tools choose by a fixed rule, computed for a topology as those tools compute
them: the baselines the deploy answer is measured against (``plan.deploy``, docs/deploy.md).

- ``run_cpu``: PyTorch's ``python -m torch.backends.xeon.run_cpu``, reproduced line by line in
  ``run_cpu_layout``: it takes lscpu's ``Core`` column as CPU numbers for ``numactl -C`` (where
  they are not, its instances run on the wrong CPUs: reproduced, and said in the notes), with
  ``-m`` the nodes of those CPUs.
- ``all_cores`` and ``one_core_each`` (MLPerf ResNet-50 Offline's layout).

A layout is a list of ``Slot``s, run through ``placement.Plan`` (``Slot.plan``). Pure except
``run_cpu_allocator``, which looks for the libraries where ``run_cpu`` looks.
"""

from __future__ import annotations

import glob
import itertools
import os
from dataclasses import dataclass
from os.path import expanduser

from numa_effects.plan import placement as placement_mod
from numa_effects.plan.topology import Topology

RUN_CPU = "torch.backends.xeon.run_cpu"  # the module: python -m RUN_CPU
LATENCY_MODE_CORES = 4  # run_cpu's core_num_per_instance under --latency-mode


@dataclass(frozen=True)
class Slot:
    """One instance: its CPUs, intra-op threads and memory nodes (() = first touch)."""

    cpus: tuple[int, ...]
    threads: int
    mem_nodes: tuple[int, ...] = ()

    def nodes(self, topo: Topology) -> tuple[int, ...]:
        return tuple(sorted({topo.node_of(c) for c in self.cpus}))

    def cores(self, topo: Topology) -> int:
        """How many physical cores its CPUs lie on."""
        return len({topo.cpu(c).siblings for c in self.cpus})

    def plan(self, topo: Topology, label: str = placement_mod.PACKED) -> placement_mod.Plan:
        """The binding the measuring stack enforces and verifies (``numactl_args``)."""
        nodes, cores = self.nodes(topo), self.cores(topo)
        return placement_mod.pinned(label, self.cpus, self.threads, nodes, self.mem_nodes, cores)


class NotRunnable(ValueError):
    """A launcher's rule gives no layout on this topology (the launcher itself would stop)."""


def lscpu_rows(topo: Topology) -> list[tuple[int, int, int, int]]:
    """(CPU, Core, Socket, Node) as ``lscpu --parse=CPU,Core,Socket,Node`` prints them: cores
    numbered logically in the order their first CPU appears."""
    first = sorted(min(c.siblings) for c in topo.cpus if c.primary)
    index = {cpu: i for i, cpu in enumerate(first)}
    return [(c.cpu, index[min(c.siblings)], c.package, c.node) for c in topo.cpus]


@dataclass(frozen=True)
class CpuInfo:
    """What ``run_cpu``'s ``_CPUinfo`` gives it: the ``Core`` numbers per node and the node of each
    logical CPU, parsed as ``run_cpu`` does (one digit of the node column)."""

    node_physical_cores: tuple[tuple[int, ...], ...]
    logical_core_node: dict

    @classmethod
    def of(cls, topo: Topology) -> CpuInfo:
        rows = [(cpu, core, str(node)[:1]) for cpu, core, _, node in lscpu_rows(topo)]
        node_nums = int(max(n for *_, n in rows)) + 1
        phys: list[list[int]] = [[] for _ in range(node_nums)]
        node_of = {}
        for cpu, core, nid in rows:
            n = int(nid or "0")
            if core not in phys[n]:
                phys[n].append(core)
            node_of[cpu] = n
        return cls(tuple(map(tuple, phys)), node_of)

    @property
    def all_physical_cores(self) -> list[int]:
        return [c for node in self.node_physical_cores for c in node]


def run_cpu_layout(
    topo: Topology,
    *,
    latency_mode: bool = False,
    throughput_mode: bool = False,
    ninstances: int = -1,
    ncores_per_instance: list[int] | int = -1,
    skip_cross_node_cores: bool = False,
) -> list[Slot]:
    """The instances ``run_cpu`` starts with these arguments, the ``Core`` numbers taken as CPU
    numbers as it takes them. Raises ``NotRunnable`` where ``run_cpu`` raises, or where a core
    number is no CPU of the machine."""
    info = CpuInfo.of(topo)
    sizes = ncores_per_instance if isinstance(ncores_per_instance, list) else [ncores_per_instance]
    sizes = [int(x) for x in sizes]
    if sizes != [-1]:
        if ninstances > 0 and len(sizes) == 1:
            sizes = sizes * ninstances
        if ninstances > 0 and len(sizes) != ninstances:
            raise NotRunnable('run_cpu: mismatch of "--ninstances" and "--ncores-per-instance"')
        ninstances = len(sizes)
    cores = info.all_physical_cores
    if latency_mode:
        cores, sizes = _latency_mode(info, skip_cross_node_cores)
    elif throughput_mode:
        sizes = [len(n) for n in info.node_physical_cores]
    elif sizes == [-1]:
        sizes = _spread(info, ninstances, skip_cross_node_cores)
        if skip_cross_node_cores and ninstances > 1:
            cores = [c for n in info.node_physical_cores[:ninstances] for c in n]
    elif skip_cross_node_cores:
        cores = _skip_leftovers(info, sizes)
    if sum(sizes) > len(cores):
        raise NotRunnable("run_cpu: the sum of ncores_per_instance exceeds the physical cores")
    slots, cores = [], sorted(cores)
    for start, n in zip(itertools.accumulate(sizes, initial=0), sizes, strict=False):
        core_list = cores[start : start + n]
        if not core_list:
            raise NotRunnable("run_cpu would start an instance with no cores")
        missing = [c for c in core_list if c not in info.logical_core_node]
        if missing:
            raise NotRunnable(f"run_cpu passes core numbers {missing} that are no CPU here")
        nodes = sorted({info.logical_core_node[c] for c in core_list})
        slots.append(Slot(tuple(core_list), len(core_list), tuple(nodes)))
    return slots


def _spread(info: CpuInfo, ninstances: int, skip: bool) -> list[int]:
    """Core counts of ``--ninstances N`` alone: one instance of every core, one instance per
    node (``--skip-cross-node-cores``), else the cores split evenly (remainder idle)."""
    cores = info.all_physical_cores
    if ninstances in (-1, 1) and not skip:
        return [len(cores)]
    if ninstances > len(cores):
        raise NotRunnable(f"run_cpu: {ninstances} instances on {len(cores)} cores")
    if skip:
        if ninstances > len(info.node_physical_cores):
            raise NotRunnable("run_cpu: --ninstances exceeds the NUMA nodes")
        return [len(n) for n in info.node_physical_cores[:ninstances]]
    return [len(cores) // ninstances] * ninstances


def _skip_leftovers(info: CpuInfo, sizes: list[int]) -> list[int]:
    """``--skip-cross-node-cores`` with explicit core counts: instance i on node i, each node's
    cores beyond its instance (the largest numbers) and the nodes after the last left out."""
    per_node = info.node_physical_cores
    if len(sizes) > len(per_node):
        raise NotRunnable("run_cpu: more ncores-per-instance elements than nodes")
    leftover = {c for rest in per_node[len(sizes) :] for c in rest}
    for i, n in enumerate(sizes):
        if n > len(per_node[i]):
            raise NotRunnable(f"run_cpu: node {i} has {len(per_node[i])} cores, {n} asked")
        leftover |= set(per_node[i][n:])
    return [c for c in info.all_physical_cores if c not in leftover]


def _latency_mode(info: CpuInfo, skip: bool) -> tuple[list[int], list[int]]:
    n = LATENCY_MODE_CORES
    if skip:  # per node, whole groups of 4; each node's remainder idle
        if len(info.node_physical_cores[0]) < n:
            # run_cpu itself stops here (its loop variable is never bound)
            raise NotRunnable(f"run_cpu fails: node 0 has fewer than {n} cores")
        cores = [c for node in info.node_physical_cores for c in node[: len(node) // n * n]]
        return cores, [n] * (len(cores) // n)
    cores = info.all_physical_cores
    sizes = [n] * (len(cores) // n)
    if len(cores) % n:
        sizes.append(len(cores) % n)
    return cores, sizes


def run_cpu_args(slots: list[Slot], topo: Topology) -> list[str] | None:
    """``run_cpu`` arguments (tokens) that start exactly ``slots`` (same CPUs and ``-m`` nodes),
    or None when no ``--ninstances``/``--ncores-per-instance`` invocation does."""
    sizes = [s.threads for s in sorted(slots, key=lambda s: min(s.cpus))]
    if any(len(s.cpus) != s.threads for s in slots):
        return None
    for skip in (False, True):
        try:
            got = run_cpu_layout(
                topo, ncores_per_instance=sizes, ninstances=len(sizes), skip_cross_node_cores=skip
            )
        except (NotRunnable, IndexError):
            continue
        want = sorted((tuple(sorted(s.cpus)), tuple(s.mem_nodes)) for s in slots)
        if sorted((g.cpus, g.mem_nodes) for g in got) == want:
            # ints, one per instance: run_cpu declares the option type=int, nargs="+"
            args = ["--ninstances", str(len(sizes)), "--ncores-per-instance", *map(str, sizes)]
            return [*args, "--skip-cross-node-cores"] if skip else args
    return None


def run_cpu_allocator(environ=None) -> tuple[str, str]:
    """(allocator registry name, why) of what ``run_cpu`` preloads by default: ``libtcmalloc.so``,
    else ``libjemalloc.so``, in the folders its ``add_lib_preload`` searches, else glibc."""
    env = os.environ if environ is None else environ
    dirs = [f"{env[k]}/lib" for k in ("CONDA_PREFIX", "VIRTUAL_ENV") if env.get(k)]
    dirs += [f"{expanduser('~')}/.local/lib", "/usr/local/lib", "/usr/local/lib64"]
    dirs += ["/usr/lib", "/usr/lib64"]
    for name in ("tcmalloc", "jemalloc"):
        for d in dirs:
            found = glob.glob(os.path.join(d, f"lib{name}.so"))
            if found:
                return name, f"run_cpu preloads {found[0]}"
    return "default", "run_cpu finds neither libtcmalloc.so nor libjemalloc.so where it looks"


def all_cores(topo: Topology) -> list[Slot]:
    """One process, no binding: every CPU, torch's default threads, memory first-touch."""
    cpus = tuple(sorted(c.cpu for c in topo.cpus))
    return [Slot(cpus, sum(1 for c in topo.cpus if c.primary), ())]


def one_core_each(topo: Topology) -> list[Slot]:
    """One 1-thread instance per physical core, memory on its node (MLPerf Offline's layout)."""
    return [Slot((cpu,), 1, (topo.node_of(cpu),)) for cpu in topo.usable_cpus()]


def straddling(slots: list[Slot], topo: Topology) -> list[int]:
    """Indexes of the instances whose CPUs lie on more than one node."""
    return [i for i, s in enumerate(slots) if len(s.nodes(topo)) > 1]


def notes(slots: list[Slot], topo: Topology) -> list[str]:
    """What a layout does that a user may not expect: instances across nodes, two instances or
    threads on one core's siblings, cores left idle."""
    out = []
    cross = straddling(slots, topo)
    if cross:
        out.append(f"{len(cross)} of {len(slots)} instance(s) straddle NUMA nodes")
    cores = [topo.cpu(c).siblings for s in slots for c in s.cpus]
    if len(set(cores)) < len(cores):
        out.append("some instances share a physical core's SMT siblings")
    used = set(cores)
    idle = sum(1 for c in topo.cpus if c.primary and c.siblings not in used)
    if idle:
        out.append(f"{idle} physical core(s) idle")
    return out
