"""The pinned instance process of every measurement (a cell, the GEMM peak, a node pair's
memory probe, each instance of a packing group), driven by ``runner``.

Run as ``numactl <binding> python -m numa_effects.measure.cell --spec S`` with
``OMP_NUM_THREADS`` set (and the cell's allocator preloaded: ``launcher``). It sets its threads
(``set_threads``) and builds its workload (``WORKLOADS[spec["workload"]]``: ``model``, the
default, builds the model and applies the optimization, ``build_for``; ``dtype_peaks`` is the
peak of one dtype, ``measure.dtype_peaks.workload``; ``memory_probe`` the idle latency and read
bandwidth of one node pair, ``measure.memory_probe.workload``), prints one JSON line
``{"ready": true, ...}`` (torch's import, build, reference and conversion times, threads, pid, CPU
time, the canary kernel's name) on its protocol pipe (the original stdout; anything the libraries
print goes to stderr, its log), then answers one-line commands on stdin, one JSON line each:

Before any of that, its CPUs and memory policy are checked against its plan
(``verify.at_start``): when they are wrong it replies ``{"ready": false, "verification": ...}``
and ends, without importing torch.

- ``go``: one step of its workload, timed by itself: ``{"t0", "t1", "minor_faults", "cpu_s"}``
  (``time.perf_counter`` just around the step: CLOCK_MONOTONIC, one clock for every process of
  the machine; the minor page faults during the step, ``minor_faults``, read just outside the
  interval; then its process CPU time from getrusage, all threads, outside the interval).
- ``go canary``: the same, and after ``t1`` the canary (``make_canary``: a fixed, cache-resident
  float32 matrix product, timed the same way): ``{"t0", "t1", "minor_faults", "canary_s",
  "cpu_s"}`` (the CPU time read after the canary, so the probe counts it as the process's own).
- ``verify``: first the workload's ``report`` (a model cell with ``inspect`` in its spec: one
  untimed call with oneDNN verbose on, ``inspect``: the kernels that ran, the agreement with the
  float32 eager output computed before the conversion, the CPU's capabilities; the peak: each
  kernel's time per step), then the in-process verification (``verify.run``, and the allocator
  from ``/proc/self/maps``: ``verify.check_allocator``) against its plan and its binding read
  back (``provenance.binding``), peak RSS and the warnings seen.

End of input (the runner finished, or died) ends it. Exits ``EXIT_MISMATCH`` with a one-line
reason on stderr when it cannot be measured as labelled (wrong thread count), ``EXIT_COMPILE``
when a compiled model's first call (where it compiles) raises; another exception (in build, in
the conversion, ``convert``, or later) exits 1 with its traceback: ``supervise.classify`` names
the cause.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import sys
import time
import traceback
import warnings

from numa_effects.measure import provenance, verify
from numa_effects.plan.optimizations import OPTIMIZATIONS

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
# model does (slope about 1). ``mm``, the first canary (until 2026-12-04): 32 torch.mm calls
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


def convert(opt: str, model, x, settings: dict):
    """Apply the optimization (its ``prepare``: scripting, export, calibration, quantization;
    a compiled one compiles at its first call). Returns (fn, x, warnings); an exception here is
    the cell's ``conversion-error`` (``supervise.classify`` finds this frame)."""
    import torch

    caught: list[dict] = []
    with warnings.catch_warnings(record=True) as wlist, torch.inference_mode():
        warnings.simplefilter("always")
        fn, x = OPTIMIZATIONS[opt].prepare(model, x, settings)
    seen = set()
    for w in wlist:
        key = (w.category.__name__, str(w.message).splitlines()[0])
        if key not in seen:
            seen.add(key)
            caught.append({"category": key[0], "message": key[1]})
    return fn, x, caught


def build(
    model_name: str,
    opt: str,
    batch_size: int,
    image_size: int,
    seed: int,
    settings: dict,
    reference: bool = False,
):
    """Model and input, with the optimization applied. Returns (fn, x, timings, warnings, ref):
    ``ref`` is the float32 eager output on the same input (``numerics.reference_output``,
    computed before the conversion, which may change the model in place) when ``reference``,
    else None; its time is ``reference_s``, apart from ``build_s`` and ``prepare_s``."""
    import torch

    from numa_effects.measure import builder, numerics

    torch.manual_seed(seed)
    t0 = time.perf_counter()
    graph = OPTIMIZATIONS[opt].graph
    model, how = builder.get_model(model_name, graph)
    model = model.eval()
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch_size, 3, image_size, image_size, generator=gen)
    t1 = time.perf_counter()
    ref = numerics.reference_output(model, x) if reference else None
    t2 = time.perf_counter()
    fn, x, caught = convert(opt, model, x, settings)
    t3 = time.perf_counter()
    timings = {"build_s": t1 - t0, "prepare_s": t3 - t2, "model_import": how}
    if reference:
        timings["reference_s"] = t2 - t1
    return fn, x, timings, caught, ref


