"""Machine facts recorded once per run in ``results/machine.json``: topology, NUMA hardware,
kernel knobs that change NUMA results (automatic balancing, THP), frequency governor."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from . import provenance
from .topology import Topology


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
    """The distinct frequency governors of all CPUs ("performance", or "powersave,performance"
    when they differ), or None where cpufreq is not exposed (most VMs)."""
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
        "scaling_governor": _governors(),
        "scaling_driver": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver"),
        "intel_no_turbo": _read("/sys/devices/system/cpu/intel_pstate/no_turbo"),
        "cpufreq_boost": _read("/sys/devices/system/cpu/cpufreq/boost"),
    }


def facts(topo: Topology) -> dict:
    return {
        "summary": topo.summary(),
        "topology": topo.to_dict(),
        "host": provenance.host(),
        "versions": provenance.versions(("torch", "torchvision", "numpy", "snakemake")),
        "kernel": kernel_knobs(),
        "numactl_hardware": _run(["numactl", "--hardware"]),
        "recorded_at": provenance.now(),
    }
