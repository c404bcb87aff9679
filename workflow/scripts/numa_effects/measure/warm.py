"""Configurations started warm: each one's pinned instances (``runner.Instance``) started at
once, read until ready, then stepped untimed (a compiled model compiles at its first step), kept
running for their caller and closed when it is done. One starter serves the deploy job's blocks
(``slicer``) and the load test (``numa_effects.loadtest``).

A configuration whose instance fails (``runner.Failed``) keeps the failure in ``Pool.failed`` and
has its instances killed; the others go on. An interruption kills every instance
(``supervise.Guard``)."""

from __future__ import annotations

import contextlib
import json
import statistics
import time
from pathlib import Path

from numa_effects.measure import runner, supervise
from numa_effects.measure.job import spec_path
from numa_effects.plan.spec import Spec


class Pool:
    """One configuration's running instances, their ready replies and their steps
    (``rounds``: a ``runner.Rounds`` whose first ``warm`` rounds were the untimed ones)."""

    def __init__(self, spec: Spec, environs, logs: list[Path], guard, max_memory_mb=None):
        text, oom, k = json.dumps(spec.to_json(), indent=1), supervise.oom_kill_count(), len(logs)
        members = [
            runner.Member(i.plan, spec_path(log), log, env, j)
            for j, (i, log, env) in enumerate(zip(spec.instances, logs, environs, strict=True))
        ]
        self.spec, self.insts, self.failed = spec, [], None
        self.batches = [int(i.cell["batch_size"]) for i in spec.instances]
        self.ready: list[dict] = []
        self.checks: list[dict] = []
        self.warm = 0
        for m in members:
            self.insts.append(runner.Instance(k, m, text, guard, max_memory_mb, oom))
        self.rounds = runner.Rounds(self.insts, {}, 0.0, 0.0)

    def run(self, act, *args) -> None:
        """``act(*args)`` unless this configuration failed; a failure kills its instances."""
        if self.failed is not None:
            return
        try:
            act(*args)
        except runner.Failed as exc:
            self.failed = exc
            for inst in self.insts:
                supervise.kill_group(inst.proc)

    def steps(self, n: int, timeout_s: float) -> None:
        """``n`` steps of every instance at once (the barrier): ``rounds.times`` grows by n."""
        self.rounds.timeout_s = timeout_s
        for _ in range(n):
            self.rounds.deadline = time.monotonic() + timeout_s
            self.rounds()

    def _ready(self, timeout_s: float) -> None:
        self.ready = [i.read(time.monotonic() + timeout_s, timeout_s) for i in self.insts]

    def _warm(self, n: int, timeout_s: float) -> None:
        self.steps(n, timeout_s)
        self.warm = n

    def verify(self, timeout_s: float) -> None:
        for inst in self.insts:
            inst.send("verify")
        self.checks = [i.read(time.monotonic() + timeout_s, timeout_s) for i in self.insts]

    def _close(self, timeout_s: float) -> None:
        for inst in self.insts:
            inst.close(time.monotonic() + timeout_s, timeout_s)

    def spans(self) -> list[float]:
        """Every step's latency: the last instance's end minus the first one's start."""
        return [max(b for _, b in r) - min(a for a, _ in r) for r in self.rounds.times]

    def step_s(self) -> float:
        """A warm step's seconds: the median of the untimed steps after the first."""
        lat = self.spans()
        return statistics.median(lat[1 : self.warm] or lat[:1])


@contextlib.contextmanager
def started(confs: dict, timeout_s: float, warm_steps: int, max_memory_mb=None):
    """{name: ``Pool``} of ``confs`` ({name: (spec, environs, logs)}): every instance started
    at once, then each configuration read until ready and stepped ``warm_steps`` times; on
    leaving, each one still running is closed (a failure to exit becomes its ``failed``)."""
    pools: dict[str, Pool] = {}
    with supervise.Guard() as guard:
        try:
            for name, (spec, environs, logs) in confs.items():
                pools[name] = Pool(spec, environs, logs, guard, max_memory_mb)
            for pool in pools.values():
                pool.run(pool._ready, timeout_s)
            for pool in pools.values():
                pool.run(pool._warm, max(1, warm_steps), timeout_s)
            yield pools
            for pool in pools.values():
                pool.run(pool._close, timeout_s)
        finally:
            for pool in pools.values():
                for inst in pool.insts:
                    inst.logfh.close()
