"""The pinned instance process of every measurement (a cell, the GEMM peak, each instance of
a packing group), driven by ``runner``.

Run as ``numactl <binding> python -m numa_effects.measure.cell --spec S`` with
``OMP_NUM_THREADS`` set. It sets its threads (``set_threads``) and builds its workload
(``WORKLOADS[spec["workload"]]``: ``model``, the default, builds the model and applies the
optimization, ``build_for``; ``gemm`` is the peak's ``torch.mm``, ``peak.build``), prints one JSON
line ``{"ready": true, ...}`` (build times, threads, pid, CPU time) on its protocol pipe (the
original stdout; anything the libraries print goes to stderr, its log), then answers one-line
commands on stdin, one JSON line each:

- ``go``: one step of its workload, timed by itself: ``{"t0", "t1", "cpu_s"}``
  (``time.perf_counter`` just around the step: CLOCK_MONOTONIC, one clock for every process of
  the machine; then its process CPU time from getrusage, all threads, outside the interval).
- ``verify``: the in-process verification (``verify.run``) against its plan and its binding read
  back (``provenance.binding``), peak RSS and the warnings seen.

End of input (the runner finished, or died) ends it. Exits ``EXIT_MISMATCH`` with a one-line
reason on stderr when it cannot be measured as labelled (wrong thread count); an exception (in
build or later) exits 1 with its traceback: ``supervise.classify`` names the cause.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import sys
import time
import warnings

from numa_effects.measure import provenance, verify
from numa_effects.plan.optimizations import OPTIMIZATIONS

EXIT_MISMATCH = 3


class CellError(RuntimeError):
    """The cell cannot be measured as labelled."""


def set_threads(threads: int) -> dict:
    import torch

    torch.set_num_threads(threads)
    with contextlib.suppress(RuntimeError):  # already set: only possible once per process
        torch.set_num_interop_threads(1)
    got = torch.get_num_threads()
    if got != threads:
        raise CellError(f"torch.get_num_threads() is {got}, the cell asks for {threads}")
    return {"torch_num_threads": got, "torch_num_interop_threads": torch.get_num_interop_threads()}


def build(model_name: str, opt: str, batch_size: int, image_size: int, seed: int, settings: dict):
    """Model and input, with the optimization applied. Returns (fn, x, timings, warnings)."""
    import torch
    import torchvision

    torch.manual_seed(seed)
    caught: list[dict] = []
    t0 = time.perf_counter()
    model = torchvision.models.get_model(model_name, weights=None).eval()
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch_size, 3, image_size, image_size, generator=gen)
    t1 = time.perf_counter()
    with warnings.catch_warnings(record=True) as wlist, torch.inference_mode():
        warnings.simplefilter("always")
        fn, x = OPTIMIZATIONS[opt].prepare(model, x, settings)
    t2 = time.perf_counter()
    seen = set()
    for w in wlist:
        key = (w.category.__name__, str(w.message).splitlines()[0])
        if key not in seen:
            seen.add(key)
            caught.append({"category": key[0], "message": key[1]})
    return fn, x, {"build_s": t1 - t0, "prepare_s": t2 - t1}, caught


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
    )


def model_workload(spec: dict):
    """The cell's workload: (step, timings, warnings) of the model, input and optimization."""
    import torch

    fn, x, timings, caught = build_for(spec)

    def step():
        with torch.inference_mode():
            fn(x)

    return step, timings, caught


def gemm_workload(spec: dict):
    from numa_effects.measure import peak

    return peak.build(spec)


WORKLOADS = {"model": model_workload, "gemm": gemm_workload}


def cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def serve(spec: dict, commands, reply) -> None:
    """Build the workload, say ready, then answer ``commands`` (see the module docstring)."""
    started = provenance.now()
    info = set_threads(int(spec["cell"]["threads"]))
    step, timings, caught = WORKLOADS[spec.get("workload", "model")](spec)
    clock = time.perf_counter
    reply(
        {
            "ready": True,
            "pid": os.getpid(),
            "started_at": started,
            **timings,
            "threads_info": info,
            "cpu_s": cpu_s(),
        }
    )
    with warnings.catch_warnings(record=True) as wlist:
        warnings.simplefilter("always")
        for line in commands:
            cmd = line.strip()
            if cmd == "go":
                t0 = clock()
                step()
                t1 = clock()
                reply({"t0": t0, "t1": t1, "cpu_s": cpu_s()})
            elif cmd == "verify":
                for w in wlist:
                    entry = {
                        "category": w.category.__name__,
                        "message": str(w.message).splitlines()[0],
                    }
                    if entry not in caught:
                        caught.append(entry)
                wlist.clear()
                reply(
                    {
                        # after the timed steps: reading /proc cannot disturb a timing, the
                        # threads exist and the weights and activations are resident
                        "verification": verify.run(spec["plan"]),
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
