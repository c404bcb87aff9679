"""Comparing result folders cell by cell (numa_effects.compare): matching
on every key column (a new axis joins the match by itself), cells of one side listed, the
per-cell statistic and verdict, the summary, provenance differences and the problems the config
check reports. Unit tests on small folders made here; the real runs are in test_compare.py."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pandas as pd
import pytest
from conftest import MACHINE, REPO, canary_samples, key, result_folder

from numa_effects import stats
from numa_effects.compare import provenance as compare_provenance
from numa_effects.compare import runs as compare_runs
from numa_effects.compare import settings as compare_plan
from numa_effects.compare import statistics as compare_stats
from numa_effects.compare import tables as compare_tables


def cell(medians_ms, pooled=(math.nan, 0), **keys) -> dict:
    """One cells.csv row as the pipeline makes it from its replicates' medians (ms)."""
    c = stats.combine_replicates(np.asarray(medians_ms) / 1000.0, (), pooled)
    return {
        **key(**keys),
        "status": "ok",
        "replicates": len(medians_ms),
        "latency_median_ms": c["median_s"] * 1000,
        "latency_mean_ms": c["median_s"] * 1010,
        "latency_ci_low_ms": c["ci_low_s"] * 1000,
        "latency_ci_high_ms": c["ci_high_s"] * 1000,
        "latency_min_ms": min(medians_ms) * 0.98,
        "latency_max_ms": max(medians_ms) * 1.02,
        "ci_df": c["ci_df"],
        "ci_method": c["ci_method"],
        "replicate_medians_ms": ";".join(f"{m:.4g}" for m in medians_ms),
        "contended": False,
        "noisy": False,
        "load_1m": 0.3,
    }


POOL = (0.02**2, 10)  # a run's pooled process-level variance (2 % SD)


def run(folder, cells, machine=None):
    return result_folder(folder, cells, machine)


def runs(*folders, across=()):
    labels = compare_plan.derive_labels([str(f) for f in folders])
    return compare_runs.read_runs([str(f) for f in folders], labels, across)


@pytest.fixture
def two(tmp_path):
    """runs a and b: bs1 the same, bs2 20 % slower in b, bs4 only in a, bs8 only in b."""
    a = run(
        tmp_path / "a/results",
        [
            cell([10.0, 10.2], POOL, batch_size=1),
            cell([20.0, 20.3], POOL, batch_size=2),
            cell([40.0, 40.5], POOL, batch_size=4),
        ],
    )
    b = run(
        tmp_path / "b/results",
        [
            cell([10.1, 10.0], POOL, batch_size=1),
            cell([24.0, 24.2], POOL, batch_size=2),
            {**cell([80.0, 81.0], POOL, batch_size=8), "noisy": True},
        ],
    )
    return a, b


def test_cells_are_matched_on_every_key_and_the_others_listed(two):
    rs = runs(*two)
    assert [r.label for r in rs] == ["a", "b"]
    c = compare_tables.compare_table(rs)
    assert c["batch_size"].tolist() == [1, 2] and set(c["run"]) == {"b"}
    u = compare_tables.unmatched_table(rs)
    assert sorted(zip(u["only_in"], u["batch_size"], strict=True)) == [("a", 4), ("b", 8)]
    assert list(u.columns) == compare_tables.UNMATCHED_COLUMNS


def test_the_ratio_is_the_two_level_interval_of_both_cells(two):
    rs = runs(*two)
    c = compare_tables.compare_table(rs).set_index("batch_size")
    a, b = (r.cells.set_index("batch_size").loc[2] for r in rs)
    # By hand (docs/comparing.md), with scipy's t rather than the package's: a cell's two-level
    # CI is t(df) se either side of its log-centre, so se = ln(high / low) / (2 t(df)); the two
    # runs' processes are independent, so ln(ratio) has variance se_a^2 + se_b^2, its df by
    # Welch-Satterthwaite, centred on the difference of the log-centres.
    from scipy.stats import t

    def log_centre_se(cell):
        lo, hi = cell.latency_ci_low_ms, cell.latency_ci_high_ms
        return math.log(lo * hi) / 2, math.log(hi / lo) / (2 * t.ppf(0.975, cell.ci_df))

    (ca, sa), (cb, sb) = log_centre_se(a), log_centre_se(b)
    df = (sa**2 + sb**2) ** 2 / (sa**4 / a.ci_df + sb**4 / b.ci_df)
    half = t.ppf(0.975, df) * math.sqrt(sa**2 + sb**2)
    row = c.loc[2]
    assert row.ratio == pytest.approx(b.latency_median_ms / a.latency_median_ms)
    assert row.ratio == pytest.approx(math.exp(cb - ca))
    assert (row.ratio_ci_low, row.ratio_ci_high) == pytest.approx(
        (math.exp(cb - ca - half), math.exp(cb - ca + half))
    )
    assert row.ci_df == pytest.approx(df)
    assert row.latency_change_pct == pytest.approx((row.ratio - 1) * 100)
    assert row.ci_method == "two-level" and row.significant is True and row.verdict == "slower"
    same = c.loc[1]
    assert same.significant is False and same.verdict == compare_stats.NO_CHANGE
    assert same.latency_change_ci_low_pct < 0 < same.latency_change_ci_high_pct


