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


def kernel_knobs() -> dict:
    return {
        "numa_balancing": _read("/proc/sys/kernel/numa_balancing"),
        "transparent_hugepage": _read("/sys/kernel/mm/transparent_hugepage/enabled"),
        "scaling_governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
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
