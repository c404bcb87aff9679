"""The measured memory matrix ("machine facts"): one memory probe job per (CPU node,
memory node) pair of the grid's node-pair cells (``plan.build``: ``memory``, ``memory_spec``),
the probe itself (``measure.workloads.memory_probe``: its C code compiled at run time, a pointer
chase and a read pass; skipped without a compiler) and ``tables/memory_matrix.csv`` (``tables.
memory_matrix``) from hand-made records. Planning on the captured and synthesized topologies of
tests/fixtures/topology (as tests/test_node_pairs.py); the probe on a small buffer (well under a
second). The integration test at the end runs a real memory job on this machine."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import load_config, snakemake
from test_node_pairs import BASE, EIGHT, FOUR, MEMORY_ONLY, ONE, TWO, checked

from numa_effects import config as config_mod
from numa_effects.measure import job
from numa_effects.measure import record as record_mod
from numa_effects.measure.record import Failure, Record
from numa_effects.measure.workloads import Skip, memory_probe
from numa_effects.plan import build, paths, placement, settings, topology
from numa_effects.plan import spec as spec_mod
from numa_effects.tables import memory_matrix

CODE = {"measure": "m", "tables": "t", "report": "r"}


def make(topo_file: Path, **over) -> build.Plan:
    return build.build(*checked(topo_file, **over), code=CODE)


# -- which memory jobs are planned -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("topo_file", "value", "expected"),
    [
        (ONE, "all", [(0, 0)]),  # n0m1 is a skipped cell: no job for it
        (TWO, "all", [(0, 0), (0, 1), (1, 0), (1, 1)]),
        (FOUR, "diagonal+row0", [(0, 0), (0, 1), (0, 2), (0, 3), (1, 1), (2, 2), (3, 3)]),
        (EIGHT, "all", [(c, m) for c in range(8) for m in range(8)]),
        (EIGHT, [[3, 7], [0, 5]], [(0, 0), (0, 5), (3, 3), (3, 7)]),
        # the memory-only node 4 is a column of the matrix, never a row
        (MEMORY_ONLY, "all", [(c, m) for c in range(4) for m in range(5)]),
        (
            MEMORY_ONLY,
            "diagonal+row0",
            [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), *((c, c) for c in (1, 2, 3))],
        ),
    ],
    ids=["1-all", "2-all", "4-diag", "8-all", "8-list", "mem-all", "mem-diag"],
)
def test_one_memory_job_per_pair_of_the_node_pair_cells(topo_file, value, expected):
    p = make(topo_file, node_pairs=value, threads=[1, 2])
    assert list(p.memory) == expected
    assert p.memory_outputs() == [f"results/memory/n{c}m{m}.json" for c, m in expected]
    assert p.table("memory_matrix") in p.targets()
    for (c, m), plan in p.memory.items():
        # the family's own plan at 1 thread: the first core of node c, memory bound to node m
        assert plan.to_dict() == placement.plan(p.topology, 1, f"n{c}m{m}").to_dict()
        assert plan.cpu_nodes == (c,) and plan.mem_nodes == (m,) and plan.threads == 1


def test_a_memory_only_pair_is_bound_to_the_memory_only_node():
    p = make(MEMORY_ONLY, node_pairs=[[2, 4]])
    assert list(p.memory) == [(2, 2), (2, 4)]
    spec = p.memory_spec(2, 4)
    (inst,) = spec.instances
    assert inst.plan.numactl_args() == ["--physcpubind=4", "--membind=4"]
    assert (
        inst.cell
        == spec.cell
        == {
            "kind": "memory",
            "placement": "n2m4",
            "threads": 1,
            "cpu_node": 2,
            "mem_node": 4,
            "use_smt": False,
        }
    )
    assert inst.workload == spec_mod.MEMORY and spec.code == "m"
    assert spec.settings == settings.with_contention(settings.MEMORY_SETTINGS, p.config)
    assert inst.options["probe"]["cache_dir"].endswith(paths.MEMORY_PROBE_CACHE)


@pytest.mark.parametrize(
    "over",
    [
        {"placements": ["sequential"]},
        {"placements": ["sequential", "remote", "interleave", "mem-interleave"]},
    ],
    ids=["sequential", "fixed-placements"],
)
@pytest.mark.parametrize("topo_file", [TWO, FOUR, EIGHT, MEMORY_ONLY], ids=["2", "4", "8", "mem"])
def test_no_memory_job_without_node_pair_placements(topo_file, over):
    p = make(topo_file, **over)
    assert p.grid.cells and p.memory == {} and p.memory_outputs() == []
    assert not any("memory" in t for t in p.targets())


@pytest.mark.parametrize("topo_file", [FOUR, EIGHT, MEMORY_ONLY], ids=["4", "8", "mem"])
def test_no_memory_job_when_every_node_pair_cell_is_skipped(topo_file):
    """One core per node: 2-thread pairs are skipped cells, and a skipped cell plans no job."""
    p = make(topo_file, threads=[2], placements=["sequential", "node-pairs"])
    assert p.grid.cells and all(placement.pair_of(k.placement) is None for k in p.grid.cells)
    assert p.memory == {} and not any("memory" in t for t in p.targets())


def test_smt_and_repeated_members_plan_each_pair_once():
    p = make(FOUR, placements=["n0m2", "node-pairs"], node_pairs=[[0, 2]], use_smt=True)
    assert {k.placement for k in p.grid.cells} == {"n0m0+smt", "n0m2+smt"}
    assert list(p.memory) == [(0, 0), (0, 2)]
    assert p.memory_spec(0, 2).plan.use_smt is False
    # a peak's record names its placement as the grid and peak.csv do (with its +smt)
    p = make(FOUR, placements=["sequential", "n0m2"], use_smt=True, peak=True)
    assert sorted(p.peak) == [("n0m0+smt", 1, "float32"), ("sequential+smt", 1, "float32")]
    for where, t, dtype in p.peak:
        cell = p.peak_spec(where, t, dtype).cell
        assert (cell["placement"], cell["threads"], cell["use_smt"]) == (where, t, True)


@pytest.mark.parametrize("topo_file", [TWO, EIGHT, MEMORY_ONLY], ids=["2", "8", "mem"])
def test_the_peak_is_one_job_per_cpu_node_at_its_diagonal(topo_file):
    """A node pair's cells share their CPU node's peak (the same cores and threads): one peak
    job per (CPU node, threads, dtype) at the diagonal, with the diagonal's plan, not one per
    pair; efficiency joins each pair's cell to it."""
    from numa_effects.tables import flops

    p = make(topo_file, node_pairs="all", threads=[1, 2], peak=True)
    cpu_nodes = {placement.pair_of(k.placement)[0] for k in p.grid.cells}
    want = {(f"n{c}m{c}", t) for c in cpu_nodes for t in (1, 2)}
    want = {w for w in want if isinstance(placement.plan(p.topology, w[1], w[0]), placement.Plan)}
    assert {(where, t) for where, t, _ in p.peak} == want
    assert len(p.peak) < len(p.grid.cells) or len(cpu_nodes) == 1
    for (where, t, _), plan in p.peak.items():
        assert plan.to_dict() == placement.plan(p.topology, t, where).to_dict()
    cells = pd.DataFrame(
        [
            {
                "model": "resnet18",
                "opt": "none",
                "placement": "n1m0",
                "threads": 1,
                "batch_size": 1,
                "image_size": 32,
                "latency_median_ms": 10.0,
            }
        ]
    )
    peak = pd.DataFrame(
        [
            {"placement": "n1m1", "threads": 1, "dtype": "float32", "peak_gflop_per_s": 50.0},
            {"placement": "n0m0", "threads": 1, "dtype": "float32", "peak_gflop_per_s": 99.0},
        ]
    )
    fl = pd.DataFrame([{"model": "resnet18", "batch_size": 1, "image_size": 32, "gflop": 0.1}])
    got = flops.add_efficiency(cells, fl, peak).iloc[0]
    assert got.peak_gflop_per_s == 50.0 and got.efficiency == pytest.approx(10.0 / 50.0)


