"""The node-pair matrix (planning): the placement family ``n{cpu}m{mem}`` (t cores of
node cpu, memory bound to node mem, compared with the local ``n{cpu}m{cpu}``) and config key
``node_pairs``, on captured topologies (1, 2 and 4 nodes) and the synthetic 8-node and
4 + 1 memory-only trees (tests/fixtures/topology/README.md): the planned pairs, their numactl
bindings, the skipped cells and their reasons, and what the config check refuses."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from numa_effects import config as config_mod
from numa_effects.plan import build, grid, placement, placement_docs, topology
from numa_effects.plan.placement import NotApplicable, Plan

FIX = Path(__file__).parent / "fixtures" / "topology"
ONE = FIX / "host-1node-kvm"  # captured: 1 node x 2 cores
TWO = FIX / "qemu-2node-test-guest"  # captured: 2 nodes x 2 cores (cpus 0-1, 2-3)
FOUR = FIX / "qemu-4node-4x1x2-smt-adjacent"  # captured: 4 nodes x 1 core x 2 threads
EIGHT = FIX / "synthetic-8node-8x1x2"  # synthetic: 8 nodes x 1 core x 2 threads
MEMORY_ONLY = FIX / "synthetic-4node-plus-memory-only"  # synthetic: FOUR + node 4, no CPUs

BASE = {
    "models": ["resnet18"],
    "batch_sizes": [1],
    "optimizations": ["none"],
    "threads": [1],
    "placements": ["node-pairs"],
    "image_size": 32,
    "peak": False,
}


def checked(topo_file: Path, **over) -> tuple[dict, topology.Topology]:
    cfg = copy.deepcopy({**BASE, **over, "topology": str(topo_file)})
    return cfg, config_mod.check(cfg).topology


def make(topo_file: Path, **over) -> build.Plan:
    cfg, topo = checked(topo_file, **over)
    return build.build(cfg, topo, code={"measure": "m", "tables": "t", "report": "r"})


def planned(p: build.Plan) -> list[str]:
    """The placements of the plan's runnable cells, in registry, then (row, column) order."""

    def order(name):
        entry, fields = placement.lookup(placement.parse_label(name)[0])
        return list(placement.PLACEMENTS).index(entry.name), tuple(fields.values())

    return sorted({k.placement for k in p.grid.cells}, key=order)


def skipped(p: build.Plan) -> dict[str, str]:
    return {k.placement: why for k, why in p.grid.skipped.items()}


def pairs(names) -> list[tuple[int, int]]:
    return [tuple(placement.lookup(placement.parse_label(n)[0])[1].values()) for n in names]


def args(topo, t, name, smt=False) -> str:
    p = placement.plan(topo, t, name, smt)
    assert isinstance(p, Plan), p
    return " ".join(p.numactl_args())


# -- which pairs are planned -----------------------------------------------------------------------
def test_two_nodes_all_is_the_2x2_matrix_with_its_bindings():
    p = make(TWO, threads=[1, 2])
    assert sorted(pairs(planned(p))) == [(0, 0), (0, 1), (1, 0), (1, 1)] and not p.grid.skipped
    topo = p.topology
    assert args(topo, 2, "n0m0") == "--physcpubind=0-1 --membind=0"
    assert args(topo, 2, "n0m1") == "--physcpubind=0-1 --membind=1"
    assert args(topo, 1, "n1m0") == "--physcpubind=2 --membind=0"
    assert args(topo, 2, "n1m1") == "--physcpubind=2-3 --membind=1"
    # the same binding the fixed placement `remote` gives, under the family's name
    assert placement.plan(topo, 2, "n0m1").cpus == placement.plan(topo, 2, "remote").cpus
    # each pair is compared with its CPU node's local diagonal, and runs next to it
    baselines = [placement.baseline_of(n) for n in ("n0m0", "n0m1", "n1m0", "n1m1")]
    assert baselines == [None, "n0m0", "n1m1", None]
    for k, r in p.order:
        base = placement.baseline_of(k.placement)
        if base is not None:
            i = p.order.index((k, r))
            neighbours = {p.order[j][0].placement for j in (i - 1, i + 1) if 0 <= j < len(p.order)}
            assert base in neighbours, (k, r)
    assert p.placements() == ["n0m0", "n0m1", "n1m0", "n1m1"]


IDS = ["4-all", "4-diag", "8-all", "8-diag", "8-list", "8-rows", "mem-all", "mem-diag", "mem-list"]


