"""Comparing runs end to end: real snakemake on real result folders, nothing re-measured. The
session's quick grid (conftest.quick_run, run a), the same grid measured once more (run b: the
cells and tables a comparison reads) and a known change made from a (run c: a's batch-1 cells
taking FACTOR times as long, its batch-2 cells dropped) are compared in one `compare` run;
PackRat's own pair (CloudLab, TorchScript, glibc vs tcmalloc), imported by the `import` key, in
another. The compared folders are read only: byte for byte and time for time the same after."""

from __future__ import annotations

import hashlib
import math
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, load_config, planned, snakemake
from report_browser import install_chromium, load_page, page_links
from scipy.stats import t as student_t

from numa_effects.compare import statistics as compare_stats
from numa_effects.plan import grid
from numa_effects.report import families
from numa_effects.tables import tidy

pytestmark = pytest.mark.integration

PACKRAT = Path(os.environ.get("NUMA_EFFECTS_PACKRAT", REPO.parent / "shared/reference/packrat"))
FACTOR = 4.0  # run c: a's batch-1 cells taking this many times as long
CHANGED, DROPPED = 1, 2  # the quick grid's batch sizes: the one made slower, the one c lacks
COMPARE_RULES = {
    "compare",
    "compare_tables",
    "compare_page",
    *(f"plot_{f.name}" for f in families.page_families(families.COMPARE_PAGE)),
}


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


def slowed(src: Path, dst: Path) -> Path:
    """What a comparison reads of the result folder ``src`` (cells.csv, samples.csv,
    machine.json) with its batch-CHANGED cells taking FACTOR times as long, every latency of
    them scaled, and its batch-DROPPED cells left out."""
    (dst / "tables").mkdir(parents=True)
    shutil.copy2(src / "machine.json", dst / "machine.json")
    cells = pd.read_csv(src / "tables/cells.csv")
    cells = cells[cells["batch_size"] != DROPPED].copy()
    slow = cells["batch_size"] == CHANGED
    ms = [c for c in cells.columns if c.startswith("latency_") and c.endswith("_ms")]
    cells.loc[slow, ms] = cells.loc[slow, ms] * FACTOR
    cells["replicate_medians_ms"] = cells["replicate_medians_ms"].astype(object)
    cells.loc[slow, "replicate_medians_ms"] = cells.loc[slow, "replicate_medians_ms"].map(
        lambda v: ";".join(f"{float(x) * FACTOR:.6g}" for x in str(v).split(";"))
    )
    cells.to_csv(dst / "tables/cells.csv", index=False)
    samples = pd.read_csv(src / "tables/samples.csv")
    samples = samples[samples["batch_size"] != DROPPED].copy()
    samples.loc[samples["batch_size"] == CHANGED, "latency_ms"] *= FACTOR
    samples.to_csv(dst / "tables/samples.csv", index=False)
    return dst


@pytest.fixture(scope="module")
def measured(quick_run, tmp_path_factory):
    """Runs a (the session's quick run), b (its grid measured once more: cells and tables; no
    peak, so no efficiency) and c (``slowed`` a)."""
    workdir = tmp_path_factory.mktemp("compare")
    cfg = {**quick_run.config, "peak": False, "results": "runs/b/results"}
    targets = [f"{cfg['results']}/tables/cells.csv", f"{cfg['results']}/machine.json"]
    snakemake(workdir, cfg, "--cores", "2", *targets)
    b = workdir / cfg["results"]
    return workdir, quick_run.results, b, slowed(quick_run.results, workdir / "runs/c/results")


@pytest.fixture(scope="module")
def compared(measured):
    """`snakemake compare` of a (baseline), b and c; the folders' snapshots before."""
    workdir, a, b, c = measured
    before = {f: snapshot(f) for f in (a, b, c)}
    runs = {"runs": [str(a), str(b), str(c)], "labels": ["a", "b", "c"]}
    cfg = {"compare": runs, "results": "out"}
    jobs = planned(workdir, cfg, target="compare")
    snakemake(workdir, cfg, "--cores", "2", "compare")
    return workdir, cfg, jobs, before, workdir / "out/compare/a-vs-b-vs-c"


