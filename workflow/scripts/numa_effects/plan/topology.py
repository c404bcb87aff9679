"""The machine's CPU topology: NUMA nodes, packages, physical cores and their SMT siblings, the
nodes that have memory (a memory-only node, e.g. CXL memory, has no CPUs) and the firmware's node
distance table. Read from sysfs, from ``lscpu -p``/``-e`` output (which says neither memory
nodes nor distances: memory on the CPU nodes only) or from this module's JSON, so a cluster's
compute-node topology can be given as a file. Physical cores are identified by their sibling
set, never by assuming siblings are adjacent or offset by N.
"""

from __future__ import annotations

import json
import os
import platform
from dataclasses import asdict, dataclass, field
from pathlib import Path

from numa_effects.plan import cpulist


class TopologyError(ValueError):
    """A topology source is missing, malformed or inconsistent."""


@dataclass(frozen=True, order=True)
class LogicalCpu:
    cpu: int
    node: int
    package: int
    siblings: tuple[int, ...]  # all logical CPUs of this physical core, this one included

    @property
    def primary(self) -> bool:
        """True for the lowest-numbered sibling: the one used when SMT is off."""
        return self.cpu == min(self.siblings)


@dataclass(frozen=True)
class Topology:
    cpus: tuple[LogicalCpu, ...]
    cpu_model: str = ""
    source: str = ""
    # NUMA nodes that have memory, ascending; () = not known (lscpu): the CPU nodes
    memory_nodes: tuple[int, ...] = ()
    # the firmware's node distances, {from node: {to node: distance}} (sysfs node*/distance;
    # 10 = local); {} = not known
    distances: dict = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self):
        if not self.cpus:
            raise TopologyError("topology has no CPUs")
        memory_nodes = self.memory_nodes or {c.node for c in self.cpus}  # not known: CPU nodes
        object.__setattr__(self, "memory_nodes", tuple(sorted(set(memory_nodes))))
        for c in self.cpus:
            for what, number in (("number", c.cpu), ("NUMA node", c.node), ("package", c.package)):
                if number < 0:
                    raise TopologyError(f"CPU {c.cpu} has {what} {number}, a negative number")
        if any(n < 0 for n in self.memory_nodes):
            raise TopologyError(f"memory nodes {list(self.memory_nodes)}: a negative number")
        ids = [c.cpu for c in self.cpus]
        if len(set(ids)) != len(ids):
            raise TopologyError("topology lists a CPU twice")
        known = set(ids)
        for c in self.cpus:
            if c.cpu not in c.siblings:
                raise TopologyError(f"CPU {c.cpu} is missing from its own sibling list")
            if not set(c.siblings) <= known:
                raise TopologyError(f"CPU {c.cpu} has siblings {c.siblings} not in the topology")

    @property
    def nodes(self) -> tuple[int, ...]:
        """NUMA nodes that have CPUs, ascending."""
        return tuple(sorted({c.node for c in self.cpus}))

    @property
    def all_nodes(self) -> tuple[int, ...]:
        """Every NUMA node: those with CPUs and those with memory, ascending."""
        return tuple(sorted(set(self.nodes) | set(self.memory_nodes)))

    @property
    def memory_only_nodes(self) -> tuple[int, ...]:
        """Nodes that have memory and no CPUs (CXL or other far memory): memory targets only."""
        return tuple(n for n in self.memory_nodes if n not in self.nodes)

    def distance(self, a: int, b: int) -> int | None:
        """The firmware's distance from node ``a`` to node ``b`` (10 = local), None if unknown."""
        return self.distances.get(a, {}).get(b)

    @property
    def smt(self) -> bool:
        return any(len(c.siblings) > 1 for c in self.cpus)

    @property
    def threads_per_core(self) -> int:
        return max(len(c.siblings) for c in self.cpus)

    def cpu(self, cpu_id: int) -> LogicalCpu:
        for c in self.cpus:
            if c.cpu == cpu_id:
                return c
        raise KeyError(cpu_id)

    def node_cpus(self, node: int, use_smt: bool = False) -> tuple[int, ...]:
        """CPUs of a node usable for placement, in placement order: one per physical core
        (the lowest-numbered sibling), ascending; with SMT then the second siblings, and so on,
        so that t <= cores still gets one thread per core."""
        on_node = sorted((c for c in self.cpus if c.node == node), key=lambda c: c.cpu)
        if not use_smt:
            return tuple(c.cpu for c in on_node if c.primary)
        by_rank: dict[int, list[int]] = {}
        for c in on_node:
            by_rank.setdefault(sorted(c.siblings).index(c.cpu), []).append(c.cpu)
        return tuple(cpu for rank in sorted(by_rank) for cpu in by_rank[rank])

    def usable_cpus(self, use_smt: bool = False) -> tuple[int, ...]:
        """Every CPU a placement may use, node by node (the order ``sequential`` fills)."""
        return tuple(c for n in self.nodes for c in self.node_cpus(n, use_smt))

    def cores_per_node(self) -> dict[int, int]:
        return {n: len(self.node_cpus(n)) for n in self.nodes}

    def node_of(self, cpu_id: int) -> int:
        return self.cpu(cpu_id).node

    def summary(self) -> dict:
        return {
            "cpu_model": self.cpu_model,
            "nodes": len(self.nodes),
            "packages": len({c.package for c in self.cpus}),
            "logical_cpus": len(self.cpus),
            "physical_cores": sum(1 for c in self.cpus if c.primary),
            "cores_per_node": {str(k): v for k, v in self.cores_per_node().items()},
            "memory_only_nodes": list(self.memory_only_nodes),
            "smt": self.smt,
            "threads_per_core": self.threads_per_core,
        }

    def to_dict(self) -> dict:
        return {
            "cpu_model": self.cpu_model,
            "source": self.source,
            "memory_nodes": list(self.memory_nodes),
            # JSON keys are strings: {"0": {"0": 10, "1": 20}, ...}
            "distances": {
                str(i): {str(j): d for j, d in row.items()} for i, row in self.distances.items()
            },
            "cpus": [{**asdict(c), "siblings": cpulist.format(c.siblings)} for c in self.cpus],
        }

    @classmethod
    def from_dict(cls, data: dict, source: str = "") -> Topology:
        try:
            cpus = tuple(
                LogicalCpu(
                    cpu=int(c["cpu"]),
                    node=int(c["node"]),
                    package=int(c.get("package", c["node"])),
                    siblings=cpulist.parse(str(c.get("siblings", c["cpu"]))),
                )
                for c in data["cpus"]
            )
            memory_nodes = tuple(int(n) for n in data.get("memory_nodes") or ())
            distances = {
                int(i): {int(j): int(d) for j, d in row.items()}
                for i, row in (data.get("distances") or {}).items()
            }
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise TopologyError(f"malformed topology {source or 'data'}: {exc!r}") from exc
        try:
            return cls(
                cpus=tuple(sorted(cpus)),
                cpu_model=str(data.get("cpu_model", "")),
                source=source or str(data.get("source", "")),
                memory_nodes=memory_nodes,
                distances=distances,
            )
        except TopologyError as exc:
            raise TopologyError(f"topology {source or 'data'}: {exc}") from exc


