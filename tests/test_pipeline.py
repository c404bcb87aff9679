"""A real snakemake run of a tiny grid: cell JSONs, tables, rerun semantics."""

import itertools
import json

import pandas as pd
import pytest
from conftest import jobs_planned, snakemake

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from conftest import TINY_CONFIG

    workdir = tmp_path_factory.mktemp("pipeline")
    cfg = {**TINY_CONFIG, "placements": ["sequential", "interleave"]}
    first = snakemake(workdir, cfg, "--cores", "2", "all")
    return workdir, cfg, first


def test_cells_are_pinned_and_read_back(run):
    workdir, _, _ = run
    cells = sorted((workdir / "results" / "cells").rglob("*.json"))
    assert len(cells) == 4  # 2 opts x 2 batch sizes, sequential only on this 1-node machine
    for path in cells:
        data = json.loads(path.read_text())
        assert data["status"] == "ok", data.get("failure")
        assert data["binding"]["cpus_allowed_list"] == data["plan"]["cpu_list"] == "0"
        assert data["binding"]["mempolicy"]["mode"] == "bind"
        assert data["binding"]["torch_num_threads"] == 1
        assert data["provenance"]["command"][:3] == ["numactl", "--physcpubind=0", "--membind=0"]
        assert data["provenance"]["versions"]["torch"]
        assert data["stats"]["n"] == len(data["measurement"]["latencies_s"]) >= 3


def test_cells_never_overlap_even_with_two_cores(run):
    workdir, _, _ = run
    spans = sorted(
        (d["provenance"]["launcher_started_at"], d["provenance"]["finished_at"])
        for d in (json.loads(p.read_text()) for p in (workdir / "results/cells").rglob("*.json"))
    )
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end <= start


def test_tables_and_skipped(run):
    workdir, _, _ = run
    cells = pd.read_csv(workdir / "results/tables/cells.csv")
    assert len(cells) == 4
    assert set(cells["opt"]) == {"none", "script"}
    assert cells["latency_median_ms"].gt(0).all()
    samples = pd.read_csv(workdir / "results/tables/samples.csv")
    assert len(samples) == cells["n"].sum()
    skipped = pd.read_csv(workdir / "results/tables/skipped.csv")
    assert len(skipped) == 4
    assert set(skipped["placement"]) == {"interleave"}
    summary = (workdir / "results/summary.txt").read_text()
    assert "4 measured, 0 failed, 4 skipped" in summary


def test_rerun_is_a_no_op_and_new_batch_runs_only_its_cells(run):
    workdir, cfg, _ = run
    again = snakemake(workdir, cfg, "--cores", "1", "-n", "all")
    assert jobs_planned(again) == {}
    assert "Nothing to be done" in again.stdout + again.stderr
    more = snakemake(workdir, {**cfg, "batch_sizes": [1, 2, 4]}, "--cores", "1", "-n", "all")
    planned = jobs_planned(more)
    assert planned.get("cell") == 2  # bs4 for none and script
    assert planned.get("tables") == 1
