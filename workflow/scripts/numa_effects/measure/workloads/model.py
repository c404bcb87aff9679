"""The ``model`` workload: a torchvision model with its optimization applied (a cell, each
instance of a packing group), and the optimizations' runtime code.

``build`` builds the model and its input (``make``, ``builder``), computes the float32 eager
reference output before the conversion when the instance is inspected, and applies the optimization:
``optimize`` runs the steps its registry entry names (``plan.optimizations``: ``prepare``) from
``STEPS``, in order; an exception there is the cell's ``conversion-error``, one before it a
``build-error`` (``supervise.classify`` reads this module's frames). Compiled entries (a ``compile``
step) compile lazily: ``torch.compile`` returns at once and the first call compiles, so their
conversion cost is ``prepare_s`` (export, calibration, quantization) plus ``first_call_s``
(compilation). Freezing (``torch._inductor.config.freezing``) is a process-wide setting read at that
first call, so it is set globally: one cell per process.

``bf16_aot`` deploys ``bf16`` ahead of time: AOTInductor packages the exported autocast module
once per model, input shape, thread count and CPU (``aot_package_key``) into the run's compile
cache (``AOT_FOLDER``), built by a child process (``workloads.aot``), and every process loads
the package, as a server would, instead of compiling.

After the timed steps the instance inspects one untimed call (``inspect``): the record's
``precision``. ``check`` fails a cell whose outputs disagree with float32 eager beyond the
dtype's bounds (cause ``numerics``): a broken conversion is never a speedup.

``python -m numa_effects.measure.workloads.model`` prints ``plan.memory.FOOTPRINT`` measured on
the meta device (``footprint``; paste it there after a torchvision upgrade)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings

from numa_effects.measure.causes import Cause
from numa_effects.measure.workloads import Built
from numa_effects.plan.optimizations import EAGER, OPTIMIZATIONS

TORCH = True
AOT_FOLDER = "aot"  # AOTInductor packages (``bf16_aot``), under the run's compile cache
# The oneDNN src/weight data types that prove a dtype ran (``onednn.compute_dtypes``).
DTYPE_PAIRS = {"bfloat16": ("bf16/bf16",), "int8": ("u8/s8", "s8/s8")}


# -- the optimizations' steps ----------------------------------------------------------------------
def setup_inductor(settings: dict):
    """Inductor set up for inference: freezing on (weights become constants, folded and
    prepacked for oneDNN), the run's shared cache folder when the settings name one."""
    import torch._inductor.config as inductor_config

    cache = settings.get("compile_cache_dir")
    if cache:  # read lazily by inductor at the first compile, so setting it here is in time
        # (the spec names it relative to the run's directory, the process's working directory)
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
    """PT2E int8 with the x86 inductor quantizer (torchao): export (strict: non-strict export
    of torchvision ResNets fails in ``prepare_pt2e`` with "Input partition has more than one
    output node"), insert observers, calibrate on ``x`` (the cell's synthetic input), convert
    to quantize/dequantize pairs that inductor fuses into int8 oneDNN kernels."""
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
    """Which process built the AOTInductor package a ``bf16_aot`` cell ran (a note, not a
    fault)."""


def aot_bf16(model, x, settings):
    """``bf16``'s recipe packaged by AOTInductor (``aot_package``) and loaded."""
    import tempfile

    import torch

    from numa_effects.measure.workloads.aot import AutocastBF16  # a child unpickles it

    # without the run's cache (a direct call): one folder per machine, safe to share as the
    # packages are keyed by what they are specific to
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
    # provenance: the cell records its conversion's warnings (``provenance.warnings``)
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
    """``(fn, x)``: the optimization's steps applied to an eval-mode model and its example
    input (an optimization may change the input's memory format)."""
    steps = OPTIMIZATIONS[opt].prepare
    if any(s in COMPILED for s in steps):
        setup_inductor(settings)
    fn = model
    for s in steps:
        fn, x = STEPS[s](fn, x, settings)
    return fn, x


def aot_package_key(model, x) -> str:
    """What an AOTInductor package is specific to: torch's version, the model's architecture
    and weights, the input's shape, dtype and strides, the thread count (inductor's CPU kernels are
    generated for it) and the CPU (its vector ISA and model name: a package is native code)."""
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
    """The path of ``module``'s AOTInductor package for input ``x`` in ``folder`` (freezing on,
    as ``bf16``), and whether this process built it: the first process that needs it has a
    child process export and compile it (``workloads.aot``, at this process's thread count)
    under a file lock, into a temporary name then renamed; the others wait for it and load it.
    Call it outside inference mode (``torch.export`` refuses inference tensors)."""
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
            # built by a process of its own: the measuring process only loads, as every other
            # replicate does (its heap never held the compilation)
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