def _read(path: Path) -> str:
    return path.read_text().strip()


def from_sysfs(root: str | os.PathLike = "/") -> Topology:
    """Read the topology below ``root`` (``/`` on a live system, a fixture tree in tests)."""
    root = Path(root)
    cpu_dir = root / "sys/devices/system/cpu"
    node_dir = root / "sys/devices/system/node"
    if not cpu_dir.is_dir():
        raise TopologyError(f"{cpu_dir} does not exist")
    online_file = cpu_dir / "online"
    if online_file.exists():
        online = cpulist.parse(_read(online_file))
    else:
        online = tuple(
            sorted(int(p.name[3:]) for p in cpu_dir.glob("cpu[0-9]*") if p.name[3:].isdigit())
        )
    node_of = {
        cpu: node
        for node, d in _node_dirs(node_dir).items()
        for cpu in cpulist.parse(_read(d / "cpulist"))
    }
    memory_nodes, distances = _node_memory(node_dir), _node_distances(node_dir)
    cpus = []
    for cpu in online:
        topo = cpu_dir / f"cpu{cpu}" / "topology"
        try:
            package = int(_read(topo / "physical_package_id"))
            siblings = cpulist.parse(_read(topo / "thread_siblings_list"))
        except FileNotFoundError as exc:
            raise TopologyError(f"incomplete sysfs topology for cpu{cpu}: {exc}") from exc
        cpus.append(LogicalCpu(cpu, node_of.get(cpu, 0), max(package, 0), siblings))
    return Topology(
        cpus=tuple(sorted(cpus)),
        cpu_model=_cpu_model(root),
        source=f"sysfs:{root}",
        memory_nodes=memory_nodes,
        distances=distances,
    )


def _node_dirs(node_dir: Path) -> dict[int, Path]:
    if not node_dir.is_dir():
        return {}
    found = {int(d.name[4:]): d for d in node_dir.glob("node[0-9]*") if d.name[4:].isdigit()}
    return dict(sorted(found.items()))


