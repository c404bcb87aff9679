"""The report's Node-pair matrix (docs/placements.md): which figures a grid gets, the
CPU-node x memory-node data with its change against the local diagonal, and the three drawings
(heatmaps, the memory matrix, the scatter against it), from tables built through the project's
own degradation code on samples with known effects (no torch, no snakemake)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from numa_effects.plan import grid, peaks, topology
from numa_effects.plan import node_pairs as node_pairs_mod
from numa_effects.report import data as figure_data
from numa_effects.report import families, figures, metrics, node_pair_plots, plots
from numa_effects.tables import degradation

FIXTURES = Path(__file__).parent / "fixtures" / "topology"
MODEL, OPT = "resnet50", "none"
# (cpu node, mem node) -> true slowdown against the diagonal; node 2 is memory-only (CXL-like)
TRUE = {(0, 0): 1.0, (0, 1): 1.20, (0, 2): 1.60, (1, 1): 1.0, (1, 0): 1.18}
SKIPPED = (1, 2)  # a pair whose cell was skipped
NOISE_FREE = (1, 0, 2)  # (cpu, mem, threads) with no true effect at all: not significant
BASE_MS = {1: 100.0, 2: 55.0}
MEMORY = {  # (cpu, mem) -> (latency ns, bandwidth GB/s, firmware distance)
    (0, 0): (100.0, 20.0, 10),
    (0, 1): (150.0, 14.0, 21),
    (0, 2): (300.0, 7.0, 40),
    (1, 1): (100.0, 20.0, 10),
    (1, 0): (160.0, 13.0, 21),
    (1, 2): (None, None, 40),
}


def _run(seed: int = 7):
    rng = np.random.default_rng(seed)
    cells, samples, skipped = [], [], []
    for (cpu, mem), slow in [*TRUE.items(), (SKIPPED, None)]:
        for t in (1, 2):
            for bs in (1, 8):
                key = dict(
                    model=MODEL, opt=OPT, placement=f"n{cpu}m{mem}", threads=t, batch_size=bs
                )
                if slow is None:
                    skipped.append({**key, "reason": "fixture: the pair was skipped"})
                    continue
                true = 1.0 if (cpu, mem, t) == NOISE_FREE else slow
                lat = BASE_MS[t] * bs**0.9 * true * np.exp(rng.normal(0, 0.01, 40))
                samples += [{**key, "iteration": i, "latency_ms": v} for i, v in enumerate(lat)]
                med = float(np.median(lat))
                cells.append(
                    {
                        **key,
                        "status": "ok",
                        "n": len(lat),
                        "latency_median_ms": med,
                        "latency_mean_ms": float(lat.mean()),
                        "latency_ci_low_ms": med * 0.99,
                        "latency_ci_high_ms": med * 1.01,
                        "throughput_ips": bs * 1000.0 / med,
                    }
                )
    cells, samples = pd.DataFrame(cells), pd.DataFrame(samples)
    memory = pd.DataFrame(
        [
            {
                "cpu_node": c,
                "mem_node": m,
                "placement": f"n{c}m{m}",
                "status": "ok" if lat else "skipped",
                "latency_ns": lat,
                "bandwidth_gb_per_s": bw,
                "distance": dist,
                "latency_ratio": lat / MEMORY[(c, c)][0] if lat else None,
                "bandwidth_ratio": bw / MEMORY[(c, c)][1] if bw else None,
                "reason": None if lat else "no C compiler",
            }
            for (c, m), (lat, bw, dist) in MEMORY.items()
        ]
    )
    return figure_data.Tables(
        cells,
        pd.DataFrame(skipped),
        degradation.degradation_table(cells, samples),
        memory_matrix=memory,
    )


@pytest.fixture(scope="module")
def tables():
    return _run()


def _keys(placements):
    return [
        {"model": MODEL, "opt": OPT, "placement": p, "threads": 1, "batch_size": bs}
        for p in placements
        for bs in (1, 8)
    ]


def _families(keys) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in figures.figures(keys):
        if f.spec.section == "node_pairs":
            out.setdefault(f.family, []).append(f)
    return out


def test_the_figures_follow_the_grids_node_pairs():
    two = _families(_keys(["sequential", "n0m0", "n0m1", "n1m1", "n1m0"]))
    assert [f.batch_size for f in two["node_pair_heatmap"]] == [1, 8]
    assert [f.opt for f in two["node_pair_scatter"]] == [OPT]
    assert [f.model for f in two["node_pair_memory"]] == [MODEL]
    # one node: the diagonal alone has nothing to compare, but its memory job ran
    assert set(_families(_keys(["sequential", "n0m0"]))) == {"node_pair_memory"}
    # an off-diagonal pair whose diagonal did not run has no baseline either
    assert set(_families(_keys(["n0m1"]))) == {"node_pair_memory"}
    assert _families(_keys(["sequential", "interleave"])) == {}


@pytest.mark.parametrize(
    ("fixture", "heatmaps"),
    [
        ("qemu-2node-test-guest", True),
        ("synthetic-4node-plus-memory-only", True),
        ("host-1node-kvm", False),
    ],
)
def test_the_planner_gives_node_pair_figures_where_pairs_can_be_compared(fixture, heatmaps):
    """Planned through the grid on captured topologies: the heatmaps and the scatter where an
    off-diagonal pair runs, the memory matrix wherever a node-pair cell runs (a 1-node machine's
    diagonal)."""
    cfg = {
        "models": [MODEL],
        "batch_sizes": [1, 8],
        "optimizations": [OPT],
        "threads": [1],
        "placements": ["sequential", "node-pairs"],
        "node_pairs": "all",
        "use_smt": False,
    }
    topo = topology.load(FIXTURES / fixture)
    # the cells the plan draws: a diagonal with sequential's binding is reported too
    fams = _families(grid.expand(cfg, topo).drawn())
    assert [f.model for f in fams.pop("node_pair_memory")] == [MODEL]
    if heatmaps:
        assert [f.batch_size for f in fams["node_pair_heatmap"]] == [1, 8]
        assert [f.opt for f in fams["node_pair_scatter"]] == [OPT]
    else:
        assert fams == {}


def test_rows_carry_the_change_against_the_local_diagonal(tables):
    d = figure_data.node_pair_rows(tables, MODEL, OPT, metrics.LATENCY)
    d = d.set_index(["cpu_node", "mem_node", "threads", "batch_size"])
    assert set(d.index.get_level_values(1)) == {0, 1, 2}  # the memory-only node is a column
    assert set(d.index.get_level_values(0)) == {0, 1}  # and never a row
    diag = d.loc[(0, 0, 1, 8)]
    assert diag["pct"] == 0.0 and diag["pct_status"] == "baseline"
    for (cpu, mem), slow in TRUE.items():
        if cpu == mem:
            continue
        row = d.loc[(cpu, mem, 1, 8)]
        assert row["pct_status"] == "ok"
        assert row["pct"] == pytest.approx((slow - 1) * 100, abs=2.0)
        assert row["sig"] is True
    assert d.loc[(1, 0, 2, 1), "sig"] is False  # no true effect: not significant
    assert d.loc[(*SKIPPED, 1, 1), "pct_status"] == "skipped"
    assert np.isnan(d.loc[(*SKIPPED, 1, 1), "lat"])


def texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_heatmap_prints_latency_and_change_with_marks(tables):
    fig = plots.draw("node_pair_heatmap", tables, {"model": MODEL, "opt": OPT, "batch_size": 8})
    heat = [ax for ax in fig.axes if ax.get_xlabel() == "Memory node"]
    assert len(heat) == 4  # (latency, % change) x threads 1, 2
    pct_ax = heat[1]
    assert [t.get_text() for t in pct_ax.get_xticklabels()] == ["0", "1", "2"]
    assert [t.get_text() for t in pct_ax.get_yticklabels()] == ["0", "1"]
    shown = [t.get_text() for t in pct_ax.texts]
    d = figure_data.node_pair_rows(tables, MODEL, OPT, metrics.LATENCY)
    n0m1 = d[(d.cpu_node == 0) & (d.mem_node == 1) & (d.threads == 1) & (d.batch_size == 8)]
    assert f"{n0m1['pct'].iloc[0]:.1f}" in shown
    assert shown.count("0.0") >= 2  # the two diagonals
    assert "skipped" in shown  # n1m2: grey, labelled, never a number
    # the not-significant n1m0 at 2 threads is hatched; the significant cells are not
    hatched = [p for p in heat[3].patches if p.get_hatch()]
    assert len(hatched) == 1 and hatched[0].get_xy() == (0, 1)
    assert not [p for p in pct_ax.patches if p.get_hatch()]


def test_memory_matrix_shows_distance_latency_and_bandwidth(tables):
    fig = plots.draw("node_pair_memory", tables, {"model": MODEL})
    heat = [ax for ax in fig.axes if ax.get_xlabel() == "Memory node"]
    assert [ax.get_title() for ax in heat][1].startswith("idle latency")
    dist, lat, bw = ([t.get_text() for t in ax.texts] for ax in heat)
    assert {"10", "21", "40"} <= set(dist)
    assert {"100", "150", "300", "160"} <= set(lat)
    assert {"20.0", "7.0"} <= set(bw)
    assert "skipped" in lat and "skipped" in bw and "skipped" not in dist
    assert any("no C compiler" in t for t in texts(fig))


def test_fit_needs_three_distinct_x_and_finds_a_line():
    x = np.array([1.0, 2.0, 3.0, np.nan])
    r, slope = node_pair_plots.fit(x, 5 * x + 1)
    assert r == pytest.approx(1.0) and slope == pytest.approx(5.0)
    assert node_pair_plots.fit(np.array([1.5, 1.5, 3.0]), np.array([1.0, 2.0, 3.0])) == (
        None,
        None,
    )


def test_scatter_relates_the_change_to_the_memory_ratios(tables):
    fig = plots.draw("node_pair_scatter", tables, {"model": MODEL, "opt": OPT})
    axes = [ax for ax in fig.axes if ax.collections]
    assert len(axes) == 3
    titles = [ax.get_title() for ax in axes]
    assert titles[1].startswith("vs latency: r = ")
    r = float(titles[1].split("r = ")[1].split(",")[0])
    assert r > 0.9  # the fixture's slowdowns grow with its memory latency
    assert set(np.round(points(axes[1]), 2)) == {1.5, 3.0, 1.6}  # the off-diagonal pairs only
    dist = points(axes[0])
    assert set(np.round(dist, 2)) == {2.1, 4.0}


def points(ax) -> np.ndarray:
    """The x of the scatter's markers (not its error bars)."""
    from matplotlib.collections import PathCollection

    return np.concatenate(
        [c.get_offsets()[:, 0] for c in ax.collections if isinstance(c, PathCollection)]
    )


