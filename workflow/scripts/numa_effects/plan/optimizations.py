"""The registry of model optimizations. Adding one is one entry in ``OPTIMIZATIONS``.

Each entry turns an eval-mode model and an example input into a callable ``fn(x) -> y`` plus
the input to time it on (an optimization may change the input's memory format). Conversion
time and warnings are recorded by the caller (``cell``), not here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Optimization:
    name: str
    description: str
    prepare: Callable  # (model, example_input, settings) -> (callable, input)


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
        Optimization("none", "eager PyTorch under torch.inference_mode()", _none),
        Optimization("script", "TorchScript: script -> freeze -> optimize_for_inference", _script),
        Optimization(
            "channels_last", "eager, model and input in channels-last format", _channels_last
        ),
        Optimization("compile", "torch.compile (inductor); compile time recorded apart", _compile),
    )
}
