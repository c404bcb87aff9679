"""A real snakemake run of a tiny grid: cell JSONs, tables, rerun semantics.

Expected cells, skipped cells, CPUs and nodes come from the project's planner on the topology
this runs on (``grid.expand``), never from the machine the test was written on: on a 1-node
machine ``interleave`` binds like ``sequential`` and is reported from its cells, on a 2-socket
server it is measured at two threads and more. The same assertions run
against the pipeline measured in the 2-node guest (tests/test_numa_vm.py)."""

import itertools
import json
import statistics
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, planned, snakemake

from numa_effects.measure import cell, provenance
from numa_effects.plan import grid, peaks, topology
from numa_effects.plan.spec import Spec

pytestmark = pytest.mark.integration


def expected(cfg: dict, topo=None) -> grid.Grid:
    """The grid the workflow plans for ``cfg`` on ``topo`` (default: this machine)."""
    return grid.expand(cfg, topo or topology.current())


def check_cells(results: Path, g: grid.Grid, replicates: int = 1, min_timed: int = 3) -> None:
    """Every planned cell (each replicate) measured, pinned as planned, bound where planned,
    with at least ``min_timed`` timed iterations."""
    paths = grid.replicate_outputs(g, replicates, str(results))
    found = results.joinpath("cells").rglob("*.json")
    assert sorted(str(p) for p in found if not p.name.endswith(".spec.json")) == sorted(paths)
    for key, plan in g.cells.items():
        for r in range(1, replicates + 1):
            path = results / grid.CELL_PATTERN.format(**key.as_dict(), replicate=r)
            data = json.loads(path.read_text())
            assert data["status"] == "ok", data.get("failure")
            assert data["plan"] == plan.to_dict()
            assert data["binding"]["cpus_allowed_list"] == plan.to_dict()["cpu_list"]
            mode = "bind" if plan.mem_policy == "bind" else "interleave"
            assert data["binding"]["mempolicy"]["mode"] == mode
            assert data["binding"]["mempolicy"]["nodes"] == list(plan.mem_nodes)
            assert data["binding"]["torch_num_threads"] == key.threads
            assert data["provenance"]["command"][:3] == ["numactl", *plan.numactl_args()]
            assert data["provenance"]["versions"]["torch"]
            m = data["measurement"]
            assert len(m["latencies_s"]) >= min_timed
            # iterations another process disturbed are kept but left out of the statistics
            # (exclude_foreign_pct; all of them kept when every one was disturbed)
            clean = len(m["latencies_s"]) - (m.get("excluded_iterations") or 0)
            assert data["stats"]["n"] in (clean, len(m["latencies_s"]))


def check_tables(results: Path, g: grid.Grid, opts, replicates: int = 1) -> None:
    cells = pd.read_csv(results / "tables/cells.csv")
    assert len(cells) == len(g.reported())
    assert set(cells["opt"]) == set(opts)
    assert set(cells["placement"]) == {k.placement for k in g.reported()}
    # a cell with a measured cell's binding: its row, under its own name, saying so
    rows = cells.set_index(["opt", "placement", "threads", "batch_size"])
    for key, measured in g.same.items():
        row = rows.loc[(key.opt, key.placement, key.threads, key.batch_size)]
        of = rows.loc[(key.opt, measured.placement, key.threads, key.batch_size)]
        assert row["same_binding_as"] == measured.placement
        assert row["latency_median_ms"] == of["latency_median_ms"]
    assert cells["latency_median_ms"].gt(0).all()
    samples = pd.read_csv(results / "tables/samples.csv")
    # every timed iteration is a sample; the statistics may leave disturbed ones out
    timed = sum(
        len(json.loads(Path(p).read_text())["measurement"]["latencies_s"])
        for p in grid.replicate_outputs(g, replicates, str(results))
    )
    measured = cells[cells["same_binding_as"].isna()]  # each measurement once
    assert len(samples) == timed >= measured["n"].sum()
    skipped = pd.read_csv(results / "tables/skipped.csv")
    assert len(skipped) == len(g.skipped)
    assert set(skipped["placement"]) == {k.placement for k in g.skipped}
    summary = (results / "summary.txt").read_text()
    assert f"{len(g.cells)} measured, 0 failed, {len(g.skipped)} skipped" in summary


