"""The registry of model optimizations. Adding one is one entry in ``OPTIMIZATIONS``.

Each entry turns an eval-mode model and an example input into a callable ``fn(x) -> y`` plus
the input to time it on (an optimization may change the input's memory format). Conversion
time and warnings are recorded by the caller (``measure.cell``), not here. The entry carries
everything else an optimization means to the pipeline: its ``dtype`` (bytes per weight for the
memory estimate; the peak the efficiency is measured against), its graph mode, whether it
uses the compile cache shared across the processes of a run, its label and colour in the
report, what it ``requires`` to run at all (``skip_reason``) and which CPU capability makes it
``native`` (``native_on``, ``precision_note``).

Compiled entries (``graph == "inductor"``) compile lazily: ``torch.compile`` returns at once and
the first call compiles, so their conversion cost is ``prepare_s`` (export, calibration,
quantization) plus ``first_call_s`` (compilation). Freezing (``torch._inductor.config.freezing``)
is a process-wide setting read at that first call, so ``prepare`` sets it globally: one cell per
process.

bf16 comes as two entries. ``bf16`` is PyTorch's CPU deployment recipe (autocast, channels-last,
compiled with freezing: weights are converted and prepacked once); ``bf16_eager`` is the same
autocast without compilation, what a user gets by adding one ``with`` line. Both are kept: the
pair separates what the data type buys from what the compiler buys (``bf16`` against
``compile``, ``bf16_eager`` against ``channels_last``, each pair differing only in dtype), and
the eager one has no compile cost, runs where inductor cannot compile, and shows the per-call
weight conversion that the compiled one avoids.

``bf16_aot`` is ``bf16`` deployed ahead of time: AOTInductor packages the exported autocast
module once per model, input shape, thread count and CPU (``aot_package_key``) into the run's
compile cache, and every process loads the package, as a server would, instead of compiling
(``bf16``'s compilation is redone in every process: freezing's prepacked weights keep it out of
inductor's FX graph cache). It is another deployment, not a cache of ``bf16``: on the AMX Xeon
it ran ResNet-50 1.23 - 1.60 x slower, on the AVX-512 EPYC 0.93 - 0.98 x (docs/precision.md).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass

# Bytes per element of each dtype an optimization computes in (the memory estimate).
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "int8": 1}
AOT_FOLDER = "aot"  # AOTInductor packages (``bf16_aot``), under the run's compile cache


@dataclass(frozen=True)
class Requirement:
    """Something an optimization needs on the machine, and how to get it."""

    name: str
    kind: str  # "package" (importable module) | "program" (on PATH)
    targets: tuple[str, ...]  # module names or programs; any one suffices
    install: str

    def found(self, path: str | None = None) -> str | None:
        """The first target present: a package's name, or a program's path on ``path`` (None:
        ``PATH``); None when none is."""
        if self.kind == "package":
            return next((t for t in self.targets if importlib.util.find_spec(t) is not None), None)
        return next((p for p in (shutil.which(t, path=path) for t in self.targets) if p), None)

    def available(self) -> bool:
        return self.found() is not None


REQUIREMENTS: dict[str, Requirement] = {
    r.name: r
    for r in (
        Requirement(
            "torchao",
            "package",
            ("torchao",),
            "pip install torchao==0.18.0 (pinned in requirements.txt; `make venv` installs it)",
        ),
        Requirement(
            "cxx",
            "program",
            ("g++", "c++", "clang++"),
            "a C++ compiler for inductor's CPU kernels: apt-get install g++",
        ),
    )
}


@dataclass(frozen=True)
class Optimization:
    name: str
    description: str
    prepare: Callable  # (model, example_input, settings) -> (callable, input)
    label: str = ""  # legend text in the report ("" = the name)
    dtype: str = "float32"  # the weights' and the arithmetic's dtype (a key of DTYPE_BYTES)
    graph: str = "eager"  # eager | torchscript | inductor | aoti (a package compiled ahead)
    compile_cache: bool = False  # inductor: a cache folder shared by the run's processes
    color: str | None = None  # fixed colour in every figure (None: a spare one)
    requires: tuple[str, ...] = ()  # keys of REQUIREMENTS: without one, its cells are skipped
    native: str | None = None  # the capability that makes the dtype fast: "bf16" | "int8"

    @property
    def legend(self) -> str:
        return self.label or self.name

    @property
    def bytes_per_element(self) -> int:
        return DTYPE_BYTES[self.dtype]


# -- skip reasons and precision notes (pure: the lead's grid calls them) -----------------------
def availability(names=None) -> dict[str, bool]:
    """``{requirement: available}`` on this machine (no import of the packages themselves)."""
    return {n: REQUIREMENTS[n].available() for n in (names or REQUIREMENTS)}


def skip_reason(opt: Optimization, available: Mapping[str, bool]) -> str | None:
    """Why ``opt``'s cells cannot run, given ``availability()`` (None: they can)."""
    missing = [REQUIREMENTS[r] for r in opt.requires if not available.get(r, False)]
    if not missing:
        return None
    return f"optimization {opt.name} needs " + "; ".join(
        f"{r.name} (install: {r.install})" for r in missing
    )


