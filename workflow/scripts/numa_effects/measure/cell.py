"""The pinned instance process of every measurement, driven by ``runner``.

Run as ``numactl <binding> python -m numa_effects.measure.cell --spec S [--instance J]``. It
first checks its CPUs and memory policy (``verify.at_start``: when wrong it replies ``{"ready":
false, ...}`` without importing torch), sets its threads, builds its workload and replies
``{"ready": true, ...}`` on its protocol pipe (the original stdout; all else printed goes to
stderr, its log). Then it answers one-line commands on stdin with one JSON line each:

- ``go``: one step timed by itself with ``time.perf_counter`` (one clock for every process):
  ``t0``, ``t1``, the minor page faults during the step, then its CPU time (getrusage), all read
  outside the interval.
- ``go canary``: the same, and after ``t1`` the canary (``make_canary``) timed as ``canary_s``,
  before the CPU time is read (so the probe counts it as the process's own).
- ``verify``: the workload's ``report``, the in-process verification (``verify.run``, and the
  allocator's), the binding read back, peak RSS and the warnings seen.

End of input ends it. With ``--serve`` (the launcher's reference server, docs/deploy.md) it
reads no commands: after one untimed first call it answers requests back to back, its own
clock per request, until ``--requests N``, ``--seconds S`` or SIGINT/SIGTERM, then prints one
JSON line: the latency summary and the ``verify`` reply. Without ``--instance`` it serves as the
instance whose CPUs are its own (as ``run_cpu`` starts it). Exits ``EXIT_MISMATCH`` when its
thread count or binding is not the planned one, ``EXIT_COMPILE`` when a compiled model's first
call raises, 1 on any other exception (``supervise.classify`` names the cause).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import resource
import signal
import sys
import time
import traceback
import warnings

from numa_effects import stats
from numa_effects.measure import contention, provenance, verify
from numa_effects.measure.workloads import CompileError, error_text, warning_entries
from numa_effects.plan.spec import Spec

EXIT_MISMATCH = 3
EXIT_COMPILE = 4
INTEROP_THREADS = 1  # torch's inter-op pool of every instance


class CellError(RuntimeError):
    """The cell cannot be measured as labelled."""


# The canary (docs/performance.md): a fixed cache-resident kernel, so its time is the CPUs' speed.
# ``bmm`` splits its products between the threads, so it moves with the host's speed as the model
# does; ``mm`` is mostly synchronisation at 2 threads. ``benchmarks/canary.py`` measures both.
CANARY_SIZE = 96
CANARY_REPEATS = 32
CANARY_KERNELS = {
    "bmm": f"torch.bmm of {CANARY_REPEATS} x {CANARY_SIZE}x{CANARY_SIZE} float32",
    "mm": f"{CANARY_REPEATS} x torch.mm of {CANARY_SIZE}x{CANARY_SIZE} float32",
}
CANARY_KERNEL = "bmm"


def make_canary(kernel: str = CANARY_KERNEL):
    """The canary kernel (``CANARY_KERNELS``), its matrices allocated here, under the binding."""
    import torch

    if kernel not in CANARY_KERNELS:
        raise ValueError(f"unknown canary kernel {kernel!r} ({', '.join(CANARY_KERNELS)})")
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(CANARY_REPEATS, CANARY_SIZE, CANARY_SIZE, generator=gen)
    out = torch.empty_like(a)
    if kernel == "bmm":

        def canary() -> None:
            torch.bmm(a, a, out=out)

    else:
        one, one_out = a[0], out[0]

        def canary() -> None:
            for _ in range(CANARY_REPEATS):
                torch.mm(one, one, out=one_out)

    canary.operands = (a, out)  # what it multiplies and where the products go (tests)
    return canary


def set_threads(threads: int) -> dict:
    import torch

    torch.set_num_threads(threads)
    with contextlib.suppress(RuntimeError):  # already set: only possible once per process
        torch.set_num_interop_threads(INTEROP_THREADS)
    got = torch.get_num_threads()
    if got != threads:
        raise CellError(f"torch.get_num_threads() is {got}, the cell asks for {threads}")
    return {"torch_num_threads": got, "torch_num_interop_threads": torch.get_num_interop_threads()}


def minor_faults() -> int:
    """This process's minor page faults so far: around a step, the pages it touched anew."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def first_call(step) -> None:
    """A compiled model's first step: it compiles there, so an exception is a compile-error."""
    try:
        step()
    except Exception as exc:
        raise CompileError(error_text(exc)) from exc


def start(spec: Spec, j: int, reply):
    """Check the binding, import torch if used, build the workload and say ready: (instance,
    build, threads' facts), or None when the binding was wrong (replied, nothing built)."""
    started = provenance.now()
    inst = spec.instances[j]
    early = verify.at_start(inst.plan.to_dict())
    if not early["ok"]:
        reply({"ready": False, "pid": os.getpid(), "verification": early})
        return None
    runtime = importlib.import_module(inst.resolved["module"])
    info, import_s = {}, 0.0
    if runtime.TORCH:
        # timed apart: with the CUDA build the largest fixed cost of a process
        t0 = time.perf_counter()
        import torch  # noqa: F401

        import_s = time.perf_counter() - t0
        info = set_threads(inst.threads)
    built = runtime.build(inst, spec.settings)
    reply(
        {
            "ready": True,
            "pid": os.getpid(),
            "started_at": started,
            "import_s": import_s,
            **built.timings,
            "threads_info": info,
            "canary_kernel": CANARY_KERNELS[CANARY_KERNEL],
            "cpu_s": contention.process_cpu_s(),
        }
    )
    return inst, built, info


