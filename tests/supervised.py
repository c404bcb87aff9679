"""One command run to its end under the supervision a measurement's instances get
(``measure.supervise``): its own session, dying with its launcher, under a ``Guard``, killed with
its process group at the timeout, its output to ``logfh``. The failure tests drive the
supervision with it (the runner talks to its instances through pipes instead)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time

from numa_effects.measure import supervise


def run_child(
    cmd: list[str], env: dict, logfh, timeout_s: float, max_memory_mb: int | None = None
) -> supervise.Outcome:
    ooms = supervise.oom_kill_count()
    started = time.monotonic()
    timed_out = False
    setup = supervise.child_setup(os.getpid(), max_memory_mb)
    with supervise.Guard() as guard:
        proc = guard.watch(
            subprocess.Popen(cmd, env=env, stdout=logfh, stderr=subprocess.STDOUT, preexec_fn=setup)
        )
        deadline = started + timeout_s
        while proc.poll() is None:
            guard.check()
            if time.monotonic() >= deadline:
                timed_out = True
                supervise.kill_group(proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=supervise.POLL_S)
        guard.kill_all()  # the processes the child started die with it
    return supervise.Outcome(
        returncode=proc.returncode,
        timed_out=timed_out,
        wall_s=time.monotonic() - started,
        oom_kills=max(0, supervise.oom_kill_count() - ooms),
    )
