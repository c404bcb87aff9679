"""Topology readers on fixtures of real machines, and two synthetic trees for the node-pair
matrix (tests/fixtures/topology/README.md): CPUs, nodes, memory nodes, node distances."""

from pathlib import Path

import pytest

from numa_effects.plan import topology
from numa_effects.plan.topology import LogicalCpu, Topology, TopologyError

FIX = Path(__file__).parent / "fixtures" / "topology"

# name -> (source, nodes, logical CPUs, physical cores, threads per core)
FIXTURES = {
    "host-1node-kvm": ("host-1node-kvm", 1, 2, 2, 1),
    "this-vm-2cpu-1node": ("this-vm-2cpu-1node.lscpu", 1, 2, 2, 1),
    "2x16-nosmt-alternating": ("2x16-nosmt-alternating.lscpu-p.txt", 2, 32, 32, 1),
    "2x18-smt-offset36": ("2x18-smt-offset36.lscpu-p.txt", 2, 72, 36, 2),
    "vm-2node-smt-adjacent": ("qemu-2node-2x2x2-smt-adjacent", 2, 8, 4, 2),
    "4node-2x44-smt-offset88": ("4node-2x44-smt-offset88.lscpu-p.txt", 4, 176, 88, 2),
    "qemu-4node-smt-adjacent": ("qemu-4node-4x1x2-smt-adjacent", 4, 8, 4, 2),
    "qemu-2node-test-guest": ("qemu-2node-test-guest", 2, 4, 4, 1),
    # synthetic (tests/fixtures/topology/synthesize, README): 8 nodes; 4 nodes + a memory-only one
    "synthetic-8node": ("synthetic-8node-8x1x2", 8, 16, 8, 2),
    "synthetic-memory-only": ("synthetic-4node-plus-memory-only", 4, 8, 4, 2),
}


def load(name: str) -> Topology:
    return topology.load(FIX / FIXTURES[name][0])


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_shape(name):
    _, nodes, cpus, cores, tpc = FIXTURES[name]
    topo = load(name)
    assert len(topo.nodes) == nodes
    assert len(topo.cpus) == cpus
    assert topo.summary()["physical_cores"] == cores
    assert topo.threads_per_core == tpc
    assert topo.smt == (tpc > 1)
    # every core is on exactly one node, and its siblings share that node
    for c in topo.cpus:
        assert {topo.node_of(s) for s in c.siblings} == {c.node}


def test_alternating_numbering_puts_even_cpus_on_node0():
    topo = load("2x16-nosmt-alternating")
    assert topo.node_cpus(0) == tuple(range(0, 32, 2))
    assert topo.node_cpus(1) == tuple(range(1, 32, 2))
    assert topo.node_cpus(0, use_smt=True) == topo.node_cpus(0)


def test_siblings_n_apart_are_found_not_assumed():
    topo = load("2x18-smt-offset36")
    assert topo.cpu(0).siblings == (0, 36)
    assert topo.cpu(53).siblings == (17, 53)
    assert topo.node_cpus(0) == tuple(range(18))  # primaries only
    # with SMT: every core of the node once, then the second threads
    assert topo.node_cpus(0, use_smt=True) == (*range(18), *range(36, 54))
    assert topo.node_cpus(1, use_smt=True) == (*range(18, 36), *range(54, 72))


def test_adjacent_siblings_are_found_not_assumed():
    topo = load("vm-2node-smt-adjacent")
    assert topo.cpu(0).siblings == (0, 1)
    assert topo.cpu(5).siblings == (4, 5)
    assert topo.node_cpus(0) == (0, 2)
    assert topo.node_cpus(0, use_smt=True) == (0, 2, 1, 3)
    assert topo.node_cpus(1, use_smt=True) == (4, 6, 5, 7)


def test_four_nodes_two_per_socket():
    topo = load("4node-2x44-smt-offset88")
    assert topo.nodes == (0, 1, 2, 3)
    assert topo.cores_per_node() == {0: 22, 1: 22, 2: 22, 3: 22}
    assert {topo.cpu(c).package for c in topo.node_cpus(1)} == {0}
    assert {topo.cpu(c).package for c in topo.node_cpus(2)} == {1}
    assert topo.cpu(22).siblings == (22, 110)


