"""In-cell verification: parsers on real /proc text (tests/fixtures/proc/, captured by
tests/fixtures/proc/capture.py on this host and inside the 2-node guest) and the checks."""

from pathlib import Path

import pytest

from numa_effects.measure import verify
from numa_effects.plan import placement, topology

PROC = Path(__file__).parent / "fixtures" / "proc"
TOPO = Path(__file__).parent / "fixtures" / "topology"


def plan_dict(place: str, t: int, fixture: str = "qemu-2node-test-guest") -> dict:
    return placement.plan(topology.load(TOPO / fixture), t, place).to_dict()


# -- numa_maps ---------------------------------------------------------------------------------
def test_parse_numa_maps_host():
    maps = verify.parse_numa_maps((PROC / "host-1node.numa_maps").read_text())
    assert len(maps) == len((PROC / "host-1node.numa_maps").read_text().splitlines())
    kinds = {m.kind for m in maps}
    assert {"file", "heap", "stack", "anon"} <= kinds
    heap = next(m for m in maps if m.kind == "heap")
    assert heap.policy == "default" and heap.page_kb == 4
    assert heap.pages_by_node == {0: heap.counters["anon"]}
    by_node = verify.anon_kb_by_node(maps)
    assert set(by_node) == {0}
    assert by_node[0] >= 64 * 1024  # the 64 MiB buffer the capture touched
    # file-backed mappings do not count, even where they have private (anon=) pages
    assert all(not m.anonymous for m in maps if m.kind == "file")


@pytest.mark.parametrize(
    ("capture", "node_shares"),
    [
        ("guest-membind1", {1: (0.99, 1.0)}),
        ("guest-interleave01", {0: (0.4, 0.6), 1: (0.4, 0.6)}),
        ("guest-membind0", {0: (0.99, 1.0)}),
    ],
)
def test_parse_numa_maps_guest(capture, node_shares):
    """numa_maps from the 2-node guest under numactl: pages land where the policy says."""
    maps = verify.parse_numa_maps((PROC / f"{capture}.numa_maps").read_text())
    by_node = verify.anon_kb_by_node(maps)
    total = sum(by_node.values())
    assert total >= 64 * 1024
    for node, (lo, hi) in node_shares.items():
        assert lo <= by_node.get(node, 0) / total <= hi


def test_parse_numa_maps_edge_cases():
    text = "\n".join(
        [
            "7f0000000000 bind:1 anon=10 dirty=10 N1=10 kernelpagesize_kB=4",
            "7f0000100000 interleave:0-1 file=/dev/shm/a b mapped=4 N0=2 N1=2 kernelpagesize_kB=4",
            "7f0000200000 default huge anon=2 dirty=2 N0=2 kernelpagesize_kB=2048",
            "7ffd00000000 default stack anon=3 dirty=3 N0=3 kernelpagesize_kB=4",
            "7f0000300000 prefer:0 anon=512 dirty=512 N0=512 kernelpagesize_kB=4",
            "7f0000400000 default",
            "",
        ]
    )
    maps = verify.parse_numa_maps(text)
    assert [m.kind for m in maps] == ["anon", "file", "huge", "stack", "anon", "anon"]
    assert maps[0].policy == "bind:1" and maps[0].pages_by_node == {1: 10}
    assert maps[1].pages_by_node == {0: 2, 1: 2}  # a path with spaces does not confuse it
    assert maps[2].kb_by_node() == {0: 4096}
    assert verify.anon_kb_by_node(maps) == {0: 3 * 4 + 512 * 4, 1: 40}


# -- task stat ---------------------------------------------------------------------------------
def test_parse_task_stat_real_lines():
    lines = (PROC / "host-1node.task-stat").read_text().splitlines()
    main, worker = (verify.parse_task_stat(line) for line in lines)
    assert main["comm"] == "python"
    assert worker["comm"] == "omp (w) 1"  # spaces and parentheses in the name
    for stat, line in ((main, lines[0]), (worker, lines[1])):
        assert stat["tid"] == int(line.split()[0])
        # field 39 counted from the end: 52 fields in all on this kernel
        assert stat["processor"] == int(line.split()[-(52 - 39) - 1])
        assert stat["processor"] in (0, 1)


