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
