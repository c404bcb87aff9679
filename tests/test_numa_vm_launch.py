"""``numa-effects launch`` on a real 2-node Linux (the QEMU guest of tests/numa_vm): a deploy
plan of two instances, one per node with its memory bound there, made by the project's planner
(``analysis.deploy_plan.place``) for the guest's captured topology, is started by the launcher
inside the guest with a user program after ``--`` that touches ``TOUCHED`` bytes and waits. An
observer in the guest reads each instance's ``/proc/PID/status`` and ``/proc/PID/numa_maps``
while both run; the test checks the kernel's word against the plan: every instance on its
planned CPUs, its memory policy bound to its planned node and its anonymous pages there.

One boot of its own (~1-3 min under TCG; one guest runs at a time, so it waits for the boot of
tests/test_numa_vm.py when both run). Select with ``-m numa_vm``. ``NUMA_VM_LAUNCH_OUT=DIR``
checks the output of an earlier boot instead (its ``observed.json`` beside ``results/``)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import guest_boot
import pytest

from numa_effects.analysis import deploy_plan
from numa_effects.plan import allocators, cpulist, paths, topology
from numa_effects.plan.optimizations import EAGER

pytestmark = pytest.mark.numa_vm

REPO = Path(__file__).resolve().parents[1]
GUEST_TOPOLOGY = REPO / "tests" / "fixtures" / "topology" / "qemu-2node-test-guest"
TOUCHED = 64 << 20  # bytes each instance writes: 16384 pages of 4 KiB on its node
PAGE = 4096
CONFIG = "c1"

# The user's program: touches TOUCHED bytes, says its pid, waits for the observer's stop file.
PROGRAM = (
    "import os, sys, time; from pathlib import Path; "
    f"buf = b'\\x01' * {TOUCHED}; "
    "out = Path(sys.argv[1]); "
    "(out / 'ready' / os.environ['NUMA_EFFECTS_INSTANCE']).write_text(str(os.getpid())); "
    "[time.sleep(0.2) for _ in iter(lambda: (out / 'stop').exists(), True)]; "
    "print(len(buf), flush=True)"
)

# Runs in the guest: the launcher with PROGRAM, then what the kernel says of each instance.
OBSERVER = """
import json, os, subprocess, sys, time
from pathlib import Path

out, n, program = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
(out / "ready").mkdir(exist_ok=True)
env = {**os.environ, "PYTHONPATH": sys.argv[4]}
cmd = [sys.executable, "-m", "numa_effects", "launch", "--results", "results",
       "--role", sys.argv[5], "--", sys.executable, "-c", program, str(out)]
with open(out / "launch.out", "w") as o, open(out / "launch.err", "w") as e:
    proc = subprocess.Popen(cmd, cwd=out, env=env, stdout=o, stderr=e)
end = time.monotonic() + 900
while len(list((out / "ready").iterdir())) < n and proc.poll() is None:
    assert time.monotonic() < end, "the instances did not start"
    time.sleep(0.2)
seen = {}
for f in sorted((out / "ready").iterdir()):
    pid = int(f.read_text())
    seen[f.name] = {
        "pid": pid,
        "status": Path(f"/proc/{pid}/status").read_text(),
        "numa_maps": Path(f"/proc/{pid}/numa_maps").read_text(),
    }
(out / "stop").write_text("")
rc = proc.wait(timeout=300)
node_cpus = {
    p.name[4:]: (p / "cpulist").read_text().strip()
    for p in Path("/sys/devices/system/node").glob("node[0-9]*")
}
(out / "observed.json").write_text(json.dumps(
    {"launcher_rc": rc, "instances": seen, "node_cpus": node_cpus}
))
"""


def planned(topo: topology.Topology) -> dict:
    """The deploy plan's configuration: one instance per node, as many threads as the node has
    cores, its memory bound to its node, placed by the deploy planner."""
    parts = [(len(topo.node_cpus(n)), 1, n) for n in topo.nodes]
    insts = deploy_plan.place(topo, parts, use_smt=False)
    assert not isinstance(insts, str), insts
    conf = deploy_plan.Config("resnet18", EAGER, allocators.GLIBC, insts)
    return conf.to_dict(topo)


def write_results(results: Path, conf: dict) -> None:
    """The parts of a results folder the launcher reads: the recommendation's row and the
    deploy plan (no machine.json: the folder is not another machine's)."""
    (results / paths.DEPLOY_PLAN).parent.mkdir(parents=True)
    (results / paths.DEPLOY_PLAN).write_text(json.dumps({"configurations": {CONFIG: conf}}))
    table = results / paths.table("recommendation")
    table.parent.mkdir(parents=True, exist_ok=True)
    with open(table, "w", newline="") as fh:
        w = csv.DictWriter(fh, ["objective", "role", "config", "baseline", "instances"])
        w.writeheader()
        w.writerow({"objective": "throughput", "role": "recommended", "config": CONFIG,
                    "baseline": "", "instances": len(conf["instances"])})  # fmt: skip


def boot(out: Path, n: int) -> subprocess.CompletedProcess:
    setup = subprocess.run([str(guest_boot.VM / "setup")], capture_output=True, text=True)
    if setup.returncode != 0:
        why = f"tests/numa_vm/setup failed:\n{setup.stdout}\n{setup.stderr}"
        if os.environ.get("CI") != "true" and os.geteuid() != 0:
            pytest.skip(f"not root and not CI; {why}")
        pytest.fail(why)  # in CI a missing prerequisite fails the test
    (out / "observe.py").write_text(OBSERVER)
    scripts = str(REPO / "workflow" / "scripts")
    cmd = [str(guest_boot.VM / "run-in-guest"), *guest_boot.GUEST_ARGS, "--timeout", "1800",
           "--rwdir", str(out), "--", sys.executable, str(out / "observe.py"), str(out), str(n),
           PROGRAM, scripts, CONFIG]  # fmt: skip
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=2400)


