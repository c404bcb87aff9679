"""The pinned instance process of every measurement (a cell, a dtype's peak, a node pair's
memory probe, each instance of a packing group), driven by ``runner``.

Run as ``numactl <binding> python -m numa_effects.measure.cell --spec S [--instance J]`` with
``OMP_NUM_THREADS`` set (and its allocator preloaded: ``measure.job``), ``S`` the measurement's
spec (``plan.spec.Spec``, resolved where the job runs) and ``J`` which of its instances this is
(default 0). Before anything else its CPUs and memory policy are checked against its plan
(``verify.at_start``): when they are wrong it replies ``{"ready": false, "verification": ...}``
and ends, without importing torch. Then it sets its threads (``set_threads``, for a workload
that uses torch), builds its workload (the module ``measure.job`` resolved from
``measure.workloads.WORKLOADS``: ``build``), prints one JSON line ``{"ready": true, ...}``
(torch's import, build, reference and conversion times, threads, pid, CPU time, the canary
kernel's name) on its protocol pipe (the original stdout; anything the libraries print goes to
stderr, its log), then answers one-line commands on stdin, one JSON line each:

- ``go``: one step of its workload, timed by itself: ``{"t0", "t1", "minor_faults", "cpu_s"}``
  (``time.perf_counter`` just around the step: CLOCK_MONOTONIC, one clock for every process of
  the machine; the minor page faults during the step, ``minor_faults``, read just outside the
  interval; then its process CPU time from getrusage, all threads, outside the interval).
- ``go canary``: the same, and after ``t1`` the canary (``make_canary``: a fixed, cache-resident
  float32 matrix product, timed the same way): ``{"t0", "t1", "minor_faults", "canary_s",
  "cpu_s"}`` (the CPU time read after the canary, so the probe counts it as the process's own).
- ``verify``: first the workload's ``report`` (a model cell with ``inspect`` in its options:
  one untimed call with oneDNN verbose on; the peak: each kernel's time per step), then the
  in-process verification (``verify.run``, and the allocator from ``/proc/self/maps``:
  ``verify.check_allocator``) against its plan and its binding read back
  (``provenance.binding``), peak RSS and the warnings seen.

End of input (the runner finished, or died) ends it. Exits ``EXIT_MISMATCH`` with a one-line
reason on stderr when it cannot be measured as labelled (wrong thread count), ``EXIT_COMPILE``
when a compiled model's first call (where it compiles) raises; another exception (in the
build, in the conversion, or later) exits 1 with its traceback: ``supervise.classify`` names
the cause.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import resource
import sys
import time
import traceback
import warnings

from numa_effects.measure import provenance, verify
from numa_effects.measure.workloads import CompileError
from numa_effects.plan.spec import Spec

EXIT_MISMATCH = 3
EXIT_COMPILE = 4


class CellError(RuntimeError):
    """The cell cannot be measured as labelled."""


# The canary (settings key ``canary``, docs/performance.md): how fast this process's CPUs run a
# fixed kernel at this moment, next to each timed step. ``bmm`` (the default): one torch.bmm of
# 32 products of 96 x 96 float32 matrices (1.2 MiB in, 1.2 MiB out: it stays in the cores'
# caches, so its time is the CPUs' speed, not the memory placement's), about 0.5 - 1 ms at one
# thread. The batch is split between the process's threads: each thread computes its own
# products, with one synchronisation, so at 2 threads it moves with the host's speed as the
# model does (slope about 1). ``mm``, the first canary: 32 torch.mm calls
# on one matrix; at 2 threads each call is mostly synchronisation and moved about twice as much
# as the model (slope 0.4 - 0.5). ``benchmarks/canary.py`` measures both.
CANARY_SIZE = 96
CANARY_REPEATS = 32
CANARY_KERNELS = {
    "bmm": f"torch.bmm of {CANARY_REPEATS} x {CANARY_SIZE}x{CANARY_SIZE} float32",
    "mm": f"{CANARY_REPEATS} x torch.mm of {CANARY_SIZE}x{CANARY_SIZE} float32",
}
CANARY_KERNEL = "bmm"


def make_canary(kernel: str = CANARY_KERNEL):
    """The canary kernel (``CANARY_KERNELS``): a callable running ``CANARY_REPEATS`` products of
    fixed ``CANARY_SIZE`` square matrices, allocated here (in this process, under its binding)."""
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
        torch.set_num_interop_threads(1)
    got = torch.get_num_threads()
    if got != threads:
        raise CellError(f"torch.get_num_threads() is {got}, the cell asks for {threads}")
    return {"torch_num_threads": got, "torch_num_interop_threads": torch.get_num_interop_threads()}


def cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def minor_faults() -> int:
    """This process's minor page faults so far (getrusage, all threads): read just outside a
    step's interval, their difference is the pages the step touched for the first time -- memory
    the allocator gave back to the kernel and took again (docs/performance.md, "One replicate")."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def first_call(step) -> None:
    """The first step of a compiled model: it compiles there, so an exception is the cell's
    ``compile-error`` (exit ``EXIT_COMPILE``, the traceback in the log)."""
    try:
        step()
    except Exception as exc:
        raise CompileError(
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        ) from exc


