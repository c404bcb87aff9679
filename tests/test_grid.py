"""Grid expansion: which cells are scheduled, which are skipped and why."""

import itertools
from dataclasses import replace
from pathlib import Path

import pytest

from numa_effects.plan import binding, grid, placement, topology

FIX = Path(__file__).parent / "fixtures" / "topology"


@pytest.fixture
def this_vm():
    # `lscpu -p` of the 2-vCPU, 1-node development VM.
    return topology.load(FIX / "this-vm-2cpu-1node.lscpu")


def config(**over):
    base = {
        "models": ["resnet50"],
        "batch_sizes": [1, 8],
        "optimizations": ["none", "script"],
        "threads": "auto",
        "placements": ["sequential", "interleave"],
        "use_smt": False,
    }
    return {**base, **over}


def test_auto_threads_are_the_cores_of_one_node(this_vm):
    assert grid.thread_counts(config(), this_vm) == [1, 2]


def test_one_node_machine_measures_sequential_once_for_interleave_too(this_vm):
    g = grid.expand(config(), this_vm)
    assert len(g.cells) == 2 * 2 * 2  # opt x threads x batch, sequential only
    assert {k.placement for k in g.cells} == {"sequential"}
    # interleave has sequential's binding on one node (the planner says so): reported from it
    assert not g.skipped and len(g.same) == 8
    for key, measured in g.same.items():
        assert key.placement == "interleave" and measured == replace(key, placement="sequential")
        assert binding.same(placement.plan(this_vm, key.threads, "interleave"), g.cells[measured])
    # each placement measured on its own (same_bindings: each): interleave runs as well
    each = grid.expand(config(same_bindings="each"), this_vm)
    assert len(each.cells) == 16 and not each.same and not each.skipped
    # remote cannot run on one node: skipped, saying why
    g = grid.expand(config(placements=["sequential", "remote"]), this_vm)
    assert {k.placement for k in g.skipped} == {"remote"} and not g.same
    assert all("at least 2 NUMA nodes" in why for why in g.skipped.values())


def test_more_threads_than_cores_are_skipped_with_reason(this_vm):
    g = grid.expand(config(threads=[1, 4], placements=["sequential"]), this_vm)
    assert {k.threads for k in g.cells} == {1}
    reasons = {k.threads: why for k, why in g.skipped.items()}
    assert set(reasons) == {4}
    assert "sequential needs 4 physical cores, this machine has 2" in reasons[4]


def test_cells_carry_their_plan(this_vm):
    g = grid.expand(config(threads=[2], placements=["sequential"], batch_sizes=[1]), this_vm)
    (key, plan), *_ = g.cells.items()
    assert plan.numactl_args() == ["--physcpubind=0-1", "--membind=0"]
    assert key.path("out") == "out/cells/resnet50/none/sequential/t2/bs1/default/r1.json"
    assert key.path("out", 3) == "out/cells/resnet50/none/sequential/t2/bs1/default/r3.json"


def test_cell_key_round_trips_through_wildcards():
    key = grid.CellKey("resnet50", "script", "interleave", 4, 16)
    wc = {k: str(v) for k, v in key.as_dict().items()}
    assert grid.CellKey.from_wildcards(wc) == key


def order_config(**over):
    return config(threads=[1, 2], batch_sizes=[1, 4, 16], **over)


@pytest.mark.parametrize("replicates", [2, 3, 5])
@pytest.mark.parametrize(
    "topo_file", ["this-vm-2cpu-1node.lscpu", "2x16-nosmt-alternating.lscpu-p.txt"]
)
def test_job_order_separates_replicates_and_keeps_baselines_close(replicates, topo_file):
    """Planned on this machine's shape and on a 2-node file: no two replicates of a cell back to
    back; every compared cell within its group (its placement's and optimization's comparisons)
    of its baseline's and its eager cell's same replicate."""
    topo = topology.load(FIX / topo_file)
    g = grid.expand(order_config(), topo)
    order = grid.job_order(g.cells, replicates)
    assert sorted(order) == sorted((k, r) for k in g.cells for r in range(1, replicates + 1))
    # rounds: every first replicate before any second one
    assert [r for _, r in order] == sorted(r for _, r in order)
    for (a, _), (b, _) in itertools.pairwise(order):
        assert a != b, f"replicates of {a} back to back"
    pos = {job: i for i, job in enumerate(order)}
    placements = {k.placement for k in g.cells}
    group = len(placements) * len({k.opt for k in g.cells})
    assert group > len(placements)  # the optimizations are in the group too
    for (k, r), i in pos.items():
        base = grid.CellKey(k.model, k.opt, "sequential", k.threads, k.batch_size)
        eager = grid.CellKey(k.model, "none", k.placement, k.threads, k.batch_size)
        assert abs(pos[(base, r)] - i) < group and abs(pos[(eager, r)] - i) < group, (k, r)
    # ABBA: the baseline runs first in one round and last in the next
    if len(placements) > 1:
        k = next(k for k in g.cells if k.placement != "sequential")
        base = grid.CellKey(k.model, k.opt, "sequential", k.threads, k.batch_size)
        assert (pos[(base, 1)] < pos[(k, 1)]) != (pos[(base, 2)] < pos[(k, 2)])


def test_job_order_is_seeded_and_paths_follow_it(this_vm):
    g = grid.expand(order_config(), this_vm)
    assert grid.job_order(g.cells, 3) == grid.job_order(g.cells, 3)
    assert grid.job_order(g.cells, 3, seed=1) != grid.job_order(g.cells, 3)
    paths = grid.replicate_outputs(g, 2, "res")
    assert len(paths) == len(set(paths)) == 2 * len(g.cells)
    assert paths[0].endswith("/r1.json") and paths[-1].endswith("/r2.json")
    assert grid.replicates({}) == 1 and grid.replicates({"replicates": 4}) == 4