def timed_step(step, canary=None) -> dict:
    """One step timed by itself (and the canary after it): the ``go`` reply."""
    clock = time.perf_counter
    f0 = minor_faults()
    t0 = clock()
    step()
    t1 = clock()
    timed = {"t0": t0, "t1": t1, "minor_faults": minor_faults() - f0}
    if canary is not None:
        c0 = clock()
        canary()
        timed["canary_s"] = clock() - c0
    return {**timed, "cpu_s": contention.process_cpu_s()}


def verified(inst, built, info: dict, caught: list) -> dict:
    """The ``verify`` reply, after the timed steps (then reading /proc cannot disturb them)."""
    inspected = built.report() if built.report else None
    verification = verify.run(inst.plan.to_dict())
    if inst.resolved.get("allocator"):
        verify.check_allocator(verification, inst.resolved["allocator"])
    return {
        "binding": {**provenance.binding(), **info},
        "verification": verification,
        # the workload's report: a cell's inspection, the peak's per-kernel times
        "report": inspected,
        "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "warnings": caught,
        "finished_at": provenance.now(),
    }


def serve(spec: Spec, j: int, commands, reply) -> None:
    """Build instance ``j``'s workload, say ready, then answer ``commands``."""
    got = start(spec, j, reply)
    if got is None:
        return
    inst, built, info = got
    caught = list(built.warnings)
    first, canary = built.compiles, None
    with warnings.catch_warnings(record=True) as wlist:
        warnings.simplefilter("always")
        for line in commands:
            cmd = line.strip()
            if cmd in ("go", "go canary"):
                if cmd == "go canary" and canary is None:
                    canary = make_canary()
                step = (lambda: first_call(built.step)) if first else built.step
                reply(timed_step(step, canary if cmd == "go canary" else None))
                first = False
            elif cmd == "verify":
                caught += [e for e in warning_entries(wlist) if e not in caught]
                wlist.clear()
                reply(verified(inst, built, info, caught))
            elif cmd:
                reply({"error": f"unknown command {cmd!r}"})


def own_instance(spec: Spec) -> int:
    """The instance whose CPUs this process runs on (0 when none's are)."""
    mine = sorted(os.sched_getaffinity(0))
    got = [j for j, i in enumerate(spec.instances) if sorted(i.plan.cpus) == mine]
    return got[0] if got else 0


def latency_summary(latencies: list[float], batch: int) -> dict:
    """The reference server's requests: their statistics (``stats.summarize``) and images/s."""
    if not latencies:
        return {"requests": 0}
    rate = batch * len(latencies) / sum(latencies)
    return {"requests": len(latencies), **stats.summarize(latencies), "images_per_s": rate}


def serve_requests(spec: Spec, j: int, requests: int | None, seconds: float | None, out) -> None:
    """The reference server: requests back to back until the limit or a signal, then one line."""
    stop: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, frame: stop.append(signum))
    got = start(spec, j, lambda obj: print(json.dumps(obj), file=sys.stderr, flush=True))
    if got is None:
        raise CellError("its binding is not the planned one (its start line says why)")
    inst, built, info = got
    with warnings.catch_warnings(record=True) as wlist:
        warnings.simplefilter("always")
        (first_call if built.compiles else lambda step: step())(built.step)  # untimed, warm
        latencies: list[float] = []
        end = time.monotonic() + seconds if seconds else None
        while not stop and (requests is None or len(latencies) < requests):
            if end is not None and time.monotonic() >= end:
                break
            step = timed_step(built.step)
            latencies.append(step["t1"] - step["t0"])
        caught = list(built.warnings) + warning_entries(wlist)
    done = {"instance": j, "pid": os.getpid(), "batch": int(inst.cell["batch_size"])}
    done |= {"threads": inst.threads, "signal": stop[0] if stop else None}
    done |= latency_summary(latencies, done["batch"])
    out(done | verified(inst, built, info, caught))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m numa_effects.measure.cell", description=__doc__)
    ap.add_argument("--spec", required=True, help="the measurement's spec, written by the runner")
    ap.add_argument("--instance", type=int, default=None, help="which of its instances this is")
    ap.add_argument("--serve", action="store_true", help="answer requests (reference server)")
    ap.add_argument("--requests", type=int, default=None, help="with --serve: stop after N")
    ap.add_argument("--seconds", type=float, default=None, help="with --serve: stop after S s")
    args = ap.parse_args(argv)
    with open(args.spec) as fh:
        spec = Spec.from_json(json.load(fh))
    # The protocol keeps the original stdout; everything else printed goes to the log (stderr).
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def reply(obj: dict) -> None:
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    try:
        if args.serve:
            j = own_instance(spec) if args.instance is None else args.instance
            serve_requests(spec, j, args.requests, args.seconds, reply)
        else:
            serve(spec, args.instance or 0, sys.stdin, reply)
    except CellError as exc:
        print(f"numa_effects.measure.cell: {exc}", file=sys.stderr)
        return EXIT_MISMATCH
    except CompileError:
        traceback.print_exc()
        return EXIT_COMPILE
    return 0


if __name__ == "__main__":
    rc = main()
    # The protocol has ended: skip Python's shutdown, which with torch loaded took up to a
    # second per replicate under load and more than 30 s in an emulated guest, time in which
    # the next replicate cannot start on these CPUs. An exception out of main() still takes the
    # normal way out (traceback, exit 1).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)
