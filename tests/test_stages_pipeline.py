"""Replicates where the noise is (config key ``two_stage``) in a real Snakemake run of the tiny
grid: the first stage, the checkpoint, the further replicates round by round, the tables' and
the report's account of them, and re-runs. The rule itself: tests/test_stages.py."""

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import load_config, planned, snakemake

from numa_effects.plan import grid, stages, topology
from numa_effects.tables import stages as stage_table

pytestmark = pytest.mark.integration

# a target no two processes meet: every cell takes the cap; without the canary (config key, on
# by default: tests/test_pipeline.py checks it), which this run checks too
CFG = {
    **load_config("tiny"),
    "replicates": 2,
    "two_stage": {"enabled": True, "target_pct": 0.01, "cap": 3},
    "canary": False,
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("two_stage")
    proc = snakemake(workdir, CFG, "--cores", "2", "all")
    return workdir, proc


def _cells() -> list:
    return sorted(grid.expand(CFG, topology.current()).cells)


def test_the_checkpoint_adds_replicates_up_to_the_cap_round_by_round(run):
    workdir, proc = run
    results = workdir / "results"
    for key in _cells():
        have = sorted(p.name for p in Path(key.path(str(results), 1)).parent.glob("r*.json"))
        assert have == ["r1.json", "r2.json", "r3.json"], (key, have)
    counts_file = next((results / "grid").glob("replicates-*.json"))
    manifest = next((results / "grid").glob("manifest-*.json"))
    assert counts_file.name.split("-")[1] == manifest.name.split("-")[1]
    assert set(stages.read(counts_file).values()) == {3}
    # the checkpoint said what it decided
    more = len(_cells())  # one more per cell: from the first stage of 2 to the cap of 3
    assert f"two-stage replicates (target +-0.01 %, cap 3): {more} more processes" in proc.stderr
    # ... and, per thread count, whether eager vs TorchScript kept whole rounds (both at the cap
    # here either way), from the first stage's own rounds
    pairing = json.loads(counts_file.read_text())["pairing"]
    threads = sorted({k.threads for k in _cells()})
    assert [(p["threads"], p["axis"]) for p in pairing] == [(t, "opt") for t in threads]
    for p in pairing:
        said = "whole rounds for" if p["paired"] else "not for"
        assert f"{said} opt at {p['threads']} thread" in proc.stderr
    data = [json.loads(p.read_text()) for p in (results / "cells").rglob("r*.json")]
    started = {
        r: [d["provenance"]["launcher_started_at"] for d in data if d["replicate"] == r]
        for r in (1, 2, 3)
    }
    assert max(started[2]) < min(started[3]) and max(started[1]) < min(started[2])


def test_the_tables_and_the_report_say_how_many_and_why(run):
    workdir, _ = run
    cells = pd.read_csv(workdir / "results/tables/cells.csv")
    assert len(cells) == len(_cells())
    assert (cells["replicates"] == 3).all() and (cells["replicates_planned"] == 3).all()
    assert set(cells["ci_method"]) == {"two-stage"} and set(cells["ci_df"]) == {3}
    assert set(cells["replicates_reason"]) == {stages.CAP}
    assert (cells["replicates_needed"] > 3).all()
    page = (workdir / "results/report/index.html").read_text()
    assert "replicates per cell (two-stage)" in page and "cells: cap" in page
    summary = (workdir / "results/summary.txt").read_text()
    assert f"replicates per cell (two-stage): 3 - 3 processes; {len(cells)} cells: cap" in summary
    speedup = pd.read_csv(workdir / "results/tables/opt_speedup.csv")
    assert speedup["ci_method"].notna().all()


def test_with_the_canary_off_no_iteration_has_one(run):
    """Config key canary false: the settings do not carry it, the cell processes time no canary,
    and the tables have no canary and no latency at a reference speed."""
    workdir, _ = run
    for path in (workdir / "results/cells").rglob("r*.json"):
        rec = json.loads(path.read_text())
        assert "canary" not in rec["settings"], rec["settings"]
        assert "canary_s" not in rec["measurement"] and "canary_kernel" not in rec["measurement"]
    samples = pd.read_csv(workdir / "results/tables/samples.csv")
    assert samples["canary_ms"].isna().all()
    cells = pd.read_csv(workdir / "results/tables/cells.csv")
    assert "speed_latency_ms" not in cells.columns


def test_a_rerun_does_nothing_and_a_looser_target_redecides_without_measuring(run):
    workdir, _ = run
    assert planned(workdir, CFG) == {}
    loose = {**CFG, "two_stage": {**CFG["two_stage"], "target_pct": 100}}
    jobs = planned(workdir, loose)
    assert "cell" not in jobs and jobs.get("replicates") == 1, jobs
    before = {p: p.stat().st_mtime_ns for p in (workdir / "results/cells").rglob("r*.json")}
    snakemake(workdir, loose, "--cores", "2", "all")
    after = {p: p.stat().st_mtime_ns for p in (workdir / "results/cells").rglob("r*.json")}
    assert after == before  # nothing measured again
    cells = pd.read_csv(workdir / "results/tables/cells.csv")
    counts = list((workdir / "results/grid").glob("replicates-*.json"))
    assert len(counts) == 1
    assert json.loads(counts[0].read_text())["settings"]["target_pct"] == 100  # decided again
    decided = stages.read(counts[0])
    # the new decision is the rule's on the first stage's own processes at the new target (the
    # third replicates measured for the old target are not its data), whatever the machine's
    # noise made of them; the table follows it
    first, cap = CFG["replicates"], CFG["two_stage"]["cap"]
    files = [str(p) for p in before if int(p.stem[1:]) <= first]
    rounds = stage_table.first_stage_rounds(files)
    expected = stage_table.decide(
        stage_table.round_order(rounds), stages.settings(loose), stage_table.pairing(rounds)
    )
    assert decided == {grid.CellKey.from_record(r): r["replicates"] for r in expected}
    assert sorted(cells["replicates"]) == sorted(decided.values())
    assert set(decided.values()) <= set(range(first, cap + 1))
    reasons = {grid.CellKey.from_record(r): r["reason"] for r in expected}
    assert all(decided[k] == first for k, r in reasons.items() if r == stages.FIRST_STAGE)
    assert sorted(cells["replicates_reason"]) == sorted(reasons.values())