def test_contended_or_noisy_on_either_side_is_marked_and_a_minimum_effect_applies(tmp_path):
    a = run(tmp_path / "x/a", [cell([10.0, 10.1], POOL), cell([20.0, 20.1], POOL, threads=2)])
    b = run(
        tmp_path / "x/b",
        [{**cell([10.3, 10.4], POOL), "contended": True}, cell([20.3, 20.4], POOL, threads=2)],
    )
    c = compare_tables.compare_table(runs(a, b), min_effect_pct=5.0)
    assert c["contended"].tolist() == [True, False] and c["noisy"].tolist() == [False, False]
    assert (c["latency_change_pct"] < 5).all()
    assert set(c["verdict"]) <= {compare_stats.NO_CHANGE}  # significant or not: below 5 %
    s = compare_tables.summary_table(c, 5.0).set_index("scope")
    assert s.loc[compare_tables.ALL, "cells"] == 2 and s.loc[compare_tables.CLEAN, "cells"] == 1
    assert s.loc[compare_tables.ALL, "disturbed"] == 1


def test_one_process_per_cell_is_not_assessed_and_says_why(tmp_path):
    lone = {**cell([10.0]), "ci_method": "within-process", "ci_df": 0}
    a = run(tmp_path / "p/a", [lone])
    b = run(tmp_path / "p/b", [{**lone, "latency_median_ms": 15.0}])
    (row,) = compare_tables.compare_table(runs(a, b)).to_dict("records")
    assert row["verdict"] == compare_stats.NOT_ASSESSED and row["significant"] is None
    assert row["ratio"] == pytest.approx(1.5) and math.isnan(row["ratio_ci_low"])
    assert row["ci_note"] == compare_tables.ONE_PROCESS_NOTE
    s = compare_tables.summary_table(compare_tables.compare_table(runs(a, b))).iloc[0]
    assert s["not_assessed"] == 1 and s["beyond_min_effect_slower"] == 1


def test_a_failed_cell_on_one_side_has_no_value(tmp_path):
    a = run(tmp_path / "f/a", [cell([10.0, 10.1], POOL)])
    b = run(tmp_path / "f/b", [{**key(), "status": "failed", "failure_cause": "timeout"}])
    (row,) = compare_tables.compare_table(runs(a, b)).to_dict("records")
    assert row["status"] == "failed" and row["verdict"] == "no value"
    assert math.isnan(row["ratio"]) and "compared cell is failed" in row["ci_note"]


def test_a_new_axis_joins_the_match_and_across_compares_over_it(tmp_path):
    """An axis of the grid (the allocator, added after the comparison was written) is a key
    column: cells that differ in it do not match, until the comparison is across it (one value
    on each side)."""
    assert "allocator" in compare_runs.KEYS
    a = run(tmp_path / "n/glibc", [{**cell([10.0, 10.1], POOL), "allocator": "glibc"}])
    b = run(tmp_path / "n/tcmalloc", [{**cell([8.0, 8.1], POOL), "allocator": "tcmalloc"}])
    why = compare_runs.pair_problem(*(compare_runs.read_run(f, f.name) for f in (a, b)))
    assert "no cell in common on model, opt, placement, threads, batch_size, allocator" in why
    assert "every cell differs in allocator (glibc vs tcmalloc)" in why
    rs = runs(a, b, across=["allocator"])
    row = compare_tables.compare_table(rs, across=["allocator"]).iloc[0]
    assert (row.allocator, row.allocator_compared, row.verdict) == ("glibc", "tcmalloc", "faster")


