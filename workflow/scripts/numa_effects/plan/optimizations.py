"""The registry of model optimizations: what each one is, never how it runs. Adding one is one
entry in ``OPTIMIZATIONS`` (and a step of ``measure.workloads.model.STEPS`` when its
conversion needs one no entry uses yet).

An entry names the steps that turn an eval-mode model and an example input into a callable
``fn(x) -> y`` plus the input to time it on (``prepare``: script, channels-last, quantize,
compile, autocast, AOT package; the model workload runs them in order). It carries everything
else an optimization means to the pipeline: its ``dtype`` (bytes per weight for the memory
estimate; the peak the efficiency is measured against), its graph mode, whether it uses the
compile cache shared across the processes of a run, its label and colour in the report, what
it ``requires`` to run at all (``skip_reason``) and which CPU capability makes it ``native``
(``native_on``, ``precision_note``). Planning never imports torch: this module is metadata.

bf16 comes as two entries. ``bf16`` is PyTorch's CPU deployment recipe (autocast, channels-last,
compiled with freezing: weights are converted and prepacked once); ``bf16_eager`` is the same
autocast without compilation, what a user gets by adding one ``with`` line. Both are kept: the
pair separates what the data type buys from what the compiler buys (``bf16`` against
``compile``, ``bf16_eager`` against ``channels_last``, each pair differing only in dtype), and
the eager one has no compile cost, runs where inductor cannot compile, and shows the per-call
weight conversion that the compiled one avoids.

``bf16_aot`` is ``bf16`` deployed ahead of time: AOTInductor packages the exported autocast
module once per model, input shape, thread count and CPU into the run's
compile cache, and every process loads the package, as a server would, instead of compiling
(``bf16``'s compilation is redone in every process: freezing's prepacked weights keep it out of
inductor's FX graph cache). It is another deployment, not a cache of ``bf16``: on the AMX Xeon
it ran ResNet-50 1.23 - 1.60 x slower, on the AVX-512 EPYC 0.93 - 0.98 x (docs/precision.md).
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Mapping
from dataclasses import dataclass

# The model as a user has it (eager float32): the baseline every optimization is compared with
# (opt_speedup.csv, precision.csv, the Precision figures) and what the deploy answer's baselines
# run.
EAGER = "none"
# Bytes per element of each dtype an optimization computes in (the memory estimate).
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "int8": 1}


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
    # how the model is prepared: steps in order (measure.workloads.model.STEPS); () = eager
    prepare: tuple[str, ...] = ()
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


OPTIMIZATIONS: dict[str, Optimization] = {
    o.name: o
    for o in (
        Optimization(
            EAGER,
            "eager PyTorch under torch.inference_mode()",
            label="none (eager)",
            color="#0173b2",
        ),
        Optimization(
            "script",
            "TorchScript: script -> freeze -> optimize_for_inference",
            ("script",),
            label="script (TorchScript)",
            graph="torchscript",
            color="#de8f05",
        ),
        Optimization(
            "channels_last",
            "eager, model and input in channels-last format",
            ("channels_last",),
            label="channels_last (eager)",
            color="#029e73",
        ),
        Optimization(
            "compile",
            "torch.compile (inductor) with freezing, channels-last; compile time recorded apart",
            ("channels_last", "compile"),
            label="compile (torch.compile)",
            graph="inductor",
            compile_cache=True,
            color="#cc78bc",
            requires=("cxx",),
        ),
        Optimization(
            "bf16",
            "bfloat16 autocast, channels-last, torch.compile with freezing",
            ("channels_last", "compile", "autocast_bf16"),
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
            ("aot_bf16",),
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
            ("channels_last", "autocast_bf16"),
            label="bf16 (eager)",
            dtype="bfloat16",
            color="#56b4e9",
            native="bf16",
        ),
        Optimization(
            "int8",
            "int8 PT2E (torchao X86InductorQuantizer) calibrated on the input, compiled with "
            "freezing",
            ("quantize_int8", "compile"),
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
            ("quantize_int8", "compile", "autocast_bf16"),
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
