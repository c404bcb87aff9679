"""The machine's float32 GEMM peak at one thread count and placement: the denominator of
``efficiency``.

Measured by the one measuring stack exactly like a cell (``launcher.run`` -> ``runner``: the same
``numactl`` binding, ``OMP_NUM_THREADS``, timing loop, contention probe, retries, in-process
verification and binding read back), with the workload ``gemm`` (``build``): one step is a
``torch.mm`` of two ``MATRIX_SIZE`` x ``MATRIX_SIZE`` float32 matrices (2 n^3 FLOPs, the
FlopCounterMode convention); its settings are ``plan.settings.PEAK_SETTINGS`` (at least 2
untimed products, then at least ``PEAK_SECONDS`` of timed ones, and 6). ``summary`` reports
the best rate over the clean products as ``peak_gflop_per_s`` (noise on a shared machine only
slows a product down) and the median rate beside it; none when no product was clean
(``status: contended``). A few seconds per thread count and placement.
"""

from __future__ import annotations

import statistics
import time

from numa_effects.plan import settings

MATRIX_SIZE = settings.PEAK_MATRIX_SIZE


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