def _node_memory(node_dir: Path) -> tuple[int, ...]:
    """The nodes with memory: ``has_memory``, else the nodes whose ``meminfo`` has a MemTotal
    above 0; () when sysfs says neither (then the CPU nodes are taken)."""
    has_memory = node_dir / "has_memory"
    if has_memory.exists():
        return cpulist.parse(_read(has_memory))
    out = []
    for node, d in _node_dirs(node_dir).items():
        try:
            text = (d / "meminfo").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            # "Node 2 MemTotal:       16777216 kB"
            parts = line.split()
            if len(parts) >= 4 and parts[2] == "MemTotal:" and int(parts[3]) > 0:
                out.append(node)
    return tuple(out)


def _node_distances(node_dir: Path) -> dict[int, dict[int, int]]:
    """The firmware's distance table: a column per online node in each ``node*/distance``."""
    dirs = _node_dirs(node_dir)
    online_file = node_dir / "online"
    online = cpulist.parse(_read(online_file)) if online_file.exists() else tuple(dirs)
    table: dict[int, dict[int, int]] = {}
    for node, d in dirs.items():
        if not (d / "distance").exists():
            continue
        row = [int(x) for x in _read(d / "distance").split()]
        if len(row) != len(online):
            raise TopologyError(
                f"{d / 'distance'} has {len(row)} columns for {len(online)} online nodes"
            )
        table[node] = dict(zip(online, row, strict=True))
    return table


def _cpu_model(root: Path) -> str:
    cpuinfo = root / "proc/cpuinfo"
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.lower().startswith(("model name", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    # Only the live system may fall back to this interpreter's idea of the processor.
    return (platform.processor() or "") if root.resolve() == Path("/") else ""


# lscpu's numbered columns: numbers >= 0 ("-" and "" mean none, read as 0).
LSCPU_NUMBERS = {"cpu": "CPU", "core": "core", "socket": "socket", "node": "NUMA node"}


def from_lscpu(text: str, cpu_model: str = "", source: str = "lscpu") -> Topology:
    """Parse ``lscpu -p`` (columns from the ``# CPU,Core,Socket,Node,...`` header) or ``lscpu
    -e`` (the ``CPU NODE SOCKET CORE ...`` header; offline CPUs left out). Siblings are the CPUs
    that share (socket, core)."""
    header: list[str] | None = None
    rows: list[dict[str, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            fields = [f.strip().lower() for f in line.lstrip("#").split(",")]
            if "cpu" in fields and "core" in fields:
                header = fields
            continue
        if header is None and line.split()[0].upper() == "CPU" and "CORE" in line.upper():
            header = [f.lower() for f in line.split()]
            continue
        if header is None:
            raise TopologyError("lscpu output has no '# CPU,Core,Socket,Node' or 'CPU NODE' header")
        values = line.split(",") if "," in line else line.split()
        row = dict(zip(header, values, strict=False))
        if row.get("online", "yes").lower() == "no":
            continue
        for key, what in LSCPU_NUMBERS.items():
            value = (row.get(key) or "").strip()
            if value.startswith("-") and value != "-":
                raise TopologyError(f"{source} line {number}: {what} {value} is negative")
        rows.append(row)
    if not rows:
        raise TopologyError("lscpu output lists no CPUs")

    def num(row: dict, key: str) -> int:
        value = (row.get(key) or "").strip()
        return int(value) if value not in ("", "-") else 0

    try:
        core_key = {int(r["cpu"]): (num(r, "socket"), int(r["core"])) for r in rows}
        by_core: dict[tuple[int, int], list[int]] = {}
        for cpu, key in core_key.items():
            by_core.setdefault(key, []).append(cpu)
        cpus = tuple(
            LogicalCpu(
                cpu=int(r["cpu"]),
                node=num(r, "node"),
                package=num(r, "socket"),
                siblings=tuple(sorted(by_core[core_key[int(r["cpu"])]])),
            )
            for r in rows
        )
    except (KeyError, ValueError) as exc:
        raise TopologyError(f"malformed lscpu output: {exc!r}") from exc
    return Topology(cpus=tuple(sorted(cpus)), cpu_model=cpu_model, source=source)


def load(path: str | os.PathLike) -> Topology:
    """Load a topology file: this project's JSON (``machine.json`` or its ``topology`` part),
    ``lscpu -p``/``-e`` text, or a folder holding a copy of ``sys/devices/system``. Raises
    TopologyError with the file name on any problem."""
    path = Path(path)
    if path.is_dir():
        return from_sysfs(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise TopologyError(f"cannot read topology file {path}: {exc.strerror}") from exc
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TopologyError(f"topology file {path} is not valid JSON: {exc}") from exc
        if isinstance(data, dict) and "topology" in data:
            data = data["topology"]
        if not isinstance(data, dict):
            raise TopologyError(f"topology file {path} does not hold a JSON object")
        return Topology.from_dict(data, source=str(path))
    return from_lscpu(text, source=str(path))


def current() -> Topology:
    """The topology of the machine this process runs on."""
    return from_sysfs("/")
