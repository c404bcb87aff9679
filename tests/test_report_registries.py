"""Throwaway entries prove that an axis is one registry entry for the report and the comparison
tables: a new optimization (one ``Optimization`` entry) and a new placement family
(one ``Placement`` entry, ``n{cpu}m{mem}`` compared with ``n{cpu}m{cpu}``) are planned, paired,
coloured, labelled and drawn with no other change."""

import re
from pathlib import Path

import pandas as pd
import pytest

from numa_effects.plan import grid, placement, topology
from numa_effects.plan.optimizations import OPTIMIZATIONS, Optimization
from numa_effects.report import data as figure_data
from numa_effects.report import figures, plots, style
from numa_effects.tables import degradation

FIX = Path(__file__).parent / "fixtures" / "tables"
TOPO_2NODE = FIX / "topology-2node-4core.lscpu"


def lines(fig) -> dict:
    return {ln.get_label(): ln for ln in fig.axes[0].get_lines()}


def legend(fig) -> list[str]:
    return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


# -- a new optimization --------------------------------------------------------------------------


@pytest.fixture
def bf16(monkeypatch):
    entry = Optimization(
        "bf16",
        "eager in bfloat16 (throwaway test entry)",
        label="bf16 (bfloat16 autocast)",
        dtype="bfloat16",
        color="#7b3294",
    )
    monkeypatch.setitem(OPTIMIZATIONS, entry.name, entry)
    return entry


def test_a_new_optimization_is_one_registry_entry(bf16):
    base = figure_data.Tables.load(FIX / "cells.csv", FIX / "skipped.csv", FIX / "degradation.csv")
    new = base.cells[base.cells["opt"] == "script"].assign(opt="bf16")
    new["latency_median_ms"] *= 0.6
    cells = pd.concat([base.cells, new], ignore_index=True)
    tables = figure_data.Tables(cells, base.skipped, base.degradation)
    # planned: its own per-optimization figures
    figs = figures.figures(cells[list(grid.KEYS)].to_dict("records"))
    assert {f.opt for f in figs if f.family == "latency_per_opt"} == {"none", "script", "bf16"}
    # drawn with its colour and legend, after the optimizations registered before it
    fig = plots.draw("latency_per_batch", tables, {"model": "resnet50", "batch_size": 8})
    assert lines(fig)[bf16.legend].get_color() == bf16.color
    assert legend(fig)[:3] == ["none (eager)", "script (TorchScript)", bf16.legend]
    fig = plots.draw("latency_per_opt", tables, {"model": "resnet50", "opt": "bf16"})
    assert bf16.legend in fig.axes[0].texts[0].get_text()  # the subtitle names it
    # and compared with eager in opt_speedup.csv
    sp = degradation.opt_speedup_table(cells)
    assert {"script", "bf16"} <= set(sp["opt"]) and (sp["baseline"] == "none").all()
    assert style.opt_color("bf16") == bf16.color and style.opt_label("bf16") == bf16.legend


# -- a new placement family ----------------------------------------------------------------------


def _cpu_mem(topo, threads, use_smt, cpu, mem):
    """CPUs of node ``cpu``, memory bound to node ``mem`` (the throwaway family)."""
    if max(cpu, mem) >= len(topo.nodes):
        return f"n{cpu}m{mem} needs {max(cpu, mem) + 1} NUMA nodes"
    cpus = topo.node_cpus(topo.nodes[cpu], use_smt)
    if threads > len(cpus):
        return f"n{cpu}m{mem} needs {threads} cores on node {cpu}, which has {len(cpus)}"
    return placement._make(
        topo, f"n{cpu}m{mem}", threads, cpus[:threads], "bind", (topo.nodes[mem],), use_smt
    )


FAMILY = placement.Placement(
    "n{cpu}m{mem}",
    _cpu_mem,
    "the CPUs of node cpu, memory on node mem (throwaway test entry)",
    baseline="n{cpu}m{cpu}",
)
MATRIX = ["n0m0", "n0m1", "n1m1", "n1m0"]


@pytest.fixture
def family(monkeypatch):
    monkeypatch.setitem(placement.PLACEMENTS, FAMILY.name, FAMILY)
    return FAMILY


