"""Tidy transforms on cell JSONs from a real run (tests/fixtures/cells/, written in the
record's format 1: read as they are), and the record's own format (``measure.record``)."""

import dataclasses
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from numa_effects.measure import record
from numa_effects.measure.record import Failure
from numa_effects.plan import grid
from numa_effects.tables import cells as tidy
from numa_effects.tables.tidy import write

CELLS = sorted((Path(__file__).parent / "fixtures" / "cells").glob("*.json"))


def test_fixtures_present():
    assert len(CELLS) >= 2


@pytest.mark.parametrize("path", CELLS, ids=lambda p: p.stem)
def test_cell_row_converts_units_and_keeps_provenance(path):
    data = record.read(path)
    row = tidy.cell_row(data, str(path))
    assert row["latency_median_ms"] == pytest.approx(data.stats["median_s"] * 1000)
    assert row["latency_p99_ms"] == pytest.approx(data.stats["p99_s"] * 1000)
    assert row["throughput_ips"] == pytest.approx(data.cell["batch_size"] / data.stats["median_s"])
    assert row["n"] == len(data.measurement["latencies_s"])
    assert row["command_line"].startswith("env OMP_NUM_THREADS=")
    assert "numactl --physcpubind=" in row["command_line"]
    assert row["cpus_allowed"] == data.plan["cpu_list"]
    assert row["torch_num_threads"] == data.cell["threads"]
    assert row["status"] == "ok"


def test_tables_long_samples_match_cells(tmp_path):
    cells, samples = tidy.tables([str(p) for p in CELLS])
    assert list(cells.columns[: len(tidy.KEY_COLUMNS)]) == tidy.KEY_COLUMNS
    # JSONs from before the allocator axis: glibc's, the axis' default
    assert set(cells["allocator"]) == {"default"}
    assert len(cells) == len(CELLS)
    per_cell = samples.groupby(tidy.KEY_COLUMNS)["latency_ms"]
    for _, row in cells.iterrows():
        key = tuple(row[k] for k in tidy.KEY_COLUMNS)
        lat = per_cell.get_group(key)
        assert len(lat) == row["n"]
        assert lat.median() == pytest.approx(row["latency_median_ms"])


def test_failed_cell_has_no_samples_and_keeps_cause():
    data = record.read(CELLS[0])
    failure = Failure("timeout", "killed after 30 s")
    failed = record.Record("failed", data.cell, plan=data.plan, failure=failure)
    row = tidy.cell_row(failed)
    assert row["status"] == "failed"
    assert row["failure_cause"] == "timeout"
    assert "latency_median_ms" not in row
    assert list(tidy.sample_rows(failed)) == []


def test_write_is_csv_plus_parquet(tmp_path):
    cells, _ = tidy.tables([str(p) for p in CELLS])
    out = tmp_path / "cells.csv"
    write(cells, str(out))
    back = pd.read_csv(out)
    assert back["latency_median_ms"].tolist() == pytest.approx(cells["latency_median_ms"].tolist())
    assert (tmp_path / "cells.parquet").exists()
    assert not list(tmp_path.glob("*.tmp"))


def test_atomic_write_leaves_no_partial_file(tmp_path):
    target = tmp_path / "x.json"
    with pytest.raises(TypeError):
        record.write(target, {"bad": object()})
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []
    record.write(target, {"schema_version": 1, "v": math.pi})
    assert json.loads(target.read_text())["v"] == pytest.approx(math.pi)


def test_atomic_write_gives_the_umask_mode_not_0600(tmp_path):
    import os

    old = os.umask(0o022)
    try:
        target = tmp_path / "cell.json"
        record.write(target, {"schema_version": 1})
    finally:
        os.umask(old)
    assert target.stat().st_mode & 0o777 == 0o644


REPLICATES = sorted((Path(__file__).parent / "fixtures" / "cells_replicates").glob("*.json"))


