"""A Slurm config whose controller does not answer, found before Snakemake waits for it.

Snakemake's Slurm plugin runs ``scontrol show config`` at import when ``sinfo`` is on the PATH;
with a ``slurm.conf`` whose controller does not answer, scontrol retries for its
``MessageTimeout`` at every start of Snakemake. ``stale()`` finds that in well under a second (a
TCP connection to each controller); ``avoid()`` points the ``SLURM_CONF`` of a Snakemake the
entry points start at ``NO_CONTROLLER``, a config that refuses at once. A plain ``snakemake``
cannot be spared the wait (the plugin runs before the workflow is read): the workflow prints
``note()`` instead.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parents[3]
NO_CONTROLLER = REPO_DIR / "tools" / "slurm-no-controller.conf"
# Where Slurm's commands look without SLURM_CONF (Debian, older Debian, a build from source).
DEFAULT_PATHS = ("/etc/slurm/slurm.conf", "/etc/slurm-llnl/slurm.conf", "/usr/local/etc/slurm.conf")
DEFAULT_PORT = 6817
DEFAULT_TIMEOUT_S = 10
# A config whose MessageTimeout is this short costs no noticeable wait (NO_CONTROLLER's is 1).
SHORT_TIMEOUT_S = 2
# How long the controllers are given to accept a connection, all together.
CONNECT_TIMEOUT_S = 0.8
HOW_TO = "docs/troubleshooting.md, 'Snakemake starts slowly'"


@dataclass(frozen=True)
class Stale:
    """A Slurm config none of whose controllers answer."""

    path: Path
    controllers: tuple[tuple[str, int], ...]  # (host or address, port)
    timeout_s: int  # MessageTimeout: how long scontrol retries


def config_path(env: Mapping[str, str] | None = None) -> Path | None:
    """The slurm.conf Slurm's commands read (``SLURM_CONF``, else a usual path), or None."""
    env = os.environ if env is None else env
    if env.get("SLURM_CONF"):
        path = Path(env["SLURM_CONF"])
        return path if path.is_file() else None
    return next((Path(p) for p in DEFAULT_PATHS if Path(p).is_file()), None)


def read(path: Path) -> tuple[tuple[tuple[str, int], ...], int]:
    """(controllers as (address, port), MessageTimeout) from a slurm.conf."""
    values: dict[str, list[str]] = {}
    for line in path.read_text(errors="replace").splitlines():
        for key, value in re.findall(r"(\w+)=(\S+)", line.split("#", 1)[0]):
            values.setdefault(key.lower(), []).append(value)
    hosts = []
    for entry in values.get("slurmctldhost", []):  # name or name(address)
        m = re.fullmatch(r"([^()]+)(?:\((.+)\))?", entry)
        if m:
            hosts.append((m.group(2) or m.group(1)).split(",")[0])
    for name, addr in (("controlmachine", "controladdr"), ("backupcontroller", "backupaddr")):
        if values.get(name):
            hosts.append((values.get(addr) or values[name])[0])
    port = _first_number(values.get("slurmctldport"), DEFAULT_PORT)  # 6817 or 6817-6820
    timeout = _first_number(values.get("messagetimeout"), DEFAULT_TIMEOUT_S)
    return tuple((h, port) for h in hosts), timeout


def _first_number(given: list[str] | None, default: int) -> int:
    m = re.match(r"\d+", given[0]) if given else None
    return int(m.group()) if m else default


def answers(controllers: tuple[tuple[str, int], ...]) -> bool:
    """Whether any controller accepts a TCP connection within ``CONNECT_TIMEOUT_S``, name
    lookups included (threads not waited for beyond it)."""
    answered = threading.Event()

    def connect(host: str, port: int) -> None:
        try:
            with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
                answered.set()
        except OSError:
            pass

    threads = [threading.Thread(target=connect, args=c, daemon=True) for c in controllers]
    for t in threads:
        t.start()
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    for t in threads:  # a refusal ends its thread at once; a silent host at the deadline
        t.join(max(0.0, deadline - time.monotonic()))
        if answered.is_set():
            break
    return answered.is_set()


def stale(env: Mapping[str, str] | None = None) -> Stale | None:
    """The Slurm config Snakemake's start would wait for, or None (no ``sinfo`` or ``scontrol``
    on the PATH, no config, a short MessageTimeout, or a controller answers)."""
    env = os.environ if env is None else env
    path_var = env.get("PATH", os.defpath)
    if not (shutil.which("sinfo", path=path_var) and shutil.which("scontrol", path=path_var)):
        return None
    path = config_path(env)
    if path is None:
        return None
    try:
        controllers, timeout = read(path)
    except OSError:
        return None
    if not controllers or timeout <= SHORT_TIMEOUT_S or answers(controllers):
        return None
    return Stale(path, controllers, timeout)


def note(found: Stale, avoided: bool = False) -> str:
    """The one line that says so (``avoided``: this run reads ``NO_CONTROLLER`` instead)."""
    where = ", ".join(f"{host}:{port}" for host, port in found.controllers)
    head = (
        f"note: the Slurm config {found.path} names the controller {where}, which does "
        f"not answer, so every start of Snakemake waits ~{found.timeout_s} s for it"
    )
    if avoided:
        return f"{head}; this run reads {NO_CONTROLLER} instead (SLURM_CONF) ({HOW_TO})"
    return (
        f"{head}; start slurmctld, remove {found.path} if this machine does not use Slurm, or "
        f"export SLURM_CONF={NO_CONTROLLER} ({HOW_TO})"
    )


def avoid(env: Mapping[str, str] | None = None) -> tuple[dict[str, str], str | None]:
    """``env`` (default: this process's) for a Snakemake that must not wait for a stale
    config, and the note to print (None when nothing is stale)."""
    env = dict(os.environ if env is None else env)
    found = stale(env)
    if found is None:
        return env, None
    env["SLURM_CONF"] = str(NO_CONTROLLER)
    return env, note(found, avoided=True)
