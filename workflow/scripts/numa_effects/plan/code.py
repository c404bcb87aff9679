"""What "the code changed" means for a re-run: a digest of the *content* of the code that
produces an output, never its files' modification times (a fresh ``git clone`` makes every file
newer than results copied beside it). Each layer's digest (``LAYERS``) is a rule parameter of
the jobs it decides, so an edit that changes what the code does re-runs exactly those jobs; the
digest is over syntax trees without docstrings, so an edit of a comment or docstring re-runs
nothing (docs/troubleshooting.md)."""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2]  # workflow/scripts
# layer -> the files (relative to workflow/scripts, globs allowed) whose content decides it
LAYERS = {
    "measure": (
        "numa_effects/measure/**/*.py",
        "numa_effects/plan/optimizations.py",
        "numa_effects/plan/settings.py",
        "numa_effects/plan/spec.py",
        # what the cell preloads and verifies, and the capabilities it records
        "numa_effects/plan/allocators.py",
        "numa_effects/plan/cpu.py",
        "numa_effects/stats.py",
        "run_cell.py",
        "run_peak.py",
        "run_memory.py",
        "run_packing.py",
        "run_interference.py",
    ),
    "tables": (
        "numa_effects/tables/*.py",
        "numa_effects/analysis/*.py",
        "numa_effects/compare/runs.py",
        "numa_effects/compare/tables.py",
        "numa_effects/compare/provenance.py",
        "numa_effects/compare/statistics.py",  # compare.csv's ratios, verdicts and geomeans
        "numa_effects/launch.py",  # recommendation.csv's commands are the launcher's
        "numa_effects/stats.py",
        # the plans they write (packing, deploy) and the keys they read: every plan module
        "numa_effects/plan/*.py",
        "numa_effects/plan/products/*.py",
        "aggregate_cells.py",
        "plan_replicates.py",
        "tabulate_degradation.py",
        "compare_results.py",
        "count_flops.py",
        "tabulate_peak.py",
        "tabulate_memory.py",
        "tabulate_packing.py",
        "write_summary.py",
        "plan_deploy.py",
        "tabulate_deploy.py",
        "tabulate_interference.py",
        "import_packrat.py",
        "import_interference.py",
    ),
    "report": (
        *("numa_effects/report/*.py", "numa_effects/compare/plots.py"),
        *("numa_effects/compare/page.py", "numa_effects/report/templates/*.j2"),
        *("numa_effects/compare/templates/*.j2", "plot_figure.py", "render_report.py"),
        "render_comparison.py",
        "plot_loadtest.py",
    ),
    # the throughput answer under load: what a measure edit changes re-runs through the answer
    "loadtest": ("numa_effects/loadtest.py", "run_loadtest.py"),
}
# code a layer's jobs run that never changes what they write: its edit re-runs nothing
# (the progress line a job prints; the calibration probe, run at parse time, by no job)
UNWRITTEN = ("numa_effects/measure/progress.py", "numa_effects/measure/calibrate.py")


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return tree


def file_digest(path: Path) -> str:
    """The digest of a Python file's syntax tree without docstrings (comments are not in it);
    of any other file (a page's template), its bytes."""
    if path.suffix != ".py":
        return hashlib.sha256(path.read_bytes()).hexdigest()
    tree = _strip_docstrings(ast.parse(path.read_text(), str(path)))
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def digest(
    patterns, root: Path = SCRIPTS, cache: dict | None = None, used: set | None = None
) -> str:
    """The digest of the files matching ``patterns`` below ``root``. ``cache``: file digests
    by (path, modification time, size), filled as files are digested (parsing ~40 modules
    costs ~0.3 s of every workflow start)."""
    files = sorted({p for pat in patterns for p in root.glob(pat)} - {root / u for u in UNWRITTEN})
    cache = {} if cache is None else cache
    h = hashlib.sha256()
    for p in files:
        st = p.stat()
        key = f"{p}:{st.st_mtime_ns}:{st.st_size}"
        if key not in cache:
            cache[key] = file_digest(p)
        if used is not None:
            used.add(key)
        h.update(f"{p.relative_to(root)}:{cache[key]}\n".encode())
    return h.hexdigest()[:16]


def digests(root: Path = SCRIPTS, cache_file: str | os.PathLike | None = None) -> dict[str, str]:
    """``{layer: digest}`` of every layer in ``LAYERS``; ``cache_file``: a JSON file of file
    digests kept between runs (a missing or unwritable one is fine)."""
    cache: dict = {}
    if cache_file is not None:
        with contextlib.suppress(OSError, ValueError):
            cache = json.loads(Path(cache_file).read_text())
    loaded = dict(cache)
    used: set = set()
    out = {layer: digest(patterns, root, cache, used) for layer, patterns in LAYERS.items()}
    keep = {k: cache[k] for k in sorted(used)}
    if cache_file is not None and keep != loaded:
        with contextlib.suppress(OSError):
            Path(cache_file).parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(f"{cache_file}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(keep))
            os.replace(tmp, cache_file)
    return out