# -- what the machine offers: requirements, native bf16, allocator libraries (plan.host) -------
CPU = Path(__file__).parent / "fixtures" / "cpu"


def caps(name: str):
    from numa_effects.plan import cpu

    return cpu.capabilities(cpu.parse_cpuinfo((CPU / name).read_text(), name))


PRECISION = ["none", "bf16", "bf16_eager", "int8", "int8_bf16"]


def test_bf16_auto_skips_the_bf16_entries_where_bf16_is_not_native(this_vm):
    """Zen 3 (AVX2: oneDNN refuses bf16, ATen's fallback runs): under bf16: auto the entries
    computing in bf16 are skipped with the reason; int8 (no VNNI) still runs, marked later."""
    from numa_effects.plan import host

    zen3 = host.Host(
        available={"torchao": True, "cxx": True}, capabilities=caps("amd-epyc-zen3-kvm.cpuinfo")
    )
    cfg = config(optimizations=PRECISION, placements=["sequential"], threads=[1], batch_sizes=[1])
    g = grid.expand(cfg, this_vm, host=zen3)
    assert {k.opt for k in g.cells} == {"none", "int8"}
    reasons = {k.opt: why for k, why in g.skipped.items()}
    assert set(reasons) == {"bf16", "bf16_eager", "int8_bf16"}
    assert reasons["bf16"].startswith("bf16 aten_fallback: oneDNN refuses bf16 here")
    assert "set bf16: always to measure it anyway" in reasons["bf16"]
    # always: measured anyway (the cells mark themselves non-native)
    g = grid.expand({**cfg, "bf16": "always"}, this_vm, host=zen3)
    assert {k.opt for k in g.cells} == set(PRECISION) and not g.skipped


@pytest.mark.parametrize(
    "cpuinfo", ["amd-epyc-9654-zen4.cpuinfo", "intel-xeon-8480-sapphirerapids.cpuinfo"]
)
def test_bf16_auto_measures_bf16_where_it_is_native(this_vm, cpuinfo):
    from numa_effects.plan import host

    native = host.Host(available={"torchao": True, "cxx": True}, capabilities=caps(cpuinfo))
    cfg = config(optimizations=PRECISION, placements=["sequential"], threads=[1], batch_sizes=[1])
    assert {k.opt for k in grid.expand(cfg, this_vm, host=native).cells} == set(PRECISION)


def test_a_missing_requirement_skips_its_optimization_with_the_install_line(this_vm):
    from numa_effects.plan import host

    no_ao = host.Host(available={"torchao": False, "cxx": True})
    g = grid.expand(config(optimizations=["none", "int8"], placements=["sequential"]), this_vm,
                    host=no_ao)  # fmt: skip
    assert {k.opt for k in g.cells} == {"none"}
    assert all("optimization int8 needs torchao (install: pip install" in w
               for w in g.skipped.values())  # fmt: skip


def test_a_missing_allocator_library_skips_its_cells_with_the_reason(this_vm, monkeypatch):
    """An allocator whose library this machine does not have (a registry entry, looked up for
    real: ldconfig -p and the standard folders) is skipped with the sonames and the install
    line; glibc's cells still run."""
    from numa_effects.plan import allocators, host

    missing = allocators.Allocator(
        "nosuchmalloc",
        "a library no machine has",
        sonames=("libnosuchmalloc.so.9",),
        package="libnosuchmalloc9",
        maps_key="libnosuchmalloc",
    )
    monkeypatch.setitem(allocators.ALLOCATORS, missing.name, missing)
    here = host.current(["default", "nosuchmalloc"])
    assert here.libraries == {"nosuchmalloc": None}
    cfg = config(placements=["sequential"], allocators=["default", "nosuchmalloc"])
    g = grid.expand(cfg, this_vm, host=here)
    assert {k.allocator for k in g.cells} == {"default"}
    assert {k.allocator for k in g.skipped} == {"nosuchmalloc"}
    why = next(iter(g.skipped.values()))
    assert why.startswith("allocator nosuchmalloc: libnosuchmalloc.so.9 not found")
    assert "tools/install-system-deps --allocators (apt-get install libnosuchmalloc9)" in why
    # where a job runs, the front door looks again: a library missing there fails the cell
    from numa_effects.measure import job

    record, env, why = job.allocator_here("nosuchmalloc")
    assert record is None and env is None and "libnosuchmalloc.so.9 not found" in why


def test_the_allocator_axis_is_last_with_glibc_as_its_default(this_vm):
    """A new axis with a default: older records (no allocator) read as glibc's; the key,
    paths and wildcard constraints follow from the registry."""
    assert grid.KEYS[-1] == "allocator" and grid.DEFAULTS == {"allocator": "default"}
    old_cell = {"model": "m", "opt": "none", "placement": "sequential", "threads": 1,
                "batch_size": 2}  # fmt: skip
    assert grid.CellKey.from_record(old_cell).allocator == "default"
    assert "allocator" in grid.wildcard_constraints()
    g = grid.expand(config(placements=["sequential"], allocators=["default", "tcmalloc"]), this_vm)
    assert {k.allocator for k in g.cells} == {"default", "tcmalloc"}
    assert len(g.cells) == 2 * 2 * 2 * 2
    import pandas as pd

    old = pd.DataFrame({"model": ["m"], "opt": ["none"], "placement": ["sequential"],
                        "threads": [1], "batch_size": [2], "x": [1.0]})  # fmt: skip
    assert list(grid.fill_keys(old).columns) == [*grid.KEYS, "x"]