@pytest.mark.parametrize(
    ("topo_file", "value", "expected"),
    [
        (FOUR, "all", [(c, m) for c in range(4) for m in range(4)]),
        (FOUR, "diagonal+row0", [(0, 0), (1, 1), (2, 2), (3, 3), (0, 1), (0, 2), (0, 3)]),
        (EIGHT, "all", [(c, m) for c in range(8) for m in range(8)]),
        (EIGHT, "diagonal+row0", [*((c, c) for c in range(8)), *((0, m) for m in range(1, 8))]),
        (EIGHT, [[0, 1], [0, 5]], [(0, 0), (0, 1), (0, 5)]),
        (EIGHT, [[3, 7], [0, 5], [3, 0]], [(3, 3), (3, 7), (0, 0), (0, 5), (3, 0)]),
        # a memory-only node (4) is a memory node only: a column, never a row
        (MEMORY_ONLY, "all", [(c, m) for c in range(4) for m in range(5)]),
        (
            MEMORY_ONLY,
            "diagonal+row0",
            [(0, 0), (1, 1), (2, 2), (3, 3), (0, 1), (0, 2), (0, 3), (0, 4)],
        ),
        (MEMORY_ONLY, [[2, 4]], [(2, 2), (2, 4)]),
    ],
    ids=IDS,
)
def test_node_pairs_selects_the_pairs(topo_file, value, expected):
    cfg, topo = checked(topo_file, node_pairs=value)
    assert pairs(placement.expand(cfg["placements"], cfg, topo)) == expected
    p = build.build(cfg, topo)
    assert sorted(pairs(planned(p))) == sorted(expected) and not p.grid.skipped


def test_node_pairs_is_all_by_default_and_unused_without_the_family():
    cfg, topo = checked(FOUR)
    assert cfg["node_pairs"] == "all" and len(placement.expand(["node-pairs"], cfg, topo)) == 16
    p = make(FOUR, placements=["sequential", "remote"], node_pairs=[[0, 3]])
    assert planned(p) == ["sequential", "remote"]


def test_named_members_and_the_family_name_together_plan_each_pair_once():
    p = make(FOUR, placements=["sequential", "n0m2", "node-pairs"], node_pairs="diagonal+row0")
    names = p.placements()
    assert names[:2] == ["sequential", "n0m2"] and len(names) == len(set(names)) == 8


def test_a_memory_only_node_is_a_memory_target_with_its_binding():
    p = make(MEMORY_ONLY, threads=[1, 2], use_smt=True, node_pairs=[[0, 4], [3, 4]])
    topo = p.topology
    assert args(topo, 2, "n0m4", smt=True) == "--physcpubind=0-1 --membind=4"
    assert args(topo, 1, "n3m4") == "--physcpubind=6 --membind=4"
    assert {k.placement for k in p.grid.cells} == {"n0m0+smt", "n0m4+smt", "n3m3+smt", "n3m4+smt"}
    assert placement.baseline_of("n0m4+smt") == "n0m0+smt"
    cell = p.grid.cells[next(k for k in p.grid.cells if k.placement == "n3m4+smt")]
    assert cell.cpu_nodes == (3,) and cell.mem_nodes == (4,) and cell.mem_policy == "bind"
    # as a CPU node, a memory-only node is never planned; named directly, it says why
    why = placement.plan(topo, 1, "n4m0")
    assert isinstance(why, NotApplicable)
    assert why.reason == "n4m0: node 4 has no CPUs (a memory-only node); CPU nodes: 0-3"
    assert (
        placement.plan(topo, 1, "n0m9").reason == "n0m9: node 9 does not exist; memory nodes: 0-4"
    )


# -- skipped cells and their reasons -------------------------------------------------------------
def test_only_thread_counts_that_fit_one_node_are_planned():
    """One core per node on the 4-node guest: 2 threads fit a node only with its SMT sibling."""
    p = make(FOUR, threads=[1, 2], node_pairs="diagonal+row0")
    assert {k.threads for k in p.grid.cells} == {1}
    assert skipped(p)["n0m3"] == "n0m3 needs 2 physical cores on node 0, which has 1"
    assert skipped(p)["n2m2"] == "n2m2 needs 2 physical cores on node 2, which has 1"
    smt = make(FOUR, threads=[2], use_smt=True, node_pairs="diagonal+row0")
    assert not smt.grid.skipped
    assert args(smt.topology, 2, "n2m0", smt=True) == "--physcpubind=4-5 --membind=0"