def test_pair_of_reads_node_pair_labels_only():
    assert placement.pair_of("n3m7") == (3, 7)
    assert placement.pair_of("n0m1+smt") == (0, 1)
    assert placement.pair_of("remote") is None and placement.pair_of("sequential+smt") is None
    assert placement.peak_placement("n3m7") == "n3m3"
    assert placement.peak_placement("n0m1+smt") == "n0m0+smt"
    assert placement.peak_placement("remote") == "remote"


# -- the table from hand-made records --------------------------------------------------------------
def record(cpu: int, mem: int, status: str = "ok", lat=None, bw=None, **extra) -> Record:
    memory = {
        "latency_ns": lat,
        "latency_median_ns": lat and lat * 1.1,
        "bandwidth_gb_per_s": bw,
        "bandwidth_median_gb_per_s": bw and bw * 0.9,
        "buffer_bytes": 256 << 20,
        "llc_bytes": 32 << 20,
        "loads_per_step": memory_probe.LOADS,
        "steps": 6,
    }
    if "failure" in extra:
        extra["failure"] = Failure(**extra["failure"])
    return Record(
        status=status,
        cell={"kind": "memory", "placement": f"n{cpu}m{mem}", "threads": 1}
        | {"cpu_node": cpu, "mem_node": mem},
        workload=spec_mod.MEMORY,
        plan={"cpu_list": str(cpu * 2), "mem_list": str(mem)},
        binding={"cpus_allowed_list": str(cpu * 2), "mempolicy": {"mode": "bind", "nodes": [mem]}},
        summary=extra.pop("memory", memory),
        **extra,
    )


