"""The torchvision model of a cell, built with the least import that gives the same model.

``import torchvision`` runs the package's ``__init__``, which imports every model family,
detection, video and ``torchvision.ops``; and ``torchvision.ops.roi_align`` imports
``torch._dynamo`` (sympy and the whole compiler front end). Measured on this project's 2-core
machine (torch 2.14.1, torchvision 0.29.1, under load): ``import torchvision`` 3.4 s after
``import torch`` (3.0 s), of which ``torch._dynamo`` 3.45 s, against 0.05 s for the ResNet module
alone: a third of every replicate's process start, and minutes per process in the TCG guest.

A ResNet (``torchvision/models/resnet.py``: ``resnet*``, ``resnext*``, ``wide_resnet*``) needs none
of it. For an optimization that does not compile (graph ``eager`` or ``torchscript``), the cell
imports that module alone: the packages ``torchvision`` and ``torchvision.models`` are registered
as bare packages of the installed torchvision (their ``__init__`` not run) and
``torchvision.models.resnet`` is imported from them -- the same source file, the same classes,
the same initialisation, built by the same ``get_model``. What is skipped: torchvision's custom
operators (nms, roi_align; a classification ResNet calls none) and the compiler's import. A
compiled optimization (graph ``inductor``) imports ``torch._dynamo`` anyway, so it imports
torchvision normally, as does every other model family. The cell records which (``model_import``:
``lean`` or ``package``); ``tests/test_builder.py`` checks that both give the same model.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys

LEAN_MODULE = "torchvision.models.resnet"
LEAN_PREFIXES = ("resnet", "resnext", "wide_resnet")
LEAN_GRAPHS = ("eager", "torchscript")


def lean_possible(model_name: str, graph: str) -> bool:
    """The model's module can be imported alone for this graph mode, in this process."""
    return (
        graph in LEAN_GRAPHS
        and model_name.startswith(LEAN_PREFIXES)
        and ("torchvision" not in sys.modules or LEAN_MODULE in sys.modules)
    )


def _bare_packages() -> None:
    """``torchvision`` and ``torchvision.models`` as packages whose ``__init__`` is not run."""
    spec = importlib.util.find_spec("torchvision")
    root = spec.submodule_search_locations[0]
    for name, path in (("torchvision", root), ("torchvision.models", f"{root}/models")):
        if name in sys.modules:
            continue
        pkg_spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        pkg_spec.submodule_search_locations = [path]
        sys.modules[name] = importlib.util.module_from_spec(pkg_spec)
    tv = sys.modules["torchvision"]
    if not hasattr(tv, "__version__"):
        tv.__version__ = importlib.import_module("torchvision.version").__version__


def get_model(model_name: str, graph: str = "eager"):
    """``(model, how)``: torchvision's ``get_model(model_name, weights=None)``, with ``how`` =
    ``lean`` (the model's module alone) or ``package`` (``import torchvision``)."""
    if lean_possible(model_name, graph):
        _bare_packages()
        importlib.import_module(LEAN_MODULE)  # registers its builders with get_model
        api = importlib.import_module("torchvision.models._api")
        return api.get_model(model_name, weights=None), "lean"
    import torchvision

    return torchvision.models.get_model(model_name, weights=None), "package"
