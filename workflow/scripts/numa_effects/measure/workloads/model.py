"""The ``model`` workload: a torchvision model with its optimization applied (``optimize`` runs
the steps its ``plan.optimizations`` entry names, from ``STEPS``), and the optimizations'
runtime code. An exception in ``convert`` is a ``conversion-error``, one before it a
``build-error`` (``supervise.classify`` reads this module's frames). A compiled entry compiles
at its first call, so its conversion cost is ``prepare_s`` plus ``first_call_s``; freezing is a
process-wide inductor setting: one cell per process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings

from numa_effects.measure.causes import Cause
from numa_effects.measure.workloads import Built, warning_entries
from numa_effects.plan.optimizations import EAGER, OPTIMIZATIONS

TORCH = True
AOT_FOLDER = "aot"  # AOTInductor packages (``bf16_aot``), under the run's compile cache
# The oneDNN src/weight data types that prove a dtype ran (``onednn.compute_dtypes``).
DTYPE_PAIRS = {"bfloat16": ("bf16/bf16",), "int8": ("u8/s8", "s8/s8")}


def setup_inductor(settings: dict):
    """Inductor set up for inference: freezing on, the run's shared cache folder if named."""
    import torch._inductor.config as inductor_config

    cache = settings.get("compile_cache_dir")
    if cache:  # read by inductor at the first compile; relative to the run's directory
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.abspath(cache)
    inductor_config.freezing = True


def script(model, x, settings):
    import torch

    frozen = torch.jit.freeze(torch.jit.script(model))
    return torch.jit.optimize_for_inference(frozen), x


def channels_last(model, x, settings):
    import torch

    return model.to(memory_format=torch.channels_last), x.to(memory_format=torch.channels_last)


def compile_(model, x, settings):
    import torch

    return torch.compile(model), x


def autocast_bf16(fn, x, settings):
    import torch

    def run(z):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return fn(z)

    return run, x


def quantize_int8(model, x, settings=None):
    """PT2E int8 with the x86 inductor quantizer (torchao), calibrated on ``x``. Export is
    strict: non-strict export of torchvision ResNets fails in ``prepare_pt2e``."""
    import torch
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer as xiq

    # export and calibration need autograd-free but not inference tensors
    with torch.inference_mode(False), torch.no_grad():
        exported = torch.export.export(model, (x,), strict=True).module()
        quantizer = xiq.X86InductorQuantizer()
        quantizer.set_global(xiq.get_default_x86_inductor_quantization_config())
        prepared = prepare_pt2e(exported, quantizer)
        prepared(x)
        return convert_pt2e(prepared), x


class AotPackage(UserWarning):
    """Which process built a ``bf16_aot`` cell's package (a note, not a fault)."""


def aot_bf16(model, x, settings):
    """``bf16``'s recipe packaged by AOTInductor (``aot_package``) and loaded, as a server would."""
    import tempfile

    import torch

    from numa_effects.measure.workloads.aot import AutocastBF16  # a child unpickles it

    # without the run's cache: one folder per machine (packages are keyed by what they need)
    cache = settings.get("compile_cache_dir") or os.path.join(
        tempfile.gettempdir(), "numa-effects-cache"
    )
    folder = os.path.join(os.path.abspath(cache), AOT_FOLDER)
    # export needs autograd-free but not inference tensors (as ``quantize_int8``)
    with torch.inference_mode(False), torch.no_grad():
        model, x = channels_last(model, x, settings)
        path, built = aot_package(AutocastBF16(model), x, folder)
    how = (
        "built for this process by a child (its prepare_s holds the export and compilation)"
        if built
        else "loaded (built by an earlier process)"
    )
    warnings.warn(AotPackage(f"AOTInductor package {os.path.basename(path)} {how}"), stacklevel=2)
    return torch._inductor.aoti_load_package(path), x


STEPS = {
    "script": script,
    "channels_last": channels_last,
    "quantize_int8": quantize_int8,
    "compile": compile_,
    "autocast_bf16": autocast_bf16,
    "aot_bf16": aot_bf16,
}
COMPILED = ("compile", "aot_bf16")  # steps that need inductor set up first


def optimize(opt: str, model, x, settings: dict):
    """``(fn, x)``: the optimization's steps applied to an eval-mode model and its input."""
    steps = OPTIMIZATIONS[opt].prepare
    if any(s in COMPILED for s in steps):
        setup_inductor(settings)
    fn = model
    for s in steps:
        fn, x = STEPS[s](fn, x, settings)
    return fn, x


def aot_package_key(model, x) -> str:
    """What an AOTInductor package is specific to: torch, the model and its weights, the
    input, the thread count (its kernels are generated for it) and the CPU (native code)."""
    import hashlib

    import torch

    from numa_effects.plan import cpu

    h = hashlib.sha256()
    info = cpu.read_cpuinfo()
    for part in (
        torch.__version__,
        repr(model),  # the architecture, layer by layer
        tuple(x.shape),
        str(x.dtype),
        x.stride(),
        torch.get_num_threads(),
        torch.backends.cpu.get_cpu_capability(),
        info.model_name,
        sorted(info.flags),
    ):
        h.update(repr(part).encode())
    with torch.no_grad():
        for name, t in model.state_dict().items():
            h.update(name.encode())
            h.update(t.detach().contiguous().cpu().numpy().tobytes())
    return h.hexdigest()[:20]