def write_records(folder: Path, records) -> list[Path]:
    out = []
    for rec in records:
        c, m = rec.cell["cpu_node"], rec.cell["mem_node"]
        path = folder / f"n{c}m{m}.json"
        record_mod.write(path, rec)
        out.append(path)
    return out


def test_the_table_has_ratios_to_the_local_diagonal_and_the_firmware_distance(tmp_path):
    topo = topology.load(MEMORY_ONLY)
    files = write_records(
        tmp_path,
        [
            record(0, 1, lat=150.0, bw=12.0),  # before its diagonal: the table sorts
            record(0, 0, lat=100.0, bw=20.0),
            record(1, 1, lat=110.0, bw=19.0),
            record(
                1, 0, "failed", failure={"cause": "page-placement", "message": "12 % on node 0"}
            ),
            record(0, 4, "skipped", memory=None, skip_reason="no compiler"),
            record(2, 0, lat=130.0, bw=15.0),  # its diagonal n2m2 was not measured
        ],
    )
    df = memory_matrix.table(files, topo)
    assert list(df.columns) == memory_matrix.MEMORY_COLUMNS
    assert list(zip(df.cpu_node, df.mem_node, strict=True)) == [
        (0, 0),
        (0, 1),
        (0, 4),
        (1, 0),
        (1, 1),
        (2, 0),
    ]
    by = df.set_index(["cpu_node", "mem_node"])
    assert by.loc[(0, 0), "latency_ratio"] == 1.0 and by.loc[(0, 0), "bandwidth_ratio"] == 1.0
    assert by.loc[(0, 1), "latency_ratio"] == pytest.approx(1.5)
    assert by.loc[(0, 1), "bandwidth_ratio"] == pytest.approx(0.6)
    assert by.loc[(0, 0), "distance"] == 10 and by.loc[(0, 1), "distance"] == 20
    assert by.loc[(0, 4), "distance"] == 20  # the memory-only node
    failed = by.loc[(1, 0)]
    assert failed.status == "failed" and failed.failure_cause == "page-placement"
    assert failed.reason == "12 % on node 0" and math.isnan(failed.latency_ratio)
    assert math.isnan(failed.latency_ns) and failed.distance == 20
    skipped = by.loc[(0, 4)]
    assert skipped.status == "skipped" and skipped.reason == "no compiler"
    assert math.isnan(skipped.bandwidth_ratio)
    assert math.isnan(by.loc[(2, 0), "latency_ratio"])  # no diagonal: no ratio
    assert by.loc[(0, 1), "mempolicy"] == "bind:1" and by.loc[(1, 1), "planned_cpus"] == "2"
    # without a topology (no machine.json distances) the distance is unknown, not made up
    assert memory_matrix.table(files).distance.isna().all()


def test_retry_failed_lists_failed_memory_jobs_not_skipped_ones(tmp_path):
    import failed_cells

    folder = tmp_path / "memory"
    write_records(
        folder,
        [
            record(0, 0, lat=100.0, bw=20.0),
            record(0, 1, "failed", failure={"cause": "timeout", "message": "no result"}),
            record(0, 2, "skipped", memory=None, skip_reason="no compiler"),
        ],
    )
    assert failed_cells.failed(tmp_path) == [str(folder / "n0m1.json")]


