"""The package's folders are its layers, and the import contract between them holds:

    report -> tables -> measure -> plan -> stats        config -> tables, plan, stats, slurmconf
                tables -> analysis -> plan

A feature folder (``FEATURES``: ``compare/``) keeps one concern in one place across the layers:
each of its modules is in the layer the table names and follows that layer's contract.

A module may import its own layer and the layers below it, never one above (lazy imports inside
functions count too), and no third-party package its layer must do without (``WITHOUT``): the
planner and the config checker never import torch (``plan/`` is metadata; the runtime code of an
optimization is its workload's, ``measure/workloads``) or the plotting libraries, the measuring
child never pandas, and the layers stay separable. Entry scripts (workflow/scripts/*.py) may
import anything, and never share a stem with a library module. This runs in ``make check``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow" / "scripts"
PKG = SCRIPTS / "numa_effects"

# layer -> the layers it may import (itself included)
ALLOWED = {
    "stats": {"stats"},
    "runlock": {"runlock"},
    "slurmconf": {"slurmconf"},
    "plan": {"plan", "stats"},
    "analysis": {"analysis", "plan", "stats"},
    "measure": {"measure", "plan", "stats"},
    "tables": {"tables", "analysis", "measure", "plan", "stats"},
    "report": {"report", "tables", "analysis", "measure", "plan", "stats"},
    "config": {"config", "tables", "plan", "stats", "slurmconf"},
    # numa-effects loadtest: the deploy answer under LoadGen, through the measuring stack
    "loadtest": {"loadtest", "measure", "plan", "stats"},
    # numa-effects launch: the deploy answer started as measured, through the measuring stack
    "launch": {"launch", "tables", "analysis", "measure", "plan", "stats"},
    # numa-effects <command>: the registry names each command's module, imported only by name
    "cli": {"cli"},
    "__main__": {"__main__", "cli"},
}


# feature folder -> {module: its layer}
FEATURES = {
    "compare": {
        "__init__": "stats",  # a docstring: imports nothing
        "statistics": "stats",
        "settings": "plan",
        "check": "config",
        "command": "config",  # numa-effects compare: the command line over check and runs
        "runs": "tables",
        "tables": "tables",
        "provenance": "tables",
        "plots": "report",
        "page": "report",
    },
}


# layer -> the third-party packages its modules never import, lazily or not
TORCH = {"torch", "torchvision", "torchao"}
PLOTTING = {"matplotlib", "seaborn"}
WITHOUT = {
    "stats": TORCH | PLOTTING,
    "runlock": TORCH | PLOTTING,
    "slurmconf": TORCH | PLOTTING,
    "plan": TORCH | PLOTTING,
    "analysis": TORCH | PLOTTING,
    "config": TORCH | PLOTTING,
    "measure": PLOTTING | {"pandas"},
    "tables": PLOTTING,
    "report": set(),
    "loadtest": PLOTTING,
    "launch": PLOTTING,
    "cli": TORCH | PLOTTING,
    "__main__": TORCH | PLOTTING,
}


def layer_of(path: Path) -> str:
    parts = path.relative_to(PKG).with_suffix("").parts
    if parts[0] in FEATURES:
        return FEATURES[parts[0]][parts[1]]
    return parts[0]


def target_layer(name: str) -> str | None:
    """The layer of an imported ``numa_effects...`` module (None: the package root's names)."""
    parts = name.split(".")
    if parts[0] != "numa_effects" or len(parts) < 2 or parts[1].startswith("__"):
        return None
    if parts[1] in FEATURES:
        return FEATURES[parts[1]].get(parts[2] if len(parts) > 2 else "__init__", parts[1])
    return parts[1]


def imported_layers(path: Path) -> list[tuple[int, str]]:
    """(line, layer) of every numa_effects import in a module, lazy ones included."""
    tree = ast.parse(path.read_text(), str(path))
    package = ".".join(path.relative_to(SCRIPTS).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's package
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join([*base, node.module] if node.module else base)
            else:
                mod = node.module or ""
            package_of_modules = (
                mod == "numa_effects" or mod.removeprefix("numa_effects.") in FEATURES
            )
            names = [f"{mod}.{a.name}" if package_of_modules else mod for a in node.names]
        for name in names:
            # the package root's own names (``__version__``) belong to no layer
            if (layer := target_layer(name)) is not None:
                found.append((node.lineno, layer))
    return found


def third_party(path: Path) -> list[tuple[int, str]]:
    """(line, top-level package) of every import of another package than ours, lazy ones
    included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        else:
            continue
        found += [
            (node.lineno, n.split(".")[0]) for n in names if n.split(".")[0] != "numa_effects"
        ]
    return found


MODULES = sorted(p for p in PKG.rglob("*.py") if p.name != "__init__.py" or p.parent != PKG)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PKG)))
def test_a_module_imports_only_its_layer_and_the_layers_below(path):
    layer = layer_of(path)
    assert layer in ALLOWED, f"{path.relative_to(PKG)} is in no layer of the contract"
    bad = [(line, target) for line, target in imported_layers(path) if target not in ALLOWED[layer]]
    assert not bad, f"{path.relative_to(PKG)} ({layer}) imports " + ", ".join(
        f"{t} (line {n})" for n, t in bad
    )


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PKG)))
def test_a_module_imports_no_package_its_layer_does_without(path):
    bad = [(n, pkg) for n, pkg in third_party(path) if pkg in WITHOUT[layer_of(path)]]
    assert not bad, f"{path.relative_to(PKG)} ({layer_of(path)}) imports " + ", ".join(
        f"{pkg} (line {n})" for n, pkg in bad
    )


def test_the_third_party_contract_can_fail():
    """A lazy torch import in a plan module, and one of pandas in a measure module, are caught;
    the layers' own imports are not."""
    fake = PKG / "plan" / "_contract_probe.py"
    fake.write_text(
        "import os\n\ndef f():\n    import torch.nn\n    from pandas import DataFrame\n"
    )
    try:
        assert third_party(fake) == [(1, "os"), (4, "torch"), (5, "pandas")]
        assert {"torch"} <= WITHOUT[layer_of(fake)] and "os" not in WITHOUT["plan"]
        assert "pandas" in WITHOUT["measure"] and "torch" not in WITHOUT["measure"]
    finally:
        fake.unlink()


def test_the_contract_can_fail(tmp_path):
    """A plan module importing the report is caught (the checker is not vacuous)."""
    fake = PKG / "plan" / "_contract_probe.py"
    fake.write_text("def f():\n    from numa_effects.report import plots\n")
    try:
        assert imported_layers(fake) == [(2, "report")]
        assert "report" not in ALLOWED[layer_of(fake)]
    finally:
        fake.unlink()


def test_every_package_folder_is_a_layer_or_a_feature():
    folders = {p.name for p in PKG.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == {k for k in ALLOWED if (PKG / k).is_dir()} | set(FEATURES)
    for feature, layers in FEATURES.items():
        assert {p.stem for p in (PKG / feature).glob("*.py")} == set(layers), feature
        assert set(layers.values()) <= set(ALLOWED), feature


def test_a_feature_module_follows_its_own_layer():
    """A report module of a feature may not be imported by a tables module, in the feature or
    outside it (the checker reads the feature's table, not the folder)."""
    fake = PKG / "tables" / "_contract_probe.py"
    fake.write_text(
        "from numa_effects.compare import page\nfrom numa_effects.compare import runs\n"
    )
    try:
        assert imported_layers(fake) == [(1, "report"), (2, "tables")]
        assert "report" not in ALLOWED[layer_of(fake)]
        assert layer_of(PKG / "compare" / "page.py") == "report"
    finally:
        fake.unlink()


def test_entry_scripts_and_library_modules_never_share_a_stem():
    entries = {p.stem for p in SCRIPTS.glob("*.py")}
    library = {p.stem for p in PKG.rglob("*.py")} - {"__init__", "__main__"}
    assert not entries & library, sorted(entries & library)
