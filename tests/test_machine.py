"""machine.json's ``emulated``: told from /proc/cpuinfo and /proc/cmdline captured on real
machines (tests/fixtures): the TCG guest of tests/numa_vm and a KVM virtual machine."""

from conftest import FIXTURES

from numa_effects.measure import machine

TOPO = FIXTURES / "topology"
GUEST_CMDLINE = (FIXTURES / "proc" / "guest-cmdline.txt").read_text()


def cpuinfo(name: str) -> str:
    return (TOPO / name / "proc" / "cpuinfo").read_text()


def test_tcg_guest_is_emulated():
    e = machine.emulation(cpuinfo("qemu-2node-test-guest"), GUEST_CMDLINE)
    assert e["emulated"] is True
    assert "QEMU TCG CPU version 2.5+" in e["emulated_reason"]
    assert "virtme-ng" in e["emulated_reason"]
    assert "mean nothing" in e["emulated_reason"]


def test_tcg_cpu_alone_is_emulated():
    e = machine.emulation(cpuinfo("qemu-2node-2x2x2-smt-adjacent"), "")
    assert e["emulated"] is True and "TCG" in e["emulated_reason"]


def test_test_guest_under_kvm_is_emulated():
    """Under KVM the guest's CPU is the host's, but its NUMA nodes are still QEMU's table."""
    e = machine.emulation(cpuinfo("host-1node-kvm"), GUEST_CMDLINE)
    assert e["emulated"] is True and "virtme-ng" in e["emulated_reason"]


def test_kvm_virtual_machine_is_not_emulated():
    e = machine.emulation(cpuinfo("host-1node-kvm"), "console=ttyS0 root=/dev/vda ro quiet")
    assert e["emulated"] is False
    assert "Intel(R) Xeon(R) Processor" in e["emulated_reason"]


def test_facts_carry_the_verdict():
    from numa_effects.plan import topology

    facts = machine.facts(topology.current())
    assert isinstance(facts["emulated"], bool)
    assert facts["emulated_reason"]
    assert facts == {**facts, **machine.emulation()}  # the same evidence, read here


def test_facts_record_the_node_distances_and_memory_nodes(tmp_path):
    """machine.json's topology holds the firmware's node distance table and the memory nodes
    (a memory-only node too), and a plan made from that file (config key ``topology``, as the
    host does with a guest's machine.json) reads them back."""
    import json

    from numa_effects.plan import topology

    topo = topology.load(TOPO / "synthetic-4node-plus-memory-only")
    facts = machine.facts(topo)
    assert facts["topology"]["distances"]["0"] == {"0": 10, "1": 20, "2": 20, "3": 20, "4": 20}
    assert facts["topology"]["memory_nodes"] == [0, 1, 2, 3, 4]
    assert facts["summary"]["memory_only_nodes"] == [4]
    path = tmp_path / "machine.json"
    path.write_text(json.dumps(facts))
    again = topology.load(path)
    assert again.distances == topo.distances and again.memory_only_nodes == (4,)
