"""The torchvision model of a cell, built with the least import that gives the same model.

``import torchvision`` imports every model family and ``torchvision.ops``, which imports
``torch._dynamo`` (sympy and the compiler front end): about 3.4 s after ``import torch``, against
0.05 s for the ResNet module alone, a third of a replicate's process start. So for a ResNet
under an optimization that does not compile (graph ``eager`` or ``torchscript``) the cell
registers ``torchvision`` and ``torchvision.models`` as bare packages (their ``__init__`` not
run) and imports ``torchvision.models.resnet`` alone: the same source, classes and
initialisation, built by the same ``get_model``, without the custom operators a classification
ResNet never calls. Everything else imports torchvision normally. The cell records which
(``model_import``: ``lean`` or ``package``); ``tests/test_builder.py`` checks both give the same
model.
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
