"""Machine facts recorded once per run in ``results/machine.json``: topology, NUMA hardware,
kernel knobs, frequency governor, and whether the machine is an emulated test guest whose
timings mean nothing (``emulated``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from numa_effects.measure import provenance
from numa_effects.plan.topology import Topology


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _run(cmd: list[str]) -> str | None:
    if shutil.which(cmd[0]) is None:
        return None
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def _governors(root: str = "/sys/devices/system/cpu") -> str | None:
    """The distinct frequency governors of all CPUs, or None without cpufreq (most VMs)."""
    found = sorted(
        {g for p in Path(root).glob("cpu[0-9]*/cpufreq/scaling_governor") if (g := _read(str(p)))}
    )
    return ",".join(found) or None


def kernel_knobs() -> dict:
    """Kernel settings that change NUMA results; None where not readable. numa_balancing > 0
    migrates pages towards the threads that touch them (it respects --membind, but can move
    the pages of an interleaved or preferred policy)."""
    return {
        "numa_balancing": _read("/proc/sys/kernel/numa_balancing"),
        "transparent_hugepage": _read("/sys/kernel/mm/transparent_hugepage/enabled"),
        "transparent_hugepage_defrag": _read("/sys/kernel/mm/transparent_hugepage/defrag"),
        "randomize_va_space": _read("/proc/sys/kernel/randomize_va_space"),
        "scaling_governor": _governors(),
        "scaling_driver": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver"),
        "intel_no_turbo": _read("/sys/devices/system/cpu/intel_pstate/no_turbo"),
        "cpufreq_boost": _read("/sys/devices/system/cpu/cpufreq/boost"),
    }


# The CPU model name of QEMU's software emulation (TCG), e.g. "QEMU TCG CPU version 2.5+".
EMULATED_CPU_MODELS = ("QEMU TCG CPU",)
# Kernel command-line words of a virtme-ng guest: its NUMA nodes are QEMU's, even under KVM.
TEST_GUEST_CMDLINE = ("virtme_hostname=", "virtme-ng-init")


def _cpu_model(cpuinfo: str | None) -> str | None:
    for line in (cpuinfo or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            return value.strip()
    return None


def emulation(cpuinfo: str | None = None, cmdline: str | None = None) -> dict:
    """``emulated``: True when timings here say nothing about real hardware: a CPU emulated in
    software (QEMU TCG), or a virtme-ng test guest (its NUMA nodes are a QEMU table). A cloud VM
    is not emulated: its CPUs are the host's. ``emulated_reason`` says which evidence decided."""
    cpuinfo = _read("/proc/cpuinfo") if cpuinfo is None else cpuinfo
    cmdline = _read("/proc/cmdline") if cmdline is None else cmdline
    model = _cpu_model(cpuinfo)
    reasons = []
    if model and any(m in model for m in EMULATED_CPU_MODELS):
        reasons.append(f"CPU model {model!r} is QEMU's: software emulation (TCG)")
    if cmdline and any(w in cmdline for w in TEST_GUEST_CMDLINE):
        reasons.append(
            "a virtme-ng QEMU guest (tests/numa_vm): its NUMA nodes and distances are QEMU's "
            "table, all memory is the host's"
        )
    if reasons:
        return {
            "emulated": True,
            "emulated_reason": "; ".join(reasons)
            + ". Timings and NUMA effects measured here mean nothing as performance.",
        }
    return {
        "emulated": False,
        "emulated_reason": f"CPU model {model!r} is not one of QEMU's emulated models and the "
        "kernel command line names no virtme-ng guest",
    }


def capabilities() -> dict | None:
    """What the CPU computes fast (``plan.cpu``); None off x86."""
    from numa_effects.plan import cpu

    try:
        return cpu.of_machine().to_dict()
    except (OSError, cpu.CpuInfoError):
        return None


def facts(topo: Topology) -> dict:
    return {
        **emulation(),
        "capabilities": capabilities(),
        "summary": topo.summary(),
        "topology": topo.to_dict(),
        "host": provenance.host(),
        "versions": provenance.versions(("torch", "torchvision", "numpy", "snakemake")),
        "kernel": kernel_knobs(),
        "numactl_hardware": _run(["numactl", "--hardware"]),
        "recorded_at": provenance.now(),
    }
