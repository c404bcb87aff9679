"""The ``compare`` key (docs/comparing.md) checked against the file system and the grid's axes,
one problem per line; relative paths are read from the working directory, as Snakemake does."""

from __future__ import annotations

import os
from pathlib import Path

from numa_effects.compare import settings as compare_settings
from numa_effects.config.problem import Problem, shown
from numa_effects.plan.grid import KEYS

ALLOWED = (
    "allowed: result folders of a run or an import (holding tables/cells.csv and machine.json), "
    "the baseline first"
)
WITH_IMPORT = (
    "given together with import; allowed: one of them (import PackRat results into a results "
    "folder first, then compare result folders)"
)


def compare_problems(config: dict, workdir=None, results_ok: bool = True) -> list[Problem]:
    """The ``compare`` key's problems; ``results_ok``: check ``results`` against the folders."""
    value = config.get("compare")
    if not value:
        return []
    listed = isinstance(value, list)
    folders = list(value if listed else value.get("runs") or ())
    key = "compare[{}]".format if listed else "compare.runs[{}]".format  # the i-th folder's key

    problems = [Problem("compare", WITH_IMPORT)] if config.get("import") else []
    base = Path(os.path.abspath(workdir or os.getcwd()))
    where = [Path(os.path.realpath(base / r)) for r in folders]
    problems += _folder_problems(folders, where, base, key)
    results = config.get("results")
    if results_ok and isinstance(results, str):
        problems += _results_problems(results, folders, where, base, key)
    settings = {} if listed else value
    problems += _settings_problems(settings, len(folders))
    if not problems:
        problems += _pair_problems(config, folders, base, list(settings.get("across") or ()), key)
    return problems


def _folder_problems(folders, where, base: Path, key) -> list[Problem]:
    """Each folder given once, and a result folder."""
    from numa_effects.compare import runs  # pandas: only when comparing

    problems = []
    for i, run in enumerate(folders):
        first = where.index(where[i])
        if first < i:
            why = f"{shown(run)} is the same folder as {key(first)}; {ALLOWED}"
            problems.append(Problem(key(i), why))
            continue
        try:
            why = runs.folder_problem(base / run, shown=run)
        except OSError as exc:  # a name the file system cannot hold
            why = f"{shown(run)} cannot be read ({exc.strerror})"
        if why:
            problems.append(Problem(key(i), f"{why}; {ALLOWED}"))
    return problems


def _results_problems(results: str, folders, where, base: Path, key) -> list[Problem]:
    """``results`` outside every compared folder (they are only read)."""
    problems = []
    out = Path(os.path.realpath(base / results))
    for i, (run, w) in enumerate(zip(folders, where, strict=True)):
        if where.index(w) < i:
            continue  # the same folder again: said above
        if out == w or w in out.parents:
            what = "is" if out == w else "is inside"
            why = f"{shown(results)} {what} the compared folder {run} ({key(i)}), and compared "
            why += "folders are only read; allowed: a folder outside every compared one (e.g. "
            problems.append(Problem("results", why + "--config results=runs/compare)"))
    return problems


def _settings_problems(settings: dict, n_folders: int) -> list[Problem]:
    """One label per folder; ``across`` names axes of the grid, not all of them."""
    problems, keys = [], ", ".join(KEYS)
    labels = settings.get("labels")
    if labels and len(labels) != n_folders:
        why = f"{len(labels)} labels for {n_folders} folders; allowed: one label per folder"
        problems.append(Problem("compare.labels", why))
    across = list(settings.get("across") or ())
    for i, axis in enumerate(across):
        if axis not in KEYS:
            why = f"{shown(axis)} is not an axis of the grid; allowed: {keys}"
            problems.append(Problem(f"compare.across[{i}]", why))
    if across and set(across) >= set(KEYS):
        why = f"names every axis, so no cell could be matched; allowed: some of {keys}"
        problems.append(Problem("compare.across", why))
    return problems


def _pair_problems(config: dict, folders, base: Path, across: list, key) -> list[Problem]:
    """Every compared run shares cells with the baseline."""
    from numa_effects.compare import runs  # pandas: only when comparing

    labels = compare_settings.settings(config)["labels"]
    read = [
        runs.read_run(base / run, label, settings=False, shown=run)
        for run, label in zip(folders, labels, strict=True)
    ]
    whys = [runs.pair_problem(read[0], other, across) for other in read[1:]]
    return [Problem(key(i), f"{w}; {ALLOWED}, sharing cells") for i, w in enumerate(whys, 1) if w]
