"""The peak per dtype, on the path the models use: the denominator of ``efficiency``
(docs/precision.md, "Peaks and efficiency").

``torch.mm`` alone is the wrong denominator: on AMD it is MKL's path while the convolutions run
through oneDNN, and a frozen, prepacked model beat it (efficiency 2.7); bf16 under autocast alone
was beaten by a bf16 ResNet-50 too. So each dtype has several kernels (``KERNELS``) and its peak
is the best rate of any of them (noise only slows a call down). Sizes grow with the threads
(``scaled``, ``matrix_size``): a fixed size under-fills the cores.

In the pipeline the peak is a workload of the one measuring stack (``build``): it probes every
kernel and drops one below 1/``DROP_FACTOR`` of the best (bf16's ``torch.mm`` without native bf16
takes seconds per call); each timed step calls every remaining kernel ``calls`` times in a row
and keeps its fastest call, as the first after another kernel runs on cold caches, which a
model's next convolution does not. ``measure`` is the same comparison in one unpinned process.
"""

from __future__ import annotations

import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from numa_effects.measure.workloads import Built, error_text

# Sizes at one thread (``scaled`` and ``matrix_size`` grow them with the threads)
MATRIX_SIZE = 1024  # 2.1 GFLOP per call: ~20 ms on one core in float32
# 1x1 at batch 16: at batch 4 or 8 oneDNN ran it at 107 GFLOP/s on one core, at 16 at 252
CONV = {"n": 16, "c": 512, "hw": 14}  # 1.6 GFLOP per call: ~6-15 ms on one core in float32
CONV3 = {"n": 4, "c": 256, "hw": 14}  # 3x3: 0.92 GFLOP per call
# bf16 and int8 on their own paths: batch 16, ~1 ms per call with AMX on one core (batch 4
# left a second thread idle: int8's 3x3 ran at 1810 GOP/s on 1 thread and 2033 on 2)
CONV_LOWP = {"n": 16, "c": 512, "hw": 14}  # 1.6 GFLOP per call
CONV3_LOWP = {"n": 16, "c": 256, "hw": 14}  # 3.7 GFLOP per call
MAX_BATCH = 256  # a convolution's batch at most (float32 1x1: 100 MiB of input)
WARMUP = 2
MIN_REPS = 5
SECONDS = 2.0
PROBE_SECONDS = 0.3  # per kernel, at build: which kernels can be the peak
DROP_FACTOR = 4.0  # a kernel probed this many times slower than the best is not timed
KERNEL_STEP_S = 0.04  # seconds of each kernel per timed step (its calls back to back)
MIN_CALLS = 2  # calls of each kernel per step: the first runs on another kernel's caches
MAX_CALLS = 64


def scaled(shape: dict, threads: int) -> dict:
    """A convolution's shape at ``threads``: its batch times the threads, at most ``MAX_BATCH``."""
    n = min(shape["n"] * max(1, int(threads)), max(MAX_BATCH, shape["n"]))
    return {**shape, "n": n}