def test_across_an_axis_needs_one_value_per_run(tmp_path):
    a = run(tmp_path / "t/a", [cell([10.0, 10.1], POOL)])
    b = run(tmp_path / "t/b", [cell([6.0, 6.1], POOL, threads=2), cell([5, 5.1], POOL, threads=4)])
    with pytest.raises(compare_runs.CompareError, match=r"no cell in common.*differs in threads"):
        runs(a, b)
    with pytest.raises(compare_runs.CompareError, match="has 2 values of threads"):
        runs(a, b, across=["threads"])
    b1 = run(tmp_path / "t/b1", [cell([6.0, 6.1], POOL, threads=2)])
    row = compare_tables.compare_table(runs(a, b1, across=["threads"]), across=["threads"]).iloc[0]
    assert (row.threads, row.threads_compared, row.verdict) == (1, 2, "faster")


def test_provenance_differences_and_a_comparison_across_machines(tmp_path):
    other = {"summary": {"cpu_model": "Other CPU", "nodes": 2, "physical_cores": 32}, "host": {}}
    a = run(tmp_path / "m/a", [cell([10.0, 10.1], POOL)])
    b = run(tmp_path / "m/b", [{**cell([10.0, 10.1], POOL), "torch_version": "2.15"}], other)
    p = compare_provenance.provenance_table(runs(a, b))
    diff = p[p["differs"].eq(True)]
    assert {"cpu_model", "nodes", "physical_cores", "torch"} <= set(diff["fact"])
    assert not p[p["fact"] == "protocol"]["differs"].any()
    assert compare_provenance.machines(p) == {
        "same": False,
        "differ": ["cpu_model", "nodes", "physical_cores"],
    }
    assert (
        compare_provenance.machines(compare_provenance.provenance_table(runs(a, a)))["same"] is True
    )
    imported = {"summary": {"cpu_model": "not recorded (imported from PackRat)"}, "host": {}}
    c = run(tmp_path / "m/c", [cell([10.0, 10.1], POOL)], imported)
    d = run(tmp_path / "m/d", [cell([10.0, 10.1], POOL)], imported)
    assert (
        compare_provenance.machines(compare_provenance.provenance_table(runs(c, d)))["same"] is None
    )


def test_folders_that_cannot_be_compared_say_why(tmp_path):
    (tmp_path / "empty").mkdir()
    assert "does not exist" in compare_runs.folder_problem(tmp_path / "nope")
    assert "is not a result folder (no tables/cells.csv and no machine.json)" in (
        compare_runs.folder_problem(tmp_path / "empty")
    )
    bad = result_folder(tmp_path / "bad", [{"x": 1}])
    assert "has no model, opt, placement" in compare_runs.folder_problem(bad)
    ok = result_folder(tmp_path / "ok", [cell([1.0])], MACHINE)
    assert compare_runs.folder_problem(ok) is None
    (ok / "machine.json").write_text("{")
    assert "machine.json is not JSON" in compare_runs.folder_problem(ok, shown="ok")


def test_the_plan_of_a_comparison_measures_nothing(tmp_path, two):
    from numa_effects.plan import build, topology

    a, b = two
    config = {"results": "out", "compare": [str(a), str(b)], "image_size": 224, "use_smt": False}
    keys = compare_runs.matched_keys([str(a), str(b)], ["a", "b"])
    plan = build.build(config, topology.current(), compare_keys=keys)
    assert not plan.grid.cells and not plan.peak and not plan.packing_jobs and not plan.measured
    assert plan.compare["labels"] == ["a", "b"] and plan.compare["name"] == "a-vs-b"
    assert plan.targets() == plan.compare_targets()
    assert plan.targets()[-1] == "out/compare/a-vs-b/index.html"
    assert [k["batch_size"] for k in keys] == [1, 2] and {k["run"] for k in keys} == {"b"}


@pytest.mark.parametrize(
    ("folders", "labels"),
    [
        (["runs/a/results", "runs/b/results"], ["a", "b"]),
        (
            ["results/packrat-glibc", "results/packrat-tcmalloc"],
            ["packrat-glibc", "packrat-tcmalloc"],
        ),
        (["results", "/tmp/x/results"], ["results", "x-results"]),
        (["a/results", "b/results", "c/d/results"], ["a", "b", "d"]),
        (["..", "."], ["run1", "run2"]),
    ],
)
def test_labels_tell_the_folders_apart(folders, labels):
    assert compare_plan.derive_labels(folders) == labels
    s = compare_plan.settings({"compare": {"runs": folders, "name": "x", "min_effect_pct": 5}})
    assert s["name"] == "x" and s["min_effect_pct"] == 5.0 and s["baseline"] == labels[0]


