"""A results folder written by another version of the workflow, told in one line before a run.

A run reads the records and tables of its results folder that it does not rebuild: a record of a
format this code does not read (``measure.record.FORMAT``), or a ``tables/cells.csv`` without a
column this version needs (``NEEDED``), would fail a job halfway through. ``problem`` finds them
before the first job (also under ``-n``) and says which folder, what was found and what to do;
the run is refused and nothing in the folder changes.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

from numa_effects.measure import record
from numa_effects.plan import paths
from numa_effects.plan.grid import KEYS
from numa_effects.tables import history

# the records of a packing, interference or deploy job (format 1 gave them no version)
GROUPS = ("packing_run", "interference_run", "deploy_run")
# the columns of cells.csv that this version's readers (plans, comparisons, the summary and the
# report) take as given: every table ``tables.cells.tables`` writes has them, and those with a
# measured cell also ``MEASURED``
NEEDED = (*KEYS, "replicates", "status")
MEASURED = ("latency_median_ms", "latency_ci_low_ms", "latency_ci_high_ms", "ci_method")


def unreadable_records(results: str | os.PathLike, replaced=()) -> list[str]:
    """The ``FormatError`` lines of the records below ``results`` that this code cannot read,
    the history and the records the run measures again (``replaced``) excluded."""
    skip = {os.path.realpath(p) for p in replaced}
    found = []
    for rule, path in history.records(results):
        if os.path.realpath(path) not in skip:
            found.append(record.format_problem(path, group=rule in GROUPS))
    return [why for why in found if why]


def missing_columns(table: str | os.PathLike) -> list[str]:
    """The ``NEEDED`` (and, with a measured cell, ``MEASURED``) columns a cells.csv lacks."""
    with open(table, newline="") as fh:
        rows = csv.reader(fh)
        header = next(rows, [])
        at = header.index("status") if "status" in header else None
        measured = any(at is None or at >= len(row) or row[at] in ("", "ok") for row in rows)
    want = [*NEEDED, *(MEASURED if measured else ())]
    return [c for c in want if c not in header]


def problem(
    results: str | os.PathLike, replaced=(), tables_rebuilt: bool = False, dry_run: bool = False
) -> str | None:
    """The one line refusing a run on a folder of another version, or None. ``replaced``: the
    records the run measures again; ``tables_rebuilt``: the run rebuilds tables/cells.csv."""
    refused = "a run would be refused" if dry_run else "the run is refused, nothing was run"
    bad = unreadable_records(results, replaced)
    if bad:
        return (
            f"numa-effects: {results}/ holds {len(bad)} record(s) this version cannot read, "
            f"e.g. {bad[0]}; {refused} and nothing in {results}/ changed"
        )
    table = Path(results, paths.table("cells"))
    if tables_rebuilt or not table.is_file():
        return None
    try:
        lacking = missing_columns(table)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        lacking = [f"a readable header ({type(exc).__name__})"]
    if not lacking:
        return None
    return (
        f"numa-effects: {table} was written by another version (no {', '.join(lacking)} "
        f"column); {refused}; rebuild the tables from the folder's records (nothing is "
        "measured again): add --forcerun tables to the command (make run SNAKEMAKE_ARGS="
        "'--forcerun tables')"
    )
