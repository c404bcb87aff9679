"""Drawing the figures from the fixture tables (no torch, no snakemake): failed, skipped and
missing cells are shown as such, heatmaps are centred on 0 with one decimal."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.markers import MarkerStyle

from numa_effects.plan import grid
from numa_effects.plan.optimizations import OPTIMIZATIONS
from numa_effects.plan.placement import PLACEMENTS
from numa_effects.report import data as figure_data
from numa_effects.report import families, figures, plots, style

FIX = Path(__file__).parent / "fixtures" / "tables"
FAILED = ("script", "interleave", 4, 8)  # see tests/fixtures/tables/make_fixture.py
MISSING = ("none", "sequential", 2, 64)
# The families planned from the cells alone (packing figures follow the config key packing and
# draw tables/packing.csv: tests/test_packing*.py)
FROM_CELLS = [f.name for f in families.FAMILIES if f.plan in ("sequential", "comparison")]


@pytest.fixture(scope="module")
def tables():
    return figure_data.Tables.load(FIX / "cells.csv", FIX / "skipped.csv", FIX / "degradation.csv")


def texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_universe_knows_every_cell_status(tables):
    u = tables.universe("resnet50").set_index(["opt", "placement", "threads", "batch_size"])
    assert u.loc[FAILED, "status"] == "failed"
    assert u.loc[MISSING, "status"] == "missing"
    assert u.loc[("script", "remote", 8, 1), "status"] == "skipped"
    assert u.loc[("script", "sequential", 4, 8), "status"] == "ok"
    # a cell that is not ok has no value: it can never be drawn as 0
    for key in (FAILED, MISSING, ("script", "remote", 8, 1)):
        assert np.isnan(u.loc[key, "lat"]) and np.isnan(u.loc[key, "thr"])
    assert len(u) == 2 * 3 * 4 * 3  # opt x placement x threads x batch


def test_latency_is_the_median_when_present_else_the_mean(tables):
    assert tables.latency_column == "latency_median_ms"
    no_median = figure_data.Tables(tables.cells.drop(columns=["latency_median_ms"]), tables.skipped)
    assert no_median.latency_column == "latency_mean_ms"
    fig = plots.draw("latency_per_batch", no_median, {"model": "resnet50", "batch_size": 8})
    assert "mean (ms)" in fig.axes[0].get_ylabel()
    fig = plots.draw("latency_per_batch", tables, {"model": "resnet50", "batch_size": 8})
    assert "median (ms)" in fig.axes[0].get_ylabel()


def test_line_breaks_at_a_failed_cell_and_marks_it(tables):
    fig = plots.draw(
        "numa_latency_per_batch", tables, {"model": "resnet50", "opt": "script", "batch_size": 8}
    )
    ax = fig.axes[0]
    line = next(ln for ln in ax.get_lines() if ln.get_label() == "interleave")
    x, y = line.get_xdata(), np.asarray(line.get_ydata(), dtype=float)
    assert list(x) == [1, 2, 4, 8]
    assert np.isnan(y[2]) and not np.isnan(y[3])  # gap at the failed t=4, not 0
    remote = next(ln for ln in ax.get_lines() if ln.get_label() == "remote")
    assert np.isnan(np.asarray(remote.get_ydata(), dtype=float)[3])  # skipped t=8
    labels = ax.get_legend().get_texts()
    assert any("failed" in t.get_text() for t in labels)
    assert ax.get_title().startswith("Threads vs Latency by Placement (BS=8")


def test_titles_and_axis_units(tables):
    fig = plots.draw("throughput_per_batch", tables, {"model": "resnet50", "batch_size": 8})
    ax = fig.axes[0]
    assert ax.get_title() == "Threads vs Throughput (BS=8)"
    assert ax.get_ylabel() == "Throughput (images/s)"
    assert ax.get_xlabel() == "Intra-op threads"
    fig = plots.draw("throughput_per_batch_size", tables, {"model": "resnet50", "opt": "script"})
    assert fig.axes[0].get_xscale() == "log"
    assert "log2" in fig.axes[0].get_xlabel()


def test_colours_are_fixed_per_opt_and_placement(tables):
    def colours(family, wc):
        fig = plots.draw(family, tables, {"model": "resnet50", **wc})
        return {ln.get_label(): ln.get_color() for ln in fig.axes[0].get_lines()}

    a = colours("latency_per_batch", {"batch_size": 1})
    b = colours("throughput_per_batch", {"batch_size": 64})
    script = OPTIMIZATIONS["script"]
    assert a[script.legend] == b[script.legend] == script.color  # the registry's
    c = colours("numa_throughput_per_batch", {"opt": "none", "batch_size": 1})
    assert c["interleave"] == PLACEMENTS["interleave"].color


def test_heatmap_is_centred_on_zero_with_one_decimal_and_marks(tables):
    fig = plots.draw(
        "latency_degradation_heatmap",
        tables,
        {"model": "resnet50", "opt": "script", "placement": "interleave"},
    )
    ax = fig.axes[0]
    mesh = ax.collections[0]
    assert mesh.norm.vmin == pytest.approx(-mesh.norm.vmax)
    cmap, norm = mesh.get_cmap(), mesh.norm
    assert min(cmap(norm(0.0))[:3]) > 0.9  # 0 is (near) white
    r, _, b, _ = cmap(norm(-5.0))
    assert b > r  # faster than sequential: blue
    r, _, b, _ = cmap(norm(5.0))
    assert r > b  # slower: red
    t = texts(fig)
    deg = pd.read_csv(FIX / "degradation.csv")
    row = deg[(deg.opt == "script") & (deg.threads == 2) & (deg.batch_size == 1)].iloc[0]
    assert f"{row.latency_degradation_pct:.1f}" in t  # e.g. 15.8, not 16
    assert "failed" in t  # script/interleave/t4/bs8
    assert "skipped" not in t
    # one hatch per non-significant cell of this (opt, placement)
    mine = deg[(deg.opt == "script") & (deg.placement == "interleave")]
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert len(hatched) == int((~mine.significant.astype(bool)).sum())
    fig = plots.draw(
        "latency_degradation_heatmap",
        tables,
        {"model": "resnet50", "opt": "none", "placement": "interleave"},
    )
    assert "missing" in texts(fig)  # none/sequential/t2/bs64 is in no table
    fig = plots.draw(
        "latency_degradation_heatmap",
        tables,
        {"model": "resnet50", "opt": "script", "placement": "remote"},
    )
    assert texts(fig).count("skipped") == 3  # remote on 8 threads: 4 cores on node 0


def test_heatmap_without_cis_says_significance_is_not_assessed(tables):
    deg = tables.degradation.copy()
    for c in deg.columns:
        if "ci_" in c or c == "significant":
            deg[c] = None
    t = figure_data.Tables(tables.cells, tables.skipped, deg)
    fig = plots.draw(
        "throughput_degradation_heatmap",
        t,
        {"model": "resnet50", "opt": "script", "placement": "interleave"},
    )
    assert not [p for p in fig.axes[0].patches if p.get_hatch()]
    assert any("significance not assessed" in s for s in texts(fig))


def test_loss_plot_has_error_bars_where_cis_exist(tables):
    fig = plots.draw(
        "numa_latency_loss", tables, {"model": "resnet50", "opt": "none", "batch_size": 1}
    )
    ax = fig.axes[0]
    assert ax.containers, "error bars expected"
    assert "% latency degradation" in ax.get_ylabel()


def test_speedup_is_relative_to_one_thread(tables):
    fig = plots.draw("speedup", tables, {"model": "resnet50", "opt": "script"})
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    y = np.asarray(lines["BS=1"].get_ydata(), dtype=float)
    assert y[0] == pytest.approx(1.0)
    assert "mean over batch sizes" in lines


def test_color_limit_ignores_a_few_outliers():
    v = np.array([1.0] * 30 + [150.0])
    lim, extend = style.color_limit(v)
    assert lim == pytest.approx(1.0) and extend == "both"
    assert style.color_limit(np.array([-3.0, 2.0])) == (3.0, "neither")
    assert style.pct1(-0.04) == "0.0"


@pytest.mark.parametrize("family", FROM_CELLS)
def test_every_family_saves_png_and_svg(tables, tmp_path, family):
    fig_spec = next(
        f
        for f in figures.figures(tables.cells[list(grid.KEYS)].to_dict("records"))
        if f.family == family
    )
    png, svg = fig_spec.path(str(tmp_path)), fig_spec.path(str(tmp_path), "svg")
    plots.save(plots.draw(family, tables, fig_spec.wildcards), png, svg)
    assert Path(png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in Path(svg).read_text()[:2000]


@pytest.fixture(scope="module")
def disturbed():
    """The fixture run with ``none/interleave/t2/bs8`` contended and ``script/sequential/t4/bs1``
    noisy (tests/fixtures/tables/README.md)."""
    return figure_data.Tables.load(
        FIX / "cells_contended.csv", FIX / "skipped.csv", FIX / "degradation.csv"
    )


def rings(fig) -> list[tuple[float, float]]:
    """(x, y) of the points ringed as contended or noisy."""
    out = []
    for ln in fig.axes[0].get_lines():
        ring = (ln.get_marker(), ln.get_markeredgecolor(), ln.get_markerfacecolor())
        if ring == ("o", style.DISTURBED_COLOR, "none") and ln.get_linestyle() == "None":
            out += list(zip(ln.get_xdata(), ln.get_ydata(), strict=True))
    return out


def legend_texts(fig) -> list[str]:
    return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def test_contended_and_noisy_cells_are_never_drawn_like_clean_ones(tables, disturbed):
    u = disturbed.universe("resnet50").set_index(["opt", "placement", "threads", "batch_size"])
    assert u.loc[("none", "interleave", 2, 8), "disturbed"]
    assert u.loc[("script", "sequential", 4, 1), "disturbed"]
    assert int(u["disturbed"].sum()) == 2
    assert not tables.universe("resnet50")["disturbed"].any()  # no columns: clean
    # line plot: the contended interleave point is ringed, with a legend entry
    wc = {"model": "resnet50", "opt": "none", "batch_size": 8}
    fig = plots.draw("numa_latency_per_batch", disturbed, wc)
    lat = u.loc[("none", "interleave", 2, 8), "lat"]
    assert rings(fig) == [(2, pytest.approx(lat))]
    assert style.DISTURBED_TEXT in legend_texts(fig)
    clean = plots.draw("numa_latency_per_batch", tables, wc)
    assert rings(clean) == [] and style.DISTURBED_TEXT not in legend_texts(clean)
    # the comparison inherits the flag of either cell: the loss plot rings t=2
    fig = plots.draw("numa_latency_loss", disturbed, wc)
    assert [x for x, _ in rings(fig)] == [2]
    # the noisy sequential cell: ringed in the sequential families too
    fig = plots.draw("latency_per_batch", disturbed, {"model": "resnet50", "batch_size": 1})
    assert [x for x, _ in rings(fig)] == [4]
    # heatmap: the cell is cross-hatched with a red frame, and a note says why
    fig = plots.draw(
        "latency_degradation_heatmap",
        disturbed,
        {"model": "resnet50", "opt": "none", "placement": "interleave"},
    )
    marked = [p for p in fig.axes[0].patches if p.get_hatch() == style.DISTURBED_HATCH]
    assert len(marked) == 1
    bss = sorted(disturbed.cells["batch_size"].unique(), reverse=True)
    threads = sorted(disturbed.cells["threads"].unique())
    assert marked[0].get_xy() == (threads.index(2), bss.index(8))
    assert any(style.DISTURBED_TEXT in s for s in texts(fig))


def marks_disturbed(fig) -> bool:
    """Whether a figure marks a contended or noisy cell: a ring, a hatch or the words."""
    words = texts(fig) + [
        t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()
    ]
    hatched = [p for ax in fig.axes for p in ax.patches if p.get_hatch() == style.DISTURBED_HATCH]
    return bool(rings(fig) or hatched or any(style.DISTURBED_TEXT in w for w in words))


def shows_disturbed(cells: pd.DataFrame, family: families.Family, wildcards: dict) -> bool:
    """Whether the cells a figure shows hold a disturbed one, from the table alone: the cells of
    its wildcards; a sequential family shows sequential cells, a comparison family its
    placement(s) and their baseline (every placement of the fixture is compared against
    sequential), whose flag a compared pair inherits."""
    shown = cells["model"].notna()
    for k, v in wildcards.items():
        if k in cells and k != "placement":
            shown &= cells[k].astype(str) == str(v)
    if family.plan == "sequential":
        shown &= cells["placement"] == "sequential"
    elif "placement" in wildcards:
        shown &= cells["placement"].isin([wildcards["placement"], "sequential"])
    return bool((shown & cells[["contended", "noisy"]].eq(True).any(axis=1)).any())


@pytest.mark.parametrize("family", FROM_CELLS)
def test_every_family_draws_a_table_with_disturbed_cells(disturbed, family):
    """Every figure of the family is drawn, and marked exactly where the cells it shows hold a
    contended or noisy one (two in the fixture); at least one figure of each family is."""
    fam = next(f for f in families.FAMILIES if f.name == family)
    cells = disturbed.cells
    marked = []
    for f in figures.figures(cells[list(grid.KEYS)].to_dict("records")):
        if f.family != family:
            continue
        fig = plots.draw(family, disturbed, f.wildcards)
        assert fig.axes and fig.axes[0].has_data(), f.wildcards
        got = marks_disturbed(fig)
        plots.plt.close(fig)
        assert got == shows_disturbed(cells, fam, f.wildcards), f.wildcards
        marked.append(got)
    assert any(marked)


# -- cells with no value: marked along the x axis, below it ----------------------------------


def four_node_run() -> figure_data.Tables:
    """What a 4-node guest run gives the per-batch NUMA figure: four placements over threads 1-16
    whose latencies span more than ``style.LOG_Y_RATIO`` (a log y axis), some cells skipped
    (remote and mem-interleave need more cores of node 0) and one failed."""
    rows, skipped = [], []
    for p, slow in [
        ("sequential", 1.0),
        ("interleave", 1.3),
        ("remote", 1.6),
        ("mem-interleave", 1.2),
    ]:
        for t in (1, 2, 4, 8, 16):
            key = {
                "model": "resnet50",
                "opt": "none",
                "placement": p,
                "threads": t,
                "batch_size": 8,
            }
            if p in ("remote", "mem-interleave") and t >= 8:
                skipped.append({**key, "reason": f"{p} needs {t} physical cores on node 0"})
                continue
            lat = 4000.0 * slow / t**1.5
            status = "failed" if (p, t) == ("interleave", 2) else "ok"
            ok = status == "ok"
            rows.append(
                {
                    **key,
                    "status": status,
                    "latency_median_ms": lat if ok else None,
                    "throughput_ips": 8000.0 / lat if ok else None,
                    "failure_cause": None if ok else "timeout",
                }
            )
    return figure_data.Tables(pd.DataFrame(rows), pd.DataFrame(skipped))


def no_value_marks(fig):
    """The no-value markers of a line plot: collections drawn outside the data coordinates."""
    from matplotlib.collections import PathCollection

    ax = fig.axes[0]
    return [
        c
        for c in ax.collections
        if isinstance(c, PathCollection)
        and not c.get_offset_transform().contains_branch(ax.transData)
    ]


def data_x(fig, mark) -> float:
    """The data x of a no-value marker."""
    ax = fig.axes[0]
    display = mark.get_offset_transform().transform(mark.get_offsets())
    return ax.transData.inverted().transform(display)[0][0]


@pytest.mark.parametrize("family", ["numa_latency_per_batch", "numa_throughput_per_batch"])
def test_no_value_markers_sit_along_the_x_axis_below_the_data(family):
    """On a 4-node guest run the "skipped (no value)" squares were drawn at 250-350 ms
    among the real points (axes fractions 0.03 + 0.055 x line index, on a log y axis). They sit
    in a strip just below the x axis, above its tick labels, at the x of their cell."""
    fig = plots.draw(family, four_node_run(), {"model": "resnet50", "opt": "none", "batch_size": 8})
    ax = fig.axes[0]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    if family == "numa_latency_per_batch":
        assert ax.get_yscale() == "log"
    marks = no_value_marks(fig)
    assert len(marks) == 5  # 2 remote + 2 mem-interleave skipped, 1 interleave failed
    axes_box = ax.get_window_extent(renderer)
    labels_top = max(t.get_window_extent(renderer).y1 for t in ax.get_xticklabels() if t.get_text())
    for c in marks:
        (x, y) = ax.transAxes.inverted().transform(
            c.get_offset_transform().transform(c.get_offsets())
        )[0]
        data_x = ax.transData.inverted().transform(
            c.get_offset_transform().transform(c.get_offsets())
        )[0][0]
        assert 0.0 <= x <= 1.0 and data_x in (2, 8, 16)
        assert y < 0.0, f"marker inside the axes at axes fraction {y:.3f}"
        box = c.get_window_extent(renderer)
        assert box.y1 <= axes_box.y0 + 0.5  # not among the data
        assert box.y0 >= labels_top - 0.5  # not on the tick labels
    # two lines have no value at 16 threads: stacked, not drawn on top of each other
    at16 = sorted(
        ax.transAxes.inverted().transform(c.get_offset_transform().transform(c.get_offsets()))[0][1]
        for c in marks
        if ax.transData.inverted().transform(c.get_offset_transform().transform(c.get_offsets()))[
            0
        ][0]
        == 16
    )
    assert len(at16) == 2 and at16[0] < at16[1]
    # every real point lies in the axes, above the strip
    for ln in ax.get_lines():
        xy = ln.get_xydata()
        xy = xy[np.isfinite(xy[:, 1])]
        if len(xy) and ln.get_label() in ("sequential", "interleave", "remote", "mem-interleave"):
            ya = ax.transAxes.inverted().transform(ax.transData.transform(xy))[:, 1]
            assert (ya > 0).all()
    assert any("marked along the x axis" in t.get_text() for t in ax.texts)


# -- contended without a clean iteration: a status, never a number ----------------------------

NO_CLEAN = ("none", "interleave", 2, 8)  # the fixture row turned into a contended cell


@pytest.fixture(scope="module")
def no_clean():
    """cells.csv with ``none/interleave/t2/bs8`` as the measuring side writes a cell whose
    replicates had no clean iteration: ``status`` contended, no latency or throughput,
    ``contended`` true."""
    cells = figure_data.read_csv(FIX / "cells.csv")
    hit = (
        (cells["opt"] == NO_CLEAN[0])
        & (cells["placement"] == NO_CLEAN[1])
        & (cells["threads"] == NO_CLEAN[2])
        & (cells["batch_size"] == NO_CLEAN[3])
    )
    assert hit.sum() == 1
    cells["contended"] = False
    cells.loc[hit, "status"] = "contended"
    cells.loc[hit, "contended"] = True
    for c in cells.columns:
        if c.startswith(("latency_", "throughput_")):
            cells.loc[hit, c] = np.nan
    deg = figure_data.read_csv(FIX / "degradation.csv")
    return figure_data.Tables(cells, figure_data.read_csv(FIX / "skipped.csv"), deg)


def test_a_contended_cell_without_a_clean_iteration_is_a_status_not_a_number(no_clean):
    u = no_clean.universe("resnet50").set_index(["opt", "placement", "threads", "batch_size"])
    assert u.loc[NO_CLEAN, "status"] == "contended"
    assert u.loc[NO_CLEAN, "lat_status"] == "contended" and np.isnan(u.loc[NO_CLEAN, "lat"])
    wc = {"model": "resnet50", "opt": "none", "batch_size": 8}
    fig = plots.draw("numa_latency_per_batch", no_clean, wc)
    ax = fig.axes[0]
    line = next(ln for ln in ax.get_lines() if ln.get_label() == "interleave")
    assert np.isnan(np.asarray(line.get_ydata(), dtype=float)[1])  # t=2: a gap, not a value
    (mark,) = [c for c in no_value_marks(fig) if data_x(fig, c) == 2]  # (remote t8: skipped)
    diamond = MarkerStyle(style.STATUS_MARKERS["contended"])
    want = diamond.get_path().transformed(diamond.get_transform()).vertices
    assert np.allclose(mark.get_paths()[0].vertices, want)
    assert style.STATUS_LEGEND["contended"] in legend_texts(fig)
    assert "contended (no clean iteration)" in style.STATUS_LEGEND["contended"]
    assert rings(fig) == []  # no value: nothing to ring
    # the comparison has no value either: a gap and the marker in the loss plot
    fig = plots.draw("numa_latency_loss", no_clean, wc)
    assert sorted(data_x(fig, c) for c in no_value_marks(fig)) == [2, 8]  # and remote t8
    # the heatmap: a grey cell saying why, never a number
    fig = plots.draw(
        "latency_degradation_heatmap",
        no_clean,
        {"model": "resnet50", "opt": "none", "placement": "interleave"},
    )
    t = texts(fig)
    assert "contended\n(no clean\niteration)" in t
    note = next(s for s in t if "Grey cells have no value" in s)
    assert "1 contended" in note and "either cell of the pair has no value" in note
