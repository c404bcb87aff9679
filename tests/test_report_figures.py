"""Which figures a grid supports (numa_effects.report.figures): planned from the grid, not from
files."""

from pathlib import Path

import pytest

from numa_effects.plan import grid, placement, topology
from numa_effects.report import baselines, families, figures

HERE = Path(__file__).parent
TOPO_2NODE = HERE / "fixtures" / "tables" / "topology-2node-4core.lscpu"
TOPO_1NODE = HERE / "fixtures" / "topology" / "this-vm-2cpu-1node.lscpu"


def config(**over):
    base = {
        "models": ["resnet50"],
        "batch_sizes": [1, 8, 64],
        "optimizations": ["none", "script"],
        "threads": [1, 2, 4, 8],
        "placements": ["sequential", "interleave"],
        "use_smt": False,
    }
    return {**base, **over}


def plan(topo_file, **over):
    return figures.figures(grid.expand(config(**over), topology.load(topo_file)).cells)


def by_family(figs):
    out = {}
    for f in figs:
        out.setdefault(f.family, []).append(f)
    return out


def test_two_node_grid_has_every_family_once_per_varying_part():
    fams = by_family(plan(TOPO_2NODE))
    # Packing figures follow the config key packing (the packed (model, opt)), not the cells;
    # the comparison page's figures are planned from a comparison's matched cells only; PackRat's
    # grid (eager and TorchScript with glibc) has no Precision and runtime figure, and without
    # node-pairs in placements no Node-pair matrix figure
    run_page = families.page_families()
    assert set(fams) == {
        f.name for f in run_page if f.section not in ("packing", "precision", "node_pairs")
    }
    assert {f.name for f in families.FAMILIES} - {f.name for f in run_page} == {
        "compare_forest",
        "compare_heatmap",
    }
    counts = {name: len(v) for name, v in fams.items()}
    assert counts == {
        "latency_per_batch": 3,  # one per batch size
        "throughput_per_batch": 3,
        "latency_per_opt": 2,  # one per optimization
        "throughput_per_opt": 2,
        "speedup": 2,
        "throughput_per_batch_size": 2,
        "latency_degradation_heatmap": 2,  # one per (opt, placement != sequential)
        "throughput_degradation_heatmap": 2,
        "numa_latency_per_batch": 6,  # one per (opt, batch size)
        "numa_latency_loss": 6,
        "numa_throughput_per_batch": 6,
        "numa_throughput_loss": 6,
    }


def test_one_node_machine_gets_no_numa_figure():
    figs = plan(TOPO_1NODE, threads=[1, 2])
    assert figs
    assert {f.spec.section for f in figs} == {"latency", "throughput"}


def test_only_sequential_configured_gets_no_numa_figure():
    figs = plan(TOPO_2NODE, placements=["sequential"])
    assert all(f.spec.section != "numa" for f in figs)


def test_without_sequential_there_is_nothing_to_compare():
    assert plan(TOPO_2NODE, placements=["interleave", "remote"]) == []


def test_each_placement_gets_its_heatmaps():
    figs = plan(
        TOPO_2NODE, placements=["sequential", "interleave", "remote"], optimizations=["script"]
    )
    heat = {(f.opt, f.placement) for f in figs if f.family == "latency_degradation_heatmap"}
    assert heat == {("script", "interleave"), ("script", "remote")}
    # per-batch NUMA figures hold every placement: one per (opt, batch size), not per placement
    assert len([f for f in figs if f.family == "numa_latency_loss"]) == 3


def test_batch_size_without_a_placement_cell_gets_no_numa_per_batch_figure():
    keys = [
        {"model": "m", "opt": "script", "placement": p, "threads": 1, "batch_size": bs}
        for p, bs in [("sequential", 1), ("sequential", 8), ("interleave", 8)]
    ]
    figs = figures.figures(keys)
    assert {f.batch_size for f in figs if f.family == "numa_latency_loss"} == {8}
    assert {f.batch_size for f in figs if f.family == "latency_per_batch"} == {1, 8}


