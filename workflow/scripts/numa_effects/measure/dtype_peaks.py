"""Peak kernels per dtype, on the path the models use: the building block of a per-dtype
efficiency denominator (issue 19).

``torch.mm`` alone is the wrong denominator: on AMD it is MKL's path while the convolutions run
through oneDNN, and a frozen, prepacked model beat it (efficiency 2.7 on the issue's machine).
So each dtype has several kernels and its peak is the best rate of any of them, each timed as
best-of-reps (noise only slows a run down):

- ``float32``: ``torch.mm`` (the old peak) and a large 1x1 convolution in channels-last, which
  oneDNN runs as a blocked GEMM (its brgemm kernels, as inductor's frozen graphs do);
- ``bfloat16``: the same 1x1 convolution under bf16 autocast (oneDNN's bf16 kernels where the CPU
  has them, ATen's fallback where not: then the peak is as slow as the models) and ``torch.mm`` on
  bf16 matrices;
- ``int8``: the 1x1 convolution quantized with PT2E (torchao) and compiled with freezing, the
  path of the ``int8`` optimization (u8/s8 oneDNN kernels); its rate is integer ops per second.

FLOPs: 2 x N x H x W x C_in x C_out for the convolution, 2 n^3 for the product (the
FlopCounterMode convention of the model FLOPs). The theoretical peak for reference is
``plan.cpu.Capabilities.theoretical_peak``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

MATRIX_SIZE = 2048
CONV = {"n": 4, "c": 512, "hw": 14}  # 0.41 GFLOP per call: ~5-10 ms on one core in float32
WARMUP = 2
MIN_REPS = 5
SECONDS = 2.0


@dataclass(frozen=True)
class Kernel:
    name: str
    dtype: str
    build: Callable[[], tuple[Callable[[], object], float]]  # () -> (call, flop per call)
    requires: tuple[str, ...] = ()  # keys of plan.optimizations.REQUIREMENTS


def conv_flop(n: int, c: int, hw: int) -> float:
    return 2.0 * n * hw * hw * c * c


def _conv(dtype: str):
    def build():
        import torch

        n, c, hw = CONV["n"], CONV["c"], CONV["hw"]
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(n, c, hw, hw, generator=gen).to(memory_format=torch.channels_last)
        conv = torch.nn.Conv2d(c, c, 1, bias=False).eval().to(memory_format=torch.channels_last)
        if dtype == "float32":
            fn = conv
        elif dtype == "bfloat16":

            def fn(z):
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    return conv(z)
        else:  # int8: the optimization's own conversion
            from numa_effects.plan.optimizations import quantize_int8, setup_inductor

            setup_inductor({})
            fn = torch.compile(quantize_int8(torch.nn.Sequential(conv), x))

        def call():
            with torch.inference_mode():
                return fn(x)

        return call, conv_flop(n, c, hw)

    return build


def _mm(dtype: str, n: int = MATRIX_SIZE):
    def build():
        import torch

        gen = torch.Generator().manual_seed(0)
        a = torch.randn(n, n, generator=gen)
        b = torch.randn(n, n, generator=gen)
        if dtype == "bfloat16":
            a, b = a.bfloat16(), b.bfloat16()
        out = torch.empty(n, n, dtype=a.dtype)

        def call():
            return torch.mm(a, b, out=out)

        return call, 2.0 * n**3

    return build


KERNELS: dict[str, tuple[Kernel, ...]] = {
    "float32": (
        Kernel("mm", "float32", _mm("float32")),
        Kernel("conv1x1_cl", "float32", _conv("float32")),
    ),
    "bfloat16": (
        Kernel("conv1x1_cl_autocast", "bfloat16", _conv("bfloat16")),
        # smaller: without native bf16 a 2048^3 product takes seconds
        Kernel("mm_bf16", "bfloat16", _mm("bfloat16", 1024)),
    ),
    "int8": (Kernel("conv1x1_pt2e_int8", "int8", _conv("int8"), requires=("torchao", "cxx")),),
}


def time_kernel(
    call: Callable[[], object],
    flop: float,
    seconds: float = SECONDS,
    min_reps: int = MIN_REPS,
    warmup: int = WARMUP,
    clock=time.perf_counter,
) -> dict:
    """Best and median rate of ``call`` (GFLOP/s) after ``warmup`` untimed calls, for
    ``seconds`` and at least ``min_reps`` calls. A kernel whose first call takes more than half
    of ``seconds`` (bf16 without native support) gets one warm-up call and two timed ones, so
    a slow path costs seconds, not minutes."""
    first = None
    for i in range(warmup):
        t0 = clock()
        call()
        if i == 0:
            first = clock() - t0
            if first > seconds / 2:
                break
    slow = first is not None and first > seconds / 2
    need = 2 if slow else min_reps
    times: list[float] = []
    start = clock()
    while len(times) < need or (not slow and clock() - start < seconds):
        t0 = clock()
        call()
        times.append(clock() - t0)
    rates = sorted(flop / t / 1e9 for t in times if t > 0)
    if not rates:
        raise ValueError("every timed call took 0 s: the clock is too coarse")
    mid = len(rates) // 2
    median = rates[mid] if len(rates) % 2 else (rates[mid - 1] + rates[mid]) / 2
    return {
        "peak_gflop_per_s": rates[-1],
        "median_gflop_per_s": median,
        "reps": len(times),
        "slow": slow,
        "flop_per_call": flop,
        "measure_s": clock() - start,
    }


def best(per_kernel: dict[str, dict]) -> dict:
    """The dtype's peak: the best kernel's best rate (kernels that failed are skipped)."""
    ok = {k: v for k, v in per_kernel.items() if v.get("peak_gflop_per_s") is not None}
    if not ok:
        return {"peak_gflop_per_s": None, "peak_kernel": None}
    name = max(ok, key=lambda k: ok[k]["peak_gflop_per_s"])
    return {"peak_gflop_per_s": ok[name]["peak_gflop_per_s"], "peak_kernel": name}


def measure(dtype: str, seconds: float = SECONDS, available: dict | None = None) -> dict:
    """Every kernel of ``dtype`` timed in this process (pinned like the cells by the caller),
    and the best: ``{"dtype", "kernels": {name: rates | {"skipped"|"error": why}},
    "peak_gflop_per_s", "peak_kernel"}``. ``available``: ``plan.optimizations.availability()``."""
    from numa_effects.plan import optimizations as opts

    available = opts.availability() if available is None else available
    kernels: dict[str, dict] = {}
    for k in KERNELS[dtype]:
        missing = [r for r in k.requires if not available.get(r, False)]
        if missing:
            kernels[k.name] = {"skipped": f"needs {', '.join(missing)}"}
            continue
        try:
            call, flop = k.build()
            kernels[k.name] = time_kernel(call, flop, seconds)
        except Exception as exc:  # a kernel this torch cannot run must not sink the others
            kernels[k.name] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0]}"}
    return {"dtype": dtype, "kernels": kernels, **best(kernels)}