@pytest.fixture
def run(quick_run):
    """The session's quick grid (conftest.quick_run: two placements, two replicates per cell:
    two result files, one combined row per cell): (its folder, config, the run). Read only."""
    return quick_run.workdir, quick_run.config, quick_run.done


def test_cells_are_pinned_and_read_back(run):
    workdir, cfg, _ = run
    check_cells(workdir / "results", expected(cfg), replicates=2)


def test_cells_never_overlap_even_with_two_cores(run):
    workdir, _, _ = run
    spans = sorted(
        (d["provenance"]["launcher_started_at"], d["provenance"]["finished_at"])
        for d in (json.loads(p.read_text()) for p in (workdir / "results/cells").rglob("*.json"))
    )
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end <= start


def test_every_cell_keeps_the_spec_it_was_run_with_where_fidelity_looks(run, tmp_path):
    """``bench fidelity`` re-runs each cell's first replicate from its spec; the spec must be
    where the grid's log pattern and the front door put it (it once was not: the allocator axis
    added a path segment and the benchmark failed with FileNotFoundError)."""
    sys.path.insert(0, str(REPO))
    from benchmarks import fidelity

    workdir, _, _ = run
    cells = pd.read_csv(workdir / "results/tables/cells.csv")
    # what fidelity re-runs: each measurement once (benchmarks.common.PipelineRun.cells)
    cells = cells[(cells["status"] == "ok") & cells["same_binding_as"].isna()]
    assert len(cells)
    for _, row in cells.iterrows():
        spec = Spec.from_json(json.loads(fidelity.first_spec(workdir / "results", row).read_text()))
        assert {k: spec.cell[k] for k in ("opt", "threads", "batch_size")} == {
            "opt": row["opt"],
            "threads": row["threads"],
            "batch_size": row["batch_size"],
        }
    # and the benchmark's Timer child times a cell from it (it too had rotted: build_for's
    # result grew a field and the child failed to unpack it)
    row = cells.iloc[0]
    spec_path = fidelity.first_spec(workdir / "results", row)
    plan = Spec.from_json(json.loads(spec_path.read_text())).plan
    out = fidelity.run_timer(spec_path, tmp_path / "timer.json", int(row["threads"]), plan)
    assert out["median_s"] > 0 and out["blocks"] >= 1


def test_each_replicate_says_where_its_wall_time_went(run):
    """The parts of a replicate's process (benchmarks/overhead.py): torch's
    import timed apart from the process start and the build, and the parts inside the process
    add up to no more than its span (``rest_s`` >= 0: nothing counted twice)."""
    import sys

    from conftest import REPO

    sys.path.insert(0, str(REPO))
    from benchmarks import overhead
    from benchmarks.common import replicate_records

    workdir, _, _ = run
    parts = overhead._cells("pipeline", replicate_records(workdir / "results"))
    ok = [
        p
        for p in (workdir / "results/cells").rglob("r*.json")
        if json.loads(p.read_text())["status"] == "ok"
    ]
    assert len(parts) == len(ok) >= 2
    assert (parts["import_s"] > 0).all()
    for col in ("process_start_s", "build_s", "prepare_s", "first_call_s", "timed_s"):
        assert (parts[col] >= 0).all(), col
    assert (parts["rest_s"] >= 0).all(), parts[["import_s", "rest_s", "cell_span_s"]]


def test_tables_and_skipped(run):
    workdir, cfg, _ = run
    check_tables(workdir / "results", expected(cfg), cfg["optimizations"], replicates=2)
    cells = pd.read_csv(workdir / "results/tables/cells.csv")
    assert (cells["replicates"] == 2).all() and set(cells["ci_method"]) == {"two-level"}
    for col in ("between_sd_pct", "within_sd_pct", "replicate_sd_pct", "contended", "noisy"):
        assert col in cells.columns
    assert (cells["anon_huge_mb"] >= 0).all()  # read in every replicate (verify.anon_huge_kb)
    # each process's layout randomization, as it read it: the cells inherit this one's
    assert set(cells["aslr"]) == {provenance.address_randomization()}
    assert (cells["latency_ci_low_ms"] <= cells["latency_median_ms"]).all()
    assert (cells["latency_median_ms"] <= cells["latency_ci_high_ms"]).all()
    samples = pd.read_csv(workdir / "results/tables/samples.csv")
    assert set(samples["replicate"]) == {1, 2}
    # every timed iteration has its run-queue delay, read by the runner from the instance
    assert samples["run_delay_pct"].notna().all() and (samples["run_delay_pct"] >= 0).all()
    assert (samples["foreign_pct"] >= samples["run_delay_pct"]).all()


