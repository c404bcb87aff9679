"""``numa-effects launch`` on a real run's answer: the ``run:`` lines as the summary prints them,
pasted into bash, and the launcher with a program of the user's, start every instance side by
side with the binding, threads and allocator the deploy job measured; the ``or:`` lines are
run_cpu lines torch's own parser accepts for the same CPUs; bad input is one line, status 2.

The results are the session's quick run (``conftest.quick_run``: resnet18 on 32 x 32 images,
the deploy answer on), or ``NUMA_EFFECTS_LAUNCH_RESULTS`` (a results folder of a run of that
grid on this machine, to rerun these tests without measuring again). What each instance
should get is read from the deploy plan (the planner's CPUs and memory nodes), never from this
machine's core count."""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO

from numa_effects import launch
from numa_effects.measure import record
from numa_effects.plan import allocators, cpulist, launchers, paths
from numa_effects.plan import topology as topology_mod
from numa_effects.tables import history

pytestmark = pytest.mark.integration
SCRIPTS = REPO / "workflow" / "scripts"
# a user's program: prints what the launcher told it and where the kernel lets it run
SHOW = (
    "import json, os; "
    "status = dict(l.split(':\\t', 1) for l in open('/proc/self/status').read().splitlines()"
    " if ':\\t' in l); "
    "print(json.dumps({'env': {k: v for k, v in os.environ.items() if k.startswith("
    "('NUMA_EFFECTS_', 'OMP_', 'MKL_', 'MALLOC_', 'LD_PRELOAD'))}, "
    "'cpus': status['Cpus_allowed_list'].strip(), 'pid': os.getpid()}), flush=True)"
)


@pytest.fixture(scope="module")
def results(request) -> Path:
    given = os.environ.get("NUMA_EFFECTS_LAUNCH_RESULTS")
    return Path(given) if given else request.getfixturevalue("quick_run").results


def rows(results: Path) -> list[dict]:
    with open(results / paths.table("recommendation"), newline="") as fh:
        return list(csv.DictReader(fh))


def configurations(results: Path) -> dict:
    return json.loads((results / paths.DEPLOY_PLAN).read_text())["configurations"]


def widest(results: Path) -> dict:
    """The row whose configuration has the most instances (side by side is what is tested)."""
    return max(rows(results), key=lambda r: int(r["instances"]))