def test_the_table_of_a_failed_diagonal_has_no_ratios(tmp_path):
    files = write_records(
        tmp_path,
        [
            record(0, 0, "contended", lat=90.0, bw=30.0),  # numbers of a contended job: none
            record(0, 1, lat=150.0, bw=12.0),
        ],
    )
    df = memory_matrix.table(files, topology.load(TWO)).set_index("mem_node")
    assert math.isnan(df.loc[0, "latency_ns"]) and math.isnan(df.loc[1, "latency_ratio"])
    assert df.loc[1, "latency_ns"] == 150.0


# -- the probe -------------------------------------------------------------------------------------
needs_compiler = pytest.mark.skipif(
    memory_probe.compiler()[0] is None, reason="no C compiler on this machine"
)


@needs_compiler
def test_the_c_source_compiles_once_and_a_small_chase_is_a_finite_time(tmp_path):
    cc, why = memory_probe.compiler()
    assert why is None
    lib = memory_probe.library(cc, tmp_path)
    assert Path(lib).exists() and memory_probe.library(cc, tmp_path) == lib  # cached
    got = memory_probe.measure(
        size=1 << 20, loads=1 << 14, steps=3, cache_dir=tmp_path, environ={"CC": cc, "PATH": ""}
    )
    assert got["status"] == "ok" and got["steps"] == 3 and got["buffer_bytes"] == 1 << 20
    for key in ("latency_ns", "latency_median_ns", "bandwidth_gb_per_s"):
        assert math.isfinite(got[key]) and got[key] > 0, key
    assert got["latency_ns"] <= got["latency_median_ns"]


@needs_compiler
def test_the_chase_visits_every_line_once_per_cycle(tmp_path):
    """Sattolo's shuffle links the lines into one cycle: n loads from line 0 come back to it,
    fewer do not."""
    cc, _ = memory_probe.compiler()
    probe = memory_probe.Probe(memory_probe.library(cc, tmp_path), 64 * 1000)
    try:
        stride = memory_probe.LINE_BYTES // memory_probe.WORD_BYTES
        seen, pos = set(), 0
        for _ in range(probe.lines):
            pos = probe.lib.probe_chase(probe.buf, pos, 1)
            seen.add(pos)
        assert pos == 0 and seen == {i * stride for i in range(probe.lines)}
    finally:
        probe.close()


@needs_compiler
def test_the_workload_steps_and_reports_its_times(tmp_path):
    cc, _ = memory_probe.compiler()
    plan = placement.plan(topology.current(), 1, "sequential")
    probe = {"probe": {"buffer_bytes": 1 << 20, "loads": 1 << 12}}
    (inst,) = spec_mod.one(spec_mod.MEMORY, {}, plan, {}, options=probe).instances
    inst = dataclasses.replace(inst, resolved={"probe": memory_probe.prepare(inst)["probe"]})
    assert inst.resolved["probe"]["compiler"] == cc
    built = memory_probe.build(inst, {})
    for _ in range(3):
        built.step()
    rep = built.report()
    assert len(rep["times_s"]) == 3 and rep["buffer_bytes"] == 1 << 20 and built.warnings == []
    assert built.timings["build_s"] > 0
    # summary: the last n steps are the timed ones; an excluded step does not count
    m = {"latencies_s": [0.1, 0.1], "excluded": [True, False], "elapsed_s": 1.0}
    got = memory_probe.summary(inst, rep, m, True)
    lat = rep["times_s"][2][0] / (1 << 12) * 1e9
    assert got["steps"] == 1 and got["latency_ns"] == pytest.approx(lat)
    assert "times_s" not in got and got["measure_s"] == 1.0
    assert memory_probe.summary(inst, rep, m, False)["latency_ns"] is None  # contended


@pytest.mark.parametrize(
    ("environ", "says"),
    [
        ({"CC": "/nonexistent/cc", "PATH": ""}, "CC=/nonexistent/cc is not an executable"),
        ({"PATH": "/nonexistent"}, "no compiler for the memory probe's C code"),
    ],
    ids=["CC-missing", "PATH-empty"],
)
def test_without_a_compiler_the_probe_is_skipped_with_the_reason(environ, says):
    cc, why = memory_probe.compiler(environ)
    assert cc is None and says in why
    got = memory_probe.measure(size=1 << 20, environ=environ)
    assert got == {"status": "skipped", "reason": why}
    plan = placement.plan(topology.current(), 1, "sequential")
    (inst,) = spec_mod.one(spec_mod.MEMORY, {}, plan, {}, options={"probe": {}}).instances
    with pytest.raises(Skip, match=re.escape(why)):
        memory_probe.prepare(inst, environ)


