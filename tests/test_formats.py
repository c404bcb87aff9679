"""A results folder written by another version (numa_effects.tables.formats): records of a format
this code does not read, or a cells.csv without a column its readers need, are told in one line
naming the folder and what to do, before a run starts; a folder of this version, of format-1
records this code reads, or one whose old parts the run replaces, passes. The whole path through
Snakemake: tests/test_rerun_history.py."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from test_history import cell_path

from numa_effects.measure import record
from numa_effects.plan import grid, paths
from numa_effects.tables import cells as cell_tables
from numa_effects.tables import formats, tidy

FIX = Path(__file__).parent / "fixtures"
REPLICATES = sorted((FIX / "cells_replicates").glob("none_sequential_t1_bs4_*.json"))[:3]
GROUP = FIX / "packing_interference" / "packing" / "resnet18" / "none" / "c2" / "bs1.json"


@pytest.fixture
def results(tmp_path) -> Path:
    """A folder of this version: three format-1 replicates, one rewritten in format 2, a
    format-1 packing run, and the cells.csv this code writes of them."""
    root = tmp_path / "results"
    for r, src in enumerate(REPLICATES, 1):
        dest = root / cell_path(src, r)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
    record.write(dest, record.read(dest))  # format 2
    run = root / paths.PACKING_RUN.format(model="resnet18", opt="none", budget=2, batch_size=1)
    run.parent.mkdir(parents=True)
    shutil.copy2(GROUP, run)
    table, _ = cell_tables.tables(sorted(str(p) for p in root.glob("cells/**/r*.json")))
    (root / "tables").mkdir()
    tidy.write(table, str(root / paths.table("cells")))
    return root


def cell_records(root: Path) -> list[Path]:
    return sorted(root.glob("cells/**/r*.json"))


def test_a_folder_of_this_version_passes(results):
    assert [json.loads(p.read_text()).get("format") for p in cell_records(results)] == [
        None,
        None,
        record.FORMAT,
    ]
    assert formats.problem(results) is None
    # the tables this code writes have every column the check asks for
    header = next(csv.reader((results / paths.table("cells")).open()))
    assert set(formats.NEEDED) | set(formats.MEASURED) <= set(header)


def test_a_record_of_a_newer_format_is_one_line_naming_the_folder(results):
    newer = cell_records(results)[0]
    data = json.loads(newer.read_text())
    data.pop("schema_version")
    newer.write_text(json.dumps({"format": record.FORMAT + 1, **data}, indent=1))
    line = formats.problem(results)
    assert "\n" not in line and line.startswith(f"numa-effects: {results}/ holds 1 record(s)")
    assert f"{newer}: result format {record.FORMAT + 1} is newer" in line
    assert "git pull" in line and "the run is refused" in line
    assert "a run would be refused" in formats.problem(results, dry_run=True)
    # a record the run measures again is replaced (and kept in the history), not read
    assert formats.problem(results, replaced=[str(newer)]) is None


def test_a_file_of_no_format_and_a_broken_one_are_named(results):
    first, second, _ = cell_records(results)
    first.write_text(json.dumps({"status": "ok", "cell": {}}))
    second.write_text('{"format": 2, "status"')  # a head that names the format: not read further
    assert formats.unreadable_records(results) == [
        f"{first}: not a result of this workflow (no format); re-run its job"
    ]
    second.write_text("{")
    assert formats.unreadable_records(results)[1].startswith(f"{second}: cannot be read")


def test_group_records_of_format_1_have_no_version_and_pass(results):
    run = next(results.glob("packing/**/bs1.json"))
    data = json.loads(run.read_text())
    assert "format" not in data
    assert record.format_problem(run, group=True) is None
    run.write_text(json.dumps({"format": record.FORMAT + 1, **data}))
    assert "is newer" in formats.problem(results)


def drop_column(table: Path, column: str) -> None:
    rows = list(csv.reader(table.open(newline="")))
    at = rows[0].index(column)
    with table.open("w", newline="") as fh:
        csv.writer(fh).writerows(r[:at] + r[at + 1 :] for r in rows)


@pytest.mark.parametrize("column", ["allocator", "replicates", "ci_method"])
def test_a_cells_table_without_a_needed_column_says_rebuild_the_tables(results, column):
    table = results / paths.table("cells")
    drop_column(table, column)
    line = formats.problem(results)
    assert "\n" not in line and line.startswith(f"numa-effects: {table} was written by another")
    assert f"(no {column} column)" in line and "--forcerun tables" in line
    # the run rebuilds the tables from the records: nothing to say
    assert formats.problem(results, tables_rebuilt=True) is None


def test_a_table_of_failed_cells_only_needs_no_latency(tmp_path):
    table = tmp_path / "cells.csv"
    table.write_text(",".join([*grid.KEYS, "replicates", "status"]) + "\n")
    table.write_text(table.read_text() + "resnet50,none,sequential,1,1,default,0,failed\n")
    assert formats.missing_columns(table) == []
    table.write_text(table.read_text().replace(",failed", ",ok"))
    assert formats.missing_columns(table) == list(formats.MEASURED)