def native_on(opt: Optimization, caps) -> bool:
    """Does this CPU run ``opt``'s dtype natively? ``caps``: ``plan.cpu.Capabilities`` (or its
    dict). What ``auto`` picks bf16 entries by; float32 entries are native everywhere."""
    get = caps.get if isinstance(caps, Mapping) else lambda k: getattr(caps, k)
    if opt.native == "bf16":
        return get("bf16") == "native"
    if opt.native == "int8":
        return get("int8") in ("amx", "vnni")
    return True


def precision_note(opt: Optimization, caps) -> str | None:
    """The mark a cell of ``opt`` carries on this CPU when its dtype is not native (None: no
    mark), e.g. ``bf16 aten_fallback: no bf16 in oneDNN on this CPU, expect slower than
    float32``."""
    if native_on(opt, caps):
        return None
    get = caps.get if isinstance(caps, Mapping) else lambda k: getattr(caps, k)
    if opt.native == "bf16":
        state = get("bf16")
        why = {
            "onednn_emulated": "oneDNN emulates bf16 with AVX-512 (no bf16 instructions)",
            "aten_fallback": "oneDNN refuses bf16 here; ATen's reference kernels run",
        }.get(state, state)
        return f"bf16 {state}: {why}, expect no speedup over float32"
    return f"int8 {get('int8')}: no VNNI or AMX, int8 dot products take 2-3 instructions"


# -- prepare functions ---------------------------------------------------------------------------
def _none(model, x, settings):
    return model, x


def _script(model, x, settings):
    import torch

    scripted = torch.jit.script(model)
    frozen = torch.jit.freeze(scripted)
    return torch.jit.optimize_for_inference(frozen), x


def _channels_last(model, x, settings):
    import torch

    return model.to(memory_format=torch.channels_last), x.to(memory_format=torch.channels_last)


def setup_inductor(settings: dict):
    """Inductor set up for inference: freezing on (weights become constants, folded and
    prepacked for oneDNN), the run's shared cache folder when the settings name one."""
    import torch._inductor.config as inductor_config

    cache = settings.get("compile_cache_dir")
    if cache:  # read lazily by inductor at the first compile, so setting it here is in time
        # (the spec names it relative to the run's directory, the process's working directory)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.abspath(cache)
    inductor_config.freezing = True


def _compile(model, x, settings):
    import torch

    setup_inductor(settings)
    model, x = _channels_last(model, x, settings)
    return torch.compile(model), x


def _autocast_bf16(fn):
    import torch

    def run(z):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return fn(z)

    return run


def _bf16(model, x, settings):
    import torch

    setup_inductor(settings)
    model, x = _channels_last(model, x, settings)
    return _autocast_bf16(torch.compile(model)), x