@pytest.mark.skipif(shutil.which("numactl") is None, reason="numactl is not installed")
def test_a_memory_job_without_a_compiler_records_skipped_and_starts_nothing(tmp_path, monkeypatch):
    """The front door's path on this machine: the pair's plan re-checked, then no compiler (CC
    points at nothing): a ``skipped`` record, no instance started."""
    here = topology.current()
    cfg = {**BASE, "threads": [1], "results": str(tmp_path / "results")}
    config_mod.check(cfg)
    p = build.build(cfg, here, code=CODE)
    (cpu, mem), *_ = p.memory
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setattr(
        job.runner, "measure", lambda *a, **k: pytest.fail("an instance was started")
    )
    out = tmp_path / "n.json"
    got = job.run(p.memory_spec(cpu, mem), out, tmp_path / "n.log", 60)
    assert got.status == "skipped" and "CC=/nonexistent/cc" in got.skip_reason
    assert record_mod.read(out) == got and json.loads(out.read_text())["memory"] is None
    line = job.outcome_line(got, "memory n0m0", "", "numbers")
    assert line == f"memory n0m0: SKIPPED, no numbers: {got.skip_reason}"
    row = memory_matrix.table([out], here).iloc[0]
    assert row.status == "skipped" and row.reason == got.skip_reason


def test_the_buffer_is_much_larger_than_the_last_level_cache(tmp_path):
    assert memory_probe.buffer_bytes(None) == memory_probe.MIN_BUFFER_BYTES
    assert memory_probe.buffer_bytes(96 << 20) == 768 << 20
    assert memory_probe.buffer_bytes(1 << 30) == memory_probe.MAX_BUFFER_BYTES
    assert memory_probe.buffer_bytes(3 << 20 | 5) % (2 << 20) == 0
    cache = tmp_path / "cpu3" / "cache"
    for index, level, size in (("index0", 1, "48K"), ("index2", 2, "2048K"), ("index3", 3, "96M")):
        (cache / index).mkdir(parents=True)
        (cache / index / "level").write_text(f"{level}\n")
        (cache / index / "size").write_text(f"{size}\n")
    assert memory_probe.llc_bytes(3, str(tmp_path)) == 96 << 20
    assert memory_probe.llc_bytes(4, str(tmp_path)) is None


# -- a real memory job on this machine -------------------------------------------------------------
@pytest.mark.integration
def test_a_memory_job_measures_this_machines_diagonal(tmp_path):
    """The tiny grid with the node-pair family: the memory job of this machine's first node's
    diagonal runs pinned and verified (its buffer on that node) without importing torch,
    memory_matrix.csv has its row (on a 1-node machine the only pair, n0m0), and the report's
    memory-matrix figure is drawn from it (no cell needed)."""
    cfg = load_config("tiny", placements=["sequential", "node-pairs"], batch_sizes=[1])
    cfg["optimizations"] = ["none"]
    figure = f"results/report/figures/{cfg['models'][0]}/node_pair_memory.png"
    snakemake(tmp_path, cfg, "--cores", "2", "results/tables/memory_matrix.csv", figure)
    assert (tmp_path / figure).stat().st_size > 1000
    here = topology.current()
    diag = here.nodes[0]
    rec = record_mod.read(tmp_path / "results" / "memory" / f"n{diag}m{diag}.json")
    if memory_probe.compiler()[0] is None:
        assert rec.status == "skipped"
        return
    assert rec.status == "ok", rec.failure
    assert rec.verification["ok"] and rec.plan["mem_nodes"] == [diag]
    assert rec.summary["torch_loaded"] is False
    df = pd.read_csv(tmp_path / "results" / "tables" / "memory_matrix.csv")
    row = df[(df.cpu_node == diag) & (df.mem_node == diag)].iloc[0]
    assert row.status == "ok" and row.latency_ns > 0 and row.bandwidth_gb_per_s > 0
    assert row.latency_ratio == 1.0 and row.bandwidth_ratio == 1.0
    assert row.buffer_bytes >= memory_probe.MIN_BUFFER_BYTES
    if here.distance(diag, diag) is not None:
        assert row.distance == here.distance(diag, diag)