# -- the workload ---------------------------------------------------------------------------------
def convert(opt: str, model, x, settings: dict):
    """Apply the optimization (``optimize``; a compiled one compiles at its first call).
    Returns (fn, x, warnings); an exception here is the cell's ``conversion-error``
    (``supervise.classify`` finds this frame)."""
    import torch

    caught: list[dict] = []
    with warnings.catch_warnings(record=True) as wlist, torch.inference_mode():
        warnings.simplefilter("always")
        fn, x = optimize(opt, model, x, settings)
    seen = set()
    for w in wlist:
        key = (w.category.__name__, str(w.message).splitlines()[0])
        if key not in seen:
            seen.add(key)
            caught.append({"category": key[0], "message": key[1]})
    return fn, x, caught


def make(model_name, opt, batch_size, image_size, seed, settings, reference=False):
    """Model and input, with the optimization applied. Returns (fn, x, timings, warnings, ref):
    ``ref`` is the float32 eager output on the same input (``numerics.reference_output``,
    computed before the conversion, which may change the model in place) when ``reference``,
    else None; its time is ``reference_s``, apart from ``build_s`` and ``prepare_s``."""
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
    """``make`` for an instance of a spec (``plan.spec.Instance``): its model, input and
    optimization."""
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
    """What one untimed call after the timed ones shows (the cell's ``precision`` record): the
    optimization's dtype and graph, the oneDNN kernels that ran (``onednn.traced_call``; ATen's
    top operators when none did), whether they compute in the dtype the label says
    (``dtype_verified``), the CPU's capabilities with oneDNN's own bf16 answer, whether the dtype
    is native here and the mark of a cell that is not, and the agreement of the output with the
    float32 eager reference (``numerics``; None for eager float32, its own reference)."""
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
    """Nothing to resolve where the job runs (``workloads`` interface: ``prepare``)."""
    return {}


def build(instance, settings: dict) -> Built:
    """The step of the instance's model (one inference under ``torch.inference_mode``); its
    report inspects it (``inspect``) when the spec asks for it."""
    import torch

    fn, x, timings, caught, ref = build_for(instance, settings)
    opt = instance.cell["opt"]

    def step():
        with torch.inference_mode():
            fn(x)

    report = (lambda: inspect(opt, fn, x, ref)) if instance.options.get("inspect") else None
    compiles = OPTIMIZATIONS[opt].graph == "inductor"
    return Built(step, timings, caught, report, compiles)


def summary(instance, report, measurement, clean) -> dict | None:
    """The cell's ``precision``: its inspection (None when not inspected)."""
    return report


def check(precision) -> tuple[str, str] | None:
    """A cell whose outputs are not those of the same model (``numerics.verdict``) fails with
    cause ``numerics``: no statistics, the timings kept in ``measurement``."""
    from numa_effects.measure import numerics

    num = (precision or {}).get("numerics")
    if not num or num["verdict"]["ok"]:
        return None
    return Cause.NUMERICS, numerics.failure_message(num)


# -- the model's memory footprint (plan.memory.FOOTPRINT) ---------------------------------------
def footprint(model: str, image_size: int = 224) -> tuple[int, int]:
    """(parameters + buffers, bytes of the largest layer's input + output) for one image, from
    a forward pass on the meta device (shapes only: no memory, no time)."""
    import torch
    import torchvision

    def nbytes(x) -> int:
        if isinstance(x, torch.Tensor):
            return x.numel() * x.element_size()
        if isinstance(x, (list, tuple)):
            return sum(nbytes(v) for v in x)
        if isinstance(x, dict):
            return sum(nbytes(v) for v in x.values())
        return 0

    with torch.device("meta"):
        net = torchvision.models.get_model(model, weights=None).eval()
    params = sum(p.numel() for p in net.parameters()) + sum(b.numel() for b in net.buffers())
    largest = 0

    def hook(_module, inputs, output):
        nonlocal largest
        largest = max(largest, nbytes(inputs) + nbytes(output))

    for module in net.modules():
        if not list(module.children()):
            module.register_forward_hook(hook)
    with torch.inference_mode():
        net(torch.empty(1, 3, image_size, image_size, device="meta"))
    return params, largest


def main() -> None:
    """Print FOOTPRINT for every checked-in torchvision model (paste it into plan.memory)."""
    from numa_effects.plan.models import CLASSIFICATION_MODELS

    for name in CLASSIFICATION_MODELS:
        try:
            params, largest = footprint(name)
        except Exception as exc:  # e.g. RegNets cannot be built on the meta device
            print(f"    # {name}: {type(exc).__name__}", flush=True)
            continue
        print(f'    "{name}": ({params}, {largest}),', flush=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
