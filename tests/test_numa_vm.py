"""NUMA placements and the NUMA half of the report on a real 2-node Linux: ONE boot of the QEMU
guest of tests/numa_vm runs tests/numa_vm/guest-e2e, which

- runs the measured part of the pipeline (``snakemake --until cell memory machine``) on a tiny
  grid in the guest: resnet18 at 32 x 32, batch 1, all four placements at 2 threads and the
  node-pair matrix at 1 thread (``exclude``: each binding once), ``peak: false``
  (4 + 4 cells, each numactl-pinned and verified in the cell, and one memory job per pair);
- runs ``driver.py --only negative/wrong-binding`` beside it: a cell whose numactl binding is
  deliberately not its plan must be caught and fail; then, in the same branch,
  ``interference_check.py``: one interference profile job (docs/packing.md): one
  instance alone, then one per node side by side, placed by ``placement.pack`` and measured by
  the front door's interference job (``job.run``).

The host then draws everything else from the guest's results folder with the same workflow
(flops, tables, degradation, figures, page): a dry run first must plan no cell, peak or
machine job (nothing re-measured), and a dry run afterwards must plan nothing. Checks: every cell
of every placement is bound as planned (CPUs, memory policy, pages), the pipeline tests'
assertions (tests/test_pipeline.py) hold against the guest's topology with the real planner,
every NUMA figure family is drawn from those cells, ``degradation.csv`` has rows for each
non-sequential placement, the page's NUMA section shows them, and machine.json says the guest
is emulated (efficiency stays empty: no peak was measured). The interference group: every
instance on the CPUs and node that ``placement.pack`` gives on the guest's topology (recomputed
here), no CPU shared, memory bound to the instance's node only, verified in the instance (CPUs,
policy, pages), and the profile table's row per node. The node-pair matrix: each pair's cell
and memory job on node i's CPUs with its pages on node j (the memory job without torch), then
the host draws its memory matrix, degradation against the diagonals and the Node-pair matrix
section.

The boot starts in the background right after collection and these tests run last
(tests/guest_boot.py, conftest.py): the guest's ~20 minutes overlap the host tests.
Select with ``-m numa_vm``; skip with ``-m "not numa_vm"``. ``NUMA_VM_RESULTS=DIR`` checks the
output of an earlier run instead (``tests/numa_vm/run-in-guest ... --rwdir DIR -- \
tests/numa_vm/guest-e2e .venv/bin/python DIR``, with DIR/guest-config.yaml = GUEST_CONFIG);
``NUMA_VM_RERUN_TRIGGERS=mtime`` too when the code changed since that run.
Needs apt (or the packages of tests/numa_vm/setup already installed). Duration: see
docs/development.md (TCG: Python is ~13x slower in the guest).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
import sys
import time
from pathlib import Path

import guest_boot
import pandas as pd
import pytest
from conftest import load_config, planned, snakemake
from test_pipeline import check_cells, check_tables

from numa_effects.measure import record, verify
from numa_effects.plan import cpulist, grid, placement, topology
from numa_effects.plan import node_pairs as node_pairs_mod
from numa_effects.report import families, figures

pytestmark = pytest.mark.numa_vm

REPO = Path(__file__).resolve().parents[1]
VM = REPO / "tests" / "numa_vm"
GUEST_TOPOLOGY = REPO / "tests" / "fixtures" / "topology" / "qemu-2node-test-guest"
PLACEMENTS = ["sequential", "interleave", "remote", "mem-interleave"]
# The smallest grid that has every NUMA figure family (.test/config/guest.yaml).
GUEST_CONFIG = load_config("guest")
(ALLOC,) = GUEST_CONFIG["allocators"]  # the allocator of every guest cell's path
# the (placement, threads) the planner makes of it on the guest's captured topology: each
# binding once (its `exclude`: the placements at 2 threads, the node pairs at 1)
_TOPO = topology.load(GUEST_TOPOLOGY)
PLANNED = {(k.placement, k.threads) for k in grid.expand(GUEST_CONFIG, _TOPO).cells}
CELLS = sorted((p, t) for p, t in PLANNED if p in PLACEMENTS)
PLACEMENT_THREADS = sorted({t for _, t in CELLS})
# the node pairs the planner selects on the guest's captured topology (2 x 2), at one thread
PAIRS = sorted(node_pairs_mod.node_pairs(GUEST_CONFIG["node_pairs"], _TOPO))
PAIR_CELLS = [(f"n{c}m{m}", 1) for c, m in PAIRS]
OFF_DIAGONAL = {f"n{c}m{m}" for c, m in PAIRS if c != m}


def read(path) -> dict:
    """A record's JSON, checked readable as a record (``measure.record``)."""
    data = json.loads(Path(path).read_text())
    record.Record.from_json(data, str(path))
    return data


