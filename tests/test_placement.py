"""The placement planner on every topology fixture: every placement, SMT off and on, and every
not-applicable reason. Properties are checked exhaustively (all t up to the machine's CPUs);
exact numactl arguments are pinned on the machines docs/placements.md documents."""

from math import ceil

import pytest
from test_topology import FIXTURES, load

from numa_effects.plan import placement, placement_docs
from numa_effects.plan.placement import NotApplicable, Plan

# the fixed placements (a family such as n{cpu}m{mem} has tests of its own)
PLACEMENTS = [n for n, e in placement.PLACEMENTS.items() if not e.fields]


def args(topo, t, place, smt=False):
    p = placement.plan(topo, t, place, smt)
    assert isinstance(p, Plan), p
    return " ".join(p.numactl_args())


def usable(topo, node, smt):
    return topo.node_cpus(node, smt)


# -- properties on every fixture ---------------------------------------------------------------
@pytest.mark.parametrize("smt", [False, True], ids=["nosmt", "smt"])
@pytest.mark.parametrize("name", FIXTURES)
def test_every_plan_on_every_fixture(name, smt):
    topo = load(name)
    nodes = topo.nodes
    n0 = nodes[0]
    total = sum(len(usable(topo, n, smt)) for n in nodes)
    seen_na = set()
    for place in PLACEMENTS:
        for t in range(1, total + 2):
            p = placement.plan(topo, t, place, smt)
            if isinstance(p, NotApplicable):
                assert p.reason and p.placement == place and p.threads == t
                seen_na.add(place)
                continue
            cpus = p.cpus
            assert len(cpus) == t == len(set(cpus)) == p.threads
            assert cpus == tuple(sorted(cpus))
            assert set(cpus) <= {c.cpu for c in topo.cpus}
            assert p.cpu_nodes == tuple(sorted({topo.node_of(c) for c in cpus}))
            assert p.use_smt is smt and p.label == (place + "+smt" if smt else place)
            cores = {topo.cpu(c).siblings for c in cpus}
            assert p.cores == len(cores)
            if not smt:
                # physical cores only: the lowest sibling of distinct cores
                assert len(cores) == t
                assert all(topo.cpu(c).primary for c in cpus)
            if place == "sequential":
                order = [c for n in nodes for c in usable(topo, n, smt)]
                assert set(cpus) == set(order[:t])  # node 0 filled before node 1
                assert p.mem_policy == "bind" and p.mem_nodes == p.cpu_nodes
            elif place == "interleave":
                counts = [sum(topo.node_of(c) == n for c in cpus) for n in nodes]
                assert counts[0] == ceil(t / len(nodes))
                assert max(counts) - min(counts) <= 1
                assert counts == sorted(counts, reverse=True)
                assert p.mem_policy == "bind" and p.mem_nodes == p.cpu_nodes
            elif place == "remote":
                assert p.cpu_nodes == (n0,)
                assert p.mem_policy == "bind" and p.mem_nodes == (nodes[1],)
                assert set(cpus) == set(usable(topo, n0, smt)[:t])
            elif place == "mem-interleave":
                assert p.cpu_nodes == (n0,)
                assert p.mem_policy == "interleave" and p.mem_nodes == nodes
                assert set(cpus) == set(usable(topo, n0, smt)[:t])
            # the dict form the launcher ships and re-checks round-trips exactly
            assert Plan.from_dict(p.to_dict()) == p
    # every placement eventually runs out of CPUs (t = total + 1)
    assert seen_na == set(PLACEMENTS)


@pytest.mark.parametrize("name", FIXTURES)
def test_smt_plans_use_one_thread_per_core_while_cores_last(name):
    topo = load(name)
    cores0 = len(topo.node_cpus(topo.nodes[0]))
    for place in ("remote", "mem-interleave"):
        for t in range(1, cores0 + 1):
            with_smt = placement.plan(topo, t, place, True)
            if isinstance(with_smt, Plan):
                assert with_smt.cpus == placement.plan(topo, t, place, False).cpus
                assert with_smt.cores == t