def test_summary_counts_and_geomean(two):
    c = compare_tables.compare_table(runs(*two))
    s = compare_tables.summary_table(c).set_index("scope").loc[compare_tables.ALL]
    g = compare_stats.geomean_ratio(c["ratio"].tolist())
    assert s["cells"] == 2 and s["geomean_ratio"] == pytest.approx(g["geomean"])
    assert (s["slower"], s["faster"], s["no_significant_change"]) == (1, 0, 1)
    assert s["cells_significant"] == 1
    assert s["geomean_ci_low_pct"] == pytest.approx((g["ci_low"] - 1) * 100)
    assert isinstance(compare_tables.summary_table(c), pd.DataFrame)


# -- the figures and the page ---------------------------------------------------------------------


def test_the_comparison_figures_are_planned_from_matched_cells_and_drawn(two, tmp_path):
    from numa_effects.report import data, families, figures, plots

    a, b = two
    rs = runs(a, b)
    c = compare_tables.compare_table(rs)
    path = tmp_path / "compare.csv"
    c.to_csv(path, index=False)
    keys = compare_runs.matched_keys([str(a), str(b)], ["a", "b"])
    figs = figures.figures(keys, page=families.COMPARE_PAGE)
    assert [(f.family, f.run, f.opt, f.placement) for f in figs] == [
        ("compare_forest", "b", "none", ""),
        ("compare_heatmap", "b", "none", "sequential"),
    ]
    # the run's own report plans none of them
    assert not {f.family for f in figures.figures(keys)} & {f.family for f in figs}
    assert figs[0].path("f") == "f/b/resnet18/compare_forest/none.png"
    tables = data.Tables.load(compare=str(path))
    d = data.run_change(tables, "b", "resnet18", "none")
    # the heatmap's grid: batch 4 of a only is a missing cell, never drawn as a value
    assert sorted(zip(d["batch_size"], d["pct_status"], strict=True)) == [
        (1, "ok"),
        (2, "ok"),
    ]
    for f in figs:
        png = tmp_path / f"{f.family}.png"
        plots.save(plots.draw(f.family, tables, f.wildcards), str(png))
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_page_says_what_differs_first_and_lists_what_was_not_compared(tmp_path):
    from numa_effects.compare import page as compare_page
    from numa_effects.report import families, figures

    other = {"summary": {"cpu_model": "Other CPU", "nodes": 2}, "host": {}}
    a = run(tmp_path / "w/a", [cell([10.0, 10.1], POOL), cell([30.0, 30.5], POOL, batch_size=8)])
    b = run(tmp_path / "w/b", [cell([12.0, 12.1], POOL)], other)
    rs = runs(a, b)
    c = compare_tables.compare_table(rs)
    p = compare_provenance.provenance_table(rs)
    settings = compare_plan.settings({"compare": [str(a), str(b)]})
    keys = compare_runs.matched_keys([str(a), str(b)], settings["labels"])
    figs = figures.figures(keys, page=families.COMPARE_PAGE)
    html = compare_page.render(
        settings,
        [f.as_dict() for f in figs],
        c,
        compare_tables.summary_table(c),
        p,
        compare_tables.unmatched_table(rs),
        compare_provenance.machines(p),
        page_dir=str(tmp_path),
        figure_dir=str(tmp_path / "figures"),
    )
    banner = html.index('id="across-machines"')
    assert banner < html.index('id="differences"') < html.index('id="summary"')
    assert "these runs differ in cpu_model, nodes" in html
    assert "1 cells have no match (1 only in a)" in html
    assert 'src="figures/b/resnet18/compare_forest/none.png"' in html
    assert "over 1 matched cells" in html and "1 slower" in html
    assert 'id="not-assessed"' not in html  # every cell had its two-level CI


PEAKS = REPO / "tests" / "fixtures" / "peaks"


def _with_peaks(folder, name):
    shutil.copy(PEAKS / name, folder / "tables" / "peak.csv")
    return folder


