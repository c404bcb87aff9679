"""Comparing runs end to end: real snakemake on real result folders, nothing
re-measured. Two real small runs of the same grid (resnet18 at 32 x 32, batch 1 and 16, two
processes per cell) and a third folder made from the first with its batch-16 cells relabelled as
batch 1 (a known change: 16 times the images per call, several times the latency even on a busy
machine) are compared in one `compare` run; PackRat's
own pair (CloudLab, TorchScript, glibc vs tcmalloc), imported by the `import` key, in another.
The compared folders are read only: byte for byte and time for time the same afterwards."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, load_config, planned, snakemake
from report_browser import install_chromium, load_page, page_links

from numa_effects.plan import grid
from numa_effects.report import families
from numa_effects.tables import tidy

pytestmark = pytest.mark.integration

PACKRAT = Path(os.environ.get("NUMA_EFFECTS_PACKRAT", REPO.parent / "shared/reference/packrat"))
# the runs' grid: 2 cells x 2 processes each, no peak (efficiency is not compared)
GRID = {"optimizations": ["none"], "batch_sizes": [1, 16], "replicates": 2, "peak": False}
CHANGED = 16  # the batch size relabelled as 1 in run c
COMPARE_RULES = {
    "compare",
    "compare_tables",
    "compare_page",
    *(f"plot_{f.name}" for f in families.page_families(families.COMPARE_PAGE)),
}


def measure(workdir: Path, results: str) -> Path:
    """A real run of GRID: the cells and tables only (what a comparison reads)."""
    cfg = load_config("tiny", **GRID, results=results)
    snakemake(
        workdir, cfg, "--cores", "2", f"{results}/tables/cells.csv", f"{results}/machine.json"
    )
    return workdir / results


def snapshot(folder: Path) -> dict:
    """Every file of a folder: its content digest and modification time."""
    return {
        str(p.relative_to(folder)): (
            hashlib.sha256(p.read_bytes()).hexdigest(),
            p.stat().st_mtime_ns,
        )
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def relabelled(src: Path, dst: Path) -> Path:
    """A copy of a result folder whose batch-16 cells are called batch 1 (and the batch-1 cells
    dropped): the same model measured with 16 times the images per call."""
    shutil.copytree(src, dst)
    cells = pd.read_csv(dst / "tables/cells.csv")
    cells = cells[cells["batch_size"] == CHANGED].assign(batch_size=1)
    cells.to_csv(dst / "tables/cells.csv", index=False)
    return dst


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """Runs a and b (the same grid, one after the other) and c (a, batch 16 as batch 1)."""
    workdir = tmp_path_factory.mktemp("compare")
    a = measure(workdir, "runs/a/results")
    b = measure(workdir, "runs/b/results")
    c = relabelled(a, workdir / "runs/c/results")
    return workdir, a, b, c


@pytest.fixture(scope="module")
def compared(measured):
    """`snakemake compare` of a (baseline), b and c; the folders' snapshots before."""
    workdir, a, b, c = measured
    before = {f: snapshot(f) for f in (a, b, c)}
    cfg = {"compare": ["runs/a/results", "runs/b/results", "runs/c/results"], "results": "out"}
    jobs = planned(workdir, cfg, target="compare")
    snakemake(workdir, cfg, "--cores", "2", "compare")
    return workdir, cfg, jobs, before, workdir / "out/compare/a-vs-b-vs-c"


def tables(folder: Path) -> dict[str, pd.DataFrame]:
    return {
        t: tidy.read(folder / f"tables/{t}.csv")
        for t in ("compare", "summary", "provenance", "unmatched")
    }


def test_a_comparison_plans_no_cell_job_and_leaves_the_folders_as_they_were(compared):
    workdir, cfg, jobs, before, _ = compared
    assert set(jobs) <= COMPARE_RULES and jobs["compare_tables"] == 1, jobs
    # one job per family draws the figures of both compared runs (b, c)
    assert jobs["plot_compare_forest"] == 1 and jobs["plot_compare_heatmap"] == 1
    for folder, snap in before.items():
        assert snapshot(folder) == snap, folder
    assert not list((workdir / "out").glob("tables")) and not (workdir / "out/cells").exists()
    # `all` with a compare config is the comparison too, and done now: nothing to run
    assert sum(planned(workdir, cfg).values()) == 0