def build_for(spec: dict):
    """``build`` for a launcher spec: the model, input and optimization the cell names."""
    cell, settings = spec["cell"], spec["settings"]
    return build(
        cell["model"],
        cell["opt"],
        int(cell["batch_size"]),
        int(cell["image_size"]),
        int(settings.get("seed", 0)),
        {**settings, "compile_cache_dir": spec.get("compile_cache_dir")},
        # eager float32 is its own reference: nothing to compare
        reference=bool(spec.get("inspect")) and cell["opt"] != "none",
    )


def inspect(opt: str, fn, x, ref) -> dict:
    """What one untimed call after the timed ones shows (the cell's ``precision`` record): the
    optimization's dtype and graph, the oneDNN kernels that ran (``onednn.traced_call``; ATen's
    top operators when none did), whether they compute in the dtype the label says
    (``dtype_verified``), the CPU's capabilities with oneDNN's own bf16 answer, whether the dtype
    is native here and the mark of a cell that is not, and the agreement of the output with the
    float32 eager reference (``numerics``; None for eager float32, its own reference)."""
    import torch

    from numa_effects.measure import numerics, onednn
    from numa_effects.plan import cpu
    from numa_effects.plan import optimizations as opts

    entry = OPTIMIZATIONS[opt]
    t0 = time.perf_counter()
    with torch.inference_mode():
        y, trace = onednn.traced_call(fn, x)
    compute = onednn.compute_dtypes(trace)
    out: dict = {
        "dtype": entry.dtype,
        "graph": entry.graph,
        "onednn": trace,
        "compute_dtypes": compute,
        "dtype_verified": dtype_verified(entry.dtype, compute),
        "aten_cpu_capability": onednn.aten_cpu_capability(),
        "numerics": None if ref is None else numerics.judge(y, ref, entry.dtype),
    }
    if not trace["ran"]:
        try:  # what ran instead; the profiler is a diagnosis, never a reason to fail the cell
            with torch.inference_mode():
                out["aten_ops"] = onednn.aten_ops(fn, x)
        except Exception as exc:
            out["aten_ops_error"] = f"{type(exc).__name__}: {exc}"
    try:
        caps = cpu.of_machine(onednn_bf16=onednn.onednn_takes_bf16())
    except (OSError, cpu.CpuInfoError):
        caps = None
    out["capabilities"] = caps.to_dict() if caps else None
    out["native"] = opts.native_on(entry, caps) if caps else None
    out["precision_note"] = opts.precision_note(entry, caps) if caps else None
    out["inspect_s"] = time.perf_counter() - t0
    return out


# The oneDNN src/weight data types that prove a dtype ran (``onednn.compute_dtypes``).
DTYPE_PAIRS = {"bfloat16": ("bf16/bf16",), "int8": ("u8/s8", "s8/s8")}


def dtype_verified(dtype: str, compute: list[str]) -> bool:
    """bf16 and int8: one of their oneDNN compute primitives ran; float32: no compute primitive
    ran in another dtype (oneDNN's f32 kernels, or ATen's own)."""
    if dtype in DTYPE_PAIRS:
        return any(pair in compute for pair in DTYPE_PAIRS[dtype])
    return all(pair == "f32/f32" for pair in compute)


def model_workload(spec: dict):
    """The cell's workload: (step, timings, warnings, report) of the model, input and
    optimization; ``report`` inspects it (``inspect``) when the spec asks for it."""
    import torch

    fn, x, timings, caught, ref = build_for(spec)
    opt = spec["cell"]["opt"]

    def step():
        with torch.inference_mode():
            fn(x)

    report = (lambda: inspect(opt, fn, x, ref)) if spec.get("inspect") else None
    return step, timings, caught, report


def dtype_peaks_workload(spec: dict):
    from numa_effects.measure import dtype_peaks

    return dtype_peaks.workload(spec)


def memory_probe_workload(spec: dict):
    from numa_effects.measure import memory_probe

    return memory_probe.workload(spec)


