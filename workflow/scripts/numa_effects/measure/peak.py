"""The machine's float32 GEMM peak at one thread count and placement: the denominator of
``efficiency``.

Measured by the one measuring stack exactly like a cell (``launcher.run`` -> ``runner``: the same
``numactl`` binding, ``OMP_NUM_THREADS``, timing loop, contention probe, retries, in-process
verification and binding read back), with the workload ``gemm`` (``build``): one step is a
``torch.mm`` of two ``MATRIX_SIZE`` x ``MATRIX_SIZE`` float32 matrices (2 n^3 FLOPs, the
FlopCounterMode convention). ``SETTINGS``: at least ``WARMUP`` untimed products, then at least
``SECONDS`` of timed ones (and ``MIN_REPS``). ``summary`` reports the best rate over the clean
products as ``peak_gflop_per_s`` (noise on a shared machine only slows a product down) and the
median rate beside it; none when no product was clean (``status: contended``). A few seconds
per thread count and placement.
"""

from __future__ import annotations

import statistics
import time

from numa_effects.measure import result as cellresult

MATRIX_SIZE = 2048
WARMUP = 2
MIN_REPS = 6  # the smallest n with a 95 % CI of the median
SECONDS = 2.0
# The peak's timing settings (the contention keys keep timing.DEFAULTS: exclusion at 10 %
# foreign CPU, 2 retries after 5 and 10 s).
SETTINGS = {
    "protocol": "adaptive",
    "warmup": WARMUP,
    "min_warmup_seconds": 0.0,
    "min_iterations": MIN_REPS,
    "min_timed_seconds": SECONDS,
    "target_rel_ci": 0.02,
    "max_iterations": 100_000,
    "max_seconds_per_cell": 3 * SECONDS,
}

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
        "settings": {**SETTINGS, "matrix_size": MATRIX_SIZE},
        "workload": "gemm",
    }


def outputs(plans_: dict, results: str) -> list[str]:
    return [f"{results}/peak/{p}/t{t}.json" for p, t in plans_]


def build(spec: dict):
    """The ``gemm`` workload in the pinned instance: (step, timings, warnings)."""
    import torch

    size = int((spec.get("settings") or {}).get("matrix_size", MATRIX_SIZE))
    t0 = time.perf_counter()
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=gen)
    b = torch.randn(size, size, generator=gen)
    out = torch.empty(size, size)

    def step():
        torch.mm(a, b, out=out)

    return step, {"build_s": time.perf_counter() - t0, "prepare_s": 0.0}, []


def summary(record: dict) -> dict:
    """The ``peak`` entry of a peak result from its measurement: rates over the clean products
    (``timing``'s exclusion), None when there is none (a failed or contended peak)."""
    m = record.get("measurement") or {}
    size = int((record.get("settings") or {}).get("matrix_size", MATRIX_SIZE))
    flop = 2.0 * size**3
    times = list(m.get("latencies_s") or [])
    excluded = m.get("excluded") or [False] * len(times)
    clean = [t for t, e in zip(times, excluded, strict=True) if not e]
    ok = record.get("status") == "ok" and clean
    rates = [flop / t / 1e9 for t in clean] if ok else []
    return {
        "matrix_size": size,
        "flop_per_product": flop,
        "reps": len(clean),
        "times_s": times,
        "peak_gflop_per_s": max(rates) if rates else None,
        "median_gflop_per_s": statistics.median(rates) if rates else None,
        "measure_s": m.get("elapsed_s"),
    }


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
