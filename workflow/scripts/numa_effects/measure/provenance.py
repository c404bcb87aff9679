"""How a number was produced: binding read back from /proc, software versions, environment,
machine facts. Every function reads; none changes anything."""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import platform
import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from numa_effects import __version__

# ATEN_CPU_CAPABILITY caps the ISA of ATen's own kernels (the guest of tests/numa_vm sets it);
# THP_MEM_ALLOC_ENABLE=1 makes torch ask for transparent huge pages (benchmarks/variance.py)
ENV_PREFIXES = (
    *("OMP_", "KMP_", "MKL_", "GOMP_", "DNNL_", "ONEDNN_", "TORCH", "ATEN_", "THP_", "SLURM_"),
)
ENV_NAMES = ("LD_PRELOAD", "MALLOC_CONF", "PYTHONPATH", "CUDA_VISIBLE_DEVICES")
SLURM_KEYS = ("SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURMD_NODENAME", "SLURM_JOB_PARTITION")


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def proc_status(path: str = "/proc/self/status") -> dict[str, str]:
    out = {}
    for line in Path(path).read_text().splitlines():
        if ":" in line:
            key, value = line.split(":", 1)
            out[key.strip()] = value.strip()
    return out


def binding() -> dict:
    """The CPU and memory binding in force for this process, and its ``aslr``."""
    st = proc_status()
    return {
        "cpus_allowed_list": st.get("Cpus_allowed_list", ""),
        "mems_allowed_list": st.get("Mems_allowed_list", ""),
        "sched_affinity": sorted(os.sched_getaffinity(0)),
        "mempolicy": mempolicy(),
        "aslr": address_randomization(),
    }


# personality(2)'s ADDR_NO_RANDOMIZE (<linux/personality.h>): set by `setarch -R`, inherited by
# the children; the kernel then lays out this process's stack, mmap and heap the same each time.
ADDR_NO_RANDOMIZE = 0x0040000
ASLR_LEVELS = {"0": "off", "1": "partial", "2": "on"}


def address_randomization(
    personality: str = "/proc/self/personality", sysctl: str = "/proc/sys/kernel/randomize_va_space"
) -> str:
    """This process's address-space layout randomization: ``on``, ``partial`` (not the heap),
    ``off`` (level 0, or ADDR_NO_RANDOMIZE in its personality) or ``unknown``."""
    with contextlib.suppress(OSError, ValueError):
        if int(Path(personality).read_text().strip(), 16) & ADDR_NO_RANDOMIZE:
            return "off"
    try:
        return ASLR_LEVELS.get(Path(sysctl).read_text().strip(), "unknown")
    except OSError:
        return "unknown"


def relevant_env(environ) -> dict[str, str]:
    return {
        k: v for k, v in sorted(environ.items()) if k.startswith(ENV_PREFIXES) or k in ENV_NAMES
    }


def slurm() -> dict[str, str]:
    return {k: os.environ[k] for k in SLURM_KEYS if k in os.environ}


def versions(packages=("torch", "torchvision", "numpy")) -> dict[str, str]:
    """Python's, this package's (``numa_effects.__version__``) and each installed package's."""
    out = {"python": platform.python_version(), "numa_effects": __version__}
    for name in packages:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = ""
    return out


def host() -> dict:
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "python_executable": sys.executable,
    }


def git_revision(path: str | os.PathLike) -> str:
    """`git describe --always --dirty` of the workflow checkout, or "" outside git."""
    try:
        return subprocess.run(
            ["git", "-C", str(path), "describe", "--always", "--dirty", "--tags"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


MPOL_MODES = {
    0: "default",
    1: "preferred",
    2: "bind",
    3: "interleave",
    4: "local",
    5: "preferred_many",
    6: "weighted_interleave",
}
_SYS_GET_MEMPOLICY = {"x86_64": 239, "aarch64": 236, "ppc64le": 260, "s390x": 269}


def mempolicy() -> dict:
    """The calling thread's memory policy and node mask (get_mempolicy(2)): Mems_allowed_list
    only shows the cpuset; a ``numactl --membind`` policy is visible only here."""
    import ctypes

    nr = _SYS_GET_MEMPOLICY.get(platform.machine())
    if nr is None:
        return {
            "mode": "unknown",
            "error": f"no get_mempolicy syscall number for {platform.machine()}",
        }
    # The process's own symbols: ctypes.util.find_library would run `ldconfig -p` every call.
    libc = ctypes.CDLL(None, use_errno=True)
    mode = ctypes.c_int(0)
    maxnode = 1024
    mask = (ctypes.c_ulong * (maxnode // (8 * ctypes.sizeof(ctypes.c_ulong))))()
    rc = libc.syscall(
        nr, ctypes.byref(mode), mask, ctypes.c_ulong(maxnode), None, ctypes.c_ulong(0)
    )
    if rc != 0:
        return {"mode": "unknown", "error": os.strerror(ctypes.get_errno())}
    bits = 8 * ctypes.sizeof(ctypes.c_ulong)
    nodes = [i * bits + b for i, word in enumerate(mask) for b in range(bits) if word >> b & 1]
    raw = mode.value
    return {
        "mode": MPOL_MODES.get(raw & 0xFF, f"mode{raw & 0xFF}"),
        "flags": raw & ~0xFF,
        "nodes": nodes,
    }