@pytest.fixture(scope="module")
def launched(tmp_path_factory):
    """(the planned configuration, what the guest observed)."""
    if sys.platform != "linux":
        pytest.skip("needs Linux")
    conf = planned(topology.load(GUEST_TOPOLOGY))
    reuse = os.environ.get("NUMA_VM_LAUNCH_OUT")
    out = Path(reuse) if reuse else tmp_path_factory.mktemp("numa_vm_launch")
    if not reuse:
        write_results(out / "results", conf)
        proc = boot(out, len(conf["instances"]))
        logs = [out / "launch.err", out / "launch.out"]
        said = "\n".join(p.read_text()[-2000:] for p in logs if p.exists())
        assert proc.returncode == 0 and (out / "observed.json").exists(), (
            f"guest exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}\n"
            + said
        )
    return conf, json.loads((out / "observed.json").read_text())


def anon_pages(numa_maps: str) -> tuple[set[str], dict[int, int], int]:
    """(the policies of the anonymous mappings, their pages per node, the largest mapping's
    pages) from numa_maps (``<addr> <policy> ... anon=P ... N<node>=P``). A private file
    mapping (``file=``) is left out: its N counts include the shared page cache, read in by
    whichever process first touched the file, wherever it ran."""
    policies, per_node, largest = set(), {}, 0
    for line in numa_maps.splitlines():
        fields = line.split()
        if not any(f.startswith("anon=") for f in fields) or any(
            f.startswith("file=") for f in fields
        ):
            continue
        policies.add(fields[1])
        counts = {int(f[1:].split("=")[0]): int(f.split("=")[1]) for f in fields
                  if f[0] == "N" and f[1:].split("=")[0].isdigit()}  # fmt: skip
        for node, pages in counts.items():
            per_node[node] = per_node.get(node, 0) + pages
        largest = max(largest, sum(counts.values()))
    return policies, per_node, largest


def test_the_plan_puts_one_instance_on_each_node_of_the_guest():
    topo = topology.load(GUEST_TOPOLOGY)
    conf = planned(topo)
    assert len(topo.nodes) == 2
    assert [i["nodes"] for i in conf["instances"]] == [[n] for n in topo.nodes]
    assert [i["mem_nodes"] for i in conf["instances"]] == [[n] for n in topo.nodes]


def test_the_guest_is_the_topology_the_plan_was_made_for(launched):
    _, seen = launched
    topo = topology.load(GUEST_TOPOLOGY)
    want = {str(n): cpulist.format(topo.node_cpus(n, use_smt=True)) for n in topo.nodes}
    assert seen["node_cpus"] == want


def test_the_launcher_runs_each_instance_on_its_planned_node_with_its_memory_there(launched):
    """Both instances alive at once (observed before either was told to stop), each on the CPUs
    the plan gives it, its memory policy ``bind:<its node>`` and every anonymous page on that
    node, the touched buffer among them; the launcher exits 0 when both do."""
    conf, seen = launched
    insts = conf["instances"]
    assert sorted(seen["instances"]) == [str(j) for j in range(len(insts))]
    for j, inst in enumerate(insts):
        got = seen["instances"][str(j)]
        status = dict(ln.split(":\t", 1) for ln in got["status"].splitlines() if ":\t" in ln)
        assert cpulist.parse(status["Cpus_allowed_list"].strip()) == tuple(inst["cpus"]), j
        (node,) = inst["mem_nodes"]
        assert status["Mems_allowed_list"].strip() != ""  # cpuset: every node; policy: below
        policies, per_node, largest = anon_pages(got["numa_maps"])
        assert policies == {f"bind:{node}"}, (j, policies)
        assert {n for n, pages in per_node.items() if pages} == {node}, (j, per_node)
        assert largest >= TOUCHED // PAGE, (j, largest)
    assert seen["launcher_rc"] == 0