def test_parse_task_stat_rejects_garbage():
    with pytest.raises(ValueError, match="not a /proc stat line"):
        verify.parse_task_stat("hello")
    with pytest.raises(ValueError, match="fields"):
        verify.parse_task_stat("1 (x) R 1 2 3")


def test_read_tasks_of_this_process():
    tasks = verify.read_tasks()
    assert tasks and all(t["cpus_allowed"] for t in tasks)
    assert {t["tid"] for t in tasks} >= {__import__("os").getpid()}


# -- the checks --------------------------------------------------------------------------------
def binding(plan: dict, **over) -> dict:
    mode = "bind" if plan["mem_policy"] == "bind" else "interleave"
    b = {
        "cpus_allowed_list": plan["cpu_list"],
        "mems_allowed_list": "0-1",
        "mempolicy": {"mode": mode, "flags": 0, "nodes": plan["mem_nodes"]},
    }
    b.update(over)
    return b


def tasks_on(*cpus, allowed=None):
    return [
        {"tid": 100 + i, "comm": "python", "last_cpu": c, "cpus_allowed": allowed or ""}
        for i, c in enumerate(cpus)
    ]


def test_everything_where_planned_passes():
    plan = plan_dict("remote", 2)
    v = verify.evaluate(plan, binding(plan), tasks_on(0, 1, 1), {0: 1000, 1: 99000})
    assert v["ok"] and v["cause"] is None and v["problems"] == []
    assert v["threads"]["last_cpus"] == "0-1" and v["threads"]["n_tasks"] == 3
    assert v["pages"]["share_on_plan"] == 0.99


def test_thread_on_an_unplanned_cpu_is_a_binding_mismatch():
    plan = plan_dict("remote", 1)
    v = verify.evaluate(plan, binding(plan), tasks_on(0, 2), {1: 1000})
    assert not v["ok"] and v["cause"] == "binding-mismatch"
    assert v["threads"]["outside_plan"] == [101]
    assert "ran outside 0" in v["problems"][0]["message"]


def test_thread_allowed_beyond_the_plan_is_a_binding_mismatch():
    plan = plan_dict("sequential", 1)
    v = verify.evaluate(plan, binding(plan), tasks_on(0, allowed="0-3"), {0: 1000})
    assert v["cause"] == "binding-mismatch" and "may run outside" in v["problems"][0]["message"]


def test_wrong_cpus_allowed_is_a_binding_mismatch():
    plan = plan_dict("sequential", 2)
    v = verify.evaluate(plan, binding(plan, cpus_allowed_list="0-3"), tasks_on(0, 1), {0: 10})
    assert v["problems"][0]["check"] == "cpus"


def test_wrong_memory_policy_is_a_binding_mismatch():
    plan = plan_dict("remote", 1)
    pol = {"mode": "bind", "flags": 0, "nodes": [0]}
    v = verify.evaluate(plan, binding(plan, mempolicy=pol), tasks_on(0), {1: 10})
    assert v["problems"][0]["check"] == "mempolicy"
    assert "bind:0, the plan is bind:1" in v["problems"][0]["message"]


def test_unreadable_memory_policy_fails_instead_of_passing():
    plan = plan_dict("remote", 1)
    pol = {"mode": "unknown", "error": "no syscall"}
    v = verify.evaluate(plan, binding(plan, mempolicy=pol), tasks_on(0), {1: 10})
    assert v["cause"] == "binding-mismatch" and "could not be read" in v["problems"][0]["message"]


def test_cpuset_excluding_planned_nodes_is_a_binding_mismatch():
    plan = plan_dict("remote", 1)
    v = verify.evaluate(plan, binding(plan, mems_allowed_list="0"), tasks_on(0), {1: 10})
    assert "excludes planned nodes 1" in v["problems"][0]["message"]


def test_at_start_checks_cpus_and_policy_only_and_agrees_with_the_full_check():
    """The check a cell makes when it starts: the same CPU and policy problems as after its
    measurement (``evaluate``), and nothing about threads or pages (there are none yet)."""
    plan = plan_dict("remote", 1)
    ok = verify.at_start(plan, binding(plan))
    assert ok["ok"] and ok["problems"] == [] and ok["stage"] == "start"
    wrong = binding(plan, cpus_allowed_list="2", mempolicy={"mode": "bind", "nodes": [0]})
    early = verify.at_start(plan, wrong)
    full = verify.evaluate(plan, wrong, tasks_on(2), {0: 10})
    assert early["cause"] == "binding-mismatch"
    assert early["problems"] == [p for p in full["problems"] if p["check"] in ("cpus", "mempolicy")]
    assert [p["check"] for p in early["problems"]] == ["cpus", "mempolicy"]
    assert early["binding"]["cpus_allowed_list"] == "2"