def tables(folder: Path) -> dict[str, pd.DataFrame]:
    return {
        t: tidy.read(folder / f"tables/{t}.csv")
        for t in ("compare", "summary", "provenance", "unmatched")
    }


def measurements(results: Path) -> pd.DataFrame:
    """A run's cells.csv rows, each measurement once (a row reported under a second name,
    ``same_binding_as``, repeats another's)."""
    cells = pd.read_csv(results / "tables/cells.csv")
    return cells[cells["same_binding_as"].isna()]


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


def test_the_same_grid_twice_and_a_known_change(compared, measured):
    _, a, _, _ = measured
    out = compared[-1]
    t = tables(out)
    c = t["compare"]
    same, changed = c[c["run"] == "b"], c[c["run"] == "c"]
    mine = measurements(a)
    assert len(same) == len(mine) and len(changed) == (mine["batch_size"] == CHANGED).sum()
    assert set(changed["batch_size"]) == {CHANGED}
    # every cell of the same grid has its two-level interval around its ratio
    assert (same["ci_method"] == "two-level").all() and (same["status"] == "ok").all()
    assert (same["ratio_ci_low"] <= same["ratio"]).all() and (
        same["ratio"] <= same["ratio_ci_high"]
    ).all()
    ratio = same["latency_compared_ms"] / same["latency_baseline_ms"]
    assert (same["ratio"] - ratio).abs().max() < 1e-9
    # significant means the interval excludes 1; the verdict needs that and the minimum effect
    # (docs/comparing.md), whatever the host did between the two runs
    for r in c.itertuples():
        assert r.significant == (r.ratio_ci_low > 1 or r.ratio_ci_high < 1), r
        change = (r.ratio - 1) * 100
        want = compare_stats.NO_CHANGE
        if r.significant and abs(change) >= compare_stats.MIN_EFFECT_PCT:
            want = "slower" if change > 0 else "faster"
        assert r.verdict == want, r
    # c by hand: both sides have the same interval, c's FACTOR times a's, so the ratio is
    # FACTOR; a's CI is t(df) se either side of its log-centre (se = ln(high/low) / (2 t(df)));
    # the ratio's variance is 2 se^2, whose Welch-Satterthwaite df is (2 se^2)^2 / (2 se^4 / df)
    # = 2 df: the interval is FACTOR exp(+- t(2 df) sqrt(2) se)
    base = mine.set_index(list(grid.KEYS))
    detectable = 0
    for r in changed.itertuples():
        cell = base.loc[tuple(getattr(r, k) for k in grid.KEYS)]
        df = cell["ci_df"]
        se = math.log(cell["latency_ci_high_ms"] / cell["latency_ci_low_ms"]) / (
            2 * student_t.ppf(0.975, df)
        )
        half = student_t.ppf(0.975, 2 * df) * math.sqrt(2) * se
        assert r.ratio == pytest.approx(FACTOR)
        assert (r.ratio_ci_low, r.ratio_ci_high) == pytest.approx(
            (FACTOR * math.exp(-half), FACTOR * math.exp(half))
        )
        assert r.ci_df == pytest.approx(2 * df)
        detectable += FACTOR * math.exp(-half) > 1  # the hand-derived interval excludes 1
    # FACTOR is far above the minimum effect: every cell whose interval excludes 1 is "slower"
    # (how many do depends on the host's noise: the quick run's CIs on a busy host can hold 4x)
    assert (changed["verdict"] == "slower").sum() == detectable
    u = t["unmatched"]
    assert set(map(tuple, u[["run", "only_in", "batch_size"]].values.tolist())) == {
        ("c", "a", DROPPED)
    }
    assert len(u) == (mine["batch_size"] == DROPPED).sum()
    s = t["summary"].set_index(["run", "scope"])
    assert s.loc[("c", "all matched cells"), "slower"] == (changed["verdict"] == "slower").sum()
    assert s.loc[("b", "all matched cells"), "cells"] == len(mine)
    # the geometric mean of c's ratios: every one FACTOR
    assert s.loc[("c", "all matched cells"), "geomean_ratio"] == pytest.approx(FACTOR)
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
    # per compared run a forest plot per optimization and a heatmap per optimization and
    # placement (docs/comparing.md), of the cells compare.csv holds
    c = tidy.read(out / "tables/compare.csv")
    want = sum(
        len(g.groupby(["model", "opt"])) + len(g.groupby(["model", "opt", "placement"]))
        for _, g in c.groupby("run")
    )
    links = page_links(page)
    pngs = [s for s in links.imgs if s.endswith(".png")]
    assert len(pngs) == want and all((out / s).is_file() for s in pngs)
    images, broken = load_page(chromium, page, tmp_path / "profile")
    assert images == want and broken == []
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
    return workdir, workdir / "out/compare/glibc-vs-tcmalloc"