def test_the_same_grid_twice_and_a_known_change(compared):
    out = compared[-1]
    t = tables(out)
    c = t["compare"]
    same, changed = c[c["run"] == "b"], c[c["run"] == "c"]
    assert sorted(same["batch_size"]) == [1, CHANGED] and changed["batch_size"].tolist() == [1]
    # every cell of the same grid has its two-level interval around its ratio
    assert (same["ci_method"] == "two-level").all() and (same["status"] == "ok").all()
    assert (same["ratio_ci_low"] <= same["ratio"]).all() and (
        same["ratio"] <= same["ratio_ci_high"]
    ).all()
    assert same["significant"].map(lambda s: s in (True, False)).all()
    ratio = same["latency_compared_ms"] / same["latency_baseline_ms"]
    assert (same["ratio"] - ratio).abs().max() < 1e-9
    # 16 times the images per call: slower, significantly, far beyond the minimum effect
    row = changed.iloc[0]
    assert row.verdict == "slower" and row.significant is True and row.ratio > 2, row.to_dict()
    u = t["unmatched"]
    assert u[["run", "only_in", "batch_size"]].values.tolist() == [["c", "a", CHANGED]]
    s = t["summary"].set_index(["run", "scope"])
    assert s.loc[("c", "all matched cells"), "slower"] == 1
    assert s.loc[("b", "all matched cells"), "cells"] == 2
    p = t["provenance"]
    assert set(p["run"]) == {"a", "b", "c"} and {"machine", "versions", "config", "load"} <= set(
        p["category"]
    )
    assert not p[(p["category"] == "config") & p["fact"].isin(["replicates", "protocol"])][
        "differs"
    ].any()
    print(
        "same grid twice:",
        same[["batch_size", "latency_change_pct", "latency_change_ci_low_pct",
              "latency_change_ci_high_pct", "significant", "contended", "noisy"]].to_string(),
    )  # fmt: skip


@pytest.fixture(scope="module")
def chromium():
    return install_chromium()


def test_the_comparison_page_renders_with_its_figures(compared, chromium, tmp_path):
    _, _, _, _, out = compared
    page = out / "index.html"
    links = page_links(page)
    pngs = [s for s in links.imgs if s.endswith(".png")]
    assert len(pngs) == 4 and all((out / s).is_file() for s in pngs)
    images, broken = load_page(chromium, page, tmp_path / "profile")
    assert images == 4 and broken == []
    html = page.read_text()
    order = [html.index(f'id="{a}"') for a in ("differences", "summary", "comparison", "unmatched")]
    assert order == sorted(order)  # the differences first
    assert "only in a" in html and "slower" in html


def test_the_compare_target_without_the_key_says_what_it_needs(tmp_path):
    proc = snakemake(tmp_path, load_config("tiny"), "-n", "compare", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Traceback" not in out
    assert "the compare target needs config key 'compare'" in out


# -- PackRat's own pair: the same machine, TorchScript, glibc vs tcmalloc --------------------------


@pytest.fixture(scope="module")
def packrat_pair(tmp_path_factory):
    if not PACKRAT.is_dir():
        pytest.skip(f"PackRat reference data not found at {PACKRAT}")
    workdir = tmp_path_factory.mktemp("packrat-pair")
    machine = "CloudLab c6420, 2 x 16-core Xeon Gold 6142"
    for name, folder in (
        ("glibc", "cloudlab_large-batches"),
        ("tcmalloc", "cloudlab_large-batches-tcmalloc"),
    ):
        results = f"results/{name}"
        cfg = {
            **load_config("tiny"),
            "results": results,
            "import": {"packrat": [str(PACKRAT / folder)], "machine": machine},
        }
        snakemake(
            workdir, cfg, "--cores", "2", f"{results}/tables/cells.csv", f"{results}/machine.json"
        )
    # an allocator axis (when the grid has one) is the setting compared here
    across = ["allocator"] if "allocator" in grid.KEYS else []
    cfg = {
        "compare": {"runs": ["results/glibc", "results/tcmalloc"], "across": across},
        "results": "out",
    }
    snakemake(workdir, cfg, "--cores", "2", "compare")
    return workdir / "out/compare/glibc-vs-tcmalloc"


def test_packrat_pair_is_compared_without_inventing_a_process_level(
    packrat_pair, chromium, tmp_path
):
    t = tables(packrat_pair)
    c = t["compare"]
    assert len(c) == 352 and set(c["opt"]) == {"script"} and set(c["latency_statistic"]) == {"mean"}
    assert set(c["verdict"]) == {"not assessed"} and c["significant"].isna().all()
    assert c["ratio_ci_low"].isna().all() and c["ci_note"].str.contains("PackRat").all()
    u = t["unmatched"]
    assert len(u) == 176 and set(u["only_in"]) == {"glibc"} and set(u["opt"]) == {"none"}
    s = t["summary"].set_index("scope").loc["all matched cells"]
    # the geometric mean over the 352 cells and its t interval over cells (each cell its own
    # process in each run): tcmalloc 13 % faster overall (CI -16.0 % ... -10.0 %)
    assert s["geomean_change_pct"] == pytest.approx(-13.03, abs=0.01)
    assert (s["geomean_ci_low_pct"], s["geomean_ci_high_pct"]) == pytest.approx(
        (-15.98, -9.98), abs=0.01
    )
    assert (s["beyond_min_effect_faster"], s["beyond_min_effect_slower"]) == (262, 57)
    p = t["provenance"]
    allocator = p[(p["fact"] == "allocator")]
    assert allocator["differs"].all() and set(allocator["value"]) == {"default", "tcmalloc"}
    html = (packrat_pair / "index.html").read_text()
    assert 'id="not-assessed"' in html and "no CI and no verdict" in html
    assert 'id="across-machines"' not in html
    images, broken = load_page(chromium, packrat_pair / "index.html", tmp_path / "profile")
    assert images == 3 and broken == []  # a forest plot, a heatmap per placement