def test_replicates_combine_into_one_row_per_cell_with_variance_components():
    """Five real processes per cell (tests/fixtures/cells_replicates, quiet Xeon): one row per
    cell, its median the geometric mean of the replicate medians, a two-level CI wider than
    any replicate's own, and the process level dominating the variance (as measured there)."""
    cells, samples = tidy.tables([str(p) for p in REPLICATES])
    assert len(cells) == 3 and (cells["replicates"] == 5).all()
    assert set(cells["ci_method"]) == {"two-level"}
    for _, row in cells.iterrows():
        key = tuple(row[k] for k in tidy.KEY_COLUMNS)
        per_rep = [
            record.read(p)
            for p in REPLICATES
            if grid.CellKey.from_record(record.read(p).cell) == grid.CellKey(*key)
        ]
        meds = [d.stats["median_s"] * 1000 for d in per_rep]
        assert row["latency_median_ms"] == pytest.approx(math.exp(sum(map(math.log, meds)) / 5))
        own = max(d.stats["ci_halfwidth_pct"] for d in per_rep)
        assert row["ci_halfwidth_pct"] > own
        assert row["between_sd_pct"] > row["within_sd_pct"] > 0
        assert row["n"] == sum(len(d.measurement["latencies_s"]) for d in per_rep)
    assert len(samples) == cells["n"].sum()


def test_a_noisy_thread_count_does_not_widen_the_other_thread_counts_cis():
    """The process-level pool is per thread count: making the 2-thread cell's replicates
    disagree widens its own CI, and leaves the 1-thread cells' CIs exactly as they were."""
    reps = pd.DataFrame([tidy.cell_row(record.read(p)) for p in REPLICATES])
    _, samples = tidy.tables([str(p) for p in REPLICATES])
    assert set(reps["threads"]) >= {1, 2}
    before = tidy.combine_replicates(reps, samples).set_index(tidy.KEY_COLUMNS)
    noisy = reps.copy()
    two = noisy.index[noisy["threads"] == 2]
    noisy.loc[two[0], "latency_median_ms"] *= 1.5
    after = tidy.combine_replicates(noisy, samples).set_index(tidy.KEY_COLUMNS)
    for key in before.index:
        cols = ["latency_ci_low_ms", "latency_ci_high_ms"]
        if key[tidy.KEY_COLUMNS.index("threads")] == 2:
            width = (after.loc[key, cols[1]] - after.loc[key, cols[0]]) / (
                before.loc[key, cols[1]] - before.loc[key, cols[0]]
            )
            assert width > 1.5
        else:
            assert list(after.loc[key, cols]) == pytest.approx(list(before.loc[key, cols]))


def test_excluded_iterations_stay_in_samples_but_not_in_statistics():
    data = record.read(CELLS[0])
    m = data.measurement
    n = len(m["latencies_s"])
    m = {**m, "latencies_s": [100.0, *m["latencies_s"][1:]]}  # a contaminated iteration
    m |= {"foreign_pct": [80.0] + [0.0] * (n - 1), "excluded": [True] + [False] * (n - 1)}
    data = dataclasses.replace(data, measurement=m)
    rows = list(tidy.sample_rows(data))
    assert len(rows) == n and rows[0]["excluded"] and rows[0]["foreign_pct"] == 80.0
    reps = pd.DataFrame([tidy.cell_row(data)])
    cells = tidy.combine_replicates(reps, pd.DataFrame(rows, columns=tidy.SAMPLE_COLUMNS))
    assert cells["n"].iloc[0] == n - 1
    assert cells["latency_max_ms"].iloc[0] < 100_000.0


def test_samples_carry_each_iterations_page_faults_where_the_record_has_them():
    """samples.csv's minor_faults: the record's per-iteration counts row for row; a record from
    before they were counted (the fixtures) gives an empty column, not a failure."""
    data = record.read(CELLS[0])
    m = data.measurement
    n = len(m["latencies_s"])
    assert [r["minor_faults"] for r in tidy.sample_rows(data)] == [None] * n
    data = dataclasses.replace(data, measurement={**m, "minor_faults": list(range(n))})
    rows = list(tidy.sample_rows(data))
    assert [r["minor_faults"] for r in rows] == list(range(n))
    assert list(pd.DataFrame(rows, columns=tidy.SAMPLE_COLUMNS)["minor_faults"]) == list(range(n))
    # one count short: a malformed record is an error
    data = dataclasses.replace(data, measurement={**m, "minor_faults": list(range(n - 1))})
    with pytest.raises(ValueError):
        list(tidy.sample_rows(data))


