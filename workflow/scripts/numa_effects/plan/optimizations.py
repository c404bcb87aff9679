"""The registry of model optimizations. Adding one is one entry in ``OPTIMIZATIONS``.

Each entry turns an eval-mode model and an example input into a callable ``fn(x) -> y`` plus
the input to time it on (an optimization may change the input's memory format). Conversion
time and warnings are recorded by the caller (``measure.cell``), not here. The entry carries
everything else an optimization means to the pipeline: its ``dtype`` (bytes per weight for the
memory estimate; the peak the efficiency is measured against), its graph mode, whether it
uses the compile cache shared across the processes of a run, and its label and colour in the
report.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

# Bytes per element of each dtype an optimization computes in (the memory estimate).
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "int8": 1}


@dataclass(frozen=True)
class Optimization:
    name: str
    description: str
    prepare: Callable  # (model, example_input, settings) -> (callable, input)
    label: str = ""  # legend text in the report ("" = the name)
    dtype: str = "float32"  # the weights' and the arithmetic's dtype (a key of DTYPE_BYTES)
    graph: str = "eager"  # eager | torchscript | inductor
    compile_cache: bool = False  # inductor: a cache folder shared by the run's processes
    color: str | None = None  # fixed colour in every figure (None: a spare one)

    @property
    def legend(self) -> str:
        return self.label or self.name

    @property
    def bytes_per_element(self) -> int:
        return DTYPE_BYTES[self.dtype]


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


def _compile(model, x, settings):
    import torch

    cache = settings.get("compile_cache_dir")
    if cache:  # read lazily by inductor at the first compile, so setting it here is in time
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache)
    return torch.compile(model), x


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
            "torch.compile (inductor); compile time recorded apart",
            _compile,
            label="compile (torch.compile)",
            graph="inductor",
            compile_cache=True,
            color="#cc78bc",
        ),
    )
}
