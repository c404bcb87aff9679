"""Identical bindings measured once (``plan.binding``): what "the same binding" is, which cells
of a grid share one on every captured topology (derived from the planner, never from this
machine), that such a cell has no job and is reported under its own name from the measuring
cell's records, and that its comparison with itself is exactly "identical binding"."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
from test_paired import _run_tables
from test_plan import ONE_NODE, TWO_NODES, make
from test_topology import FIXTURES, load

from numa_effects.plan import binding, grid, placement
from numa_effects.plan.placement import Plan
from numa_effects.tables import cells as tidy
from numa_effects.tables import degradation, summary

FIXED = [n for n, e in placement.PLACEMENTS.items() if not e.fields]


def plan(cpus, policy, nodes, name="sequential") -> Plan:
    cpus = tuple(cpus)
    return Plan(name, len(cpus), cpus, (0,), policy, tuple(nodes), cores=len(cpus))


def test_the_binding_is_what_numactl_enforces():
    # the CPU set and the memory nodes under their policy; not the name, the order or the label
    assert binding.same(plan([0, 2], "bind", [0]), plan([2, 0], "bind", [0], "interleave"))
    assert not binding.same(plan([0, 2], "bind", [0]), plan([0, 1], "bind", [0]))
    assert not binding.same(plan([0], "bind", [0]), plan([0], "bind", [1]))
    # an interleave over one node places every page on it, as a bind to it does
    assert binding.same(plan([0], "interleave", [0]), plan([0], "bind", [0]))
    # over two nodes it does not
    assert not binding.same(plan([0], "interleave", [0, 1]), plan([0], "bind", [0, 1]))
    smt = dataclasses.replace(plan([0], "bind", [0]), use_smt=True)
    assert binding.same(smt, plan([0], "bind", [0]))


def config(topo, **over) -> dict:
    return {
        "models": ["resnet18"],
        "optimizations": ["none"],
        "batch_sizes": [1],
        "placements": [*FIXED, "node-pairs"],
        "threads": list(range(1, placement.max_threads(topo) + 2)),
        **over,
    }


@pytest.mark.parametrize("smt", [False, True], ids=["nosmt", "smt"])
@pytest.mark.parametrize("name", FIXTURES)
def test_a_binding_is_measured_once_on_every_topology(name, smt):
    """Every pair of cells that differ only in their placement and bind alike (the planner's
    plans) is one measurement, under the first placement in registry order; no two measured
    cells bind alike; ``same_bindings: each`` measures every one of them."""
    topo = load(name)
    cfg = config(topo, use_smt=smt)
    g = grid.expand(cfg, topo)
    plans = {k: placement.plan(topo, k.threads, k.placement, smt) for k in g.reported()}
    for key, measured in g.same.items():
        assert measured in g.cells and measured.placement != key.placement
        assert dataclasses.replace(key, placement=measured.placement) == measured
        assert binding.same(plans[key], plans[measured])
        assert binding.rank(measured.placement) < binding.rank(key.placement)
    seen: dict = {}
    for key, p in g.cells.items():
        rest = (key.threads, binding.of(p))
        assert seen.setdefault(rest, key) == key, f"{key} and {seen[rest]} bind alike"
    # interleave at one thread is node 0's first core with its memory: sequential, everywhere
    one = {k.placement for k in g.same if k.threads == 1}
    assert placement.label("interleave", smt) in one
    each = grid.expand({**cfg, "same_bindings": "each"}, topo)
    assert set(each.cells) == set(g.reported()) and not each.same
    assert each.skipped == g.skipped


def test_a_cell_measured_once_has_no_job_and_is_reported_from_the_measuring_cell():
    p = make(TWO_NODES, placements=["sequential", "interleave", "remote", "node-pairs"])
    assert p.grid.same
    jobs = {k for k, _ in p.order}
    outputs = set(p.cell_outputs()) | set(p.targets())
    for key in p.grid.same:
        assert key not in jobs and key.path(p.results, 1) not in outputs
        assert (key.placement, key.threads, "float32") not in p.peak
    rows = p.same_binding_rows()
    assert len(rows) == len(p.grid.same)
    assert {(r["placement"], r["threads"], r["same_binding_as"]) for r in rows} >= {
        ("interleave", 1, "sequential"),
        ("n0m0", 1, "sequential"),
        ("n0m1", 2, "remote"),
    }
    # the manifest names them, so a change of what is measured once re-runs the tables
    assert len(p.manifest["same"]) == len(rows)
    # the node-pair matrix keeps its memory job where its diagonal is measured as sequential
    assert (0, 0) in p.memory and (0, 1) in p.memory
    # figures: every reported cell but one compared with itself
    drawn = {(k.placement, k.threads) for k in p.figure_keys()}
    assert ("n0m0", 1) in drawn and ("n0m1", 1) in drawn and ("interleave", 1) not in drawn


def test_a_placement_whose_cells_are_measured_already_adds_no_job():
    """A re-run after adding a placement whose bindings are measured (interleave and
    mem-interleave on one node; interleave at one thread on two) measures nothing new: the
    same cells with the same specs; only the manifest (the tables) changes."""
    for topo_file, measured_before in ((ONE_NODE, 8), (TWO_NODES, 8)):
        before = make(topo_file, placements=["sequential"])
        after = make(topo_file, placements=["sequential", "interleave", "mem-interleave"])
        assert len(before.grid.cells) == measured_before
        new = set(after.grid.cells) - set(before.grid.cells)
        assert all(k.placement != "sequential" for k in new)
        if len(after.topology.nodes) == 1:
            assert not new and len(after.grid.same) == 16
        else:  # interleave at 2 threads and mem-interleave are bindings of their own
            assert {(k.placement, k.threads) for k in after.grid.same} == {("interleave", 1)}
        for key in before.grid.cells:
            assert after.cell_spec(key, 1) == before.cell_spec(key, 1)
        assert after.manifest_path != before.manifest_path
        assert set(before.cell_outputs()) <= set(after.cell_outputs())
    # measuring each placement on its own adds the cells measured once, and changes nothing else
    once = make(ONE_NODE, placements=["sequential", "interleave"])
    each = make(ONE_NODE, placements=["sequential", "interleave"], same_bindings="each")
    assert set(each.grid.cells) == set(once.grid.reported())
    assert all(each.cell_spec(k, 1) == once.cell_spec(k, 1) for k in once.grid.cells)


MODEL = "resnet50"


def two_node_tables(drift_sd=0.04, own_sd=0.01):
    """cells.csv and samples.csv of sequential and remote cells (``test_paired``'s simulated
    run with 5 % remote cost) and the rows a grid with interleave, n0m0 and n0m1 adds for them
    (interleave and n0m0 bind like sequential, n0m1 like remote)."""
    cells, samples = _run_tables(drift_sd, own_sd)
    cells = cells.assign(model=MODEL, allocator=grid.DEFAULTS["allocator"])
    cells = cells[[*grid.KEYS, *(c for c in cells if c not in grid.KEYS)]]
    cells = cells.assign(placement_base=cells["placement"])
    samples = samples.assign(model=MODEL)
    same = []
    for _, r in cells.iterrows():
        keys = {k: r[k] for k in grid.KEYS}
        of = {"sequential": ("interleave", "n0m0"), "remote": ("n0m1",)}[r["placement"]]
        same += [{**keys, "placement": p, "same_binding_as": r["placement"]} for p in of]
    return cells, samples, same


def test_the_tables_report_a_cell_under_both_names_saying_so():
    cells, _, same = two_node_tables()
    out = tidy.with_same_bindings(cells, same)
    assert len(out) == len(cells) + len(same)
    assert list(out.columns[: len(grid.KEYS)]) == list(grid.KEYS)
    measured = out[out["same_binding_as"].isna()]
    assert len(measured) == len(cells)
    rows = out.set_index(["placement", "batch_size"])
    for entry in same:
        row = rows.loc[(entry["placement"], entry["batch_size"])]
        of = rows.loc[(entry["same_binding_as"], entry["batch_size"])]
        assert row["same_binding_as"] == entry["same_binding_as"]
        assert row["placement_base"] == entry["placement"]
        assert row["latency_median_ms"] == of["latency_median_ms"]
    # a measuring cell without a row gives none under the other name either: without the
    # sequential cells, only remote's rows are reported twice (as n0m1)
    remote = cells[cells["placement"] == "remote"]
    got = tidy.with_same_bindings(remote, same)
    assert len(got) == 2 * len(remote) and set(got["placement"]) == {"remote", "n0m1"}


def test_a_cell_compared_with_itself_is_an_identical_binding_never_a_difference(monkeypatch):
    cells, samples, same = two_node_tables()
    alone = degradation.degradation_table(cells, samples)
    deg = degradation.degradation_table(tidy.with_same_bindings(cells, same), samples)
    inter = deg[deg["placement"] == "interleave"]
    assert len(inter) == len(alone) and (inter["ci_method"] == binding.IDENTICAL).all()
    assert (inter["latency_degradation_pct"] == 0).all() and not inter["significant"].any()
    assert inter["latency_degradation_ci_low_pct"].isna().all()
    # n0m1 against n0m0 is remote against sequential, through the cells that measured them
    cols = ["latency_degradation_pct", "latency_degradation_ci_low_pct", "ci_method"]
    pair = deg[deg["placement"] == "n0m1"].reset_index(drop=True)
    remote = deg[deg["placement"] == "remote"].reset_index(drop=True)
    pd.testing.assert_frame_equal(pair[cols], remote[cols])
    assert (pair["baseline"] == "n0m0").all()
    # each pair of measurements enters the paired pools once: remote's rows are unchanged
    pd.testing.assert_frame_equal(remote[cols], alone[cols].reset_index(drop=True))
    assert set(alone["ci_method"]) == {"paired"}
    pooled = []
    monkeypatch.setattr(
        degradation, "paired_choice", lambda pairs: pooled.append(pairs) or (0, 0, 0)
    )
    degradation.degradation_table(tidy.with_same_bindings(cells, same), samples)
    assert [len(p) for p in pooled] == [len(alone)]  # 24 comparisons, not 48
    # an optimization's speedup is reported under both names too, from the same cells
    sp = degradation.opt_speedup_table(tidy.with_same_bindings(cells, same), samples)
    assert sp.empty  # the simulated run has one optimization


def test_the_summary_counts_a_measurement_once_and_says_which_names_share_it():
    cells, _, same = two_node_tables()
    out = tidy.with_same_bindings(cells.assign(status="ok"), same)
    text = summary.render(out, pd.DataFrame(), {"summary": {"nodes": 2}}, "results")
    assert f"cells: {len(cells)} measured, 0 failed, 0 skipped" in text
    (line,) = [s for s in text.splitlines() if "same binding" in s]
    assert f"{len(same)} cell(s)" in line and "interleave = sequential at t1" in line
    assert "n0m1 = remote at t1" in line


def test_the_report_marks_a_comparison_with_itself_and_says_why_there_is_no_figure():
    from numa_effects.report import data, empty, metrics, style

    cells, samples, same = two_node_tables()
    cells = tidy.with_same_bindings(cells, same)
    deg = degradation.degradation_table(cells, samples)
    tables = data.Tables(cells=cells, skipped=tidy.skipped_table([]), degradation=deg)
    d = data.comparison(tables, MODEL, "none", metrics.LATENCY)
    inter = d[d["placement"] == "interleave"]
    assert (inter["pct_status"] == style.SAME_BINDING).all() and inter["pct"].isna().all()
    assert (d[d["placement"] == "remote"]["pct_status"] == "ok").all()
    # a run whose every compared cell binds like its baseline (one node) has nothing to draw
    one = cells[cells["placement"].isin(["sequential", "interleave"])]
    facts = empty.PageFacts(one, tidy.skipped_table([]), ["sequential", "interleave"], False)
    assert "Every cell of interleave binds like its baseline" in empty.no_numa_reason(facts)
    facts = empty.PageFacts(cells, tidy.skipped_table([]), ["sequential", "remote"], False)
    assert "binds like" not in empty.no_numa_reason(facts)


def test_nothing_is_measured_once_where_no_two_placements_bind_alike():
    p = make(TWO_NODES, placements=["sequential", "remote"], threads=[1, 2])
    assert not p.grid.same and p.same_binding_rows() == [] and "same" not in p.manifest
    each = make(TWO_NODES, placements=["sequential", "remote"], same_bindings="each")
    assert each.manifest == p.manifest and each.order == p.order


def test_the_cost_model_counts_only_the_cells_that_run():
    """plan.cost's estimate (the budget's and the dry run's) prices the measured cells: a cell
    reported from another's measurement costs nothing."""
    from numa_effects.plan import cost

    places = ["sequential", "interleave"]
    once = make(TWO_NODES, placements=places, deploy={"enabled": False}, packing={"enabled": False})
    each = make(
        TWO_NODES,
        placements=places,
        same_bindings="each",
        deploy={"enabled": False},
        packing={"enabled": False},
    )
    assert len(each.grid.cells) == len(once.grid.cells) + len(once.grid.same)
    per = cost.jobs_per_part(once)["cells"] // len(once.grid.cells)
    assert cost.jobs_per_part(each)["cells"] - cost.jobs_per_part(once)["cells"] == per * len(
        once.grid.same
    )
    assert cost.estimate(once).parts["cells"] < cost.estimate(each).parts["cells"]
