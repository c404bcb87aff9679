"""The ``compare`` key (docs/comparing.md) checked against the file system and the grid's axes:
every folder is a result folder (``tables.compare_runs.folder_problem``) given once, ``results``
lies outside every one of them (compared folders are only read), there is one label per folder,
``across`` names axes of the grid, and every compared run shares cells with the baseline
(``tables.compare_runs.pair_problem``). One problem per line; relative paths are read from the
working directory, as Snakemake reads them."""

from __future__ import annotations

import os
from pathlib import Path

from numa_effects.config.problem import Problem, shown
from numa_effects.plan import compare as compare_mod
from numa_effects.plan.grid import KEYS

ALLOWED = (
    "allowed: result folders of a run or an import (holding tables/cells.csv and machine.json), "
    "the baseline first"
)


def compare_problems(
    config: dict, workdir: str | Path | None = None, results_ok: bool = True
) -> list[Problem]:
    """The ``compare`` key's problems; ``results_ok``: ``results`` passed its own checks (only
    then is it checked against the compared folders)."""
    value = config.get("compare")
    if not value:
        return []
    from numa_effects.tables import compare_runs  # pandas: only when comparing

    listed = isinstance(value, list)
    runs = list(value if listed else value.get("runs") or ())

    def key(i: int) -> str:
        return f"compare[{i}]" if listed else f"compare.runs[{i}]"

    problems = []
    if config.get("import"):
        problems.append(
            Problem(
                "compare",
                "given together with import; allowed: one of them (import PackRat results "
                "into a results folder first, then compare result folders)",
            )
        )
    base = Path(os.path.abspath(workdir or os.getcwd()))
    where = [Path(os.path.realpath(base / r)) for r in runs]
    usable = True
    for i, run in enumerate(runs):
        first = where.index(where[i])
        if first < i:
            problems.append(
                Problem(key(i), f"{shown(run)} is the same folder as {key(first)}; {ALLOWED}")
            )
            usable = False
            continue
        try:
            why = compare_runs.folder_problem(base / run, shown=run)
        except OSError as exc:  # a name the file system cannot hold
            why = f"{shown(run)} cannot be read ({exc.strerror})"
        if why:
            problems.append(Problem(key(i), f"{why}; {ALLOWED}"))
            usable = False
    results = config.get("results")
    if results_ok and isinstance(results, str):
        out = Path(os.path.realpath(base / results))
        for i, (run, w) in enumerate(zip(runs, where, strict=True)):
            if where.index(w) < i:
                continue  # the same folder again: said above
            if out == w or w in out.parents:
                what = "is" if out == w else "is inside"
                problems.append(
                    Problem(
                        "results",
                        f"{shown(results)} {what} the compared folder {run} ({key(i)}), and "
                        "compared folders are only read; allowed: a folder outside every "
                        "compared one (e.g. --config results=runs/compare)",
                    )
                )
    settings = {} if listed else value
    labels = settings.get("labels")
    if labels and len(labels) != len(runs):
        problems.append(
            Problem(
                "compare.labels",
                f"{len(labels)} labels for {len(runs)} folders; allowed: one label per folder",
            )
        )
        usable = False
    across = list(settings.get("across") or ())
    for i, axis in enumerate(across):
        if axis not in KEYS:
            problems.append(
                Problem(
                    f"compare.across[{i}]",
                    f"{shown(axis)} is not an axis of the grid; allowed: {', '.join(KEYS)}",
                )
            )
            usable = False
    if across and set(across) >= set(KEYS):
        problems.append(
            Problem(
                "compare.across",
                "names every axis, so no cell could be matched; allowed: some of "
                f"{', '.join(KEYS)}",
            )
        )
        usable = False
    if usable and not problems:
        labels = compare_mod.settings(config)["labels"]
        read = [
            compare_runs.read_run(base / run, label, settings=False, shown=run)
            for run, label in zip(runs, labels, strict=True)
        ]
        for i, other in enumerate(read[1:], start=1):
            why = compare_runs.pair_problem(read[0], other, across)
            if why:
                problems.append(Problem(key(i), f"{why}; {ALLOWED}, sharing cells"))
    return problems
