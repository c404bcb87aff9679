"""Precision in real snakemake runs (resnet18 on 32 x 32 images): int8 next to float32 eager
with the peak of each dtype, the precision table and its figure; float32 eager with glibc (as
it comes and tuned), jemalloc and tcmalloc, each preloaded or set, and proven. Plus one real
cell whose preload does not take effect. (Two small runs rather than their product: every int8
process converts and compiles for 15 - 60 s.)

Expectations come from the project's own detection on this machine (``plan.host``,
``plan.cpu``: is int8 native here, which allocator libraries exist), never from the CPU the
test was written on. The libraries are installed the way numactl is (under CI=true a failed
install fails the test)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import load_config, snakemake
from test_allocators import _install_or_skip

from numa_effects.plan import allocators, cpu, grid, host, optimizations, topology

pytestmark = pytest.mark.integration
ALLOCS = ["default", "glibc_tuned", "jemalloc", "tcmalloc"]
# what the runs ask for instead of `all`: every cell and the tables (+ the precision figure);
# the other figures and the page are drawn by tests/test_pipeline.py, and
# test_report_precision.py draws the section from tables
TABLES = ("results/tables/precision.csv", "results/tables/peak.csv", "results/summary.txt")
FIGURE = "results/report/figures/resnet18/precision_speedup/bs1.png"


def measure(tmp_path_factory, name: str, targets, **over):
    workdir = tmp_path_factory.mktemp(name)
    cfg = {**load_config("tiny"), "batch_sizes": [1], **over}
    snakemake(workdir, cfg, "--cores", "2", *targets)
    here = host.current(cfg.get("allocators") or ())
    planned = grid.expand(cfg, topology.current(), host=here)
    return workdir / "results", cfg, planned, here


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """int8 and float32 eager on config.yaml's allocator: the cells, both peaks, the tables and
    the figure."""
    return measure(tmp_path_factory, "int8", (*TABLES, FIGURE), optimizations=["none", "int8"])


@pytest.fixture(scope="module")
def alloc_run(tmp_path_factory):
    """float32 eager with each allocator (no peak: efficiency is the other run's)."""
    _install_or_skip()
    return measure(
        tmp_path_factory, "allocators", TABLES, optimizations=["none"], allocators=ALLOCS,
        peak=False,
    )  # fmt: skip


def cells(results: Path) -> pd.DataFrame:
    return pd.read_csv(results / "tables/cells.csv")


def test_every_planned_cell_ran_with_its_allocator_preloaded_and_proven(alloc_run):
    results, _, planned, here = alloc_run
    assert {k.allocator for k in planned.cells} == set(ALLOCS) and not planned.skipped
    for key in planned.cells:
        path = results / grid.CELL_PATTERN.format(**key.as_dict(), replicate=1)
        data = json.loads(path.read_text())
        assert data["status"] == "ok", data.get("failure")
        line = data["provenance"]["command_line"]
        mapped = data["binding"]["verification"]["allocator"]["mapped"]
        alloc = allocators.ALLOCATORS[key.allocator]
        if alloc.preloaded:
            lib = data["allocator"]["library"]
            assert lib == here.libraries[key.allocator] and f"LD_PRELOAD={lib}" in line
            assert [Path(m).name.startswith(alloc.maps_key) for m in mapped] == [True]
            assert data["allocator"]["version"]  # dpkg's
        else:
            assert "LD_PRELOAD" not in line and mapped == []
        assert ("MALLOC_CONF=" in line) == (key.allocator == "jemalloc")
        probe = data["binding"]["verification"]["allocator"].get("heap_probe")
        settings = " ".join(f"{k}={v}" for k, v in alloc.env.items() if k != "MALLOC_CONF")
        if alloc.heap_probe:  # glibc's settings in the command line, proven in the process
            assert f"{settings} " in line and probe == {"bytes": alloc.heap_probe, "in_heap": True}
        else:
            assert probe is None and "MALLOC_MMAP" not in line
    c = cells(results)
    assert sorted(c["allocator"]) == sorted(ALLOCS) and c["allocator_version"].notna().all()
    preloads = [allocators.ALLOCATORS[a].preloaded for a in c["allocator"]]
    assert c["allocator_library"].notna().tolist() == preloads
    # each allocator against float32 eager with glibc, with its CI
    p = pd.read_csv(results / "tables/precision.csv")
    assert sorted(p["allocator"]) == ALLOCS[1:] and (p["opt"] == "none").all()
    assert (p["speedup"] > 0).all() and p["speedup_ci_low"].notna().all()
    assert f"{len(ALLOCS)} measured, 0 failed, 0 skipped" in (results / "summary.txt").read_text()
    tuned = c[c["allocator"] == "glibc_tuned"]
    assert tuned["malloc_env"].tolist() == ["MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184"]


def test_cells_record_dtype_kernels_agreement_and_conversion(run):
    """int8 computes in u8/s8 oneDNN kernels (verified), agrees with float32 eager, is marked
    non-native where plan.cpu finds no VNNI/AMX, and its conversion is recorded apart."""
    results, _, planned, here = run
    if here.optimization_reason("int8"):
        pytest.skip(here.optimization_reason("int8"))
    assert {k.opt for k in planned.cells} == {"none", "int8"}
    caps = cpu.of_machine()
    c = cells(results)
    i8 = c[c["opt"] == "int8"]
    eager = c[c["opt"] == "none"]
    assert (i8["dtype"] == "int8").all() and (i8["graph"] == "inductor").all()
    assert i8["dtype_verified"].all(), i8["onednn_kernels"].tolist()
    assert i8["compute_dtypes"].str.contains("u8/s8|s8/s8").all()
    native = optimizations.native_on(optimizations.OPTIMIZATIONS["int8"], caps)
    assert (i8["native"] == native).all()
    assert i8["precision_note"].notna().all() != native
    assert i8["numerics_ok"].all() and (i8["agree_cosine"] >= 0.99).all()
    assert (i8["prepare_s"] > 0).all() and (i8["conversion_s"] >= i8["prepare_s"]).all()
    assert (i8["cost_s"] > i8["conversion_s"]).all()
    # eager float32 is its own reference; it ran float32 kernels only
    assert eager["numerics_ok"].isna().all() and eager["dtype_verified"].all()
    assert (eager["dtype"] == "float32").all() and eager["native"].all()
    assert c["bf16_state"].eq(caps.bf16).all() or c["bf16_state"].isin(cpu.BF16_STATES).all()


def test_each_dtype_has_its_peak_and_efficiency_is_against_it(run):
    """One peak per dtype of the grid, pinned like the cells: the best of its kernels (int8:
    the PT2E convolutions), the theoretical peak beside it; every cell's efficiency is against
    its own dtype's peak and at most 1.05."""
    results = run[0]
    caps = cpu.of_machine()
    peak = pd.read_csv(results / "tables/peak.csv")
    assert sorted(peak["dtype"]) == ["float32", "int8"]
    assert (peak["status"] == "ok").all() and (peak["peak_gflop_per_s"] > 0).all()
    f32 = peak[peak["dtype"] == "float32"].iloc[0]
    assert f32["peak_kernel"] in ("mm", "conv1x1_cl", "conv3x3_prepacked")
    assert "mm " in f32["kernels"] and "conv1x1_cl" in f32["kernels"]
    int8 = peak[peak["dtype"] == "int8"].iloc[0]
    assert int8["peak_kernel"] in ("conv1x1_pt2e_int8", "conv3x3_pt2e_int8")
    assert "conv1x1_pt2e_int8" in int8["kernels"] and "conv3x3_pt2e_int8" in int8["kernels"]
    for _, row in peak.iterrows():
        theo = caps.theoretical_peak(row["dtype"], 1)["theoretical_gflop_per_s"]
        assert row["theoretical_gflop_per_s"] == pytest.approx(theo)
    c = cells(results)
    by = peak.set_index("dtype")["peak_gflop_per_s"]
    assert c["efficiency"].notna().all()
    assert c["efficiency"].to_numpy() == pytest.approx(
        (c["gflop_per_s"] / c["dtype"].map(by)).to_numpy()
    )
    assert (c["efficiency"] <= 1.05).all(), c[["opt", "allocator", "efficiency"]]


def test_the_precision_table_and_figure_compare_int8_with_float32_eager(run):
    results, _, planned, _ = run
    p = pd.read_csv(results / "tables/precision.csv")
    # against float32 eager on the grid's one allocator (config.yaml's: glibc tuned)
    (base,) = {k.allocator for k in planned.cells}
    assert allocators.baseline([base]) == base
    assert p[["opt", "allocator", "dtype", "baseline"]].values.tolist() == [
        ["int8", base, "int8", f"none/{base}"]
    ]
    assert (p["speedup"] > 0).all() and (p["speedup_ci_low"] <= p["speedup"]).all()
    assert p["numerics_ok"].all() and p["conversion_s"].gt(0).all()
    assert (results / FIGURE.removeprefix("results/")).stat().st_size > 0
    summary = (results / "summary.txt").read_text()
    assert f"{len(planned.cells)} measured, 0 failed, 0 skipped" in summary


def test_a_preload_that_does_not_take_effect_fails_the_cell(tmp_path, monkeypatch):
    """A real cell whose allocator library is found but cannot be preloaded (not an ELF
    object: ld.so ignores it with a warning and the process runs on glibc) fails its
    verification with cause allocator-not-loaded; the ld.so warning is in its log."""
    from numa_effects.measure import job
    from numa_effects.plan import build

    bogus = tmp_path / "libjemalloc.so.2"
    bogus.write_text("not a shared object\n")
    broken = dataclasses.replace(allocators.ALLOCATORS["jemalloc"], sonames=(str(bogus),))
    monkeypatch.setitem(allocators.ALLOCATORS, "jemalloc", broken)
    cfg = {**load_config("one-cell"), "allocators": ["jemalloc"], "results": str(tmp_path)}
    cfg |= {"image_size": 32, "use_smt": False, "seed": 0}
    plan = build.build(cfg, topology.current(), host=host.current(["jemalloc"]))
    (key,) = plan.grid.cells
    out, log = tmp_path / "r1.json", tmp_path / "r1.log"
    result = job.run(plan.cell_spec(key, 1), out, log, timeout_s=300)
    assert result.status == "failed", result.failure
    assert result.failure.cause == "allocator-not-loaded"
    assert "LD_PRELOAD did not take effect" in result.failure.message
    assert f"LD_PRELOAD={bogus}" in result.failure.command_line
    assert "cannot be preloaded" in log.read_text()
    assert result.stats is None