@pytest.fixture(scope="module")
def guest(tmp_path_factory):
    """The guest's output folder: pipeline/ (a results folder), driver/, timings.txt. The boot
    started in the background after collection (tests/guest_boot.py) is waited for here."""
    if sys.platform != "linux":
        pytest.skip("needs Linux")
    reuse = os.environ.get("NUMA_VM_RESULTS")
    if reuse:  # check the output of an earlier `run-in-guest ... guest-e2e` run
        return Path(reuse)
    boot = guest_boot.CURRENT
    if boot is None:  # NUMA_VM_BACKGROUND=0: boot now (killed at the session's end if it runs)
        boot = guest_boot.CURRENT = guest_boot.Boot(tmp_path_factory.mktemp("numa_vm")).start()
    if boot.setup_error:
        if os.environ.get("CI") != "true" and os.geteuid() != 0:
            pytest.skip(f"not root and not CI; {boot.setup_error}")
        pytest.fail(boot.setup_error)  # in CI an infrastructure failure fails the test
    t0 = time.monotonic()
    proc = boot.wait().proc
    waited = time.monotonic() - t0
    print(
        f"numa_vm: guest run took {boot.wall_s:.0f} s (this test waited {waited:.0f} s of it); "
        f"{proc.stderr.strip()[-300:]}",
        file=sys.stderr,
    )
    assert proc.returncode == 0, (
        f"guest exited {proc.returncode}:\n{proc.stdout[-4000:]}\n" + (proc.stderr[-4000:])
    )
    return boot.out


def results(out: Path) -> Path:
    return out / "pipeline" / "results"


def host_config(out: Path) -> dict:
    """The guest's config, planned on the host against the guest's machine.json."""
    return {**GUEST_CONFIG, "topology": str(results(out) / "machine.json")}


def guest_topology(out: Path) -> topology.Topology:
    facts = json.loads((results(out) / "machine.json").read_text())
    return topology.Topology.from_dict(facts["topology"])


def guest_grid(out: Path) -> grid.Grid:
    return grid.expand(GUEST_CONFIG, guest_topology(out))


