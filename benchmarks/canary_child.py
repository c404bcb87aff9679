"""The canary benchmark's pinned child: the cell's model and input built by the pipeline's own
code (``numa_effects.measure.workloads.model.make``), stepped as a cell steps, and after a random
half of the steps every canary kernel (``cell.CANARY_KERNELS``, in rotating order), each timed
alone.

Run as ``numactl <binding> python -m benchmarks.canary_child --model M --opt O --batch B
--threads T --image-size S --seconds D --out O`` with the cell's ``OMP_NUM_THREADS``. Writes one
row per timed step: ``latency_s``, ``canary`` (whether the kernels ran after it), ``after_canary``
(whether they ran after the step before it: the effect on the next step is what a cell pays) and
each kernel's seconds (``None`` where they did not run)."""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

WARMUP = 5
MIN_STEPS = 12
MAX_STEPS = 200


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.canary_child")
    for name in ("--model", "--opt", "--out"):
        ap.add_argument(name, required=True)
    for name in ("--batch", "--threads", "--image-size"):
        ap.add_argument(name, type=int, required=True)
    ap.add_argument("--seconds", type=float, required=True, help="time the steps this long")
    ap.add_argument("--seed", type=int, default=0, help="the random halves' seed")
    args = ap.parse_args(argv)
    import torch

    from numa_effects.measure import cell
    from numa_effects.measure.workloads import model

    cell.set_threads(args.threads)
    fn, x, *_ = model.make(args.model, args.opt, args.batch, args.image_size, 0, {})
    kernels = {k: cell.make_canary(k) for k in cell.CANARY_KERNELS}
    order = list(kernels)

    def step() -> None:
        with torch.inference_mode():
            fn(x)

    for _ in range(WARMUP):
        step()
        for k in order:
            kernels[k]()
    rng = random.Random(args.seed)
    rows, prev, clock = [], None, time.perf_counter
    end = clock() + args.seconds
    while len(rows) < MAX_STEPS and (len(rows) < MIN_STEPS or clock() < end):
        pair = [True, False]  # balanced: one step of each pair is followed by the kernels
        rng.shuffle(pair)
        for after in pair:
            t0 = clock()
            step()
            row = {"latency_s": clock() - t0, "canary": after, "after_canary": prev}
            row |= dict.fromkeys(order)  # None: the kernels did not run after this step
            rot = len(rows) % len(order)
            for k in order[rot:] + order[:rot] if after else ():
                c0 = clock()
                kernels[k]()
                row[k] = clock() - c0
            rows.append(row)
            prev = after
    Path(args.out).write_text(json.dumps(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