def start(spec: Spec, j: int, reply):
    """Check the binding, import torch where the workload uses it, build the workload and say
    ready: (the instance, its build, the threads' facts), or None when the binding was wrong at
    the start (replied, nothing built)."""
    started = provenance.now()
    inst = spec.instances[j]
    # CPUs and memory policy first, before torch's import and the build: a binding wrong now
    # fails the measurement at once (verify.at_start)
    early = verify.at_start(inst.plan.to_dict())
    if not early["ok"]:
        reply({"ready": False, "pid": os.getpid(), "verification": early})
        return None
    runtime = importlib.import_module(inst.resolved["module"])
    info, import_s = {}, 0.0
    if runtime.TORCH:
        # torch's import, timed apart (import_s): with the CUDA build the largest fixed cost of a
        # process (benchmarks/overhead.py); the model's own import (builder) is in build_s
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
            "cpu_s": cpu_s(),
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
    return {**timed, "cpu_s": cpu_s()}


def verified(inst, built, info: dict, caught: list) -> dict:
    """The ``verify`` reply: after the timed steps an untimed call may inspect the kernels,
    reading /proc cannot disturb a timing, the threads exist and the memory is resident."""
    inspected = built.report() if built.report else None
    verification = verify.run(inst.plan.to_dict())
    if inst.resolved.get("allocator"):
        verify.check_allocator(verification, inst.resolved["allocator"])
    return {
        "report": inspected,
        "verification": verification,
        "binding": {**provenance.binding(), **info},
        "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "warnings": caught,
        "finished_at": provenance.now(),
    }


def serve(spec: Spec, j: int, commands, reply) -> None:
    """Build instance ``j``'s workload, say ready, then answer ``commands`` (see the module
    docstring)."""
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
                for w in wlist:
                    entry = {
                        "category": w.category.__name__,
                        "message": str(w.message).splitlines()[0],
                    }
                    if entry not in caught:
                        caught.append(entry)
                wlist.clear()
                reply(verified(inst, built, info, caught))
            elif cmd:
                reply({"error": f"unknown command {cmd!r}"})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m numa_effects.measure.cell", description=__doc__)
    ap.add_argument("--spec", required=True, help="the measurement's spec, written by the runner")
    ap.add_argument("--instance", type=int, default=0, help="which of its instances this is")
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
        serve(spec, args.instance, sys.stdin, reply)
    except CellError as exc:
        print(f"numa_effects.measure.cell: {exc}", file=sys.stderr)
        return EXIT_MISMATCH
    except CompileError:
        traceback.print_exc()
        return EXIT_COMPILE
    return 0


if __name__ == "__main__":
    rc = main()
    # Its protocol has ended: nothing of the measurement is left to do, so the process ends here,
    # without Python's shutdown. With torch loaded that shutdown (every module torn down) took
    # 0.6 - 1.0 s per replicate on the 2-core test machine under load (far less when quiet) and
    # more than 30 s in the emulated guest, time in which the next replicate cannot start on
    # these CPUs (docs/performance.md). Given up with it: a crash inside that shutdown, which
    # would have failed the cell (runner.Instance.close). An exception out of main() still takes
    # the normal way out (traceback, exit 1).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)
