"""The layouts other tools choose by rule (numa_effects.plan.launchers) on synthesized and
captured topologies: run_cpu's latency and throughput modes as run_cpu computes them (checked
against torch's own run_cpu in the integration test), where they cross NUMA nodes and where they
land on SMT siblings, and the fixed layouts. Expectations come from each topology's own nodes and
cores, never from this machine's."""

import argparse
import itertools
import logging
import re
from types import SimpleNamespace

import pytest
from conftest import FIXTURES

from numa_effects.plan import cpulist, launchers, placement, topology

TOPO = FIXTURES / "topology"
SHAPES = {
    "2x32-smt": "synthetic-2x32-smt-offset64.lscpu-p.txt",
    "snc3": "synthetic-2x128-snc3-smt-offset256.lscpu-p.txt",
    "4node+memory": "synthetic-4node-plus-memory-only",
    "2x16-alternating": "2x16-nosmt-alternating.lscpu-p.txt",
    "adjacent-smt": "qemu-2node-2x2x2-smt-adjacent",
    "this-vm": "host-1node-kvm",
}


def load(name: str) -> topology.Topology:
    return topology.load(TOPO / SHAPES[name])


def node_sizes(topo) -> list[int]:
    return [len(topo.node_cpus(n)) for n in topo.nodes]


def crossings(sizes: list[int], chunk: int) -> int:
    """Chunks of ``chunk`` consecutive cores (in node order) that contain a node boundary."""
    bounds = list(itertools.accumulate(sizes))[:-1]
    total = sum(sizes)
    starts = range(0, total, chunk)
    return sum(any(s < b < min(s + chunk, total) for b in bounds) for s in starts)