def matrix_size(threads: int) -> int:
    """A product's side: ``MATRIX_SIZE`` x the cube root of the threads, to a multiple of 128."""
    side = MATRIX_SIZE * max(1, int(threads)) ** (1 / 3)
    return int(-(-round(side, 6) // 128) * 128)


def calls_per_step(call_s: float) -> int:
    """Calls of a kernel per timed step: about ``KERNEL_STEP_S`` of it, within the bounds."""
    if call_s <= 0:
        return MAX_CALLS
    return max(MIN_CALLS, min(MAX_CALLS, round(KERNEL_STEP_S / call_s)))


@dataclass(frozen=True)
class Kernel:
    name: str
    dtype: str
    # (threads) -> (call, flop per call): its sizes at that thread count
    build: Callable[[int], tuple[Callable[[], object], float]]
    requires: tuple[str, ...] = ()  # keys of plan.optimizations.REQUIREMENTS


def conv_flop(n: int, c: int, hw: int, k: int = 1) -> float:
    return 2.0 * n * hw * hw * c * c * k * k


def _conv(dtype: str, k: int = 1, frozen: bool = False, script: bool = False):
    """A k x k convolution in channels-last. bf16: under autocast (the ``bf16_eager`` path), or
    with ``frozen`` on bf16 weights and input (the ``bf16`` path). int8: the optimization's own
    conversion. ``script``: frozen by TorchScript, its weights prepacked for oneDNN (the
    ``script`` models' path)."""
    lowp = dtype == "int8" or frozen
    conv1, conv3 = (CONV_LOWP, CONV3_LOWP) if lowp else (CONV, CONV3)

    def build(threads: int = 1):
        import torch

        shape = scaled(conv1 if k == 1 else conv3, threads)
        n, c, hw = shape["n"], shape["c"], shape["hw"]
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(n, c, hw, hw, generator=gen)
        conv = torch.nn.Conv2d(c, c, k, padding=k // 2, bias=False).eval()
        if not script:
            x = x.to(memory_format=torch.channels_last)
            conv = conv.to(memory_format=torch.channels_last)
        if script:
            with warnings.catch_warnings():  # TorchScript's deprecation warnings
                warnings.simplefilter("ignore")
                fn = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(conv)))
        elif dtype == "float32":
            fn = conv
        elif dtype == "bfloat16" and frozen:
            x, fn = x.to(torch.bfloat16), conv.to(torch.bfloat16)
        elif dtype == "bfloat16":

            def fn(z):
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    return conv(z)
        else:  # int8: the optimization's own conversion
            from numa_effects.measure.workloads.model import quantize_int8, setup_inductor

            setup_inductor({})
            fn = torch.compile(quantize_int8(torch.nn.Sequential(conv), x)[0])

        def call():
            with torch.inference_mode():
                return fn(x)

        return call, conv_flop(n, c, hw, k)

    return build


def _mm(dtype: str):
    def build(threads: int = 1):
        import torch

        n = matrix_size(threads)
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


INT8 = ("torchao", "cxx")
KERNELS: dict[str, tuple[Kernel, ...]] = {
    "float32": (
        Kernel("mm", "float32", _mm("float32")),
        Kernel("conv1x1_cl", "float32", _conv("float32")),
        Kernel("conv3x3_prepacked", "float32", _conv("float32", 3, script=True)),
    ),
    "bfloat16": (
        Kernel("conv1x1_cl_autocast", "bfloat16", _conv("bfloat16")),
        Kernel("conv1x1_cl_bf16", "bfloat16", _conv("bfloat16", frozen=True)),
        Kernel("conv3x3_cl_bf16", "bfloat16", _conv("bfloat16", 3, frozen=True)),
        # without native bf16 a 2048^3 product takes seconds
        Kernel("mm_bf16", "bfloat16", _mm("bfloat16")),
    ),
    "int8": (
        Kernel("conv1x1_pt2e_int8", "int8", _conv("int8"), requires=INT8),
        # a 3x3 too: a lone 1x1 call pays the quantize/dequantize of its own input and output,
        # which a model's u8 activations skip (a ResNet-50 int8 cell beat the 1x1-only peak)
        Kernel("conv3x3_pt2e_int8", "int8", _conv("int8", 3), requires=INT8),
    ),
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
    of ``seconds`` gets two timed calls: a slow path costs seconds, not minutes."""
    slow = False
    for i in range(warmup):
        t0 = clock()
        call()
        if i == 0 and clock() - t0 > seconds / 2:
            slow = True
            break
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
    return {
        "peak_gflop_per_s": rates[-1],
        "median_gflop_per_s": statistics.median(rates),
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
    """Every kernel of ``dtype`` for one thread timed in this process, and the best."""
    from numa_effects.plan import optimizations as opts

    available = opts.availability() if available is None else available
    kernels, _ = _timed(dtype, available, seconds)
    return {"dtype": dtype, "kernels": kernels, **best(kernels)}


TORCH = True


def prepare(instance) -> dict:
    """Nothing to resolve where the job runs."""
    return {}


def build(instance, settings: dict, available: dict | None = None) -> Built:
    """The peak workload of a pinned instance, timed as the module docstring says."""
    from numa_effects.plan import optimizations as opts

    dtype = instance.cell["dtype"]
    threads = int(instance.plan.threads)
    available = opts.availability() if available is None else available
    t0 = time.perf_counter()
    kernels, built = _timed(dtype, available, PROBE_SECONDS, threads, min_reps=1, warmup=1)
    for name, _ in built:  # the probe: enough to drop a kernel that cannot be the peak
        rates = kernels[name]
        kernels[name] = {"flop_per_call": rates["flop_per_call"]}
        kernels[name]["probe_gflop_per_s"] = rates["peak_gflop_per_s"]
        median = rates["median_gflop_per_s"] or 0.0
        call_s = rates["flop_per_call"] / (median * 1e9) if median > 0 else 0.0
        kernels[name]["calls"] = calls_per_step(call_s)
    timed = _keep(kernels, built)
    if not timed:
        why = "; ".join(f"{n}: {v.get('skipped') or v.get('error')}" for n, v in kernels.items())
        raise RuntimeError(f"no {dtype} peak kernel can run here ({why})")
    times: list[list[float]] = []
    clock = time.perf_counter
    calls = [(call, kernels[name]["calls"]) for name, call in timed]

    def step():
        row = []
        for call, n in calls:
            fastest = float("inf")
            for _ in range(n):
                a = clock()
                call()
                fastest = min(fastest, clock() - a)
            row.append(fastest)
        times.append(row)

    def report() -> dict:
        return {
            "dtype": dtype,
            "threads": threads,
            "kernels": kernels,
            "order": [n for n, _ in timed],
            "times_s": times,
        }

    return Built(step, {"build_s": time.perf_counter() - t0, "prepare_s": 0.0}, [], report)


def _timed(
    dtype: str, available: dict, seconds: float, threads: int = 1, **kw
) -> tuple[dict, list]:
    """({name: its rates, or why it was not built}, [(name, call)] of the built ones) for
    each kernel of ``dtype`` built for ``threads`` and timed for ``seconds``."""
    kernels: dict[str, dict] = {}
    built = []
    for k in KERNELS[dtype]:
        missing = [r for r in k.requires if not available.get(r, False)]
        if missing:
            kernels[k.name] = {"skipped": f"needs {', '.join(missing)}"}
            continue
        try:
            call, flop = k.build(threads)
            kernels[k.name] = time_kernel(call, flop, seconds, **kw)
        except Exception as exc:  # a kernel this torch cannot run must not sink the others
            kernels[k.name] = {"error": error_text(exc)}
            continue
        built.append((k.name, call))
    return kernels, built


def _keep(kernels: dict, built: list) -> list:
    """The built kernels that can be the peak (a dropped one's entry says why)."""
    top = max((kernels[n]["probe_gflop_per_s"] for n, _ in built), default=0.0)
    timed = []
    for name, call in built:
        rate = kernels[name]["probe_gflop_per_s"]
        if rate * DROP_FACTOR < top:
            kernels[name]["dropped"] = (
                f"probed at {rate:.3g} GFLOP/s, below 1/{DROP_FACTOR:g} of the best kernel's "
                f"{top:.3g}: cannot be the peak, not timed"
            )
        else:
            timed.append((name, call))
    return timed


def summary(instance, report, measurement: dict, clean: bool) -> dict:
    """The ``peak`` entry: per kernel its best and median rate over the clean timed steps, the
    best kernel as the dtype's peak, the theoretical peak beside it; no rate without a clean
    step."""
    from numa_effects.measure import timing

    rep = report or {}
    rows = timing.clean_steps(rep, measurement, clean)
    per: dict[str, dict] = {k: dict(v) for k, v in (rep.get("kernels") or {}).items()}
    for i, name in enumerate(rep.get("order") or ()):
        flop = per[name]["flop_per_call"]
        rates = [flop / row[i] / 1e9 for row in rows if row[i] > 0]
        per[name].update(
            peak_gflop_per_s=max(rates) if rates else None,
            median_gflop_per_s=statistics.median(rates) if rates else None,
            reps=len(rates),
        )
    chosen = best(per)
    top = per.get(chosen["peak_kernel"] or "", {})
    dtype = instance.cell["dtype"]
    return {
        "dtype": rep.get("dtype") or dtype,
        **chosen,
        "median_gflop_per_s": top.get("median_gflop_per_s"),
        "reps": top.get("reps"),
        "kernels": per,
        "measure_s": measurement.get("elapsed_s"),
        "theoretical": theoretical(dtype, instance.plan.cores or instance.plan.threads),
    }


def check(peak) -> None:
    """A peak is never refused after its measurement."""


def theoretical(dtype: str, cores: int) -> dict:
    """The nominal peak of ``cores`` physical cores in ``dtype`` on this CPU (``plan.cpu``)."""
    from numa_effects.plan import cpu

    try:
        return cpu.of_machine().theoretical_peak(dtype, cores)
    except (OSError, ValueError) as exc:
        return {"dtype": dtype, "theoretical_gflop_per_s": None, "cores": cores, "error": str(exc)}