def test_exclude_plans_the_matrix_at_one_thread_count_of_a_grid_that_sweeps_two():
    """``exclude``: cells matching an entry are left out (not skipped); a family name matches
    each member, with the +smt label when use_smt is on."""
    grid_over = {"threads": [1, 2], "placements": ["sequential", "remote", "node-pairs"]}
    full = make(TWO, **grid_over)
    cut = make(TWO, **grid_over, exclude=[{"placements": ["node-pairs"], "threads": [2]}])
    gone = set(full.grid.reported()) - set(cut.grid.reported())
    assert gone and {(k.placement, k.threads) for k in gone} == {
        (n, 2) for n in ("n0m0", "n0m1", "n1m0", "n1m1")
    }
    assert set(cut.grid.reported()) < set(full.grid.reported())  # nothing else moved
    assert cut.grid.skipped == full.grid.skipped  # left out, not listed as skipped
    assert {(k.placement, k.threads) for k in cut.grid.reported() if k.threads == 2} == {
        ("sequential", 2),
        ("remote", 2),
    }
    # every key of an entry must match; a member named alone, and a +smt grid
    one = make(TWO, **grid_over, exclude=[{"placements": ["n1m0"], "threads": [1, 2]}])
    assert {k.placement for k in set(full.grid.cells) - set(one.grid.cells)} == {"n1m0"}
    smt = make(
        FOUR,
        threads=[2],
        use_smt=True,
        placements=["sequential", "node-pairs"],
        exclude=[{"placements": ["node-pairs"]}],
    )
    assert {k.placement for k in smt.grid.cells} == {"sequential+smt"}


def test_an_exclude_that_leaves_no_cell_or_names_nothing_known_is_refused():
    ((key, line),) = problems(TWO, exclude=[{"placements": ["node-pairs"]}])
    assert key == "exclude" and "leaves no cell of the grid on topology file" in line
    ((key, line),) = problems(TWO, exclude=[{"placements": ["nodepairs"]}])
    assert key == "exclude[0].placements[0]"
    assert "'nodepairs' is not a known placement (did you mean 'node-pairs'?)" in line
    ((key, line),) = problems(TWO, exclude=[{"thread": [2]}])
    assert key == "exclude[0].thread" and "did you mean 'threads'?" in line


def test_an_exclude_beside_a_refused_grid_key_is_not_planned():
    """The exclude check plans the grid from every axis' key: one the schema refused is said
    once, never planned (``batch_sizes: [a]`` is not read as a number)."""
    ((key, line),) = problems(TWO, batch_sizes=["a"], exclude=[{"threads": [1]}])
    assert key == "batch_sizes[0]" and "'a' is a string" in line


@pytest.mark.parametrize("value", ["all", "diagonal+row0"])
def test_a_one_node_machine_plans_the_diagonal_and_says_why(value):
    p = make(ONE, threads=[1, 2], node_pairs=value)
    assert planned(p) == ["n0m0"] and len(p.grid.cells) == 2
    assert args(p.topology, 2, "n0m0") == "--physcpubind=0-1 --membind=0"
    assert set(skipped(p).items()) == {
        ("n0m1", "n0m1: this machine has one NUMA node (0), so the node-pair matrix is its "
                 "diagonal n0m0 only"),
    }  # fmt: skip
    assert {k.threads for k in p.grid.skipped} == {1, 2}


def test_a_memoryless_cpu_node_keeps_its_row_and_its_diagonal_says_why(tmp_path):
    """A CPU node without memory (they exist) cannot be its own baseline: the diagonal is a
    skipped cell with the reason; its pairs to memory nodes are planned."""
    import shutil

    tree = tmp_path / "memoryless"
    shutil.copytree(TWO, tree)
    (tree / "sys/devices/system/node/has_memory").write_text("0\n")
    p = make(tree)
    assert planned(p) == ["n0m0", "n1m0"]
    assert skipped(p) == {
        "n0m1": "n0m1: node 1 has no memory; memory nodes: 0",
        "n1m1": "n1m1: node 1 has no memory; memory nodes: 0",
    }


# -- config refusals -------------------------------------------------------------------------------
def problems(topo_file: Path, **over) -> list[tuple[str, str]]:
    with pytest.raises(config_mod.ConfigError) as err:
        checked(topo_file, **over)
    return [(p.key, str(p)) for p in err.value.problems]