def test_packrat_pair_is_compared_without_inventing_a_process_level(
    packrat_pair, chromium, tmp_path
):
    workdir, packrat_pair = packrat_pair
    t = tables(packrat_pair)
    c = t["compare"]
    assert len(c) == 352 and set(c["opt"]) == {"script"} and set(c["latency_statistic"]) == {"mean"}
    assert set(c["verdict"]) == {"not assessed"} and c["significant"].isna().all()
    assert c["ratio_ci_low"].isna().all() and c["ci_note"].str.contains("PackRat").all()
    u = t["unmatched"]
    assert len(u) == 176 and set(u["only_in"]) == {"glibc"} and set(u["opt"]) == {"none"}
    s = t["summary"].set_index("scope").loc["all matched cells"]
    # By hand from the two imported runs' cells.csv: each matched cell's ratio of PackRat's
    # means, their geometric mean and its t interval over the cells (each cell its own process
    # in each run): exp(mean(ln r) +- t(n - 1) sd(ln r) / sqrt(n)); the counts of cells changed
    # by at least the minimum effect either way
    on = [k for k in grid.KEYS if k != "allocator"]
    pair = [tidy.read(workdir / f"results/{n}/tables/cells.csv") for n in ("glibc", "tcmalloc")]
    m = pair[0].merge(pair[1], on=on, suffixes=("_b", "_c"))
    y = (m["latency_mean_ms_c"] / m["latency_mean_ms_b"]).map(math.log)
    half = student_t.ppf(0.975, len(y) - 1) * y.std(ddof=1) / math.sqrt(len(y))
    pct = [math.expm1(y.mean() + d) * 100 for d in (0, -half, half)]
    change = y.map(math.expm1) * 100
    min_effect = compare_stats.MIN_EFFECT_PCT
    beyond = int((change <= -min_effect).sum()), int((change >= min_effect).sum())
    assert len(m) == 352
    assert (s["geomean_change_pct"], s["geomean_ci_low_pct"], s["geomean_ci_high_pct"]) == (
        pytest.approx(pct)
    )
    assert (s["beyond_min_effect_faster"], s["beyond_min_effect_slower"]) == beyond
    # docs/comparing.md quotes them: tcmalloc 13.0 % faster (CI -16.0 % ... -10.0 %), 262 cells
    # at least 2 % faster and 57 at least 2 % slower
    assert [round(x, 1) for x in pct] == [-13.0, -16.0, -10.0] and beyond == (262, 57)
    p = t["provenance"]
    allocator = p[(p["fact"] == "allocator")]
    assert allocator["differs"].all() and set(allocator["value"]) == {"default", "tcmalloc"}
    html = (packrat_pair / "index.html").read_text()
    assert 'id="not-assessed"' in html and "no CI and no verdict" in html
    assert 'id="across-machines"' not in html
    images, broken = load_page(chromium, packrat_pair / "index.html", tmp_path / "profile")
    assert images == 3 and broken == []  # a forest plot, a heatmap per placement