def test_the_peaks_both_runs_measured_are_compared(two):
    """Real peak tables of two runs on a host that slowed between them (tests/fixtures/peaks):
    every peak both measured is in peaks.csv with its change, computed here from the files."""
    a, b = (_with_peaks(f, n) for f, n in zip(two, ("first.csv", "rerun.csv"), strict=True))
    p = compare_tables.peak_table(runs(a, b))
    first, rerun = (pd.read_csv(PEAKS / n) for n in ("first.csv", "rerun.csv"))
    expected = first.merge(rerun, on=["placement", "threads", "dtype"])
    assert len(p) == len(expected) == len(first)
    assert list(p.columns) == compare_tables.PEAK_COLUMNS
    got = p.set_index(["threads", "dtype"])["peak_change_pct"]
    want = (expected["peak_gflop_per_s_y"] / expected["peak_gflop_per_s_x"] - 1) * 100
    assert got.to_numpy() == pytest.approx(
        want.set_axis(pd.MultiIndex.from_frame(expected[["threads", "dtype"]]))
        .reindex(got.index)
        .to_numpy()
    )
    assert set(p["run"]) == {"b"} and set(p["baseline_run"]) == {"a"}
    # the other way round: the reciprocal (+ = the compared run's kernels ran faster)
    back = compare_tables.peak_table(runs(b, a)).set_index(["threads", "dtype"])["peak_change_pct"]
    assert ((1 + back / 100) * (1 + got.reindex(back.index) / 100)).to_numpy() == pytest.approx(1)


def test_peaks_only_where_both_runs_have_them(two):
    a, b = two
    assert compare_tables.peak_table(runs(a, b)).empty  # neither has a peak table
    _with_peaks(a, "first.csv")
    assert compare_tables.peak_table(runs(a, b)).empty  # an import has none, say
    failed = pd.read_csv(PEAKS / "rerun.csv")
    failed.loc[failed["dtype"] == "bfloat16", "status"] = "failed"
    failed.to_csv(b / "tables" / "peak.csv", index=False)
    p = compare_tables.peak_table(runs(a, b))
    assert set(p["dtype"]) == {"float32"} and len(p) == (failed["dtype"] == "float32").sum()
    (b / "tables" / "peak.csv").write_text("placement,threads\n")  # no peak column
    assert compare_tables.peak_table(runs(a, b)).empty


def _page_args(rs, tmp_path) -> tuple[tuple, dict]:
    """compare_page.render's positional and keyword arguments for the runs ``rs``."""
    c = compare_tables.compare_table(rs)
    p = compare_provenance.provenance_table(rs)
    args = (
        compare_plan.settings({"compare": [r.folder for r in rs]}),
        [],
        c,
        compare_tables.summary_table(c),
        p,
        compare_tables.unmatched_table(rs),
        compare_provenance.machines(p),
    )
    return args, {"page_dir": str(tmp_path), "figure_dir": str(tmp_path / "figures")}


def test_the_page_shows_the_peaks_beside_the_cells_shift(two, tmp_path):
    from numa_effects.compare import page as compare_page

    a, b = (_with_peaks(f, n) for f, n in zip(two, ("first.csv", "rerun.csv"), strict=True))
    rs = runs(a, b)
    peaks = compare_tables.peak_table(rs)
    args, where = _page_args(rs, tmp_path)
    html = compare_page.render(*args, **where, peaks=peaks)
    assert html.index('id="summary"') < html.index('id="peaks"') < html.index('id="unmatched"')
    time = 100.0 / (1 + peaks["peak_change_pct"] / 100) - 100.0
    gm = (np.exp(np.log1p(time / 100).mean()) - 1) * 100
    assert f"changed by {time.min():+.1f} % … {time.max():+.1f} %" in html
    assert f"geometric mean <b>{gm:+.1f} %</b>" in html
    assert 'id="peaks"' not in compare_page.render(*args, **where)


def test_a_comparison_reads_the_peak_tables_it_has(two):
    from numa_effects.plan import build, topology

    a, b = two
    _with_peaks(b, "rerun.csv")
    config = {"results": "out", "compare": [str(a), str(b)], "image_size": 224, "use_smt": False}
    plan = build.build(config, topology.current(), compare_keys=[])
    assert plan.compare_inputs()["peaks"] == [f"{b}/tables/peak.csv"]
    assert plan.compare_table("peaks", "a-vs-b") in plan.compare_targets()


