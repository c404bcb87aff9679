"""The machine's float32 GEMM peak at one thread count and placement: the denominator of
``efficiency``.

Run by ``launcher`` exactly like a cell (same ``numactl`` binding, ``OMP_NUM_THREADS``, binding
read back and checked): ``numactl <binding> python -m numa_effects.measure.peak --spec S --out O``.
It times ``torch.mm`` of two ``MATRIX_SIZE`` x ``MATRIX_SIZE`` float32 matrices
(2 n^3 FLOPs, the FlopCounterMode convention) after ``WARMUP`` untimed products, for
``SECONDS`` seconds (at least ``MIN_REPS`` products), and reports the best rate as
``peak_gflop_per_s`` (noise on a shared machine only slows a product down) and the median rate
beside it. A few seconds per thread count and placement.
"""

from __future__ import annotations

import resource
import sys
import time

from numa_effects.measure import provenance, verify
from numa_effects.measure import result as cellresult

MATRIX_SIZE = 2048
WARMUP = 2
MIN_REPS = 5
SECONDS = 2.0

PEAK_COLUMNS = [
    "placement",
    "threads",
    "status",
    "peak_gflop_per_s",
    "median_gflop_per_s",
    "matrix_size",
    "reps",
    "measure_s",
    "planned_cpus",
    "cpus_allowed",
    "mempolicy",
    "failure_cause",
    "failure_message",
    "hostname",
    "torch_version",
    "peak_json",
]


def plans(grid) -> dict:
    """One plan per (placement, threads) of a ``grid.Grid``: the peak is pinned exactly like
    the cells that use it (a plan depends only on topology, placement, threads, SMT)."""
    out: dict = {}
    for key, plan in grid.cells.items():
        out.setdefault((key.placement, key.threads), plan)
    return dict(sorted(out.items()))


def spec(plans_: dict, placement: str, threads: int, use_smt: bool) -> dict:
    """What the pinned peak process needs (the launcher's cell-spec shape)."""
    return {
        "cell": {"kind": "peak", "placement": placement, "threads": threads, "use_smt": use_smt},
        "plan": plans_[(placement, threads)].to_dict(),
        "settings": {"matrix_size": MATRIX_SIZE, "seconds": SECONDS},
    }


def outputs(plans_: dict, results: str) -> list[str]:
    return [f"{results}/peak/{p}/t{t}.json" for p, t in plans_]


def measure(size: int = MATRIX_SIZE, seconds: float = SECONDS, clock=time.perf_counter) -> dict:
    import numpy as np
    import torch

    gen = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=gen)
    b = torch.randn(size, size, generator=gen)
    out = torch.empty(size, size)
    for _ in range(WARMUP):
        torch.mm(a, b, out=out)
    times = []
    start = clock()
    while len(times) < MIN_REPS or clock() - start < seconds:
        t0 = clock()
        torch.mm(a, b, out=out)
        times.append(clock() - t0)
    flop = 2.0 * size**3
    rates = flop / np.asarray(times) / 1e9
    return {
        "matrix_size": size,
        "flop_per_product": flop,
        "reps": len(times),
        "times_s": times,
        "peak_gflop_per_s": float(rates.max()),
        "median_gflop_per_s": float(np.median(rates)),
        "measure_s": clock() - start,
    }


def run(spec: dict) -> dict:
    from numa_effects.measure.cell import set_threads

    started = provenance.now()
    thread_info = set_threads(int(spec["cell"]["threads"]))
    settings = spec.get("settings") or {}
    result = measure(
        int(settings.get("matrix_size", MATRIX_SIZE)), float(settings.get("seconds", SECONDS))
    )
    # the same in-process proof of placement as a cell (threads, memory policy, pages)
    verification = verify.run(spec["plan"])
    out = {
        "schema_version": cellresult.SCHEMA_VERSION,
        "status": "ok",
        "cell": spec["cell"],
        "plan": spec["plan"],
        "settings": settings,
        "peak": result,
        "binding": {**provenance.binding(), **thread_info, "verification": verification},
        "provenance": {
            "started_at": started,
            "finished_at": provenance.now(),
            "versions": provenance.versions(),
            "host": provenance.host(),
            "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        },
        "failure": None,
    }
    if not verification["ok"]:
        out["status"] = "failed"
        out["failure"] = {
            "cause": verification["cause"],
            "message": verify.failure_message(verification),
        }
    return out


def row(data: dict, path: str = "") -> dict:
    """One ``peak.csv`` row from a peak result JSON (measured or failed)."""
    cell, peak = data["cell"], data.get("peak") or {}
    bind, failure = data.get("binding") or {}, data.get("failure") or {}
    pol = bind.get("mempolicy") or {}
    prov = data.get("provenance") or {}
    return {
        "placement": cell["placement"],
        "threads": int(cell["threads"]),
        "status": data["status"],
        "peak_gflop_per_s": peak.get("peak_gflop_per_s"),
        "median_gflop_per_s": peak.get("median_gflop_per_s"),
        "matrix_size": peak.get("matrix_size"),
        "reps": peak.get("reps"),
        "measure_s": peak.get("measure_s"),
        "planned_cpus": (data.get("plan") or {}).get("cpu_list"),
        "cpus_allowed": bind.get("cpus_allowed_list"),
        "mempolicy": f"{pol.get('mode')}:{','.join(map(str, pol.get('nodes', [])))}"
        if pol
        else None,
        "failure_cause": failure.get("cause"),
        "failure_message": failure.get("message"),
        "hostname": (prov.get("host") or {}).get("hostname"),
        "torch_version": (prov.get("versions") or {}).get("torch"),
        "peak_json": path,
    }


def table(paths) -> pd.DataFrame:  # noqa: F821
    import pandas as pd

    rows = [row(cellresult.read(p), str(p)) for p in paths]
    df = pd.DataFrame(rows, columns=PEAK_COLUMNS)
    return df.sort_values(["placement", "threads"], kind="stable").reset_index(drop=True)


def main(argv=None) -> int:
    from numa_effects.measure.cell import child_main

    return child_main("numa_effects.measure.peak", run, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