# -- not-applicable reasons --------------------------------------------------------------------
@pytest.mark.parametrize("name", ["host-1node-kvm", "this-vm-2cpu-1node"])
def test_one_node_machines_cannot_run_remote(name):
    p = placement.plan(load(name), 1, "remote")
    assert isinstance(p, NotApplicable)
    assert p.reason == "remote needs at least 2 NUMA nodes; this machine has 1"


@pytest.mark.parametrize("name", ["host-1node-kvm", "this-vm-2cpu-1node"])
@pytest.mark.parametrize("place", ["interleave", "mem-interleave"])
def test_on_one_node_interleaving_is_the_sequential_binding(name, place):
    """On one node the interleaved placements alternate over (or interleave pages on) that node
    alone: the binding sequential gives (``plan.binding``), measured once in a grid."""
    from numa_effects.plan import binding

    topo = load(name)
    for t in range(1, len(topo.node_cpus(topo.nodes[0])) + 1):
        p, seq = placement.plan(topo, t, place), placement.plan(topo, t, "sequential")
        assert isinstance(p, Plan) and p.cpus == seq.cpus and p.mem_nodes == seq.mem_nodes
        assert binding.same(p, seq)
    too_many = len(topo.node_cpus(topo.nodes[0])) + 1
    assert isinstance(placement.plan(topo, too_many, place), NotApplicable)


def test_one_node_machine_runs_sequential():
    topo = load("host-1node-kvm")
    assert args(topo, 2, "sequential") == "--physcpubind=0-1 --membind=0"


def test_sequential_needs_cores_on_the_machine():
    topo = load("2x16-nosmt-alternating")
    p = placement.plan(topo, 33, "sequential")
    assert p.reason == "sequential needs 33 physical cores, this machine has 32"
    p = placement.plan(load("2x18-smt-offset36"), 73, "sequential", use_smt=True)
    assert p.reason == "sequential needs 73 logical CPUs, this machine has 72"


@pytest.mark.parametrize("place", ["remote", "mem-interleave"])
def test_node0_placements_need_cores_on_node0(place):
    topo = load("2x18-smt-offset36")
    p = placement.plan(topo, 19, place)
    assert p.reason == f"{place} needs 19 physical cores on node 0, which has 18"
    assert isinstance(placement.plan(topo, 19, place, use_smt=True), Plan)
    p = placement.plan(topo, 37, place, use_smt=True)
    assert p.reason == f"{place} needs 37 logical CPUs on node 0, which has 36"


def test_interleave_needs_its_share_on_every_node():
    topo = load("4node-2x44-smt-offset88")
    assert isinstance(placement.plan(topo, 88, "interleave"), Plan)
    p = placement.plan(topo, 89, "interleave")
    assert p.reason == "interleave needs 23 physical cores on node 0, which has 22"
    topo = load("qemu-2node-test-guest")
    p = placement.plan(topo, 5, "interleave")
    assert p.reason == "interleave needs 3 physical cores on node 0, which has 2"


def test_unknown_placement_and_bad_threads_are_errors():
    topo = load("host-1node-kvm")
    with pytest.raises(ValueError, match="unknown placement"):
        placement.plan(topo, 1, "scatter")
    with pytest.raises(ValueError, match="threads must be >= 1"):
        placement.plan(topo, 0, "sequential")


# -- exact commands on documented machines -----------------------------------------------------
def test_2x16_alternating_numbering():
    topo = load("2x16-nosmt-alternating")
    assert args(topo, 4, "sequential") == "--physcpubind=0,2,4,6 --membind=0"
    assert args(topo, 4, "interleave") == "--physcpubind=0-3 --membind=0-1"
    assert args(topo, 3, "interleave") == "--physcpubind=0-2 --membind=0-1"
    assert args(topo, 4, "remote") == "--physcpubind=0,2,4,6 --membind=1"
    assert args(topo, 4, "mem-interleave") == "--physcpubind=0,2,4,6 --interleave=0-1"
    assert args(topo, 1, "interleave") == "--physcpubind=0 --membind=0"
    # sequential past node 0 spills onto node 1 and binds memory to both
    assert args(topo, 17, "sequential") == (
        "--physcpubind=0-2,4,6,8,10,12,14,16,18,20,22,24,26,28,30 --membind=0-1"
    )