def test_every_timed_iteration_counts_its_page_faults(run):
    """The cell process reads its minor page faults just outside each step's interval
    (measure.cell.minor_faults); the record has one count per timed iteration and samples.csv
    has them row for row."""
    workdir, _, _ = run
    recs = [json.loads(p.read_text()) for p in (workdir / "results/cells").rglob("r*.json")]
    recs = [r for r in recs if r["status"] in ("ok", "contended")]
    assert recs
    for rec in recs:
        m = rec["measurement"]
        assert len(m["minor_faults"]) == len(m["latencies_s"]) > 0, rec["cell"]
        assert all(isinstance(f, int) and f >= 0 for f in m["minor_faults"]), m["minor_faults"]
    samples = pd.read_csv(workdir / "results/tables/samples.csv")
    assert samples["minor_faults"].notna().all() and (samples["minor_faults"] >= 0).all()
    assert samples["minor_faults"].sum() == sum(sum(r["measurement"]["minor_faults"]) for r in recs)
    # cells.csv: each measured replicate's median per step, in replicate order
    cells = pd.read_csv(workdir / "results/tables/cells.csv")
    for row in cells[cells["status"] == "ok"].itertuples():
        key = {k: getattr(row, k) for k in ("opt", "placement", "threads", "batch_size")}
        if isinstance(row.same_binding_as, str):  # the records are the measuring cell's
            key["placement"] = row.same_binding_as
        mine = sorted(
            (r["replicate"], statistics.median(r["measurement"]["minor_faults"]))
            for r in recs
            if r["status"] == "ok" and all(r["cell"][k] == v for k, v in key.items())
        )
        got = [float(v) for v in str(row.replicate_faults_per_step).split(";")]
        assert got == [round(v) for _, v in mine], key  # (one replicate: pandas reads a number)


def test_with_the_canary_every_timed_iteration_has_one(run):
    """Config key canary (on by default): after each timed step the cell process timed the
    canary kernel (measure.cell.make_canary), outside the step's interval; samples.csv has it
    per iteration."""
    workdir, _, _ = run
    for path in (workdir / "results/cells").rglob("r*.json"):
        rec = json.loads(path.read_text())
        assert rec["status"] in ("ok", "contended"), (path, rec.get("failure"))
        m = rec["measurement"]
        assert len(m["canary_s"]) == len(m["latencies_s"]) > 0, path
        assert all(0 < c < 1.0 for c in m["canary_s"]), m["canary_s"]
        # the record names the kernel the cell process ran (the default, as the child says)
        assert m["canary_kernel"] == cell.CANARY_KERNELS[cell.CANARY_KERNEL], m["canary_kernel"]
    samples = pd.read_csv(workdir / "results/tables/samples.csv")
    assert samples["canary_ms"].notna().all() and (samples["canary_ms"] > 0).all()
    # row for row the record's: iteration i's canary is the one after timed step i
    rec = json.loads(next((workdir / "results/cells").rglob("r1.json")).read_text())
    row = samples[samples["replicate"] == 1]
    for k in grid.KEYS:
        row = row[row[k] == rec["cell"].get(k, grid.DEFAULTS.get(k))]
    row = row.sort_values("iteration")
    assert len(row) == len(rec["measurement"]["canary_s"])
    assert row["canary_ms"].tolist() == pytest.approx(
        [c * 1e3 for c in rec["measurement"]["canary_s"]]
    )
    # ... and cells.csv has every cell at the run's reference speed (tables.speed), its value
    # inside its own interval
    cells = pd.read_csv(workdir / "results/tables/cells.csv")
    assert cells["speed_latency_ms"].notna().all() and cells["speed_slope"].notna().all()
    assert (cells["speed_ci_low_ms"] <= cells["speed_latency_ms"]).all()
    assert (cells["speed_latency_ms"] <= cells["speed_ci_high_ms"]).all()
    # ... and each TorchScript speedup at that speed too (tables.speed.ratio), inside its CI
    speedup = pd.read_csv(workdir / "results/tables/opt_speedup.csv")
    assert len(speedup) > 0 and speedup["speed_speedup"].notna().all()
    assert (speedup["speed_speedup_ci_low"] <= speedup["speed_speedup"]).all()
    assert (speedup["speed_speedup"] <= speedup["speed_speedup_ci_high"]).all()


