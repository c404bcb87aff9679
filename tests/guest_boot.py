"""The 2-node guest's one boot (tests/test_numa_vm.py), started in the background as soon as a
test session knows it will run a ``numa_vm`` test, so that its ~20 minutes under TCG overlap the
host tests instead of adding to them: the host tests mostly wait on their processes (load 0.4 - 1
on 2 cores while they ran alone, docs/development.md), and the guest's 1-thread cells keep one
vCPU busy. conftest.py starts the boot after collection and puts the ``numa_vm`` tests last;
their ``guest`` fixture waits for it (``Boot.wait``).

``NUMA_VM_BACKGROUND=0`` boots only when the first ``numa_vm`` test asks for it (as before), e.g.
to time the guest alone. The guest's configuration is robust to a busy host (``guest.yaml``:
no iteration excluded for contention, no back-off): its timings mean nothing, and the checks
are about placement and verification."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
VM = REPO / "tests" / "numa_vm"
# The guest: 2 nodes of 2 CPUs (so remote and mem-interleave have 2 cores on node 0 at t=2)
# and 3 GiB each (a membind'ed torch process must fit on one node).
GUEST_ARGS = ["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "3G"]
# The guest is killed after this long (a hung guest, not a slow one: at load 7-15 the run took
# 1980 s; beside the host tests it shares the 2 cores with them, and with the node-pair matrix
# it took 48.5 min in the CI-style run of 2026-12-01, docs/development.md).
TIMEOUT_S = 80 * 60


def background() -> bool:
    return os.environ.get("NUMA_VM_BACKGROUND", "1") != "0"


def guest_configs() -> dict[str, dict]:
    """The file guest-e2e reads from its output folder: ``guest-config.yaml`` (the pipeline's
    grid, .test/config/guest.yaml, the 2 x 2 node-pair matrix included)."""
    from conftest import load_config

    return {"guest-config.yaml": load_config("guest")}


class Boot:
    """One run of ``run-in-guest ... guest-e2e`` into ``out`` (its configs: ``guest_configs``),
    after ``tests/numa_vm/setup`` (apt, virtme-ng, the kernel: run in the caller's thread, so
    that no other test's apt runs beside it). ``start`` returns at once; ``wait`` returns the
    finished boot. ``setup_error`` is the setup's output when it failed (nothing booted)."""

    def __init__(self, out: Path):
        self.out = out
        self.configs = guest_configs()
        self.setup_error: str | None = None
        self.proc: subprocess.CompletedProcess | None = None
        self.wall_s: float | None = None
        self.started_at: float | None = None
        self._thread: threading.Thread | None = None
        self._popen: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._stopped = False

    def command(self) -> list[str]:
        return [
            str(VM / "run-in-guest"),
            *GUEST_ARGS,
            "--timeout",
            str(TIMEOUT_S),
            "--rwdir",
            str(self.out),
            "--",
            str(VM / "guest-e2e"),
            sys.executable,
            str(self.out),
        ]

    def start(self) -> Boot:
        setup = subprocess.run([str(VM / "setup")], capture_output=True, text=True)
        if setup.returncode != 0:
            self.setup_error = f"tests/numa_vm/setup failed:\n{setup.stdout}\n{setup.stderr}"
            return self
        for name, config in self.configs.items():
            (self.out / name).write_text(yaml.safe_dump(config))
        self.started_at = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="numa_vm-boot", daemon=True)
        self._thread.start()
        return self

    def _once(self) -> subprocess.CompletedProcess:
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        cmd = self.command()
        # its own session: stop() kills QEMU with it when the test session ends first
        with self._lock:
            if self._stopped:
                return subprocess.CompletedProcess(cmd, -9, "", "stopped before it started")
            self._popen = subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                start_new_session=True,
            )
        out, err = self._popen.communicate()
        return subprocess.CompletedProcess(cmd, self._popen.returncode, out, err)

    def _run(self) -> None:
        proc = self._once()
        if proc.returncode != 0 and not (self.out / "timings.txt").exists():
            # QEMU died before the guest ran anything (seen once under TCG on a loaded machine:
            # an assertion in hw/pci/msix.c after 18 s): one more boot, not a second run.
            print(f"numa_vm: guest never started: {proc.stderr[-500:]}", file=sys.stderr)
            proc = self._once()
        self.wall_s = time.monotonic() - self.started_at
        (self.out / "guest.stdout").write_text(proc.stdout)
        (self.out / "guest.stderr").write_text(proc.stderr)
        self.proc = proc

    def wait(self) -> Boot:
        if self._thread is not None:
            self._thread.join()
        return self

    def stop(self) -> None:
        """Kill the guest if it still runs (the session ended before a numa_vm test waited)."""
        with self._lock:
            self._stopped = True
            if self._popen is not None and self._popen.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self._popen.pid, signal.SIGKILL)
                # gone before the session's machine check (tests/machine_state.py) looks
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._popen.wait(timeout=30)


# The session's boot, started by conftest.py (pytest_collection_finish); None when the session
# runs no numa_vm test, reuses NUMA_VM_RESULTS, or NUMA_VM_BACKGROUND=0.
CURRENT: Boot | None = None