class AotPackage(UserWarning):
    """Which process built the AOTInductor package a ``bf16_aot`` cell ran (a note, not a
    fault)."""


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
    child process export and compile it (``plan.aot``, at this process's thread count)
    under a file lock, into a temporary name then renamed; the others wait for it and load it.
    Call it outside inference mode (``torch.export`` refuses inference tensors)."""
    import fcntl

    import torch

    from numa_effects.plan.code import SCRIPTS

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
            threads = torch.get_num_threads()
            cmd = [sys.executable, "-m", "numa_effects.plan.aot"]
            args = [f"{tmp}.module", f"{tmp}.input", f"{tmp}.pt2", str(threads)]
            path_var = os.pathsep.join(filter(None, [str(SCRIPTS), os.environ.get("PYTHONPATH")]))
            env = {**os.environ, "PYTHONPATH": path_var}
            done = subprocess.run([*cmd, *args], env=env, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"AOTInductor build failed: {done.stderr[-2000:]}")
            os.replace(f"{tmp}.pt2", path)
        finally:  # a failed build leaves nothing behind; the next process tries again
            for leftover in (f"{tmp}.module", f"{tmp}.input", f"{tmp}.pt2"):
                if os.path.exists(leftover):
                    os.remove(leftover)
        return path, True


def _bf16_aot(model, x, settings):
    import tempfile

    import torch

    from numa_effects.plan.aot import AutocastBF16  # the module export traces (a child unpickles)

    setup_inductor(settings)
    # without the run's cache (a direct call): one folder per machine, safe to share as the
    # packages are keyed by what they are specific to
    cache = settings.get("compile_cache_dir") or os.path.join(
        tempfile.gettempdir(), "numa-effects-cache"
    )
    folder = os.path.join(os.path.abspath(cache), AOT_FOLDER)
    # export needs autograd-free but not inference tensors (as ``quantize_int8``)
    with torch.inference_mode(False), torch.no_grad():
        model, x = _channels_last(model, x, settings)
        path, built = aot_package(AutocastBF16(model), x, folder)
    # provenance: the cell records its conversion's warnings (``provenance.warnings``)
    how = (
        "built for this process by a child (its prepare_s holds the export and compilation)"
        if built
        else "loaded (built by an earlier process)"
    )
    note = f"AOTInductor package {os.path.basename(path)} {how}"
    warnings.warn(AotPackage(note), stacklevel=2)
    return torch._inductor.aoti_load_package(path), x


def _bf16_eager(model, x, settings):
    model, x = _channels_last(model, x, settings)
    return _autocast_bf16(model), x


def quantize_int8(model, x):
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
        return convert_pt2e(prepared)


def _int8(model, x, settings):
    import torch

    setup_inductor(settings)
    return torch.compile(quantize_int8(model, x)), x


def _int8_bf16(model, x, settings):
    import torch

    setup_inductor(settings)
    return _autocast_bf16(torch.compile(quantize_int8(model, x))), x


OPTIMIZATIONS: dict[str, Optimization] = {
    o.name: o
    for o in (
        Optimization(
            "none",
            "eager PyTorch under torch.inference_mode()",
            _none,
            label="none (eager)",
            color="#0173b2",
        ),
        Optimization(
            "script",
            "TorchScript: script -> freeze -> optimize_for_inference",
            _script,
            label="script (TorchScript)",
            graph="torchscript",
            color="#de8f05",
        ),
        Optimization(
            "channels_last",
            "eager, model and input in channels-last format",
            _channels_last,
            label="channels_last (eager)",
            color="#029e73",
        ),
        Optimization(
            "compile",
            "torch.compile (inductor) with freezing, channels-last; compile time recorded apart",
            _compile,
            label="compile (torch.compile)",
            graph="inductor",
            compile_cache=True,
            color="#cc78bc",
            requires=("cxx",),
        ),
        Optimization(
            "bf16",
            "bfloat16 autocast, channels-last, torch.compile with freezing",
            _bf16,
            label="bf16 (compiled)",
            dtype="bfloat16",
            graph="inductor",
            compile_cache=True,
            color="#006374",
            requires=("cxx",),
            native="bf16",
        ),
        Optimization(
            "bf16_aot",
            "bf16's recipe packaged once by AOTInductor (torch.export, freezing) per cell shape "
            "and thread count, loaded by every process: no per-process compilation",
            _bf16_aot,
            label="bf16 (AOTInductor)",
            dtype="bfloat16",
            graph="aoti",
            compile_cache=True,
            color="#591e71",
            requires=("cxx",),
            native="bf16",
        ),
        Optimization(
            "bf16_eager",
            "bfloat16 autocast, channels-last, eager (no compilation)",
            _bf16_eager,
            label="bf16 (eager)",
            dtype="bfloat16",
            color="#56b4e9",
            native="bf16",
        ),
        Optimization(
            "int8",
            "int8 PT2E (torchao X86InductorQuantizer) calibrated on the input, compiled with "
            "freezing",
            _int8,
            label="int8 (PT2E, compiled)",
            dtype="int8",
            graph="inductor",
            compile_cache=True,
            color="#b8850a",
            requires=("torchao", "cxx"),
            native="int8",
        ),
        Optimization(
            "int8_bf16",
            "int8 PT2E as int8, the unquantized rest under bfloat16 autocast, compiled",
            _int8_bf16,
            label="int8 + bf16 (PT2E, compiled)",
            dtype="int8",
            graph="inductor",
            compile_cache=True,
            color="#8c0800",
            requires=("torchao", "cxx"),
            native="bf16",
        ),
    )
}