def test_pages_on_the_wrong_node_are_a_page_placement_failure():
    plan = plan_dict("remote", 1)
    v = verify.evaluate(plan, binding(plan), tasks_on(0), {0: 200, 1: 800})
    assert not v["ok"] and v["cause"] == "page-placement"
    assert v["pages"]["share_on_plan"] == 0.8
    assert (
        "80.0% of anonymous memory is on planned node(s) 1 (need 90%)"
        in (v["problems"][0]["message"])
    )


def test_exactly_90_percent_passes():
    plan = plan_dict("remote", 1)
    assert verify.evaluate(plan, binding(plan), tasks_on(0), {0: 100, 1: 900})["ok"]


@pytest.mark.parametrize(
    ("kb", "ok"),
    [
        ({0: 500, 1: 500}, True),
        # Measured in the 2-node guest with THP always (--interleave=all, t=1): a real split.
        ({0: 277672, 1: 146688}, True),
        ({0: 750, 1: 250}, True),
        ({0: 760, 1: 240}, False),
        ({0: 1000, 1: 0}, False),  # the policy was not applied
    ],
)
def test_interleave_needs_half_an_even_share_on_every_node(kb, ok):
    plan = plan_dict("mem-interleave", 1)
    v = verify.evaluate(plan, binding(plan), tasks_on(0), kb)
    assert v["ok"] is ok
    if not ok:
        assert v["cause"] == "page-placement" and "uneven" in v["problems"][0]["message"]


def test_no_anonymous_memory_is_a_failure():
    plan = plan_dict("sequential", 1)
    v = verify.evaluate(plan, binding(plan), tasks_on(0), {})
    assert v["cause"] == "page-placement"


def test_binding_problem_takes_precedence_over_pages():
    plan = plan_dict("remote", 1)
    v = verify.evaluate(plan, binding(plan), tasks_on(3), {0: 1000})
    assert v["cause"] == "binding-mismatch"
    assert [p["check"] for p in v["problems"]] == ["threads", "pages"]
    assert verify.failure_message(v).startswith("threads: ")


def test_run_on_this_process_under_its_real_binding():
    """verify.run on the live test process against a plan equal to its actual binding."""
    import os

    from numa_effects.measure import provenance

    bind = provenance.binding()
    mode = bind["mempolicy"]["mode"]
    if mode not in ("default", "local"):
        pytest.skip(f"test process runs under a {mode} memory policy")
    cpus = sorted(os.sched_getaffinity(0))
    topo = topology.current()
    plan = placement.Plan(
        "sequential", len(cpus), tuple(cpus), topo.nodes, "bind", topo.nodes
    ).to_dict()
    v = verify.run(plan)
    assert v["pages"]["anon_kb"] > 0 and v["threads"]["n_tasks"] >= 1
    # the process's transparent huge pages, from its smaps_rollup (Linux >= 4.14)
    huge = v["pages"]["anon_huge_kb"]
    assert isinstance(huge, int) and 0 <= huge <= v["pages"]["anon_kb"] + 2048
    # under the default policy the mempolicy check must fail: nothing bound this process
    assert [p["check"] for p in v["problems"]] == ["mempolicy"]


def test_anon_huge_pages_from_a_real_smaps_rollup():
    """Captured from a ResNet-50 process (batch 4, 224 px, one forward) run with
    THP_MEM_ALLOC_ENABLE=1 under THP mode madvise: 66 MiB of its 503 MiB anonymous memory in
    huge pages (0 without the variable on the same machine)."""
    text = Path(__file__).parent / "fixtures/smaps_rollup/resnet50-THP_MEM_ALLOC_ENABLE-1.txt"
    assert verify.anon_huge_kb(text.read_text()) == 67584
    assert verify.anon_huge_kb("Rss: 10 kB\nAnonymous: 5 kB\n") is None  # not reported
