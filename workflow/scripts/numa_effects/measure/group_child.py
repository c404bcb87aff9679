"""One instance of a packing plan: a pinned process driven round by round by the runner.

Started by ``packing_run`` as ``numactl <binding> python -m numa_effects.measure.group_child --spec
S``
with ``OMP_NUM_THREADS`` set. It builds the model exactly as a cell does (``cell.build_for``,
``cell.set_threads``), makes the first call, then answers one-line commands on stdin with one
JSON line on its protocol pipe (the original stdout; anything the libraries print goes to
stderr, the instance's log):

- ``go``: one inference of its batch; replies ``{"t0": .., "t1": ..}`` (``time.perf_counter``,
  CLOCK_MONOTONIC: one clock for every process of the machine).
- ``verify``: stops the contention watch (``contention.Watch`` over its CPUs, started at the
  first ``go``) and runs the in-cell verification (``verify.run``) against its plan; replies
  with both.

End of input (the runner finished or died) ends the process.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from numa_effects.measure import cell, contention, provenance, verify


def serve(spec: dict, commands, reply) -> None:
    import torch

    info = cell.set_threads(int(spec["cell"]["threads"]))
    fn, x, timings, caught = cell.build_for(spec)

    def step():
        with torch.inference_mode():
            fn(x)

    t0 = time.perf_counter()
    step()
    timings["first_call_s"] = time.perf_counter() - t0
    reply({"ready": True, **timings, "threads_info": info, "warnings": caught, "pid": os.getpid()})
    watch = None
    for line in commands:
        cmd = line.strip()
        if cmd == "go":
            if watch is None:
                watch = contention.Watch(spec["plan"]["cpus"])
            t0 = time.perf_counter()
            step()
            reply({"t0": t0, "t1": time.perf_counter()})
        elif cmd == "verify":
            noise = watch.stop() if watch is not None else None
            reply(
                {
                    "verification": verify.run(spec["plan"]),
                    "binding": provenance.binding(),
                    "contention": noise,
                }
            )
        else:
            reply({"error": f"unknown command {cmd!r}"})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m numa_effects.measure.group_child", description=__doc__
    )
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
    except cell.CellError as exc:
        print(f"numa_effects.measure.group_child: {exc}", file=sys.stderr)
        return cell.EXIT_MISMATCH
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