def test_cells_say_each_replicates_page_faults_per_step(tmp_path):
    """cells.csv: the median over a cell's replicates of each one's median faults per timed step,
    and each replicate's in order (two glibc processes in different states show apart); a cell
    whose records predate the count has neither."""
    ok = record.read(CELLS[0])
    n = len(ok.measurement["latencies_s"])
    paths = []
    for r, faults in ((1, [8200] * (n - 1) + [9000]), (2, [23252] * n), (3, [0] * n)):
        m = {**ok.measurement, "minor_faults": faults}
        paths.append(tmp_path / f"r{r}.json")
        record.write(paths[-1], dataclasses.replace(ok, replicate=r, measurement=m))
    (row,) = tidy.tables([str(p) for p in paths])[0].to_dict("records")
    assert row["replicate_faults_per_step"] == "8200;23252;0"
    assert row["minor_faults_per_step"] == 8200.0
    (old,) = tidy.tables([str(CELLS[0])])[0].to_dict("records")
    assert pd.isna(old["minor_faults_per_step"]) and pd.isna(old["replicate_faults_per_step"])


def contended_replicate(data: record.Record, replicate: int) -> record.Record:
    """``data`` as the front door records a replicate none of whose iterations was clean."""
    m = dict(data.measurement)
    n = len(m["latencies_s"])
    m.update(foreign_pct=[60.0] * n, excluded=[True] * n, excluded_iterations=n)
    why = f"all {n} timed iterations excluded (> 10 % foreign CPU) after 2 retries: no statistics"
    noise = {"contended": True, "contended_reason": why, "excluded_iterations": n}
    return dataclasses.replace(
        data, status="contended", stats=None, throughput=None, replicate=replicate,
        measurement=m, contention=noise,
    )  # fmt: skip


def test_a_cell_without_a_clean_iteration_is_contended_not_a_number(tmp_path):
    """The contract: a replicate with no clean iteration has no statistics; a cell whose
    replicates all are is a row with status contended, no latency, throughput or CI, and
    contended true; failures.csv does not list it, failed_cells.py --contended does. With one
    measured replicate the row combines only that one and stays contended."""
    import subprocess
    import sys

    ok = record.read(CELLS[0])
    bad = contended_replicate(ok, 2)
    paths = []
    for name, data in (
        ("r1", dataclasses.replace(ok, replicate=1)),
        ("r2", bad),
        ("r3", dataclasses.replace(bad, replicate=3)),
    ):
        paths.append(tmp_path / "cells" / f"{name}.json")
        record.write(paths[-1], data)
    only_bad, samples = tidy.tables([str(p) for p in paths[1:]])
    (row,) = only_bad.to_dict("records")
    assert row["status"] == "contended" and row["contended"] is True and row["replicates"] == 0
    assert row["replicates_failed"] == 0 and "no statistics" in row["contended_reason"]
    for col in ("latency_median_ms", "latency_ci_low_ms", "throughput_ips", "n"):
        assert col not in row or pd.isna(row[col]), col
    assert samples["excluded"].all() and len(samples) == 2 * len(ok.measurement["latencies_s"])
    assert tidy.failures_table(only_bad).empty
    mixed, _ = tidy.tables([str(p) for p in paths])
    (row,) = mixed.to_dict("records")
    assert row["status"] == "ok" and row["replicates"] == 1 and row["contended"] is True
    assert row["latency_median_ms"] == pytest.approx(ok.stats["median_s"] * 1000)
    assert row["n"] == ok.stats["n"]
    script = Path(__file__).parents[1] / "workflow" / "scripts" / "failed_cells.py"

    def listed(*flags):
        out = subprocess.run(
            [sys.executable, str(script), str(tmp_path), *flags],
            capture_output=True,
            text=True,
            check=True,
        )
        return sorted(out.stdout.split())

    assert listed() == []
    assert listed("--contended") == sorted(str(p) for p in paths[1:])


def test_a_run_without_a_measured_cell_writes_tables_with_their_key_columns(tmp_path):
    """Every cell skipped: cells.csv and samples.csv are empty tables that still name their
    columns, so every reader (report, compare, packing) finds the keys, not an empty file."""
    cells, samples = tidy.tables([])
    assert list(cells.columns[: len(grid.KEYS)]) == list(grid.KEYS) and cells.empty
    assert set(grid.KEYS) <= set(samples.columns) and samples.empty
    write(cells, str(tmp_path / "cells.csv"))
    back = pd.read_csv(tmp_path / "cells.csv")
    assert list(back.columns[: len(grid.KEYS)]) == list(grid.KEYS) and back.empty
