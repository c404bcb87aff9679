"""Stale Snakemake locks after a killed run, told apart from live ones.

Snakemake refuses to start while ``.snakemake/locks`` holds overlapping lock files, even those a
killed run left behind. So every Snakemake process of this workflow (not its job processes)
holds a shared ``flock`` on ``.snakemake/numa-effects.alive`` until it exits; the kernel drops it
however the process dies. A run that can take it exclusively knows no run is alive here, removes
the lock files (what ``--unlock`` does), then keeps a shared lock like everyone else.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

GUARD = "numa-effects.alive"
_HELD: list = []  # open guard files: kept for the life of the process


def clear_stale_locks(workdir: str | os.PathLike = ".") -> list[str]:
    """Remove Snakemake lock files that no live run holds; return their names."""
    state = Path(workdir, ".snakemake")
    state.mkdir(exist_ok=True)
    guard = open(state / GUARD, "a")  # noqa: SIM115 - held open on purpose
    removed: list[str] = []
    try:
        fcntl.flock(guard, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pass  # another run of this workflow is alive: its locks are real
    else:
        for lock in sorted((state / "locks").glob("*.lock")):
            try:
                lock.unlink()
                removed.append(lock.name)
            except FileNotFoundError:
                pass
    fcntl.flock(guard, fcntl.LOCK_SH)  # downgrade (or wait for a cleaner to finish)
    _HELD.append(guard)
    return removed
