"""Re-runs are decided by content, not by file times: a fresh ``git clone`` of the
same commit with a finished results folder copied in (``cp -a``: times kept; no .snakemake/)
plans nothing for the same grid, and exactly the new cells (and the aggregations) for an added
batch size. A clone makes every workflow file newer than the copied results, which is what
Snakemake's mtime-based ``code`` trigger trips over; profiles/default turns it off and the jobs'
params carry their code's digest instead (numa_effects.plan.code)."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest
from conftest import RERUN_GRID, clone, clone_snakemake, dag_jobs

pytestmark = pytest.mark.integration

GRID = RERUN_GRID  # the clone's grid (conftest.finished_clone runs it once per session)


def planned(checkout: Path, config: dict) -> Counter:
    """The jobs a run would execute, by rule: Snakemake's DAG (``--dag``, Graphviz), whose
    finished jobs are dashed; not its log text."""
    return dag_jobs(clone_snakemake(checkout, config, "--dag", "dot", "all").stdout)


@pytest.fixture
def finished(finished_clone):
    return finished_clone  # the session's clone: read only here (copies are made with cp -a)


def test_a_fresh_clone_with_copied_results_plans_nothing_then_only_the_new_cells(
    finished, tmp_path
):
    b = clone(tmp_path / "b")
    subprocess.run(["cp", "-a", str(finished / "results"), str(b / "results")], check=True)
    assert not (b / ".snakemake").exists()
    # every workflow file of the clone is newer than every copied result
    newest = max(p.stat().st_mtime for p in (b / "results").rglob("*") if p.is_file())
    assert (b / "workflow/scripts/run_cell.py").stat().st_mtime > newest
    assert planned(b, GRID) == Counter()
    more = planned(b, {**GRID, "batch_sizes": [1, 2]})
    assert more["cell"] == 2  # bs2 sequential and n0m0; bs1 is not re-measured
    assert more["grid_manifest"] == 1 and more["tables"] == 1 and more["all"] == 1
    assert "machine" not in more and "memory" not in more


def test_a_finished_run_copied_elsewhere_whole_plans_nothing(finished, tmp_path):
    """The whole run folder copied (``cp -a``: .snakemake/ with the jobs' recorded params too)
    plans nothing: no job's params name where the run lies. And the DAG a finished run prints
    is empty: ``planned`` can tell 0 jobs from a parse error."""
    moved = tmp_path / "moved"
    subprocess.run(["cp", "-a", str(finished), str(moved)], check=True)
    assert (moved / ".snakemake" / "metadata").is_dir()
    assert planned(moved, GRID) == Counter()
    assert planned(moved, {**GRID, "replicates": 2})["cell"] == 2
