"""The registry of model optimizations: what each one is, never how it runs (metadata: planning
never imports torch). Adding one is one entry in ``OPTIMIZATIONS`` (and a step of
``measure.workloads.model.STEPS`` when its conversion needs a new one).

bf16 comes as two entries: ``bf16`` (autocast, channels-last, compiled with freezing: PyTorch's
CPU deployment recipe) and ``bf16_eager`` (the same autocast without compilation). The pair
separates what the dtype buys from what the compiler buys (``bf16`` against ``compile``,
``bf16_eager`` against ``channels_last``). ``bf16_aot`` is ``bf16`` packaged once by AOTInductor
into the run's compile cache and loaded by every process, as a server would: another deployment,
not a cache of ``bf16`` (docs/precision.md).
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Mapping
from dataclasses import dataclass

# The model as a user has it (eager float32): the baseline every optimization is compared with.
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
        """The first target present: a package's name, or a program's path on ``path``."""
        if self.kind == "package":
            return next((t for t in self.targets if importlib.util.find_spec(t) is not None), None)
        return next((p for p in (shutil.which(t, path=path) for t in self.targets) if p), None)


def by_name(*entries) -> dict:
    """A registry: each entry under its ``name``, in the order given."""
    return {e.name: e for e in entries}


REQUIREMENTS: dict[str, Requirement] = by_name(
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


def availability(names=None) -> dict[str, bool]:
    """``{requirement: available}`` on this machine (no import of the packages themselves)."""
    return {n: REQUIREMENTS[n].found() is not None for n in (names or REQUIREMENTS)}


def skip_reason(opt: Optimization, available: Mapping[str, bool]) -> str | None:
    """Why ``opt``'s cells cannot run, given ``availability()`` (None: they can)."""
    missing = [REQUIREMENTS[r] for r in opt.requires if not available.get(r, False)]
    if not missing:
        return None
    return f"optimization {opt.name} needs " + "; ".join(
        f"{r.name} (install: {r.install})" for r in missing
    )


def _cap(caps, key: str) -> str:
    return caps.get(key) if isinstance(caps, Mapping) else getattr(caps, key)


def native_on(opt: Optimization, caps) -> bool:
    """Does this CPU run ``opt``'s dtype natively? ``caps``: ``plan.cpu.Capabilities`` (or its
    dict). What ``auto`` picks bf16 entries by; float32 entries are native everywhere."""
    if opt.native == "bf16":
        return _cap(caps, "bf16") == "native"
    if opt.native == "int8":
        return _cap(caps, "int8") in ("amx", "vnni")
    return True


def precision_note(opt: Optimization, caps) -> str | None:
    """The mark a cell of ``opt`` carries on this CPU when its dtype is not native."""
    if native_on(opt, caps):
        return None
    if opt.native == "bf16":
        state = _cap(caps, "bf16")
        why = {
            "onednn_emulated": "oneDNN emulates bf16 with AVX-512 (no bf16 instructions)",
            "aten_fallback": "oneDNN refuses bf16 here; ATen's reference kernels run",
        }.get(state, state)
        return f"bf16 {state}: {why}, expect no speedup over float32"
    return f"int8 {_cap(caps, 'int8')}: no VNNI or AMX, int8 dot products take 2-3 instructions"


OPTIMIZATIONS: dict[str, Optimization] = by_name(
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
        "int8 PT2E (torchao X86InductorQuantizer) calibrated on the input, compiled with freezing",
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