# -- at the baseline's reference speed (config key canary; tables.speed) -------------------------


def _canary_run(folder, rng, speed_mean=0.0, slower=None, allocator=None):
    """A result folder of 4 cells x 8 replicates with the canary (conftest.canary_samples:
    slope 0.87, the processes' speed SD 8 %, their own 3 %): cells.csv from the replicates'
    medians and samples.csv; the host's log speed centred on ``speed_mean``, and the cells of
    ``slower`` (batch size -> factor) really slower."""
    samples, _ = canary_samples(rng, 4, 8, 0.87, speed_mean=speed_mean)
    for b, factor in (slower or {}).items():
        samples.loc[samples["batch_size"] == b, "latency_ms"] *= factor
    med = samples.groupby(["batch_size", "replicate"])["latency_ms"].median()
    rows = [cell(list(med[b]), POOL, model="resnet50", batch_size=b) for b in range(1, 5)]
    if allocator:
        samples["allocator"] = allocator
        rows = [{**r, "allocator": allocator} for r in rows]
    result_folder(folder, rows)
    samples.to_csv(folder / "tables" / "samples.csv", index=False)
    return folder


def test_a_run_on_a_slower_host_compared_at_the_baselines_reference_speed(tmp_path):
    """The compared run's host is 6 % slower throughout (its canary sees it) and one cell (batch
    2) is really 10 % slower: the plain ratios carry the host (about +5 % everywhere), the ratios
    at the baseline's reference speed only the real change; canary_change_pct is the canaries'
    own difference, computed here from the samples."""
    rng = np.random.default_rng(7)
    a = _canary_run(tmp_path / "a/results", rng)
    b = _canary_run(tmp_path / "b/results", rng, speed_mean=0.06, slower={2: 1.10})
    c = compare_tables.compare_table(runs(a, b)).set_index("batch_size")
    assert (
        list(compare_tables.compare_table(runs(a, b)).columns) == compare_tables.compare_columns()
    )
    truth = pd.Series([1.0, 1.10, 1.0, 1.0], index=range(1, 5))
    err = c["speed_ratio"] / truth - 1
    assert (err.abs() < 0.05).all(), err
    assert c.loc[2, "speed_ratio_ci_low"] > 1.0  # the real change stays significant
    same = c.drop(index=2)
    assert ((same["speed_ratio_ci_low"] < 1) & (same["speed_ratio_ci_high"] > 1)).all()
    assert np.exp(np.log(same["ratio"]).mean()) > 1.02  # the plain ratios carry the host
    assert (same["speed_ratio_ci_high"] / same["speed_ratio_ci_low"]).max() < (
        same["ratio_ci_high"] / same["ratio_ci_low"]
    ).min()  # and their intervals the processes' speeds
    canary = {
        f: pd.read_csv(f / "tables" / "samples.csv")
        .groupby(["batch_size", "replicate"])["canary_ms"]
        .median()
        .pipe(np.log)
        .groupby("batch_size")
        .mean()
        for f in (a, b)
    }
    want = np.expm1(canary[b] - canary[a]) * 100
    assert c["canary_change_pct"].to_numpy() == pytest.approx(want.to_numpy())
    # each side along its own run's fit (4 cells x (8 - 1) - 1 = 27 degrees of freedom each):
    # Welch-Satterthwaite between the one and the sum of both
    assert ((c["speed_ci_df"] >= 27) & (c["speed_ci_df"] <= 54)).all()
    # a compared run of one process per cell has no fit: both sides along the baseline's
    one = b.parent.parent / "one/results"
    shutil.copytree(b, one)
    single = pd.read_csv(one / "tables" / "samples.csv")
    single[single["replicate"] == 1].to_csv(one / "tables" / "samples.csv", index=False)
    c1 = compare_tables.compare_table(runs(a, one))
    assert c1["speed_ratio"].notna().all() and (c1["speed_ci_df"] == 27).all()