def test_the_synthetic_lscpu_texts_are_the_scripts_output():
    import subprocess
    import sys

    for name, args in (
        ("2x32-smt", ["--nodes-per-socket", "32"]),
        ("snc3", ["--nodes-per-socket", "43,43,42"]),
    ):
        text = (TOPO / SHAPES[name]).read_text()
        title = text.splitlines()[0].removeprefix("# SYNTHETIC (not captured): ")
        got = subprocess.run(
            [
                sys.executable,
                str(TOPO / "synthesize-lscpu"),
                "--sockets",
                "2",
                *args,
                "--smt",
                "2",
                "--title",
                title,
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert got == text


@pytest.mark.parametrize("name", ["2x32-smt", "snc3", "4node+memory", "this-vm"])
def test_run_cpu_latency_mode_straddles_where_4_cores_cross_a_node(name):
    topo = load(name)
    sizes = node_sizes(topo)
    slots = launchers.run_cpu_layout(topo, latency_mode=True)
    assert [s.threads for s in slots][:-1] == [4] * (len(slots) - 1)
    assert sum(s.threads for s in slots) == sum(sizes)
    assert len(launchers.straddling(slots, topo)) == crossings(sizes, 4)
    for s in slots:  # -m is every node its CPUs are on
        assert s.mem_nodes == s.nodes(topo)


def test_on_snc3_run_cpu_latency_straddles_and_skip_leaves_the_remainders_idle():
    topo = load("snc3")
    assert node_sizes(topo) == [43, 43, 42] * 2
    slots = launchers.run_cpu_layout(topo, latency_mode=True)
    assert launchers.straddling(slots, topo)  # 43 is not a multiple of 4
    assert any("straddle" in n for n in launchers.notes(slots, topo))
    skip = launchers.run_cpu_layout(topo, latency_mode=True, skip_cross_node_cores=True)
    assert launchers.straddling(skip, topo) == []
    idle = sum(n % 4 for n in node_sizes(topo))
    assert f"{idle} physical core(s) idle" in launchers.notes(skip, topo)


@pytest.mark.parametrize("name", ["2x32-smt", "snc3"])
def test_run_cpu_throughput_mode_is_one_instance_per_cpu_node(name):
    topo = load(name)
    slots = launchers.run_cpu_layout(topo, throughput_mode=True)
    assert [s.threads for s in slots] == node_sizes(topo)
    assert launchers.straddling(slots, topo) == []  # numbered node by node: nothing crosses
    assert [s.mem_nodes for s in slots] == [(n,) for n in topo.nodes]


def test_with_adjacent_siblings_run_cpu_puts_node_instances_on_other_nodes():
    # 4 nodes of one 2-thread core each (siblings adjacent) and a memory-only node: core
    # numbers 0-3 are taken as CPUs 0-3, the two threads of nodes 0 and 1
    topo = load("4node+memory")
    assert topo.memory_only_nodes
    slots = launchers.run_cpu_layout(topo, throughput_mode=True)
    assert len(slots) == len(topo.nodes)  # one per CPU node; the memory-only node has none
    assert [s.mem_nodes for s in slots] != [(n,) for n in topo.nodes]
    assert not set(topo.memory_only_nodes) & {n for s in slots for n in s.mem_nodes}
    assert "some instances share a physical core's SMT siblings" in launchers.notes(slots, topo)


def test_run_cpu_numbers_its_cores_sorted_so_alternating_numbering_straddles():
    # CloudLab's c6420 numbers CPUs alternately across sockets: run_cpu sorts core numbers,
    # so its "one instance per node" takes CPUs of both sockets
    topo = load("2x16-alternating")
    slots = launchers.run_cpu_layout(topo, throughput_mode=True)
    assert len(slots) == len(topo.nodes)
    assert launchers.straddling(slots, topo) == list(range(len(slots)))


def test_run_cpu_takes_core_numbers_as_cpu_numbers_and_lands_on_smt_siblings():
    # adjacent siblings (0,1 share a core): core numbers 0-1 are CPUs 0-1, one core's threads
    topo = load("adjacent-smt")
    assert topo.cpu(0).siblings == (0, 1)
    slots = launchers.run_cpu_layout(topo, ninstances=1, ncores_per_instance=[2])
    assert slots[0].cpus == (0, 1)
    assert "some instances share a physical core's SMT siblings" in launchers.notes(slots, topo)


def test_run_cpu_stops_where_it_stops():
    topo = load("this-vm")  # fewer than 4 cores on node 0: run_cpu's loop never binds
    with pytest.raises(launchers.NotRunnable, match="fewer than 4"):
        launchers.run_cpu_layout(topo, latency_mode=True, skip_cross_node_cores=True)
    with pytest.raises(launchers.NotRunnable, match="exceeds"):
        launchers.run_cpu_layout(topo, ncores_per_instance=[5], ninstances=1)


@pytest.mark.parametrize("name", ["2x32-smt", "snc3", "4node+memory", "this-vm"])
def test_all_cores_and_one_core_each(name):
    topo = load(name)
    (one,) = launchers.all_cores(topo)
    assert one.cpus == tuple(sorted(c.cpu for c in topo.cpus)) and one.mem_nodes == ()
    assert one.threads == sum(1 for c in topo.cpus if c.primary)
    assert one.plan(topo).numactl_args()[1] == "--localalloc"
    each = launchers.one_core_each(topo)
    assert len(each) == one.threads and all(s.threads == 1 for s in each)
    assert launchers.straddling(each, topo) == []


def _slots(topo, threads, nodes):
    total = sum(node_sizes(topo))
    return [
        launchers.Slot(p.cpus, p.threads, p.mem_nodes)
        for p in placement.pack(topo, threads, total, nodes=nodes)
    ]


def _torch_parser() -> argparse.ArgumentParser:
    """torch.backends.xeon.run_cpu's own argument parser."""
    import torch.backends.xeon.run_cpu as rc

    parser = argparse.ArgumentParser(exit_on_error=False)
    rc.create_args(parser)
    return parser


@pytest.mark.parametrize("name", ["2x32-smt", "snc3", "this-vm"])
def test_run_cpu_args_start_exactly_the_layout_or_say_none(name):
    topo = load(name)
    first, cores = topo.nodes[0], len(topo.node_cpus(topo.nodes[0]))
    for threads in ([cores], [1, 1], [cores // 2] * 2):
        slots = _slots(topo, threads, [first] * len(threads))  # from the first core on
        args = launchers.run_cpu_args(slots, topo)
        assert args is not None, threads
        # as torch's run_cpu reads them (a flag ends the size list before the program)
        ns = _torch_parser().parse_args([*args, "--use-default-allocator", "serve.py"])
        again = launchers.run_cpu_layout(
            topo,
            ninstances=ns.ninstances,
            ncores_per_instance=ns.ncores_per_instance,
            skip_cross_node_cores=ns.skip_cross_node_cores,
        )
        want = sorted((tuple(sorted(s.cpus)), s.mem_nodes) for s in slots)
        assert sorted((s.cpus, s.mem_nodes) for s in again) == want
    if len(topo.nodes) > 1:  # run_cpu starts from the first cores: one on the last node only
        assert launchers.run_cpu_args(_slots(topo, [1], [topo.nodes[-1]]), topo) is None


def test_run_cpu_allocator_looks_where_run_cpu_looks(tmp_path):
    env = {"VIRTUAL_ENV": str(tmp_path)}
    (tmp_path / "lib").mkdir()
    name, _ = launchers.run_cpu_allocator(env)
    assert name in ("default", "tcmalloc", "jemalloc")  # this machine's /usr/lib may have one
    (tmp_path / "lib" / "libtcmalloc.so").write_text("")
    assert launchers.run_cpu_allocator(env)[0] == "tcmalloc"


# -- against torch's own run_cpu --------------------------------------------------------------


def _torch_run_cpu(lscpu: str, **kw) -> list[tuple[str, str]] | str:
    """torch.backends.xeon.run_cpu's launch() on an lscpu text: each instance's ``-C`` and
    ``-m`` as it logs them; its processes are not started."""
    import torch.backends.xeon.run_cpu as rc

    launcher = rc._Launcher.__new__(rc._Launcher)
    launcher.cpuinfo = rc._CPUinfo(test_input=lscpu)
    launcher.msg_lib_notfound = ""
    launcher.is_numactl_available = lambda: True
    launcher.set_multi_thread_and_allocator = lambda *a, **k: None
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    handler = Keep()
    rc.logger.addHandler(handler)
    level = rc.logger.level
    rc.logger.setLevel(logging.INFO)
    start, rc.start_processes = rc.start_processes, lambda **k: SimpleNamespace(wait=lambda: 0)
    args = SimpleNamespace(
        ncores_per_instance=-1,
        ninstances=-1,
        core_list=None,
        use_logical_core=False,
        node_id=-1,
        multi_instance=False,
        latency_mode=False,
        throughput_mode=False,
        skip_cross_node_cores=False,
        rank=-1,
        disable_numactl=False,
        disable_taskset=False,
        disable_iomp=True,
        enable_tcmalloc=False,
        enable_jemalloc=False,
        use_default_allocator=True,
        log_path="",
        log_file_prefix="x",
        no_python=False,
        module=False,
        program="serve.py",
        program_args=[],
    )
    for k, v in kw.items():
        setattr(args, k, v)
    try:
        launcher.launch(args)
    except Exception as exc:  # run_cpu stops: the replica must stop too
        return f"error: {exc}"
    finally:
        rc.start_processes = start
        rc.logger.removeHandler(handler)
        rc.logger.setLevel(level)
    found = [re.match(r"numactl -C (\S+) -m (\S+)", ln) for ln in lines]
    return [(cpulist.format(cpulist.parse(m[1])), m[2]) for m in found if m]


@pytest.mark.integration
@pytest.mark.parametrize("name", list(SHAPES))
def test_the_replica_starts_what_torch_run_cpu_starts(name, tmp_path):
    topo = load(name)
    rows = [",".join(map(str, r)) for r in launchers.lscpu_rows(topo)]
    text = "\n".join(["# CPU,Core,Socket,Node", *rows]) + "\n"  # what run_cpu's _CPUinfo parses
    cases = [
        {"latency_mode": True},
        {"latency_mode": True, "skip_cross_node_cores": True},
        {"throughput_mode": True},
        {"ninstances": 2, "ncores_per_instance": [1, 1]},
        {"ninstances": 2, "ncores_per_instance": [1, 1], "skip_cross_node_cores": True},
        {},
    ]
    for kw in cases:
        real = _torch_run_cpu(
            text,
            **{**kw, "ncores_per_instance": kw.get("ncores_per_instance", -1)},
            multi_instance=bool(kw.get("throughput_mode")),
            log_path=str(tmp_path),  # else torch's elastic logs make a /tmp/torchelastic_* each
        )
        try:
            slots = launchers.run_cpu_layout(topo, **kw)
        except launchers.NotRunnable:
            assert isinstance(real, str), (kw, real)
            continue
        mine = [(cpulist.format(s.cpus), ",".join(map(str, s.mem_nodes))) for s in slots]
        assert mine == real, kw
