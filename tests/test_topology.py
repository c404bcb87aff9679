"""Topology readers on fixtures of real machines (tests/fixtures/topology/README.md)."""

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