@pytest.mark.parametrize(
    "tree", ["host-1node-kvm", "qemu-2node-2x2x2-smt-adjacent", "qemu-4node-4x1x2-smt-adjacent"]
)
def test_sysfs_lscpu_p_and_lscpu_e_agree(tree):
    """Three readers, one machine: the captured sysfs tree and the lscpu outputs captured on
    the same boot give the same CPUs, nodes, packages and siblings."""
    d = FIX / tree
    from_sysfs = topology.from_sysfs(d)
    from_p = topology.from_lscpu((d / "lscpu-p.txt").read_text())
    from_e = topology.from_lscpu((d / "lscpu-e.txt").read_text())
    assert from_sysfs.cpus == from_p.cpus == from_e.cpus


def test_sysfs_tree_reads_cpu_model_from_fixture_only():
    topo = topology.from_sysfs(FIX / "host-1node-kvm")
    assert topo.cpu_model == "Intel(R) Xeon(R) Processor"
    assert topo.source.startswith("sysfs:")


@pytest.mark.parametrize("name", FIXTURES)
def test_json_round_trip(name, tmp_path):
    import json

    topo = load(name)
    path = tmp_path / "machine.json"
    path.write_text(json.dumps({"topology": topo.to_dict()}))
    again = topology.load(path)
    assert again.cpus == topo.cpus
    assert again.cpu_model == topo.cpu_model
    assert again.memory_nodes == topo.memory_nodes and again.distances == topo.distances


# -- memory nodes and the firmware's distance table ----------------------------------------------
def test_captured_trees_carry_the_distance_table():
    """numactl --hardware of the same boot prints the table sysfs gives."""
    topo = load("qemu-4node-smt-adjacent")
    assert topo.memory_nodes == topo.all_nodes == (0, 1, 2, 3) and topo.memory_only_nodes == ()
    assert topo.distances == {i: {j: 10 if i == j else 20 for j in range(4)} for i in range(4)}
    hw = (FIX / "qemu-4node-4x1x2-smt-adjacent" / "numactl-hardware.txt").read_text()
    rows = hw.split("node distances:")[1].strip().splitlines()[1:]
    assert {int(r.split(":")[0]): [int(x) for x in r.split(":")[1].split()] for r in rows} == {
        i: list(topo.distances[i].values()) for i in range(4)
    }
    assert load("host-1node-kvm").distances == {0: {0: 10}}
    assert load("qemu-2node-test-guest").distance(1, 0) == 20


def test_lscpu_knows_no_memory_only_nodes_and_no_distances():
    topo = load("4node-2x44-smt-offset88")
    assert topo.memory_nodes == topo.nodes and topo.distances == {} and topo.distance(0, 1) is None


def test_a_memory_only_node_is_a_memory_node_without_cpus():
    topo = load("synthetic-memory-only")
    assert topo.nodes == (0, 1, 2, 3) and topo.memory_nodes == (0, 1, 2, 3, 4)
    assert topo.memory_only_nodes == (4,) and topo.all_nodes == (0, 1, 2, 3, 4)
    assert topo.distance(4, 4) == 10 and topo.distance(0, 4) == 20
    assert topo.node_cpus(4) == ()
    assert topo.summary()["nodes"] == 4 and topo.summary()["memory_only_nodes"] == [4]


def test_memory_nodes_from_meminfo_without_has_memory(tmp_path):
    import shutil

    tree = tmp_path / "t"
    shutil.copytree(FIX / "synthetic-4node-plus-memory-only", tree)
    node = tree / "sys/devices/system/node"
    (node / "has_memory").unlink()
    for n in range(5):  # node 1 has no memory (a memoryless CPU node)
        kb = 0 if n == 1 else 1048576
        text = f"Node {n} MemTotal:  {kb} kB\nNode {n} MemFree: 1 kB\n"
        (node / f"node{n}/meminfo").write_text(text)
    assert topology.from_sysfs(tree).memory_nodes == (0, 2, 3, 4)


