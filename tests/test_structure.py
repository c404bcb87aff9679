"""The package's shape (workflow/scripts/numa_effects/): no import cycle between its modules, no
module reaching into another's private (underscore) names, no function over ``MAX_FUNCTION``
lines and no module over ``MAX_MODULE`` lines. Lazy imports inside functions count. This runs
in ``make check``, beside tests/test_layers.py's import contract."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow" / "scripts"
PKG = SCRIPTS / "numa_effects"
MAX_FUNCTION = 60  # lines of a function or method, its docstring included
MAX_MODULE = 600  # lines of a module


def module_name(path: Path, base: Path = SCRIPTS) -> str:
    """The dotted name of a module below ``base`` (the folder holding the package)."""
    parts = path.relative_to(base).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path = PKG) -> dict[str, Path]:
    return {module_name(p, root.parent): p for p in sorted(root.rglob("*.py"))}


def imports(node: ast.AST, package: str, known: set[str]) -> list[tuple[int, str, str | None]]:
    """(line, imported module, name taken from it or None) of every import below ``node`` of a
    module of ``known`` (lazy ones included; ``package``: the importing module's package, for
    relative imports); ``from package import module`` is the module."""
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Import):
            out += [(n.lineno, a.name, None) for a in n.names if a.name in known]
        elif isinstance(n, ast.ImportFrom):
            base = n.module or ""
            if n.level:  # relative: resolve against the module's package
                pkg = package.split(".")
                pkg = pkg[: len(pkg) - n.level + 1]
                base = ".".join([*pkg, base] if base else pkg)
            for a in n.names:
                if f"{base}.{a.name}" in known:
                    out.append((n.lineno, f"{base}.{a.name}", None))
                elif base in known:
                    out.append((n.lineno, base, a.name))
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (or one importing itself)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def import_graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the modules it imports."""
    graph = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        graph[name] = {t for _, t, _ in imports(tree, package, set(mods)) if t != name}
    return graph


def private_uses(name: str, path: Path, known: set[str]) -> list[tuple[int, str]]:
    """(line, ``module._name``) of every private name the module ``name`` takes from another
    module of ``known``: ``from module import _name``, or ``alias._name`` on an imported
    module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    found, aliases = [], {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        for line, target, taken in imports(node, package, known):
            if target == name:
                continue
            if taken is not None and _private(taken):
                found.append((line, f"{target}.{taken}"))
            elif taken is None:
                for a in node.names:
                    if target == a.name or target.endswith(f".{a.name}"):
                        aliases[a.asname or a.name.split(".")[0]] = target
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and _private(node.attr)
        ):
            found.append((node.lineno, f"{aliases[node.value.id]}.{node.attr}"))
    return sorted(set(found))


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def long_functions(path: Path, limit: int = MAX_FUNCTION) -> list[tuple[str, int]]:
    """(qualified name, lines) of every function or method of a module longer than ``limit``."""
    out = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    lines = child.end_lineno - child.lineno + 1
                    if lines > limit:
                        out.append((name, lines))
                walk(child, f"{name}.")
            else:
                walk(child, prefix)

    walk(ast.parse(path.read_text(), str(path)), "")
    return out


MODULES = modules()
KNOWN = set(MODULES)
IDS = [str(p.relative_to(PKG)) for p in MODULES.values()]


def test_no_import_cycle():
    found = cycles(import_graph(MODULES))
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize("path", MODULES.values(), ids=IDS)
def test_no_module_takes_another_modules_private_names(path):
    found = private_uses(module_name(path), path, KNOWN)
    assert not found, f"{path.relative_to(PKG)} uses " + ", ".join(
        f"{name} (line {line})" for line, name in found
    )


@pytest.mark.parametrize("path", MODULES.values(), ids=IDS)
def test_functions_are_short(path):
    found = long_functions(path)
    assert not found, f"{path.relative_to(PKG)}: " + ", ".join(
        f"{name} has {n} lines (at most {MAX_FUNCTION})" for name, n in found
    )


@pytest.mark.parametrize("path", MODULES.values(), ids=IDS)
def test_modules_are_short(path):
    n = len(path.read_text().splitlines())
    assert n <= MAX_MODULE, f"{path.relative_to(PKG)} has {n} lines (at most {MAX_MODULE})"


def test_the_checks_can_fail(tmp_path):
    """A throwaway package with a cycle, a private import of each kind, a long function and a
    long module: every check finds them."""
    pkg = tmp_path / "numa_effects"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text(
        "from numa_effects.sub import b\nfrom numa_effects.sub.b import _hidden\n\n"
        "def f():\n    return b._helper()\n"
    )
    (pkg / "sub" / "b.py").write_text(
        "def g():\n    from numa_effects import a\n    return a\n\n"
        "def _hidden():\n    pass\n\n\ndef _helper():\n    pass\n"
    )
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION))
    (pkg / "sub" / "long.py").write_text(f"def long():\n{body}\n" + "\n" * MAX_MODULE)
    mods = modules(pkg)
    assert set(mods) == {"numa_effects", "numa_effects.sub", "numa_effects.a"} | {
        "numa_effects.sub.b",
        "numa_effects.sub.long",
    }
    assert cycles(import_graph(mods)) == [["numa_effects.a", "numa_effects.sub.b"]]
    assert private_uses("numa_effects.a", mods["numa_effects.a"], set(mods)) == [
        (2, "numa_effects.sub.b._hidden"),
        (5, "numa_effects.sub.b._helper"),
    ]
    assert private_uses("numa_effects.sub.b", mods["numa_effects.sub.b"], set(mods)) == []
    assert long_functions(mods["numa_effects.sub.long"]) == [("long", MAX_FUNCTION + 1)]
    assert len(mods["numa_effects.sub.long"].read_text().splitlines()) > MAX_MODULE
