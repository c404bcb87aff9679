"""The keys that name files and folders, checked against the file system: ``results`` (a folder
of its own), ``topology`` (read and parsed), ``import.packrat`` (PackRat CSVs that exist, have
rows, and hold finite latencies and throughputs > 0). Relative paths are read from the current
directory: Snakemake's working directory, or ``--directory`` of the command line."""

from __future__ import annotations

import os
from pathlib import Path

from numa_effects.config.problem import Problem
from numa_effects.config.schema import SCHEMA_PATH
from numa_effects.plan import topology as topology_mod

# `results` may be relative or absolute (a cluster user writes to /scratch/...), but never a
# system folder, the workflow's own folders, a folder holding the workflow, or a file.
SYSTEM_DIRS = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/boot", "/dev")
SYSTEM_DIRS += ("/proc", "/sys", "/run")
WORKFLOW_DIRS = ("workflow", "config", "profiles", "tests", "docs", "envs", "tools")
WORKFLOW_DIRS += ("benchmarks", ".ci", ".git", ".snakemake", ".venv", ".test")
REPO_DIR = SCHEMA_PATH.parents[2]
# Lines of impossible values named per PackRat file; the rest are counted in one more line.
MAX_ROWS_NAMED = 5


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def results_problems(
    results: str, workdir: str | Path | None = None, workflow_dir: str | Path | None = None
) -> list[Problem]:
    """Why ``results`` may not hold this workflow's outputs ([] if it may)."""
    workdir = Path(os.path.abspath(workdir or os.getcwd()))
    workflow_dir = Path(os.path.abspath(workflow_dir or REPO_DIR))
    given = Path(os.path.normpath(workdir / results))
    allowed = (
        "allowed: a folder of its own, relative or absolute (results, /scratch/$USER/run1), "
        f"not / or inside {', '.join(SYSTEM_DIRS)}, not inside the workflow's folders "
        f"({', '.join(d + '/' for d in WORKFLOW_DIRS)}), not a folder that holds the workflow "
        "or the working directory, not a file"
    )
    protected = [(Path(d), "a system folder") for d in SYSTEM_DIRS]
    protected += [(Path(os.path.realpath(d)), "a system folder") for d in SYSTEM_DIRS]
    for base in {workflow_dir, workdir}:
        protected += [(base / d, "one of the workflow's own folders") for d in WORKFLOW_DIRS]
    why = None
    for path in (given, Path(os.path.realpath(given))):  # symlinks resolved too
        if path == Path("/"):
            why = "the root folder"
        elif _inside(workflow_dir, path) or _inside(workdir, path):
            why = "the working directory or a folder that holds it or the workflow"
        else:
            for folder, what in protected:
                if _inside(path, folder):
                    why = f"{'' if path == folder else 'inside '}{what} ({folder})"
                    break
        if why:
            break
    if why is None:
        existing = next((p for p in [given, *given.parents] if p.exists()), None)
        if existing is not None and not existing.is_dir():
            why = (
                "an existing file, not a folder"
                if existing == given
                else f"below {existing}, which is a file, not a folder"
            )
    return [Problem("results", f"{results!r} is {why}; {allowed}")] if why else []


def load_topology(config: dict) -> tuple[topology_mod.Topology | None, list[Problem]]:
    """The planning topology (the ``topology`` file, or this machine), or why it cannot be read."""
    path = config.get("topology")
    if not path:
        return topology_mod.current(), []
    try:
        return topology_mod.load(path), []
    except Exception as exc:
        reason = (
            str(exc)
            if isinstance(exc, topology_mod.TopologyError)
            else f"cannot read topology file {path}: {type(exc).__name__}: {exc}"
        )
        allowed = (
            "allowed: null (this machine), the JSON written to results/machine.json, "
            "or `lscpu -p` output"
        )
        return None, [Problem("topology", f"{reason}; {allowed}")]


def import_problems(config: dict) -> list[Problem]:
    """The PackRat sources of ``import.packrat`` exist, have rows, hold possible values (each
    impossible one named by file and line, at most ``MAX_ROWS_NAMED`` per file), and map to
    cells."""
    imported = config.get("import")
    sources = imported.get("packrat") if isinstance(imported, dict) else None
    if not isinstance(sources, list) or not sources:
        return []
    from numa_effects.tables import packrat  # pandas: only when importing

    allowed = (
        "allowed: PackRat results folders (or one of their CSVs) holding "
        f"{packrat.LATENCY_FILE} and {packrat.THROUGHPUT_FILE}"
    )
    values = "allowed: latencies (ms) and throughputs (images/s) that are finite numbers > 0"
    problems = []
    for i, source in enumerate(sources):
        key = f"import.packrat[{i}]"
        try:
            files = packrat.source_files(source)
        except Exception as exc:
            problems.append(Problem(key, f"{exc}; {allowed}"))
            continue
        for path in files:
            found = packrat.row_problems(path)
            if found is None:
                what = "is empty" if path.stat().st_size == 0 else "has no rows after its header"
                problems.append(Problem(key, f"{path} {what}; {allowed}"))
                continue
            for line, what in found[:MAX_ROWS_NAMED]:
                problems.append(Problem(key, f"{path} line {line}: {what}; {values}"))
            if len(found) > MAX_ROWS_NAMED:
                more = len(found) - MAX_ROWS_NAMED
                problems.append(
                    Problem(
                        key, f"{path}: {more} more impossible values after line {line}; {values}"
                    )
                )
    if not problems:
        try:
            packrat.keys(sources)
        except Exception as exc:
            problems.append(Problem("import.packrat", f"{type(exc).__name__}: {exc}; {allowed}"))
    return problems
