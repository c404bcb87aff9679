"""A Slurm config whose controller does not answer is found at once (numa_effects.slurmconf):
the state in which every start of Snakemake waits for ``scontrol show config``. The configs are
written here and their controllers are real sockets on this machine (one that listens, ports
where nothing does); the Slurm commands need only be on the PATH. Snakemake's real wait on such
a config, and the entry point that spares it, are tested against a real Slurm client in
tests/test_slurm.py."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import time
from pathlib import Path

import pytest

from numa_effects import slurmconf


@pytest.fixture
def slurm_path(tmp_path) -> str:
    """A PATH with sinfo and scontrol on it: the real ones when installed, else empty
    executables of those names (the detection only asks whether they are there)."""
    found = [shutil.which(c) for c in ("sinfo", "scontrol")]
    if all(found):
        return os.environ["PATH"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("sinfo", "scontrol"):
        f = bin_dir / name
        f.write_text("#!/bin/sh\nexit 1\n")
        f.chmod(f.stat().st_mode | stat.S_IXUSR)
    return f"{bin_dir}{os.pathsep}{os.environ['PATH']}"


def closed_port() -> int:
    """A TCP port of 127.0.0.1 where nothing listens (bound once, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def conf(folder: Path, text: str) -> Path:
    path = folder / "slurm.conf"
    path.write_text(text)
    return path


def env(path: Path, slurm_path: str) -> dict:
    return {"PATH": slurm_path, "SLURM_CONF": str(path)}


def test_a_controller_that_does_not_answer_is_found_at_once(tmp_path, slurm_path):
    port = closed_port()
    path = conf(tmp_path, f"# c\nSlurmctldHost=head(127.0.0.1)\nSlurmctldPort={port}\n")
    start = time.monotonic()
    found = slurmconf.stale(env(path, slurm_path))
    assert time.monotonic() - start < 2 * slurmconf.CONNECT_TIMEOUT_S + 0.5
    assert found == slurmconf.Stale(path, (("127.0.0.1", port),), slurmconf.DEFAULT_TIMEOUT_S)
    line = slurmconf.note(found)
    assert "\n" not in line and str(path) in line and f"127.0.0.1:{port}" in line
    assert "waits ~10 s" in line and f"SLURM_CONF={slurmconf.NO_CONTROLLER}" in line


def test_a_controller_that_listens_is_not_stale(tmp_path, slurm_path):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        # the backup answers: scontrol asks it too
        text = f"SlurmctldHost=a(127.0.0.1)\nSlurmctldHost=b\nSlurmctldPort={port}\n"
        path = conf(tmp_path, text)
        assert slurmconf.read(path)[0] == (("127.0.0.1", port), ("b", port))
        assert slurmconf.stale(env(path, slurm_path)) is None


def test_a_host_that_cannot_be_resolved_does_not_answer(tmp_path, slurm_path):
    path = conf(tmp_path, "SlurmctldHost=nowhere.invalid\n")
    start = time.monotonic()
    found = slurmconf.stale(env(path, slurm_path))
    assert time.monotonic() - start < 2 * slurmconf.CONNECT_TIMEOUT_S + 0.5
    assert found is not None and found.controllers == (("nowhere.invalid", 6817),)


def test_nothing_is_stale_where_snakemake_would_not_wait(tmp_path, slurm_path):
    port = closed_port()
    text = f"ControlMachine=head\nControlAddr=127.0.0.1\nSlurmctldPort={port}-{port + 3}\n"
    path = conf(tmp_path, text)
    assert slurmconf.read(path) == ((("127.0.0.1", port),), 10)
    assert slurmconf.stale(env(path, slurm_path)) is not None
    # no Slurm commands on the PATH: the plugin asks nothing
    assert slurmconf.stale({"PATH": str(tmp_path), "SLURM_CONF": str(path)}) is None
    # a short MessageTimeout (the refusing config the entry points use) costs no wait
    assert slurmconf.stale(env(slurmconf.NO_CONTROLLER, slurm_path)) is None
    short = conf(tmp_path, f"SlurmctldHost=h(127.0.0.1)\nSlurmctldPort={port}\nMessageTimeout=2\n")
    assert slurmconf.stale(env(short, slurm_path)) is None
    # a config naming no controller, or none at all
    assert slurmconf.stale(env(conf(tmp_path, "ClusterName=x\n"), slurm_path)) is None
    assert slurmconf.stale(env(tmp_path / "missing.conf", slurm_path)) is None


def test_the_entry_points_environment_reads_the_refusing_config(tmp_path, slurm_path):
    path = conf(tmp_path, f"SlurmctldHost=h(127.0.0.1)\nSlurmctldPort={closed_port()}\n")
    out, line = slurmconf.avoid({**env(path, slurm_path), "KEEP": "1"})
    assert out["SLURM_CONF"] == str(slurmconf.NO_CONTROLLER) and out["KEEP"] == "1"
    assert line.startswith("note: the Slurm config") and "this run reads" in line
    assert slurmconf.stale(out) is None  # and the Snakemake it starts finds nothing stale
    same, none = slurmconf.avoid({"PATH": slurm_path, "SLURM_CONF": str(slurmconf.NO_CONTROLLER)})
    assert none is None and same["SLURM_CONF"] == str(slurmconf.NO_CONTROLLER)
    assert slurmconf.NO_CONTROLLER.is_file()
