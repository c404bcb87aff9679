"""The keys that name files and folders, checked against the file system: ``results``,
``topology`` and ``import``, relative paths read from the working directory."""

from __future__ import annotations

import os
from pathlib import Path

from numa_effects.config.problem import Problem
from numa_effects.config.schema import REPO_DIR
from numa_effects.plan import paths as results_paths
from numa_effects.plan import topology as topology_mod

# `results` may be relative or absolute (a cluster user writes to /scratch/...), but never a
# system folder, the workflow's own folders, a folder holding the workflow, or a file.
SYSTEM_DIRS = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/boot", "/dev")
SYSTEM_DIRS += ("/proc", "/sys", "/run")
WORKFLOW_DIRS = ("workflow", "config", "profiles", "tests", "docs", "envs", "tools")
WORKFLOW_DIRS += ("benchmarks", ".ci", ".git", ".snakemake", ".venv", ".test")
ROOM_INSIDE = 256  # bytes of path a run writes inside `results` (cells/<model>/.../r1.json)
MAX_ROWS_NAMED = 5  # lines of impossible values named per PackRat file; the rest in one more


def results_problems(results: str, workdir=None, workflow_dir=None, nested=True) -> list[Problem]:
    """Why ``results`` may not hold this workflow's outputs ([] if it may); ``nested``: nor
    inside another results folder (a comparison says so itself)."""
    workdir = Path(os.path.abspath(workdir or os.getcwd()))
    workflow_dir = Path(os.path.abspath(workflow_dir or REPO_DIR))
    given = Path(os.path.normpath(workdir / results))
    why = _too_long(given) or _protected(given, workdir, workflow_dir) or _below_a_file(given)
    if not (why := why or (_inside_results(given) if nested else None)):
        return []
    long = f"{results[:32]!r}... ({len(results)} characters)" if len(results) > 80 else None
    what = f"{long or repr(results)} is {why}; allowed: a folder of its own, relative or absolute "
    what += f"(results, /scratch/$USER/run1), not / or inside {', '.join(SYSTEM_DIRS)}, not inside "
    what += f"the workflow's folders ({', '.join(d + '/' for d in WORKFLOW_DIRS)}) or another "
    what += "results folder, not a folder that holds the workflow or the working directory, not a "
    return [Problem("results", what + "file")]


def _too_long(given: Path) -> str | None:
    """A folder name or path longer than the file system allows, with room for a run's files."""
    existing = next((p for p in given.parents if os.path.isdir(p)), Path("/"))
    name_max = os.pathconf(existing, "PC_NAME_MAX")
    path_max = os.pathconf(existing, "PC_PATH_MAX")
    for name in given.parts[1:]:
        if (size := len(os.fsencode(name))) > name_max:
            what = f"a path with a folder name of {size} bytes ({name[:12]}...), longer than the "
            return f"{what}{name_max} this file system allows"
    if (size := len(os.fsencode(str(given)))) > path_max - ROOM_INSIDE:
        what = f"{size} bytes long as an absolute path, leaving no room for the files a run writes"
        return f"{what} inside it ({ROOM_INSIDE} bytes below the file system's {path_max})"
    return None


def _protected(given: Path, workdir: Path, workflow_dir: Path) -> str | None:
    """A system folder, the workflow's own, or a folder that holds the working directory."""
    protected = [
        (Path(p), "a system folder") for d in SYSTEM_DIRS for p in (d, os.path.realpath(d))
    ]
    for base in {workflow_dir, workdir}:
        protected += [(base / d, "one of the workflow's own folders") for d in WORKFLOW_DIRS]
    for path in (given, Path(os.path.realpath(given))):  # symlinks resolved too
        if path == Path("/"):
            return "the root folder"
        if workflow_dir.is_relative_to(path) or workdir.is_relative_to(path):
            return "the working directory or a folder that holds it or the workflow"
        for folder, what in protected:
            if path.is_relative_to(folder):
                return f"{'' if path == folder else 'inside '}{what} ({folder})"
    return None


def _below_a_file(given: Path) -> str | None:
    existing = next((p for p in [given, *given.parents] if p.exists()), None)
    if existing is None or existing.is_dir():
        return None
    what = "an existing file" if existing == given else f"below {existing}, which is a file"
    return f"{what}, not a folder"


def _inside_results(given: Path) -> str | None:
    """Inside another run's results folder (its outputs would mix with this run's)."""
    for path in (given, Path(os.path.realpath(given))):
        for folder in path.parents:
            if results_paths.holds_results(folder):
                marks = " or ".join(f"{d}/" for d in results_paths.RESULT_FOLDERS)
                what = f"inside the results folder {folder} (it holds {results_paths.MACHINE} and "
                return f"{what}{marks}), where the outputs of two runs would mix"
    return None


def load_topology(config: dict) -> tuple[topology_mod.Topology | None, list[Problem]]:
    """The planning topology (the ``topology`` file, or this machine), or why it cannot be read."""
    path = config.get("topology")
    if not path:
        return topology_mod.current(), []
    try:
        return topology_mod.load(path), []
    except topology_mod.TopologyError as exc:
        reason = str(exc)
    except Exception as exc:
        reason = f"cannot read topology file {path}: {type(exc).__name__}: {exc}"
    allowed = "null (this machine), the JSON written to results/machine.json, or `lscpu -p` output"
    return None, [Problem("topology", f"{reason}; allowed: {allowed}")]


def import_problems(config: dict) -> list[Problem]:
    """The PackRat sources of ``import.packrat`` exist, have rows, hold possible values (at most
    ``MAX_ROWS_NAMED`` named per file) and map to cells; ``import.interference`` is a folder."""
    imported = config.get("import")  # null, or a mapping with packrat (the schema says so)
    if not imported:
        return []
    from numa_effects.tables import packrat  # pandas: only when importing

    allowed = "allowed: PackRat results folders (or one of their CSVs) holding "
    allowed += f"{packrat.LATENCY_FILE} and {packrat.THROUGHPUT_FILE}"
    values = "allowed: latencies (ms) and throughputs (images/s) that are finite numbers > 0, "
    values += "batch sizes and thread counts that are whole numbers >= 1"
    problems = []
    for i, source in enumerate(imported["packrat"]):
        key = f"import.packrat[{i}]"
        try:
            csvs = packrat.source_files(source)
        except Exception as exc:
            csvs, problems = [], [*problems, Problem(key, f"{exc}; {allowed}")]
        for path in csvs:
            if (found := packrat.row_problems(path)) is None:
                what = "is empty" if path.stat().st_size == 0 else "has no rows after its header"
                problems.append(Problem(key, f"{path} {what}; {allowed}"))
                continue
            lines = [f"{path} line {n}: {what}" for n, what in found[:MAX_ROWS_NAMED]]
            if len(found) > MAX_ROWS_NAMED:
                more, last = len(found) - MAX_ROWS_NAMED, found[MAX_ROWS_NAMED - 1][0]
                lines.append(f"{path}: {more} more impossible values after line {last}")
            problems += [Problem(key, f"{line}; {values}") for line in lines]
    try:
        if not problems:
            packrat.keys(imported["packrat"])
    except Exception as exc:
        problems.append(Problem("import.packrat", f"{type(exc).__name__}: {exc}; {allowed}"))
    try:
        if folder := imported.get("interference"):
            packrat.interference_files(folder)
    except Exception as exc:
        why = f"{exc}; allowed: a folder of PackRat's multi-instance runs, or null"
        problems.append(Problem("import.interference", why))
    return problems