def test_efficiency_is_against_the_peak_on_the_models_path_and_at_most_1_05(run):
    """The default-style run's cells (eager and TorchScript, float32): each has a peak of its
    dtype at its placement and threads (the best of torch.mm and oneDNN's convolutions, with
    the theoretical peak beside it), and efficiency <= 1.05 (2.72 against torch.mm
    alone on an AMD EPYC)."""
    workdir, cfg, _ = run
    cells = pd.read_csv(workdir / "results/tables/cells.csv")
    peak = pd.read_csv(workdir / "results/tables/peak.csv")
    where = {(k.placement, k.threads) for k in expected(cfg).cells}
    assert set(zip(peak["placement"], peak["threads"], strict=True)) == where
    assert set(peak["dtype"]) == {"float32"} and (peak["status"] == "ok").all()
    assert (
        peak["theoretical_gflop_per_s"].notna().all() and peak["kernels"].str.contains("mm ").all()
    )
    assert (cells["dtype"] == "float32").all() and cells["efficiency"].notna().all()
    assert (cells["efficiency"] <= 1.05).all(), cells[["opt", "threads", "efficiency"]]


def test_rerun_is_a_no_op_and_new_batch_runs_only_its_cells(quick_run, tmp_path):
    cfg = quick_run.config
    workdir = quick_run.copy(tmp_path / "run").workdir  # the dry runs rewrite its config.yaml
    assert planned(workdir, cfg) == {}
    more = planned(workdir, {**cfg, "batch_sizes": [1, 2, 4]})
    # bs4 for none and script, in every placement this machine can run, both replicates
    assert more.get("cell") == 2 * len(expected({**cfg, "batch_sizes": [4]}).cells)
    assert more.get("tables") == 1


def test_peak_false_plans_no_peak_job(tmp_path):
    """``peak: false`` (the emulated guest): the cells and an empty peak table, no peak job."""
    from conftest import load_config

    cfg = {**load_config("tiny"), "peak": False}
    jobs = planned(tmp_path, cfg)
    assert "peak" not in jobs
    assert jobs["peak_table"] == 1
    assert jobs["cell"] == len(expected(cfg).cells)
    with_peak = planned(tmp_path, {**cfg, "peak": True})
    # one per placement, threads and dtype (eager and TorchScript: float32 only), per window
    where = {(k.placement, k.threads) for k in expected(cfg).cells}
    assert with_peak["peak"] == len(where) * peaks.WINDOWS


def test_replicates_run_round_by_round(run):
    """Every first replicate started before any second one (grid.job_order via priorities)."""
    workdir, _, _ = run
    data = [json.loads(p.read_text()) for p in (workdir / "results/cells").rglob("r*.json")]
    first = max(d["provenance"]["launcher_started_at"] for d in data if d["replicate"] == 1)
    second = min(d["provenance"]["launcher_started_at"] for d in data if d["replicate"] == 2)
    assert first < second


def test_a_deleted_replicate_reruns_alone_and_more_replicates_run_only_the_new_ones(
    quick_run, tmp_path
):
    cfg = quick_run.config
    workdir = quick_run.copy(tmp_path / "run").workdir
    gone = next((workdir / "results/cells").rglob("r2.json"))
    kept = gone.read_bytes()
    gone.unlink()
    assert planned(workdir, cfg).get("cell") == 1
    again = snakemake(workdir, cfg, "--cores", "1", "-n", "all")
    assert f"output: {gone.relative_to(workdir)}" in again.stdout + again.stderr
    gone.write_bytes(kept)
    # the third replicate of each cell, nothing else measured
    assert planned(workdir, {**cfg, "replicates": 3}).get("cell") == len(expected(cfg).cells)
    more = snakemake(workdir, {**cfg, "replicates": 3}, "--cores", "1", "-n", "all")
    outputs = [ln for ln in (more.stdout + more.stderr).splitlines() if "/cells/" in ln]
    assert outputs and all("r3.json" in ln for ln in outputs if "output:" in ln)