def test_paths_and_round_trip():
    f = figures.Figure("latency_degradation_heatmap", "resnet50", "script", "interleave")
    assert f.path("out") == "out/resnet50/latency_degradation_heatmap/script/interleave.png"
    assert f.path("out", "svg").endswith("interleave.svg")
    g = figures.Figure("latency_per_batch", "resnet50", batch_size=8)
    assert g.path("r") == "r/resnet50/latency_per_batch/bs8.png"
    assert figures.from_dict(g.as_dict()) == g
    assert g.wildcards == {"model": "resnet50", "batch_size": 8}


@pytest.mark.parametrize("family", [f.name for f in families.FAMILIES])
def test_every_family_has_a_caption(family):
    """One caption per family, in the registry: `snakemake --report` renders it through
    workflow/report/figure.rst, the page through markup.caption_html."""
    fam = families.BY_NAME[family]
    assert len(fam.caption) > 40 and fam.section in families.SECTIONS
    assert (
        "{{ snakemake.params.caption }}" in (HERE.parent / "workflow/report/figure.rst").read_text()
    )
    assert not (HERE.parent / "workflow" / "report" / f"{family}.rst").exists()  # no second copy


def test_smt_cells_are_compared_with_sequential_smt():
    keys = [
        {"model": "m", "opt": "script", "placement": p, "threads": 2, "batch_size": 1}
        for p in ("sequential+smt", "interleave+smt")
    ]
    figs = figures.figures(keys)
    assert {f.spec.section for f in figs} == {"latency", "throughput", "numa"}
    heat = [f for f in figs if f.family == "latency_degradation_heatmap"]
    assert [f.placement for f in heat] == ["interleave+smt"]
    assert placement.baseline_of("remote+smt") == "sequential+smt"
    assert placement.baseline_of("remote") == "sequential"
    # an SMT placement is not compared with the non-SMT baseline
    assert figures.figures([{**keys[1]}, {**keys[0], "placement": "sequential"}]) == [
        f for f in figures.figures([{**keys[0], "placement": "sequential"}])
    ]


def test_precision_figures_need_a_grid_beyond_packrats_and_two_dtypes_for_numa():
    """Speedup over float32 eager with glibc: one figure per batch size with the baseline and
    another (opt, allocator) in sequential; the NUMA loss per dtype only with two dtypes."""
    figs = by_family(plan(TOPO_2NODE, optimizations=["none", "compile"]))
    assert [f.batch_size for f in figs["precision_speedup"]] == [1, 8, 64]
    assert "precision_numa_loss" not in figs  # compile is float32 too
    figs = by_family(plan(TOPO_2NODE, optimizations=["none", "int8"], allocators=["default"]))
    assert {(f.placement, f.batch_size) for f in figs["precision_numa_loss"]} == {
        ("interleave", b) for b in (1, 8, 64)
    }
    # an allocator beyond glibc's is enough; its cells are not in the single-allocator figures
    figs = by_family(plan(TOPO_2NODE, allocators=["default", "jemalloc"]))
    assert len(figs["precision_speedup"]) == 3
    assert len(figs["latency_per_opt"]) == 2 and len(figs["latency_degradation_heatmap"]) == 2
    # without float32 eager on glibc there is nothing to compare with
    assert "precision_speedup" not in by_family(plan(TOPO_2NODE, optimizations=["script", "int8"]))


def test_a_grid_without_glibc_shows_its_first_allocator_in_the_single_allocator_figures():
    assert baselines.figure_allocator(["tcmalloc", "jemalloc"]) == "jemalloc"
    assert baselines.figure_allocator(["tcmalloc", "default"]) == "default"
    assert baselines.figure_allocator([]) == "default"
    figs = by_family(plan(TOPO_2NODE, allocators=["tcmalloc"]))
    assert len(figs["latency_degradation_heatmap"]) == 2
