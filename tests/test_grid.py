"""Grid expansion: which cells are scheduled, which are skipped and why."""

from pathlib import Path

import pytest

from numa_effects import grid, topology

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


def test_one_node_machine_schedules_sequential_and_skips_interleave(this_vm):
    g = grid.expand(config(), this_vm)
    assert len(g.cells) == 2 * 2 * 2  # opt x threads x batch, sequential only
    assert {k.placement for k in g.cells} == {"sequential"}
    assert len(g.skipped) == 8
    assert all(k.placement == "interleave" for k in g.skipped)
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
    assert key.path("out") == "out/cells/resnet50/none/sequential/t2/bs1.json"


def test_cell_key_round_trips_through_wildcards():
    key = grid.CellKey("resnet50", "script", "interleave", 4, 16)
    wc = {k: str(v) for k, v in key.as_dict().items()}
    assert grid.CellKey.from_wildcards(wc) == key