def test_a_distance_row_that_does_not_fit_the_online_nodes_is_an_error(tmp_path):
    import shutil

    tree = tmp_path / "t"
    shutil.copytree(FIX / "qemu-2node-test-guest", tree)
    (tree / "sys/devices/system/node/node1/distance").write_text("20 10 20\n")
    with pytest.raises(TopologyError, match="3 columns for 2 online nodes"):
        topology.from_sysfs(tree)


def test_the_synthetic_trees_follow_the_captured_one(tmp_path):
    """``synthesize --nodes 4`` writes the captured 4-node guest's sysfs files byte for byte, so
    the synthetic 8-node and memory-only trees differ from a captured tree only in what the
    README says; and the committed synthetic trees are the script's output."""
    import filecmp
    import subprocess
    import sys

    script = FIX / "synthesize"
    out = tmp_path / "four"
    subprocess.run([sys.executable, script, out, "--nodes", "4"], check=True)
    captured = FIX / "qemu-4node-4x1x2-smt-adjacent"
    files = sorted(p.relative_to(captured) for p in captured.rglob("*") if p.is_file())
    files = [f for f in files if f.parts[0] in ("sys", "proc")]
    assert files == sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert all(filecmp.cmp(captured / f, out / f, shallow=False) for f in files)
    for name, args in (
        ("synthetic-8node-8x1x2", ["--nodes", "8"]),
        ("synthetic-4node-plus-memory-only", ["--nodes", "4", "--memory-only", "1"]),
    ):
        subprocess.run([sys.executable, script, tmp_path / name, *args], check=True)
        mine = sorted(p.relative_to(FIX / name) for p in (FIX / name).rglob("*") if p.is_file())
        assert mine == sorted(
            p.relative_to(tmp_path / name) for p in (tmp_path / name).rglob("*") if p.is_file()
        )
        assert all(filecmp.cmp(FIX / name / f, tmp_path / name / f, shallow=False) for f in mine)


def test_lscpu_e_skips_offline_cpus():
    text = """CPU NODE SOCKET CORE L1d:L1i:L2:L3 ONLINE
  0    0      0    0 0:0:0:0          yes
  1    0      0    1 1:1:1:0          yes
  2    -      -    - -                no
"""
    topo = topology.from_lscpu(text)
    assert [c.cpu for c in topo.cpus] == [0, 1]


def test_lscpu_without_header_is_an_error():
    with pytest.raises(TopologyError, match="header"):
        topology.from_lscpu("0,0,0,0\n1,1,0,0\n")


def test_lscpu_with_no_cpus_is_an_error():
    with pytest.raises(TopologyError, match="no CPUs"):
        topology.from_lscpu("# CPU,Core,Socket,Node\n")


def test_malformed_lscpu_is_an_error():
    with pytest.raises(TopologyError, match="malformed"):
        topology.from_lscpu("# CPU,Core,Socket,Node\nx,0,0,0\n")


def test_missing_topology_file(tmp_path):
    with pytest.raises(TopologyError, match="cannot read"):
        topology.load(tmp_path / "nope.json")


def test_invalid_json(tmp_path):
    p = tmp_path / "t.json"
    p.write_text("{not json")
    with pytest.raises(TopologyError, match="not valid JSON"):
        topology.load(p)


def test_sysfs_without_cpu_dir(tmp_path):
    with pytest.raises(TopologyError, match="does not exist"):
        topology.from_sysfs(tmp_path)


def test_inconsistent_siblings_are_rejected():
    with pytest.raises(TopologyError, match="not in the topology"):
        Topology(cpus=(LogicalCpu(0, 0, 0, (0, 1)),))
    with pytest.raises(TopologyError, match="missing from its own"):
        Topology(cpus=(LogicalCpu(0, 0, 0, (1,)), LogicalCpu(1, 0, 0, (1,))))
    with pytest.raises(TopologyError, match="twice"):
        Topology(cpus=(LogicalCpu(0, 0, 0, (0,)), LogicalCpu(0, 0, 0, (0,))))
    with pytest.raises(TopologyError, match="no CPUs"):
        Topology(cpus=())


def test_current_machine_reads():
    topo = topology.current()
    assert topo.cpus and topo.nodes