WORKLOADS = {
    "model": model_workload,
    "dtype_peaks": dtype_peaks_workload,
    "memory_probe": memory_probe_workload,
}
# Workloads that never touch torch: their instance does not import it (a memory probe costs
# Python's start and the probe, not torch's import: seconds here, minutes in the TCG guest).
WITHOUT_TORCH = frozenset({"memory_probe"})


class CompileError(RuntimeError):
    """A compiled model's first call (where inductor compiles) raised."""


def first_call(step) -> None:
    """The first step of a compiled model: it compiles there, so an exception is the cell's
    ``compile-error`` (exit ``EXIT_COMPILE``, the traceback in the log)."""
    try:
        step()
    except Exception as exc:
        raise CompileError(
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        ) from exc


def cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def minor_faults() -> int:
    """This process's minor page faults so far (getrusage, all threads): read just outside a
    step's interval, their difference is the pages the step touched for the first time -- memory
    the allocator gave back to the kernel and took again (docs/performance.md, "One replicate")."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def serve(spec: dict, commands, reply) -> None:
    """Build the workload, say ready, then answer ``commands`` (see the module docstring)."""
    started = provenance.now()
    workload = spec.get("workload", "model")
    if spec.get("plan"):
        # CPUs and memory policy first, before torch's import and the build: a binding wrong
        # now fails the cell at once (verify.at_start)
        early = verify.at_start(spec["plan"])
        if not early["ok"]:
            reply({"ready": False, "pid": os.getpid(), "verification": early})
            return
    info, import_s = {}, 0.0
    if workload not in WITHOUT_TORCH:
        # torch's import, timed apart (import_s): with the CUDA build the largest fixed cost of a
        # process (benchmarks/overhead.py); the model's own import (builder) is in build_s
        t0 = time.perf_counter()
        import torch  # noqa: F401

        import_s = time.perf_counter() - t0
        info = set_threads(int(spec["cell"]["threads"]))
    step, timings, caught, *rest = WORKLOADS[workload](spec)
    report = rest[0] if rest else None
    opt = OPTIMIZATIONS.get(spec["cell"].get("opt", ""))
    compiled = (
        opt is not None and opt.graph == "inductor" and spec.get("workload", "model") == "model"
    )
    first = True
    canary = None
    clock = time.perf_counter
    reply(
        {
            "ready": True,
            "pid": os.getpid(),
            "started_at": started,
            "import_s": import_s,
            **timings,
            "threads_info": info,
            "canary_kernel": CANARY_KERNELS[CANARY_KERNEL],
            "cpu_s": cpu_s(),
        }
    )
    with warnings.catch_warnings(record=True) as wlist:
        warnings.simplefilter("always")
        for line in commands:
            cmd = line.strip()
            if cmd in ("go", "go canary"):
                f0 = minor_faults()
                t0 = clock()
                if first and compiled:
                    first_call(step)
                else:
                    step()
                t1 = clock()
                first = False
                timed = {"t0": t0, "t1": t1, "minor_faults": minor_faults() - f0}
                if cmd == "go canary":
                    if canary is None:
                        canary = make_canary()
                    c0 = clock()
                    canary()
                    timed["canary_s"] = clock() - c0
                reply({**timed, "cpu_s": cpu_s()})
            elif cmd == "verify":
                for w in wlist:
                    entry = {
                        "category": w.category.__name__,
                        "message": str(w.message).splitlines()[0],
                    }
                    if entry not in caught:
                        caught.append(entry)
                wlist.clear()
                # after the timed steps: an untimed call may inspect the kernels, reading /proc
                # cannot disturb a timing, the threads exist and the memory is resident
                inspected = report() if report else None
                verification = verify.run(spec["plan"])
                if spec.get("allocator"):
                    verify.check_allocator(verification, spec["allocator"])
                reply(
                    {
                        "report": inspected,
                        "verification": verification,
                        "binding": {**provenance.binding(), **info},
                        "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                        "warnings": caught,
                        "finished_at": provenance.now(),
                    }
                )
            elif cmd:
                reply({"error": f"unknown command {cmd!r}"})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m numa_effects.measure.cell", description=__doc__)
    ap.add_argument("--spec", required=True, help="spec JSON written by the runner")
    args = ap.parse_args(argv)
    with open(args.spec) as fh:
        spec = json.load(fh)
    # The protocol keeps the original stdout; everything else printed goes to the log (stderr).
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def reply(obj: dict) -> None:
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    try:
        serve(spec, sys.stdin, reply)
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