def test_no_ratio_at_the_reference_speed_without_the_canary_on_both_sides(tmp_path):
    from numa_effects.plan import build, topology

    rng = np.random.default_rng(1)
    a = _canary_run(tmp_path / "c/results", rng)
    b = _canary_run(tmp_path / "d/results", rng)
    assert compare_tables.compare_table(runs(a, b))["speed_ratio"].notna().all()
    samples = pd.read_csv(b / "tables" / "samples.csv")
    samples.assign(canary_ms=np.nan).to_csv(b / "tables" / "samples.csv", index=False)
    blind = compare_tables.compare_table(runs(a, b))
    assert blind["speed_ratio"].isna().all() and blind["canary_change_pct"].isna().all()
    assert blind["ratio"].notna().all()
    (b / "tables" / "samples.csv").unlink()
    assert compare_tables.compare_table(runs(a, b))["speed_ratio"].isna().all()
    # the plan reads the samples a folder has, and only those
    config = {"results": "out", "compare": [str(a), str(b)], "image_size": 224, "use_smt": False}
    plan = build.build(config, topology.current(), compare_keys=[])
    assert plan.compare_inputs()["samples"] == [f"{a}/tables/samples.csv"]


def test_the_page_gives_the_canary_and_the_change_at_the_reference_speed(tmp_path):
    from numa_effects.compare import page as compare_page

    rng = np.random.default_rng(7)
    a = _canary_run(tmp_path / "a/results", rng)
    b = _canary_run(tmp_path / "b/results", rng, speed_mean=0.06)
    args, where = _page_args(runs(a, b), tmp_path)
    c = args[2]
    html = compare_page.render(*args, **where)
    canary = (np.exp(np.log1p(c["canary_change_pct"] / 100).mean()) - 1) * 100
    at = (np.exp(np.log(c["speed_ratio"]).mean()) - 1) * 100
    assert 'id="canary"' in html
    assert f"over the 4 cells both timed with the canary: the canary {canary:+.1f} %" in html
    assert f"at the baseline's reference speed <b>{at:+.1f} %</b>" in html
    blind = c.assign(speed_ratio=np.nan)
    assert 'id="canary"' not in compare_page.render(*args[:2], blind, *args[3:], **where)


def test_across_an_allocator_each_side_moves_along_its_own_runs_fit(tmp_path):
    rng = np.random.default_rng(3)
    a = _canary_run(tmp_path / "a/results", rng)
    b = _canary_run(tmp_path / "b/results", rng, speed_mean=0.06, allocator="jemalloc")
    across = ("allocator",)
    c = compare_tables.compare_table(runs(a, b, across=across), across=across)
    assert (c["allocator_compared"] == "jemalloc").all() and c["speed_ratio"].notna().all()
    assert (c["speed_ratio"] / 1.0 - 1).abs().max() < 0.06
    assert ((c["speed_ci_df"] >= 27) & (c["speed_ci_df"] <= 54)).all()
    # across the canary's own conditions: no ratio at the reference speed
    t2 = _canary_run(tmp_path / "t2/results", rng)
    samples = pd.read_csv(t2 / "tables" / "samples.csv").assign(threads=2)
    samples.to_csv(t2 / "tables" / "samples.csv", index=False)
    cells = pd.read_csv(t2 / "tables" / "cells.csv").assign(threads=2)
    cells.to_csv(t2 / "tables" / "cells.csv", index=False)
    across = ("threads",)
    c = compare_tables.compare_table(runs(a, t2, across=across), across=across)
    assert c["ratio"].notna().all() and c["speed_ratio"].isna().all()


def test_a_cell_reported_under_a_second_name_is_compared_once(tmp_path):
    """A row reported from another cell's measurement (``same_binding_as``: interleave binding
    as sequential, plan.binding) repeats that measurement: a comparison of runs reads each
    measurement once, so the geometric mean does not count it twice."""

    def both(medians, **keys):
        seq = {**cell(medians, POOL, **keys), "same_binding_as": None}
        return [seq, {**seq, "placement": "interleave", "same_binding_as": "sequential"}]

    a = run(
        tmp_path / "a/results", both([10.0, 10.2], batch_size=1) + both([20.0, 20.1], batch_size=2)
    )
    b = run(
        tmp_path / "b/results", both([11.0, 11.1], batch_size=1) + both([20.2, 20.0], batch_size=2)
    )
    ra, rb = runs(a, b)
    assert set(ra.cells["placement"]) == {"sequential"} and len(ra.cells) == 2
    table = compare_tables.compare_table([ra, rb])
    assert len(table) == 2
    (whole,) = (
        compare_tables.summary_table(table).query("scope == @compare_tables.ALL").to_dict("records")
    )
    assert whole["cells"] == 2
