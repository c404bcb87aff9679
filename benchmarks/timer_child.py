"""The fidelity benchmark's pinned child: the cell's model and input built by the pipeline's own
code (``numa_effects.measure.workloads.model.build_for``), timed by
``torch.utils.benchmark.Timer.blocked_autorange``.

Run as ``numactl <the cell's binding> python -m benchmarks.timer_child --spec S --out O`` with
the cell's ``OMP_NUM_THREADS``, exactly like the cell process."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

MIN_RUN_S = 1.0
MAX_RUN_S = 20.0
RUNS_PER_ESTIMATE = 10  # min_run_time ~ 10 x one call, so the median sees >= ~10 blocks


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.timer_child")
    ap.add_argument("--spec", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    import torch
    from torch.utils.benchmark import Timer

    from numa_effects.measure.cell import set_threads
    from numa_effects.measure.workloads.model import build_for
    from numa_effects.plan.spec import Spec

    spec = Spec.from_json(json.loads(Path(args.spec).read_text()))
    (inst,) = spec.instances
    threads = inst.threads
    set_threads(threads)
    fn, x, *_ = build_for(inst, spec.settings)  # (fn, x, timings, warnings, reference)

    def step():
        with torch.inference_mode():
            fn(x)

    for _ in range(3):  # warm-up: TorchScript's profiling runs and oneDNN primitive creation
        step()
    t0 = time.perf_counter()
    step()
    one = time.perf_counter() - t0
    min_run = min(MAX_RUN_S, max(MIN_RUN_S, RUNS_PER_ESTIMATE * one))
    timer = Timer(stmt="step()", globals={"step": step}, num_threads=threads)
    t0 = time.perf_counter()
    m = timer.blocked_autorange(min_run_time=min_run)
    wall = time.perf_counter() - t0
    result = {
        "median_s": m.median,
        "mean_s": m.mean,
        "iqr_s": m.iqr,
        "blocks": len(m.times),
        "number_per_run": m.number_per_run,
        "min_run_time_s": min_run,
        "wall_s": wall,
        "times_s": list(m.times),
    }
    with open(args.out, "w") as fh:
        json.dump(result, fh)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