def test_2x18_smt_siblings_36_apart():
    topo = load("2x18-smt-offset36")
    assert args(topo, 18, "sequential") == "--physcpubind=0-17 --membind=0"
    assert args(topo, 4, "interleave") == "--physcpubind=0-1,18-19 --membind=0-1"
    assert args(topo, 20, "sequential", smt=True) == "--physcpubind=0-17,36-37 --membind=0"
    assert args(topo, 20, "remote", smt=True) == "--physcpubind=0-17,36-37 --membind=1"
    p = placement.plan(topo, 20, "remote", True)
    assert (p.cores, p.label) == (18, "remote+smt")


def test_adjacent_siblings_are_skipped_until_every_core_has_a_thread():
    topo = load("vm-2node-smt-adjacent")
    assert args(topo, 2, "sequential") == "--physcpubind=0,2 --membind=0"
    assert args(topo, 2, "sequential", smt=True) == "--physcpubind=0,2 --membind=0"
    assert args(topo, 3, "sequential", smt=True) == "--physcpubind=0-2 --membind=0"
    assert args(topo, 3, "sequential") == "--physcpubind=0,2,4 --membind=0-1"
    assert args(topo, 2, "interleave") == "--physcpubind=0,4 --membind=0-1"


def test_four_nodes():
    topo = load("4node-2x44-smt-offset88")
    assert args(topo, 4, "interleave") == "--physcpubind=0,22,44,66 --membind=0-3"
    assert args(topo, 6, "interleave") == "--physcpubind=0-1,22-23,44,66 --membind=0-3"
    assert args(topo, 2, "remote") == "--physcpubind=0-1 --membind=1"
    assert args(topo, 2, "mem-interleave") == "--physcpubind=0-1 --interleave=0-3"
    assert args(topo, 23, "sequential") == "--physcpubind=0-22 --membind=0-1"


def test_test_guest_plans():
    """The plans tests/test_numa_vm.py runs in the 2-node guest."""
    topo = load("qemu-2node-test-guest")
    assert args(topo, 1, "sequential") == "--physcpubind=0 --membind=0"
    assert args(topo, 2, "sequential") == "--physcpubind=0-1 --membind=0"
    assert args(topo, 1, "interleave") == "--physcpubind=0 --membind=0"
    assert args(topo, 2, "interleave") == "--physcpubind=0,2 --membind=0-1"
    assert args(topo, 2, "remote") == "--physcpubind=0-1 --membind=1"
    assert args(topo, 2, "mem-interleave") == "--physcpubind=0-1 --interleave=0-1"


# -- labels ------------------------------------------------------------------------------------
def test_labels_round_trip():
    for place in PLACEMENTS:
        assert placement.parse_label(placement.label(place, False)) == (place, False)
        assert placement.parse_label(placement.label(place, True)) == (place, True)
    assert placement.label("remote", True) == "remote+smt"


def test_plan_accepts_its_label():
    topo = load("2x18-smt-offset36")
    assert placement.plan(topo, 20, "sequential+smt") == placement.plan(
        topo, 20, "sequential", True
    )


def test_max_threads():
    assert placement.max_threads(load("2x18-smt-offset36")) == 18
    assert placement.max_threads(load("2x18-smt-offset36"), use_smt=True) == 36
    assert placement.max_threads(load("2x16-nosmt-alternating")) == 16


def test_docs_examples_are_the_planners_output():
    """The numactl examples in docs/placements.md are generated, not hand-written: each marked
    block is ``examples_markdown`` on the named fixture."""
    import re
    from pathlib import Path

    from numa_effects.plan import topology

    readme = (Path(__file__).parents[1] / "docs" / "placements.md").read_text()
    blocks = re.findall(
        r"<!-- placement-examples: (\S+) (\S+)( smt)? -->\n(.*?)\n<!-- /placement-examples -->",
        readme,
        re.S,
    )
    assert len(blocks) == 2
    for fixture, threads, smt, table in blocks:
        topo = topology.load(Path(__file__).parent / "fixtures" / "topology" / fixture)
        threads = [int(t) for t in threads.split(",")]
        want = placement_docs.examples_markdown(topo, threads, bool(smt))
        assert table == want, f"docs/placements.md block for {fixture} is stale; regenerate it"