@pytest.fixture(scope="module")
def drawn(guest):
    """The host's part: the rest of `all` from the guest's results, with the same workflow."""
    workdir = guest / "pipeline"
    cfg = host_config(guest)
    # NUMA_VM_RESULTS of an older tree: its code differs from the guest's, so Snakemake would
    # re-run the cells; NUMA_VM_RERUN_TRIGGERS=mtime draws them anyway (never in CI).
    triggers = os.environ.get("NUMA_VM_RERUN_TRIGGERS")
    extra = ["--rerun-triggers", *triggers.split(",")] if triggers else []
    before = planned(workdir, cfg, *extra)
    # Checked here, before anything runs: a cell job on the host would overwrite the guest's
    # measurement with one of this machine (Snakemake re-runs a cell whose code or params
    # changed since the guest ran it).
    assert not {"cell", "memory", "peak", "machine"} & set(before), before
    t0 = time.monotonic()
    snakemake(workdir, cfg, *extra, "--cores", "2", "all")
    print(f"numa_vm: host drew the report in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    after = planned(workdir, cfg, *extra)
    return workdir, before, after


# -- the guest ---------------------------------------------------------------------------------
def test_guest_is_an_emulated_two_node_machine(guest):
    for machine_json in (results(guest) / "machine.json", guest / "driver" / "machine.json"):
        facts = json.loads(machine_json.read_text())
        assert facts["summary"]["nodes"] == 2
        assert "available: 2 nodes (0-1)" in facts["numactl_hardware"]
        assert facts["emulated"] is True, facts["emulated_reason"]
        assert "virtme-ng" in facts["emulated_reason"]
        # the guest's topology is the fixture the unit tests plan against
        here = topology.Topology.from_dict(facts["topology"])
        assert here.cpus == topology.load(GUEST_TOPOLOGY).cpus


def test_pipeline_assertions_hold_on_the_guest(guest):
    """tests/test_pipeline.py's checks, against the guest's topology and the real planner."""
    g = guest_grid(guest)
    assert g.skipped == {}
    assert {(k.placement, k.threads) for k in g.cells} == set(CELLS) | set(PAIR_CELLS)
    # An emulated iteration takes 0.5-2.5 s (more on a busy host): the adaptive protocol may stop
    # at max_seconds_per_cell after a single timed iteration.
    check_cells(results(guest), g, grid.replicates(GUEST_CONFIG), min_timed=1)


@pytest.mark.parametrize(("place", "threads"), CELLS)
def test_cell_binding_and_pages_match_the_plan(guest, place, threads):
    key = grid.CellKey("resnet18", "none", place, threads, 1, ALLOC)
    path = results(guest) / grid.CELL_PATTERN.format(**key.as_dict(), replicate=1)
    data = read(path)
    assert data["status"] == "ok", data.get("failure")
    plan = data["plan"]
    # the plan made inside the guest is the one the planner makes for the captured topology
    expected = placement.plan(topology.load(GUEST_TOPOLOGY), threads, place)
    assert plan == expected.to_dict()
    bind = data["binding"]
    assert cpulist.parse(bind["cpus_allowed_list"]) == tuple(plan["cpus"])
    mode = "bind" if plan["mem_policy"] == "bind" else "interleave"
    assert bind["mempolicy"]["mode"] == mode
    assert bind["mempolicy"]["nodes"] == plan["mem_nodes"]
    assert bind["torch_num_threads"] == threads
    ver = bind["verification"]
    assert ver["ok"] and ver["problems"] == []
    # every thread last ran on a planned CPU
    last = {t["last_cpu"] for t in ver["threads"]["tasks"]}
    assert last <= set(plan["cpus"]) and ver["threads"]["outside_plan"] == []
    # where the anonymous memory really is
    pages = ver["pages"]
    by_node = {int(n): kb for n, kb in pages["anon_kb_by_node"].items()}
    total = sum(by_node.values())
    assert total > 50 * 1024  # a torch process: tens of MB at least
    on_plan = sum(by_node.get(n, 0) for n in plan["mem_nodes"]) / total
    assert on_plan >= 0.9
    if place == "mem-interleave":
        # Both nodes hold a real share (verify.INTERLEAVE_MIN_OF_EVEN explains why not +-10 pp:
        # with THP the guest measured 65 / 35 %), and neither holds it all.
        floor = verify.INTERLEAVE_MIN_OF_EVEN / len(plan["mem_nodes"])
        for n in plan["mem_nodes"]:
            assert by_node.get(n, 0) / total >= floor
    if place == "remote":
        assert by_node.get(plan["cpu_nodes"][0], 0) / total < 0.1  # not local


def test_wrong_binding_is_detected_and_fails_the_cell(guest):
    data = read(guest / "driver" / "cells" / "negative" / "wrong-binding.json")
    assert data["status"] == "failed"
    assert data["failure"]["cause"] == "binding-mismatch"
    ver = data["binding"]["verification"]
    # caught when the cell started (verify.at_start), before torch's import: CPUs and policy
    assert ver["stage"] == "start"
    assert {p["check"] for p in ver["problems"]} == {"cpus", "mempolicy"}
    assert data.get("stats") is None and not data.get("measurement")  # nothing measured


# -- the host draws from the guest's cells -----------------------------------------------------
def test_host_measures_nothing_and_a_rerun_plans_nothing(drawn):
    _, before, after = drawn
    assert before, "the host had nothing to draw"
    assert not {"cell", "memory", "peak", "machine"} & set(before), before
    assert "tables" in before and "report_page" in before
    assert after == {}, after


def test_tables_from_the_guest(guest, drawn):
    check_tables(results(guest), guest_grid(guest), GUEST_CONFIG["optimizations"])
    cells = pd.read_csv(results(guest) / "tables" / "cells.csv")
    assert set(cells["placement"]) == set(PLACEMENTS) | {p for p, _ in PAIR_CELLS}
    # no peak was measured in the emulated guest: efficiency is empty, not invented
    assert pd.read_csv(results(guest) / "tables" / "peak.csv").empty
    assert cells["peak_gflop_per_s"].isna().all() and cells["efficiency"].isna().all()
    assert cells["gflop_per_s"].gt(0).all()


def test_degradation_has_rows_for_every_other_placement(guest, drawn):
    deg = pd.read_csv(results(guest) / "tables" / "degradation.csv")
    others = set(PLACEMENTS) - {"sequential"}
    assert set(deg["placement"]) == others | OFF_DIAGONAL
    for place in others:
        rows = deg[deg["placement"] == place]
        assert sorted(rows["threads"]) == PLACEMENT_THREADS, rows


def numa_figures(out: Path) -> list[figures.Figure]:
    return [f for f in figures.figures(guest_grid(out).cells) if f.spec.section == "numa"]


def test_every_numa_figure_family_is_drawn(guest, drawn):
    want = numa_figures(guest)
    numa = {f.name for f in families.FAMILIES if f.section == "numa"}
    assert {f.family for f in want} == numa
    folder = results(guest) / "report" / "figures"
    for fig in want:
        for ext in ("png", "svg"):
            path = Path(fig.path(str(folder), ext))
            assert path.is_file() and path.stat().st_size > 1000, path
    # the heatmaps exist for every non-sequential placement
    heat = {f.placement for f in want if f.family == "latency_degradation_heatmap"}
    assert heat == set(PLACEMENTS) - {"sequential"} | OFF_DIAGONAL


def test_page_numa_section_shows_the_figures_and_the_emulation_banner(guest, drawn):
    page = (results(guest) / "report" / "index.html").read_text()
    start = page.index('id="numa-effects"')
    end = page.find("<h2", start)
    section = page[start : end if end > 0 else len(page)]
    srcs = set(re.findall(r'<img src="([^"]+)"', section))
    want = {Path(f.path("figures")).as_posix() for f in numa_figures(guest)}
    assert want <= srcs, want - srcs
    # the page says that these timings come from an emulated guest (machine.json "emulated")
    assert 'id="emulated"' in page


# -- the packing group (guest-e2e's packing step) ----------------------------------------------
def _guest_script(name: str):
    spec = importlib.util.spec_from_file_location(f"numa_vm_{name}", VM / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# the guest's script, for its configuration rule (budget, threads, k) only
INTERFERENCE_CHECK = _guest_script("interference_check")


def interference_record(out: Path) -> dict:
    return json.loads((out / "driver" / "packing" / "interference.json").read_text())


def check_interference_group(rec: dict, topo: topology.Topology) -> None:
    """The guest's interference check (interference_check.py): the profile job's alone
    instance and its group of k are where ``placement.pack`` puts them on ``topo`` (recomputed
    here), no CPU shared, memory bound to each instance's own node, each verified in itself, and
    the profile table gives every node its own row with its instances' co-runner cores x.
    Placement and verification only: timings in the guest mean nothing. Raises
    AssertionError."""
    from numa_effects.tables import interference as profile

    budget, threads, k = INTERFERENCE_CHECK.interference_configuration(topo)
    assert rec["status"] == "ok", rec.get("failure")
    j = rec["job"]
    assert (j["budget"], j["threads"], j["instances"]) == (budget, threads, [k])
    assert sorted(rec["runs"]) == sorted(["k1", f"k{k}"])
    for name, size in (("k1", 1), (f"k{k}", k)):
        want = placement.pack(topo, [threads] * size, budget)
        assert isinstance(want, list), want
        (group,) = rec["runs"][name]  # one replicate
        assert group["status"] in ("ok", "contended"), group.get("failure")
        insts = group["instances"]
        assert len(insts) == size
        seen: set[int] = set()
        for i, (inst, plan) in enumerate(zip(insts, want, strict=True)):
            assert inst["plan"] == plan.to_dict(), (name, i, inst["plan"]["cpus"], plan.cpus)
            bind = inst["binding"]
            cpus = set(cpulist.parse(bind["cpus_allowed_list"]))
            assert cpus == set(plan.cpus), (name, i, cpus)
            assert not cpus & seen, (name, i, cpus & seen)
            seen |= cpus
            nodes = sorted({topo.node_of(c) for c in cpus})
            assert len(nodes) == 1, (name, i, nodes)  # each instance fits one node
            assert bind["mempolicy"]["mode"] == "bind", (name, i, bind["mempolicy"])
            assert bind["mempolicy"]["nodes"] == nodes, (name, i, bind["mempolicy"])
            ver = inst["verification"]
            assert ver["ok"] and ver["problems"] == [], (name, i, ver["problems"])
            by_node = {int(n): kb for n, kb in ver["pages"]["anon_kb_by_node"].items()}
            on_own = sum(by_node.get(n, 0) for n in nodes) / sum(by_node.values())
            assert on_own >= verify.MIN_SHARE, (name, i, by_node)
    # the table attributes each instance to its node: x = the other busy cores there
    rows = profile.rows([record.GroupRecord.from_json(rec)])
    per_node: dict[str, int] = {}
    for inst in rec["runs"][f"k{k}"][0]["instances"]:
        node = "+".join(str(n) for n in inst["plan"]["cpu_nodes"])
        per_node[node] = per_node.get(node, 0) + 1
    assert sorted(r["node"] for r in rows) == sorted(per_node)
    for r in rows:
        assert r["k_node"] == per_node[r["node"]]
        assert r["x"] == threads * (per_node[r["node"]] - 1)


def test_interference_group_is_placed_one_instance_per_node_and_verified(guest):
    """The interference check on the 2 x 2 guest: two 2-thread instances, one per node, each
    verified on its node; the profile table has one row per node with x = 0."""
    rec = interference_record(guest)
    topo = topology.load(GUEST_TOPOLOGY)
    check_interference_group(rec, topo)
    insts = rec["runs"]["k2"][0]["instances"]
    assert sorted(tuple(i["plan"]["cpu_nodes"]) for i in insts) == [(0,), (1,)]


def test_interference_checks_fail_on_a_misplaced_group(guest):
    """check_interference_group can fail: records altered to look self-consistent but wrong."""
    rec = interference_record(guest)
    topo = topology.load(GUEST_TOPOLOGY)
    k = f"k{INTERFERENCE_CHECK.interference_configuration(topo)[2]}"
    insts = rec["runs"][k][0]["instances"]
    first_node = {topo.node_of(c) for c in insts[0]["plan"]["cpus"]}
    other_node = next(n for n in topo.nodes if n not in first_node)
    bad = []
    # the two instances swapped: each pinned and verified as its own plan says, but not where
    # placement.pack puts it
    swapped = copy.deepcopy(rec)
    group = swapped["runs"][k][0]["instances"]
    group[0], group[1] = group[1], group[0]
    bad.append(swapped)
    # the first instance's memory bound to the other node
    membind = copy.deepcopy(rec)
    membind["runs"][k][0]["instances"][0]["binding"]["mempolicy"]["nodes"] = [other_node]
    bad.append(membind)
    # its pages on the other node (the verification's own verdict left "ok")
    pages = copy.deepcopy(rec)
    ver = pages["runs"][k][0]["instances"][0]["verification"]
    total = sum(ver["pages"]["anon_kb_by_node"].values())
    ver["pages"]["anon_kb_by_node"] = {str(other_node): total}
    bad.append(pages)
    # a CPU of the other instance
    shared = copy.deepcopy(rec)
    cpus = insts[1]["plan"]["cpu_list"]
    shared["runs"][k][0]["instances"][0]["binding"]["cpus_allowed_list"] = cpus
    bad.append(shared)
    for r in bad:
        with pytest.raises(AssertionError):
            check_interference_group(r, topo)


# -- the node-pair matrix (in the guest's pipeline) --------------------------------------


def check_pair_binding(data: dict, topo: topology.Topology, cpu: int, mem: int) -> None:
    """One node-pair cell's or memory job's record: verified on ``topo``'s node ``cpu`` CPUs
    with memory bound to node ``mem`` and (>= ``verify.MIN_SHARE``) of its anonymous memory
    there. Raises AssertionError."""
    assert data["status"] == "ok", data.get("failure")
    plan = data["plan"]
    assert plan["mem_policy"] == "bind" and plan["mem_nodes"] == [mem], plan
    bind = data["binding"]
    cpus = cpulist.parse(bind["cpus_allowed_list"])
    assert cpus == tuple(plan["cpus"]) and {topo.node_of(c) for c in cpus} == {cpu}, cpus
    assert bind["mempolicy"]["mode"] == "bind" and bind["mempolicy"]["nodes"] == [mem]
    ver = bind["verification"]
    assert ver["ok"] and ver["problems"] == [], ver["problems"]
    by_node = {int(n): kb for n, kb in ver["pages"]["anon_kb_by_node"].items()}
    assert by_node.get(mem, 0) / sum(by_node.values()) >= verify.MIN_SHARE, by_node


@pytest.mark.parametrize(("cpu", "mem"), PAIRS)
def test_node_pair_cell_and_memory_job_sit_on_their_nodes(guest, cpu, mem):
    """Every pair of the 2 x 2 matrix: its cell and its memory job, each verified with its CPUs
    on node cpu and its pages on node mem."""
    topo = topology.load(GUEST_TOPOLOGY)
    key = grid.CellKey("resnet18", "none", f"n{cpu}m{mem}", 1, 1, ALLOC)
    cell = read(results(guest) / grid.CELL_PATTERN.format(**key.as_dict(), replicate=1))
    check_pair_binding(cell, topo, cpu, mem)
    assert cell["binding"]["torch_num_threads"] == 1
    job = read(results(guest) / "memory" / f"n{cpu}m{mem}.json")
    check_pair_binding(job, topo, cpu, mem)
    assert job["memory"]["latency_ns"] > 0 and job["memory"]["bandwidth_gb_per_s"] > 0
    assert job["memory"]["torch_loaded"] is False
    # the probe's buffer is most of what the job touched, and it is on node mem
    pages = job["binding"]["verification"]["pages"]["anon_kb_by_node"]
    assert int(pages.get(str(mem), 0)) * 1024 >= 0.9 * job["memory"]["buffer_bytes"]


def test_node_pair_checks_fail_on_a_misplaced_record(guest):
    """check_pair_binding can fail: a real record checked as another pair's, and altered."""
    topo = topology.load(GUEST_TOPOLOGY)
    job = read(results(guest) / "memory" / "n0m1.json")
    check_pair_binding(job, topo, 0, 1)
    for cpu, mem in ((0, 0), (1, 1), (1, 0)):
        with pytest.raises(AssertionError):
            check_pair_binding(job, topo, cpu, mem)
    moved = copy.deepcopy(job)
    ver = moved["binding"]["verification"]
    total = sum(ver["pages"]["anon_kb_by_node"].values())
    ver["pages"]["anon_kb_by_node"] = {"0": total}
    with pytest.raises(AssertionError):
        check_pair_binding(moved, topo, 0, 1)


def test_host_draws_the_node_pair_matrix_from_the_guest(guest, drawn):
    """The host plans no measurement and draws the memory matrix (4 rows, the firmware's
    distances beside them), the degradation of each off-diagonal pair against its diagonal,
    and the Node-pair matrix section's figures on the page."""
    _, before, _ = drawn
    assert "memory_matrix_table" in before and "report_page" in before
    res = results(guest)
    mm = pd.read_csv(res / "tables" / "memory_matrix.csv")
    assert sorted(zip(mm.cpu_node, mm.mem_node, strict=True)) == PAIRS
    assert mm["status"].eq("ok").all(), mm[["cpu_node", "mem_node", "status", "reason"]]
    topo = topology.load(GUEST_TOPOLOGY)
    for r in mm.itertuples():
        assert r.distance == topo.distance(r.cpu_node, r.mem_node)
    assert mm[mm.cpu_node == mm.mem_node]["latency_ratio"].eq(1.0).all()
    deg = pd.read_csv(res / "tables" / "degradation.csv")
    deg = deg[deg.placement.isin(OFF_DIAGONAL)]
    assert sorted(zip(deg.placement, deg.baseline, strict=True)) == [
        (f"n{c}m{m}", f"n{c}m{c}") for c, m in PAIRS if c != m
    ]
    want = [f for f in figures.figures(guest_grid(guest).cells) if f.spec.section == "node_pairs"]
    assert {f.family for f in want} == {
        "node_pair_heatmap",
        "node_pair_memory",
        "node_pair_scatter",
    }
    folder = res / "report" / "figures"
    for fig in want:
        path = Path(fig.path(str(folder)))
        assert path.is_file() and path.stat().st_size > 1000, path
    page = (res / "report" / "index.html").read_text()
    start = page.index('id="node-pair-matrix"')
    section = page[start : page.find("<h2", start)]
    srcs = set(re.findall(r'<img src="([^"]+)"', section))
    assert {Path(f.path("figures")).as_posix() for f in want} <= srcs
    assert "memory_matrix table" in section