@pytest.mark.parametrize("family", ["node_pair_heatmap", "node_pair_memory", "node_pair_scatter"])
def test_every_node_pair_family_saves_png_and_svg(tables, tmp_path, family):
    fig = families.BY_NAME[family]
    w = {"model": MODEL, "opt": OPT, "batch_size": 1}
    png, svg = tmp_path / "f.png", tmp_path / "f.svg"
    plots.save(plots.draw(family, tables, {k: w[k] for k in fig.wildcards}), str(png), str(svg))
    assert png.stat().st_size > 1000 and svg.stat().st_size > 1000


@pytest.mark.integration
def test_the_workflow_plans_the_node_pair_figures_against_a_two_node_machine(tmp_path):
    """Snakemake's own DAG of ``all`` for the node-pair family planned against a captured
    2-node topology: one plot job per Node-pair family and the memory jobs (a caption's
    ``n{cpu}m{mem}`` once broke the plot rule: Snakemake formats params with the wildcards)."""
    from conftest import load_config, planned

    cfg = load_config(
        "tiny",
        placements=["node-pairs"],
        batch_sizes=[1],
        optimizations=["none"],
        topology=str(FIXTURES / "qemu-2node-test-guest"),
    )
    jobs = planned(tmp_path, cfg)
    for family in ("node_pair_heatmap", "node_pair_memory", "node_pair_scatter"):
        assert jobs[f"plot_{family}"] == 1, jobs
    topo = topology.load(cfg["topology"])
    assert jobs["memory"] == len(node_pairs_mod.node_pairs("all", topo))  # one per pair
    assert jobs["memory_matrix_table"] == 1
    # one per CPU node (1 thread), at its diagonal, in each of its windows
    assert jobs["peak"] == len(topo.nodes) * peaks.WINDOWS