def aot_package(module, x, folder) -> tuple[str, bool]:
    """(path of ``module``'s AOTInductor package for ``x`` in ``folder``, whether this process
    built it): the first process that needs it has a child build it (``workloads.aot``) under a
    file lock; the others wait and load it. Call it outside inference mode."""
    import fcntl

    import torch

    os.makedirs(folder, exist_ok=True)
    key = aot_package_key(module, x)
    path = os.path.join(folder, f"{key}.pt2")
    with open(os.path.join(folder, f"{key}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(path):
            return path, False
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            # built by a child: the measuring process only loads, as every replicate does
            torch.save(module, f"{tmp}.module")
            torch.save(x, f"{tmp}.input")
            _build_package(tmp, torch.get_num_threads())
            os.replace(f"{tmp}.pt2", path)
        finally:  # a failed build leaves nothing behind; the next process tries again
            for leftover in (f"{tmp}.module", f"{tmp}.input", f"{tmp}.pt2"):
                if os.path.exists(leftover):
                    os.remove(leftover)
        return path, True


def _build_package(tmp: str, threads: int) -> None:
    from numa_effects.plan.code import SCRIPTS

    cmd = [sys.executable, "-m", "numa_effects.measure.workloads.aot"]
    args = [f"{tmp}.module", f"{tmp}.input", f"{tmp}.pt2", str(threads)]
    path_var = os.pathsep.join(filter(None, [str(SCRIPTS), os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [*cmd, *args], env={**os.environ, "PYTHONPATH": path_var}, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"AOTInductor build failed: {done.stderr[-2000:]}")


def convert(opt: str, model, x, settings: dict):
    """(fn, x, warnings) of ``optimize``; ``supervise.classify`` finds this frame."""
    import torch

    with warnings.catch_warnings(record=True) as wlist, torch.inference_mode():
        warnings.simplefilter("always")
        fn, x = optimize(opt, model, x, settings)
    return fn, x, warning_entries(wlist)


def make(model_name, opt, batch_size, image_size, seed, settings, reference=False):
    """(fn, x, timings, warnings, ref): ``ref`` is the float32 eager output when
    ``reference`` (before the conversion, which may change the model in place)."""
    import torch

    from numa_effects.measure import builder, numerics

    torch.manual_seed(seed)
    t0 = time.perf_counter()
    model, how = builder.get_model(model_name, OPTIMIZATIONS[opt].graph)
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


def build_for(instance, settings: dict):
    """``make`` for an instance of a spec (``plan.spec.Instance``)."""
    cell, options = instance.cell, instance.options
    return make(
        cell["model"],
        cell["opt"],
        int(cell["batch_size"]),
        int(cell["image_size"]),
        int(settings.get("seed", 0)),
        {**settings, "compile_cache_dir": options.get("compile_cache_dir")},
        # eager float32 is its own reference: nothing to compare
        reference=bool(options.get("inspect")) and cell["opt"] != EAGER,
    )


def inspect(opt: str, fn, x, ref) -> dict:
    """The cell's ``precision`` record from one untimed call after the timed ones: the oneDNN
    kernels that ran (ATen's top operators when none did), whether they compute in the
    labelled dtype, the CPU's capabilities and the output's agreement with float32 eager."""
    import torch

    from numa_effects.measure import numerics, onednn

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
    out.update(_capabilities(entry))
    out["inspect_s"] = time.perf_counter() - t0
    return out


def _capabilities(entry) -> dict:
    from numa_effects.measure import onednn
    from numa_effects.plan import cpu
    from numa_effects.plan import optimizations as opts

    try:
        caps = cpu.of_machine(onednn_bf16=onednn.onednn_takes_bf16())
    except (OSError, cpu.CpuInfoError):
        caps = None
    return {
        "capabilities": caps.to_dict() if caps else None,
        "native": opts.native_on(entry, caps) if caps else None,
        "precision_note": opts.precision_note(entry, caps) if caps else None,
    }


def dtype_verified(dtype: str, compute: list[str]) -> bool:
    """bf16 and int8: one of their oneDNN compute primitives ran; float32: no compute primitive
    ran in another dtype (oneDNN's f32 kernels, or ATen's own)."""
    if dtype in DTYPE_PAIRS:
        return any(pair in compute for pair in DTYPE_PAIRS[dtype])
    return all(pair == "f32/f32" for pair in compute)


def prepare(instance) -> dict:
    """Nothing to resolve where the job runs."""
    return {}


def build(instance, settings: dict) -> Built:
    """The step: one inference under ``torch.inference_mode``; its report inspects it."""
    import torch

    fn, x, timings, caught, ref = build_for(instance, settings)
    opt = instance.cell["opt"]

    def step():
        with torch.inference_mode():
            fn(x)

    report = (lambda: inspect(opt, fn, x, ref)) if instance.options.get("inspect") else None
    return Built(step, timings, caught, report, compiles=OPTIMIZATIONS[opt].graph == "inductor")


def summary(instance, report, measurement, clean) -> dict | None:
    """The cell's ``precision``: its inspection (None when not inspected)."""
    return report


def check(precision) -> tuple[str, str] | None:
    """A cell whose outputs are not those of the same model fails with cause ``numerics``."""
    from numa_effects.measure import numerics

    num = (precision or {}).get("numerics")
    if not num or num["verdict"]["ok"]:
        return None
    return Cause.NUMERICS, numerics.failure_message(num)