def test_a_pair_naming_a_node_the_machine_lacks_is_refused_in_one_line():
    ((key, line),) = problems(FOUR, node_pairs=[[0, 1], [0, 5]])
    assert key == "node_pairs[1]"
    assert line == (
        f"config key 'node_pairs[1]': [0, 5]: topology file {FOUR} has no node 5; allowed: "
        f"[cpu node, memory node] with a CPU node of 0-3 and a memory node of 0-3"
    )
    ((key, line),) = problems(MEMORY_ONLY, node_pairs=[[4, 0]])
    assert key == "node_pairs[0]" and "[4, 0]: node 4 has no CPUs (a memory-only node" in line
    assert line.endswith("a CPU node of 0-3 and a memory node of 0-4")
    # on a 1-node machine only [0, 0] is a pair
    ((key, line),) = problems(ONE, node_pairs=[[0, 0], [0, 1]])
    assert key == "node_pairs[1]" and "has no node 1; allowed:" in line
    both = problems(EIGHT, node_pairs=[[8, 0], [0, 9]])
    assert [k for k, _ in both] == ["node_pairs[0]", "node_pairs[1]"]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("diagonal", "'node_pairs': 'diagonal' is not allowed (did you mean 'diagonal+row0'?)"),
        ([[0, 1, 2]], "'node_pairs[0]': the list has 3 items; allowed: a list (exactly 2 items)"),
        ([[0]], "'node_pairs[0]': the list has 1 item; allowed: a list (exactly 2 items)"),
        ([[0, -1]], "'node_pairs[0][1]': -1 is out of range; allowed: an integer >= 0"),
        ([[0, 1], [0, 1]], "'node_pairs': [0, 1] appears more than once"),
        ([], "'node_pairs': the list is empty"),
    ],
    ids=["word", "triple", "single", "negative", "twice", "empty"],
)
def test_a_node_pairs_value_of_the_wrong_shape_is_one_line(value, text):
    ((_, line),) = problems(FOUR, node_pairs=value)
    assert text in line, line


def test_node_pairs_given_on_the_command_line_are_numbers():
    """``--config node_pairs='[[0,1]]'`` arrives as strings (Snakemake's YAML BaseLoader)."""
    cfg, _ = checked(FOUR, node_pairs=[["0", "1"]])
    assert cfg["node_pairs"] == [[0, 1]]


def test_the_family_is_one_registry_entry_the_config_names_two_ways():
    entry, fields = placement.lookup("n3m12")
    assert entry.name == "n{cpu}m{mem}" and fields == {"cpu": 3, "mem": 12}
    assert placement.families() == {"node-pairs": entry}
    assert entry.members.config_key == "node_pairs"
    rx = grid.wildcard_constraints()["placement"]
    assert re.fullmatch(rx, "n0m4+smt") and not re.fullmatch(rx, "node-pairs")
    cfg, _ = checked(FOUR, placements=["n0m1", "node-pairs"])
    assert cfg["placements"] == ["n0m1", "node-pairs"]
    ((key, line),) = problems(FOUR, placements=["node-pair"])
    assert key == "placements[0]" and "(did you mean 'node-pairs'?)" in line


def test_the_command_line_prints_the_pairs_and_the_docs_show_its_output(capsys):
    """docs/placements.md's node-pair block is ``numa-effects placement --node-pairs ...`` on
    the memory-only tree."""
    docs = (Path(__file__).parents[1] / "docs" / "placements.md").read_text()
    (block,) = re.findall(
        r"<!-- node-pair-examples: (\S+) (\S+) (\S+) -->\n(.*?)\n<!-- /node-pair-examples -->",
        docs,
        re.S,
    )
    fixture, threads, value, table = block
    assert placement_docs.main(["--topology", str(FIX / fixture), "--threads", threads,
                                "--node-pairs", value]) == 0  # fmt: skip
    assert capsys.readouterr().out.strip() == table.strip()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--topology", "/nonexistent"], "cannot read topology file /nonexistent"),
        (["--topology", str(TWO), "--threads", "1,x"], "invalid literal for int()"),
        (["--topology", str(TWO), "--threads", "0"], "threads must be >= 1, got 0"),
        (["--topology", str(TWO), "--node-pairs", "bogus"], "node_pairs: 'bogus' is not all"),
    ],
)
def test_the_command_line_says_what_is_wrong_in_one_line(args, said, capsys):
    with pytest.raises(SystemExit) as exc:
        placement_docs.main(args)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err
    assert err.splitlines()[-1].startswith("numa-effects placement: error: ")
    assert said in err.splitlines()[-1]


def test_the_guest_grid_measures_each_binding_once():
    """The 2-node guest's grid (.test/config/guest.yaml) pays minutes of TCG per cell, so no two
    of its cells may run the same binding (``plan.binding``: the same CPUs and memory nodes
    under the same policy), and its ``exclude`` keeps every placement's name measured under
    its own (none is reported from another's measurement)."""
    from conftest import load_config

    from numa_effects.plan import binding

    topo = topology.load(TWO)
    g = grid.expand(load_config("guest"), topo)
    assert not g.skipped and not g.same

    seen: dict[tuple, grid.CellKey] = {}
    for key, p in g.cells.items():
        other = seen.setdefault(binding.of(p), key)
        assert other == key, f"{key} repeats the binding of {other}: {binding.of(p)}"
    # and every family is there: the four placements across both nodes and the pair matrix
    places = {k.placement for k in g.cells}
    assert {"sequential", "interleave", "remote", "mem-interleave"} <= places
    assert {f"n{c}m{m}" for c in topo.nodes for m in topo.nodes} <= places