def family_cells() -> pd.DataFrame:
    """A 2-node grid of the family and ``sequential``/``interleave``, made-up latencies: remote
    memory costs 30 % on node 0 and 20 % on node 1."""
    cfg = {
        "models": ["resnet50"],
        "optimizations": ["none"],
        "placements": ["sequential", "interleave", *MATRIX],
        "threads": [1, 2],
        "batch_sizes": [1, 8],
    }
    g = grid.expand(cfg, topology.load(TOPO_2NODE))
    assert not g.skipped
    cost = {"n0m1": 1.3, "n1m0": 1.2, "interleave": 1.1}
    rows = []
    for k in g.reported():  # as cells.csv: a diagonal with sequential's binding too
        lat = 10.0 * k.batch_size / k.threads * cost.get(k.placement, 1.0)
        rows.append(
            {
                **k.as_dict(),
                "status": "ok",
                "latency_median_ms": lat,
                "latency_mean_ms": lat,
                "throughput_ips": 1000.0 * k.batch_size / lat,
            }
        )
    return pd.DataFrame(rows)


def test_a_new_placement_family_is_one_registry_entry(family):
    assert [placement.baseline_of(p) for p in MATRIX] == [None, "n0m0", None, "n1m1"]
    assert placement.baseline_of("n0m1+smt") == "n0m0+smt"
    assert all(re.fullmatch(placement.names_regex(), p) for p in MATRIX)
    cells = family_cells()
    keys = cells[list(grid.KEYS)].to_dict("records")
    # planned: each member is compared with its own baseline, the baselines are not compared
    figs = figures.figures(keys)
    heat = {f.placement for f in figs if f.family == "latency_degradation_heatmap"}
    assert heat == {"interleave", "n0m1", "n1m0"}
    # the Latency/Throughput sections stay the sequential placement's
    assert all(f.placement in ("", "sequential") for f in figs if f.spec.section != "numa")
    # degradation.csv pairs n0m1 with n0m0 (not with sequential)
    deg = degradation.degradation_table(cells)
    row = deg[(deg["placement"] == "n0m1") & (deg["threads"] == 2) & (deg["batch_size"] == 8)]
    (r,) = row.to_dict("records")
    assert r["baseline"] == "n0m0" and r["latency_baseline_ms"] == pytest.approx(40.0)
    assert r["latency_degradation_pct"] == pytest.approx(30.0)
    assert set(deg["baseline"]) == {"sequential", "n0m0", "n1m1"}
    assert set(deg["placement"]) == {"interleave", "n0m1", "n1m0"}
    # the figures draw the pairs and name the baseline
    tables = figure_data.Tables(cells, pd.DataFrame(columns=list(grid.KEYS)), deg)
    fig = plots.draw(
        "latency_degradation_heatmap",
        tables,
        {"model": "resnet50", "opt": "none", "placement": "n1m0"},
    )
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "(n1m0 − n1m1) / n1m1 × 100 of the median latency" in " ".join(texts)
    assert "20.0" in texts
    fig = plots.draw(
        "numa_throughput_loss", tables, {"model": "resnet50", "opt": "none", "batch_size": 8}
    )
    got = lines(fig)
    assert {"interleave vs sequential", "n0m1 vs n0m0", "n1m0 vs n1m1"} <= set(got)
    assert "degradation vs their baselines" in fig.axes[0].get_ylabel()  # three of them
    # every member has a colour of its own, fixed across figures
    fig = plots.draw(
        "numa_latency_per_batch", tables, {"model": "resnet50", "opt": "none", "batch_size": 8}
    )
    got = lines(fig)
    assert legend(fig)[:6] == ["sequential", "interleave", "n0m0", "n0m1", "n1m0", "n1m1"]
    for p in MATRIX:
        assert got[p].get_color() == style.placement_color(p)
    assert len({style.placement_color(p) for p in MATRIX}) == 4  # one each


def test_a_family_colour_in_its_entry_is_every_member_colour(monkeypatch):
    coloured = placement.Placement(**{**FAMILY.__dict__, "color": "#1b9e77"})
    monkeypatch.setitem(placement.PLACEMENTS, coloured.name, coloured)
    assert style.placement_color("n0m1") == style.placement_color("n1m0+smt") == "#1b9e77"
