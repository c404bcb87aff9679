"""Stale Snakemake locks after a killed run, told apart from live ones.

Snakemake refuses to start while ``.snakemake/locks`` holds lock files whose files overlap its
own ("Directory cannot be locked ... --unlock"). That is right while another run is alive, and
in the way after ``kill -9`` of Snakemake, an out-of-memory kill or a reboot: the locks of the
dead run stay behind and every later run stops until someone runs ``snakemake --unlock``.

So every Snakemake process of this workflow (the main process; not cluster-side job processes)
holds a shared ``flock`` on ``.snakemake/numa-effects.alive`` from parsing until it exits. The
kernel drops it when the process dies, however it dies. A new run that can take the lock
exclusively knows that no run of this workflow is alive in this working directory, so lock
files present are stale and are removed (what ``--unlock`` does); it then keeps a shared lock
like everyone else. While another run is alive, nothing is removed and Snakemake's own lock
refuses overlapping runs with its usual message.
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