def launch_cli(results: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    """``python -m numa_effects launch --results <results>`` from the run's directory, as the
    table's lines are run (their spec paths are relative to it)."""
    env = {**os.environ, "PYTHONPATH": str(SCRIPTS)}
    cmd = [sys.executable, "-m", "numa_effects", "launch", "--results", results.name, *args]
    return subprocess.run(
        cmd, capture_output=True, text=True, env=env, timeout=300, cwd=results.parent, **kw
    )


def objective_arg(row: dict) -> list[str]:
    return ["--objective", row["objective"].replace(" ", "-")]


def children(pid: int) -> list[int]:
    """``pid``'s descendants, from /proc."""
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids = [int(k) for k in (task / "children").read_text().split()]
        except OSError:
            continue
        for k in kids:
            out += [k, *children(k)]
    return out


def status(pid: int) -> dict:
    text = Path(f"/proc/{pid}/status").read_text()
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def policies(pid: int) -> set[str]:
    """The memory policies of a process's anonymous mappings (numa_maps' second field)."""
    lines = Path(f"/proc/{pid}/numa_maps").read_text().splitlines()
    return {ln.split()[1] for ln in lines if " anon=" in ln}


def expected_policy(inst: dict) -> str:
    """numa_maps' word for the plan's memory policy: ``bind:<nodes>``, else ``default``
    (first touch: numactl --localalloc sets the local policy, shown as ``local``)."""
    if inst["mem_nodes"]:
        return f"bind:{cpulist.format(inst['mem_nodes'])}"
    return "local"


def instances_of(root: int, n: int, timeout_s: float = 120) -> list[int]:
    """The ``n`` instance processes below ``root``: the Python processes numactl became."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        procs = []
        for pid in children(root):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"numa_effects.measure.cell" in cmd and Path(cmd[0].decode()).name.startswith("py"):
                procs.append(pid)
        if len(procs) == n:
            return sorted(procs)
        time.sleep(0.2)
    raise AssertionError(f"{n} instances did not start below {root}")


def wait_ready(err: Path, n: int, timeout_s: float = 300) -> None:
    end = time.monotonic() + timeout_s
    while err.read_text().count('"ready": true') < n:
        assert time.monotonic() < end, err.read_text()[-3000:]
        time.sleep(0.5)


def test_the_printed_run_line_runs_every_instance_side_by_side_as_measured(results, tmp_path):
    """The summary's ``run:`` text (the table's ``command``) pasted into bash: each reference
    server starts on its planned CPUs with its memory policy, all alive at once; stopped with
    SIGTERM each prints its summary: threads as planned, the binding and allocator verified."""
    row = widest(results)
    conf = configurations(results)[row["config"]]
    insts = conf["instances"]
    assert row["command"].endswith(" & wait") and row["command"].count(" & ") == len(insts)
    summary = (results / paths.SUMMARY).read_text()
    assert f"run: {row['command']}" in summary or row["role"] != "recommended"
    out, err = tmp_path / "out", tmp_path / "err"
    with open(out, "w") as o, open(err, "w") as e:
        shell = subprocess.Popen(
            ["bash", "-c", row["command"]], stdout=o, stderr=e, cwd=results.parent
        )
    try:
        pids = instances_of(shell.pid, len(insts))
        wait_ready(err, len(insts))
        alive = [p for p in pids if Path(f"/proc/{p}").exists()]
        assert alive == pids  # every instance at once: side by side, not one after another
        by_cpus = {status(p)["Cpus_allowed_list"].strip(): p for p in pids}
        for inst in insts:
            pid = by_cpus[cpulist.format(inst["cpus"])]
            assert policies(pid) == {expected_policy(inst)}, pid
            maps = Path(f"/proc/{pid}/maps").read_text()
            loaded = {k for k in allocators.FOREIGN_KEYS if k in maps}
            alloc = allocators.get(conf["allocator"])
            assert loaded == ({alloc.maps_key} if alloc.preloaded else set()), pid
    finally:
        for p in children(shell.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGTERM)
        shell.wait(timeout=120)
    assert shell.returncode == 0, err.read_text()[-3000:]
    done = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(d["instance"] for d in done) == list(range(len(insts)))
    for d in done:
        inst = insts[d["instance"]]
        assert d["binding"]["cpus_allowed_list"] == cpulist.format(inst["cpus"])
        assert d["binding"]["torch_num_threads"] == inst["threads"] == d["threads"]
        assert d["verification"]["ok"], d["verification"]["problems"]
        assert d["verification"]["allocator"]["name"] == conf["allocator"]
        assert d["signal"] == signal.SIGTERM and d["requests"] >= 1


def test_the_deploy_job_started_its_instances_with_the_launchers_command(results):
    """One builder: the deploy record's instance commands are the launcher's up to the spec."""
    run = record.read_group(results / paths.DEPLOY_RUN)
    for row in (r for r in rows(results) if r["config"] and r["command"]):
        ok = [r for r in run.runs[row["config"]] if r.status == "ok"]
        for j, inst in enumerate(ok[0].instances if ok else ()):
            head = inst["command"][: inst["command"].index("--spec")]
            assert " ".join(head) in row["command"].split(" & ")[j], (row["config"], j)


def test_the_launcher_runs_a_users_program_per_instance_and_says_its_part(results, tmp_path):
    """``numa-effects launch ... -- prog``: each instance sees its index, batch, threads, CPUs,
    optimization and model, and runs on its planned CPUs; all exit 0: the launcher too."""
    row = widest(results)
    conf = configurations(results)[row["config"]]
    got = launch_cli(results, *objective_arg(row), "--role", row["config"],
                     "--", sys.executable, "-c", SHOW)  # fmt: skip
    assert got.returncode == 0, got.stderr
    seen = sorted((json.loads(line) for line in got.stdout.splitlines()),
                  key=lambda d: int(d["env"]["NUMA_EFFECTS_INSTANCE"]))  # fmt: skip
    assert len(seen) == len(conf["instances"])
    for j, (d, inst) in enumerate(zip(seen, conf["instances"], strict=True)):
        env = d["env"]
        assert d["cpus"] == cpulist.format(inst["cpus"]) == env["NUMA_EFFECTS_CPUS"]
        assert env["NUMA_EFFECTS_INSTANCE"] == str(j)
        assert env["NUMA_EFFECTS_THREADS"] == env["OMP_NUM_THREADS"] == str(inst["threads"])
        assert env["NUMA_EFFECTS_BATCH"] == str(inst["batch"])
        assert (env["NUMA_EFFECTS_OPT"], env["NUMA_EFFECTS_MODEL"]) == (conf["opt"], "resnet18")


def test_the_first_failure_is_the_launchers_exit_status(results):
    row = widest(results)
    got = launch_cli(results, *objective_arg(row), "--role", "recommended",
                     "--", "sh", "-c", "exit 7")  # fmt: skip
    assert got.returncode == 7


def test_print_is_the_tables_command_as_a_script(results):
    for row in rows(results):
        if row["role"] != "recommended":
            continue
        got = launch_cli(results, *objective_arg(row), "--print")
        assert got.returncode == 0, got.stderr
        lines = got.stdout.splitlines()
        assert lines[-1] == "wait" and all(ln.endswith(" &") for ln in lines[:-1])
        assert " ".join(lines) == row["command"]


def test_make_deploy_is_the_launcher(results):
    """``make deploy``'s recipe, as ``make -n`` prints it, run from the checkout: the same
    script as the launcher's ``--print``."""
    args = [f"RESULTS={results}", "OBJECTIVE=throughput", "ARGS=--print"]
    made = subprocess.run(["make", "-n", "deploy", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    recipe = made.stdout.replace("\\\n", " ")
    line = next(ln for ln in recipe.splitlines() if "numa_effects launch" in ln)
    got = subprocess.run(["bash", "-c", line], cwd=REPO, capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert got.returncode == 0, got.stderr
    want = launch_cli(results, "--objective", "throughput", "--print")
    assert got.stdout.replace(str(results), results.name) == want.stdout


def test_every_run_cpu_line_is_what_torchs_run_cpu_parses_into_the_same_instances(results):
    parser = argparse.ArgumentParser(exit_on_error=False)
    import torch.backends.xeon.run_cpu as rc

    rc.create_args(parser)
    topo = topology_mod.current()
    confs = configurations(results)
    printed = [r for r in rows(results) if r["run_cpu"] and r["config"]]
    assert printed  # the tiny grid has pinned one-core instances run_cpu can start
    for row in printed:
        words = row["run_cpu"].split()
        ns = parser.parse_args(words[words.index(launchers.RUN_CPU) + 1 :])
        assert (ns.no_python, ns.program_args[:2]) == (True, ["-m", "numa_effects.measure.cell"])
        got = launchers.run_cpu_layout(
            topo, ninstances=ns.ninstances, ncores_per_instance=ns.ncores_per_instance,
            skip_cross_node_cores=ns.skip_cross_node_cores,
        )  # fmt: skip
        want = [
            (tuple(i["cpus"]), tuple(i["mem_nodes"])) for i in confs[row["config"]]["instances"]
        ]
        assert sorted((s.cpus, s.mem_nodes) for s in got) == sorted(want)


def test_the_run_cpu_line_runs_the_same_instances(results):
    """The ``or:`` line as printed, limited to 3 requests: run_cpu starts each reference server
    on the CPUs the plan gives its instance, which it finds by its own CPUs, verified."""
    row = max((r for r in rows(results) if r["run_cpu"] and r["config"]),
              key=lambda r: int(r["instances"]))  # fmt: skip
    insts = configurations(results)[row["config"]]["instances"]
    got = subprocess.run(["bash", "-c", row["run_cpu"] + " --requests=3"], capture_output=True,
                         text=True, cwd=results.parent, timeout=600)  # fmt: skip
    assert got.returncode == 0, got.stderr[-3000:]
    done = sorted((json.loads(ln) for ln in got.stdout.splitlines()), key=lambda d: d["instance"])
    assert [d["instance"] for d in done] == list(range(len(insts)))
    for d, inst in zip(done, insts, strict=True):
        assert d["binding"]["cpus_allowed_list"] == cpulist.format(inst["cpus"])
        assert d["requests"] == 3 and d["verification"]["ok"], d["verification"]["problems"]


# -- bad input: one line, status 2, nothing started --------------------------------------------


def copy(results: Path, tmp_path: Path) -> Path:
    out = tmp_path / "results"
    shutil.copytree(results, out, ignore=shutil.ignore_patterns("cells", "logs", "report", "peak"))
    return out


def refused(results: Path, *args: str) -> str:
    got = launch_cli(results, *args, "--", sys.executable, "-c", "print('started')")
    assert (got.returncode, got.stdout) == (2, ""), got
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("numa-effects launch: ")
    return lines[0]


def test_an_objective_or_role_not_in_the_table_is_refused(results):
    assert "no objective 'latency-b999'" in refused(results,
                                                   "--objective", "latency-b999")  # fmt: skip
    assert "no role 'nobody'" in refused(results, "--role", "nobody")


def test_a_program_that_does_not_exist_is_refused(results):
    got = launch_cli(results, "--", "/nonexistent/serve")
    assert got.returncode == 2 and "no program '/nonexistent/serve'" in got.stderr


def test_another_machines_or_versions_results_are_refused(results, tmp_path):
    other = copy(results, tmp_path)
    machine = json.loads((other / paths.MACHINE).read_text())
    here = topology_mod.current()
    shapes = ("2x16-nosmt-alternating.lscpu-p.txt", "2x18-smt-offset36.lscpu-p.txt")
    loaded = [topology_mod.load(FIXTURES / "topology" / name) for name in shapes]
    foreign = next(t for t in loaded if not history.same_machine(t, here))  # not this one
    machine["topology"] = foreign.to_dict()
    (other / paths.MACHINE).write_text(json.dumps(machine))
    assert "records another machine" in refused(other)
    machine = json.loads((results / paths.MACHINE).read_text())
    machine["versions"]["torch"] = "0.0.1"
    (other / paths.MACHINE).write_text(json.dumps(machine))
    assert "measured with torch 0.0.1" in refused(other)


def test_a_cpu_this_process_may_not_use_is_refused(results):
    row = widest(results)
    conf = configurations(results)[row["config"]]
    first = min(conf["instances"][0]["cpus"])
    others = sorted(os.sched_getaffinity(0) - {first})
    if not others:
        pytest.skip("one CPU allowed: no CPU to leave out")
    got = launch_cli(results, *objective_arg(row), "--print",
                     preexec_fn=lambda: os.sched_setaffinity(0, others))  # fmt: skip
    assert got.returncode == 2 and f"CPUs [{first}]" in got.stderr, got.stderr
    assert "not allowed here" in got.stderr and len(got.stderr.splitlines()) == 1


def test_the_launcher_reads_the_table_it_is_given():
    """No results folder: one line naming the missing table."""
    with pytest.raises(launch.Refused, match=r"cannot read .*recommendation\.csv"):
        launch.pick(Path("/nonexistent"), None, "recommended")
